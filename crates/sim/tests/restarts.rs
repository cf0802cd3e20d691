//! The runner's answer to a person's restarts, with a server in this process (the
//! simulation's harness) so the clock can be paused and every start counted.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

use futures::FutureExt;
use futures::future::BoxFuture;
use mcp_host_client::harness::{Dial, Harness, WebAnswer, WebRequest, WebServers};
use mcp_host_client::{Manager, ServerSetup};
use mcp_host_core::{ServerId, ServerState, TransportKind};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

struct NoWeb;

impl WebServers for NoWeb {
    fn request(&self, _: WebRequest) -> BoxFuture<'static, WebAnswer> {
        std::future::ready(WebAnswer::Status(404)).boxed()
    }
}

fn setup(name: &str) -> ServerSetup {
    let raw = mcp_host_config::RawServer {
        command: Some("simulated".into()),
        ..Default::default()
    };
    ServerSetup {
        id: ServerId::new(name),
        transport: TransportKind::Stdio,
        spec: Some(
            raw.to_spec(name, mcp_host_config::Scope::Flag, &|_| None)
                .unwrap(),
        ),
        initial: ServerState::Starting,
    }
}

/// Found by the simulation: the second of two restarts asked before the runner took the
/// first was kept, and cut short the wait after the restarted server failed again.
#[tokio::test(start_paused = true)]
async fn two_restarts_asked_at_once_start_the_server_once() {
    let starts = Arc::new(AtomicUsize::new(0));
    let counted = starts.clone();
    let mut opts = mcp_host_sim::base_options().unwrap();
    let (states, mut seen) = tokio::sync::mpsc::unbounded_channel();
    opts.harness = Some(Harness {
        // A server that cannot start: a permanent failure, so only a restart starts it.
        dial: Dial(Arc::new(move |_| {
            counted.fetch_add(1, Ordering::SeqCst);
            Err("no such server".into())
        })),
        web: Arc::new(NoWeb),
        seed: 1,
        states,
    });
    let (m, _calls) = Manager::start(vec![setup("s")], opts);
    let id = ServerId::new("s");
    let failed = |s: &mcp_host_core::ServerStatus| matches!(s.state, ServerState::Failed { .. });
    m.watch(&id).unwrap().wait_for(failed).await.unwrap();
    assert_eq!(starts.load(Ordering::SeqCst), 1);
    m.reconnect(&id);
    m.reconnect(&id);
    // Long enough for the restart, and for any request still stored to start it again.
    tokio::time::sleep(Duration::from_secs(60)).await;
    assert_eq!(
        starts.load(Ordering::SeqCst),
        2,
        "one start for both requests"
    );
    let mut last = None;
    while let Ok(change) = seen.try_recv() {
        last = Some(change.state);
    }
    assert!(matches!(last, Some(ServerState::Failed { .. })), "{last:?}");
    m.shutdown().await;
}
