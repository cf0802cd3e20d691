//! The stdio wire as a server's stdout reaches it: arbitrary bytes, read under a small line
//! cap, framed, decoded and checked against the requests this side sent (ids 1 to 3 open).
//! Nothing may panic or hang, and every answer delivered is to an id this side sent, once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_client::wire::Wire;
use rmcp::model::{ClientRequest, JsonRpcMessage, PingRequest, RequestId};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use std::collections::HashSet;

fuzz_target!(|data: &[u8]| {
    let Ok(rt) = tokio::runtime::Builder::new_current_thread().build() else {
        return;
    };
    rt.block_on(async {
        let stdout = std::io::Cursor::new(data.to_vec());
        let mut wire = Wire::new(stdout, tokio::io::sink(), 4096);
        for id in 1..=3 {
            let ping = ClientRequest::PingRequest(PingRequest::default());
            let msg: TxJsonRpcMessage<RoleClient> =
                JsonRpcMessage::request(ping, RequestId::Number(id));
            let _ = wire.send(msg).await;
        }
        let mut answered = HashSet::new();
        while let Some(msg) = wire.receive().await {
            let id = match &msg {
                RxJsonRpcMessage::<RoleClient>::Response(r) => Some(r.id.clone()),
                RxJsonRpcMessage::<RoleClient>::Error(e) => e.id.clone(),
                _ => continue,
            };
            // An error with no id (a server that could not read a request) is passed on;
            // rmcp can route it nowhere and drops it.
            let Some(id) = id else { continue };
            assert!(matches!(id, RequestId::Number(1..=3)), "answer to {id:?}");
            assert!(answered.insert(id.clone()), "{id:?} answered twice");
        }
    });
});
