//! The conversation every provider test plays: a system prompt, a question, a step where the
//! model says something and calls a tool twice, and the step after the results (one an
//! error) came back.

use mcp_host_models::{Message, ModelRequest, ModelResponse, ToolCall, ToolSpec};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

pub const SYSTEM: &str = "You are terse.";
pub const USER: &str = "Compare a.txt and b.txt";
/// The first step's text, as it is streamed.
pub const STEP_ONE: [&str; 2] = ["Let me ch", "eck both."];
/// The final answer, as it is streamed.
pub const STEP_TWO: [&str; 2] = ["a.txt says al", "pha; b.txt is missing."];
pub const RESULT_A: &str = "alpha";
pub const RESULT_B: &str = "no such file";

/// The tool's schema as an MCP server might ship it.
pub fn schema() -> Value {
    json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {
            "path": {"type": "string", "description": "File path"},
            "encoding": {"type": ["string", "null"], "default": null}
        },
        "required": ["path"],
        "additionalProperties": false
    })
}

pub fn tools() -> Vec<ToolSpec> {
    vec![ToolSpec {
        name: "read_file".into(),
        description: "Read a file".into(),
        input_schema: schema(),
    }]
}

pub fn call(id: &str, path: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "read_file".into(),
        arguments: json!({"path": path}).to_string(),
    }
}

/// A request for `messages` whose text deltas the returned receiver collects.
pub fn request(model: &str, messages: Vec<Message>) -> (ModelRequest, UnboundedReceiver<String>) {
    let (tx, rx) = unbounded_channel();
    let mut r = ModelRequest::new(model, messages, tools());
    r.deltas = Some(tx);
    (r, rx)
}

pub fn first() -> Vec<Message> {
    vec![
        Message::System {
            text: SYSTEM.into(),
        },
        Message::User { text: USER.into() },
    ]
}

/// The history after the first step (`step`) and the results of its two calls.
pub fn second(step: &ModelResponse) -> Vec<Message> {
    let mut m = first();
    m.push(Message::Assistant {
        text: step.text.clone(),
        tool_calls: step.tool_calls.clone(),
    });
    for (call, (content, is_error)) in step
        .tool_calls
        .iter()
        .zip([(RESULT_A, false), (RESULT_B, true)])
    {
        m.push(Message::ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: content.into(),
            is_error,
        });
    }
    m
}

/// Everything the deltas channel received, in order. The request (the sender) must have
/// been dropped or the provider finished: sends happen before `complete` returns.
pub fn deltas(rx: &mut UnboundedReceiver<String>) -> Vec<String> {
    let mut out = Vec::new();
    while let Ok(t) = rx.try_recv() {
        out.push(t);
    }
    out
}

pub fn client() -> mcp_host_models::ModelClient {
    mcp_host_models::ModelClient::new(std::time::Duration::from_secs(10))
}
