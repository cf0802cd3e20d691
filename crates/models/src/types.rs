//! Provider-neutral conversation types and the provider trait.

use serde::{Deserialize, Serialize};
use std::collections::VecDeque;
use std::future::Future;
use std::sync::Mutex;

/// A tool call as the model made it. `arguments` is the raw JSON text the model produced.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: String,
}

/// Serialised as the host's own format (stored conversations), not any provider's.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "snake_case")]
pub enum Message {
    System {
        text: String,
    },
    User {
        text: String,
    },
    Assistant {
        text: String,
        tool_calls: Vec<ToolCall>,
    },
    ToolResult {
        call_id: String,
        name: String,
        content: String,
        is_error: bool,
    },
}

/// A tool offered to the model: the catalogue's typed definition, as it made it.
pub use mcp_host_core::ToolDefinition as ToolSpec;

#[derive(Clone, Debug)]
pub struct ModelRequest {
    pub model: String,
    /// The conversation's own list, shared: a step's request costs no copy of the history.
    pub messages: std::sync::Arc<Vec<Message>>,
    /// Shared: the engine offers the same list at every step until it changes, and a
    /// provider reuses what it encoded for it.
    pub tools: std::sync::Arc<[ToolSpec]>,
    /// Where streamed text goes as it arrives (a front end shows it live); the full text is
    /// also in the response.
    pub deltas: Option<tokio::sync::mpsc::UnboundedSender<String>>,
    /// What the sender vouches is unchanged since its previous request, so a provider may
    /// reuse what it encoded then without comparing (`None`: compare).
    pub reuse: Option<Reuse>,
}

/// "The first `unchanged` messages are those of the previous request from `sender`."
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Reuse {
    /// Chosen at random by the conversation, so two conversations never share it.
    pub sender: u64,
    pub unchanged: usize,
}

impl ModelRequest {
    pub fn new(
        model: impl Into<String>,
        messages: impl Into<std::sync::Arc<Vec<Message>>>,
        tools: impl Into<std::sync::Arc<[ToolSpec]>>,
    ) -> Self {
        Self {
            model: model.into(),
            messages: messages.into(),
            tools: tools.into(),
            deltas: None,
            reuse: None,
        }
    }

    /// Passes a piece of streamed text to whoever listens. A listener that went away is not
    /// an error: the text is still collected.
    pub fn emit_text(&self, text: &str) {
        if let Some(tx) = &self.deltas
            && !text.is_empty()
        {
            let _ = tx.send(text.to_string());
        }
    }
}

pub use mcp_host_core::event::Usage;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EndTurn,
    ToolUse,
    MaxTokens,
    Other,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub stop: StopReason,
    pub usage: Usage,
}

impl ModelResponse {
    /// A plain answer with no tool calls (for scripts and tests).
    pub fn text(text: impl Into<String>) -> Self {
        Self {
            text: text.into(),
            tool_calls: Vec::new(),
            stop: StopReason::EndTurn,
            usage: Usage::default(),
        }
    }
}

/// An answer's body as shown; an empty one says so, and a 404 says what it usually means.
fn status_body(status: u16, body: &str) -> String {
    let body = body.to_string();
    match (status, body.trim().is_empty()) {
        (404, true) => "(no body): nothing is at that path; is --base-url the API's base (e.g. http://localhost:11434/v1 for an OpenAI-compatible local server)?".into(),
        (_, true) => "(no body)".into(),
        (404, false) => format!("{body} (is --base-url the API's base?)"),
        _ => body,
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ProviderError {
    #[error("cannot reach the model at {url}: {detail}")]
    Unreachable { url: String, detail: String },
    #[error("the model API answered {status}: {}", status_body(*.status, .body))]
    Status { status: u16, body: String },
    #[error("the model's stream could not be read: {0}")]
    Stream(String),
    #[error("the scripted provider ran out of responses")]
    ScriptExhausted,
}

/// A model API. One call is one model request; streaming happens inside.
pub trait Provider: Send + Sync {
    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelResponse, ProviderError>> + Send;
}

/// Replays prepared responses and records every request it was given (for engine tests).
#[derive(Debug, Default)]
pub struct Scripted {
    responses: Mutex<VecDeque<ModelResponse>>,
    pub requests: Mutex<Vec<ModelRequest>>,
}

impl Scripted {
    pub fn new(responses: impl IntoIterator<Item = ModelResponse>) -> Self {
        Self {
            responses: Mutex::new(responses.into_iter().collect()),
            requests: Mutex::default(),
        }
    }
}

impl Provider for Scripted {
    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelResponse, ProviderError>> + Send {
        if let Ok(mut r) = self.requests.lock() {
            r.push(request.clone());
        }
        let next = self.responses.lock().ok().and_then(|mut r| r.pop_front());
        std::future::ready(next.ok_or(ProviderError::ScriptExhausted))
    }
}
