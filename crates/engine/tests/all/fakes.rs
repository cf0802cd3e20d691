//! One in-memory server, `f`, with an `echo` tool: what the engine reads of it, and a caller
//! that answers `echo` with its message and records every call it was asked to send.

use mcp_host_client::listing::Offers;
use mcp_host_client::{CallError, Expect, ProgressSink, ToolList};
use mcp_host_core::{
    CallOutcome, Content, ServerFacts, ServerId, ServerState, ServerStatus, ToolDescriptor,
};
use mcp_host_engine::connections::{Caller, Connections, Sent};
use serde_json::{Map, Value, json};
use std::sync::{Arc, Mutex};
use tokio_util::sync::CancellationToken;

pub fn echo_tool() -> ToolDescriptor {
    ToolDescriptor {
        name: "echo".into(),
        title: None,
        description: Some("Echoes its message.".into()),
        input_schema: json!({"type": "object", "properties": {"message": {"type": "string"}}, "required": ["message"]}),
        output_schema: None,
        annotations: None,
    }
}

pub struct FakeServers {
    pub tools: Arc<ToolList>,
}

impl FakeServers {
    pub fn new() -> Self {
        Self {
            tools: Arc::new(ToolList {
                items: vec![Arc::new(echo_tool())],
                issues: Vec::new(),
            }),
        }
    }
}

impl Connections for FakeServers {
    fn ids(&self) -> Vec<ServerId> {
        vec![ServerId::new("f")]
    }

    fn status(&self, _: &ServerId) -> Option<ServerStatus> {
        Some(ServerStatus::new(ServerState::Ready))
    }

    fn tools(&self, _: &ServerId) -> Option<Arc<ToolList>> {
        Some(self.tools.clone())
    }

    fn offers(&self, _: &ServerId) -> Option<Arc<Offers>> {
        Some(Arc::default())
    }

    fn instructions(&self, _: &ServerId) -> Option<String> {
        Some("Use echo to repeat things.".into())
    }

    fn facts(&self, _: &ServerId) -> Option<Arc<ServerFacts>> {
        Some(Arc::default())
    }
}

/// What the caller was asked to send, as (server, tool, arguments).
pub type Sends = Arc<Mutex<Vec<(String, String, Value)>>>;

pub struct FakeCaller {
    pub sent: Sends,
}

impl Caller for FakeCaller {
    fn send(
        &self,
        server: &ServerId,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        expect: Option<Expect>,
        cancel: CancellationToken,
        _progress: Option<ProgressSink>,
    ) -> Sent {
        let args = Value::Object(arguments.unwrap_or_default());
        // The gate always says which definition it decided on.
        assert_eq!(expect.map(|e| (*e.definition).clone()), Some(echo_tool()));
        self.sent
            .lock()
            .unwrap()
            .push((server.to_string(), tool.to_string(), args.clone()));
        let message = args["message"].as_str().unwrap_or_default().to_string();
        // "never" is a call that runs until it is cancelled, as a slow server's would.
        if message == "never" {
            let server = server.to_string();
            return Box::pin(async move {
                cancel.cancelled().await;
                Err(CallError::Interrupted { server })
            });
        }
        Box::pin(async move {
            Ok::<_, CallError>(CallOutcome {
                content: vec![Content::Text { text: message }],
                structured: None,
                is_error: false,
                input_rounds: Vec::new(),
                task_id: None,
            })
        })
    }
}
