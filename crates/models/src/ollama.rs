//! Ollama's native chat API (`POST {base}/api/chat`, `stream: true`). The stream is NDJSON,
//! one JSON object per line, not SSE. Tool calls arrive whole, with arguments as a JSON
//! object and usually without ids (we make them up); the last line has `done: true`, the
//! stop reason and the token counts. Tool results go back as `tool` messages naming the
//! tool. No auth unless a key is given (a proxy in front of Ollama may want a bearer token).

use crate::body::{Sent, close_with_tools, comma_separated, head, write_json};
use crate::lowering::Dialect;
use crate::retry::Retry;
use crate::types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, ToolCall, ToolSpec,
    Usage,
};
use crate::wire::{self, Flow, Framing, at};
use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value, json};
use std::future::Future;

#[derive(Clone, Debug)]
pub struct Ollama {
    client: crate::http::ModelClient,
    endpoint: wire::Endpoint,
    api_key: Option<String>,
    pub retry: Retry,
    /// The last request's body, which the next step extends.
    sent: std::sync::Arc<Sent>,
}

/// What the lines of one response add up to.
#[derive(Default)]
struct State {
    text: String,
    calls: Vec<ToolCall>,
    stop: Option<StopReason>,
    usage: Usage,
}

impl Ollama {
    pub fn new(client: crate::http::ModelClient, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            client,
            endpoint: wire::Endpoint::new(base_url.trim_end_matches('/'), "/api/chat"),
            api_key,
            retry: Retry::default(),
            sent: std::sync::Arc::default(),
        }
    }

    /// The request's JSON: the last step's body with the messages added since.
    fn body(sent: &Sent, request: &ModelRequest) -> Bytes {
        let head = head(&json!({"model": request.model, "stream": true}), "messages");
        let encode = |t: &[ToolSpec]| wire::function_tools(t, Dialect::Ollama);
        let tail = |out: &mut BytesMut| {
            let tools = (!request.tools.is_empty()).then(|| sent.tools.get(&request.tools, encode));
            close_with_tools(out, tools.as_deref());
        };
        let encode = comma_separated(|m, out| write_json(out, &wire_message(m)));
        sent.body
            .body(&head, &request.messages, request.reuse, encode, tail)
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let body = Self::body(&self.sent, request);
        let response = wire::post_json(
            &self.client,
            self.retry,
            &self.endpoint,
            body,
            wire::Auth::Bearer(self.api_key.as_deref()),
            &[],
        )
        .await?;
        let mut state = State::default();
        wire::each_payload(response, Framing::Ndjson, |line| {
            read_line(request, line, &mut state)?;
            Ok(if state.stop.is_some() {
                Flow::Stop
            } else {
                Flow::Continue
            })
        })
        .await?;
        let stop = match state.stop {
            // Ollama says "stop" when the model called tools too.
            _ if !state.calls.is_empty() => StopReason::ToolUse,
            Some(s) => s,
            None => StopReason::Other,
        };
        Ok(ModelResponse {
            text: state.text,
            tool_calls: state.calls,
            stop,
            usage: state.usage,
        })
    }
}

/// Reads one line of the stream into `state`; an `error` line ends the response.
fn read_line(request: &ModelRequest, line: &str, state: &mut State) -> Result<(), ProviderError> {
    let Ok(event) = serde_json::from_str::<Value>(line) else {
        return Ok(());
    };
    if let Some(error) = event.get("error") {
        let msg = error
            .as_str()
            .or_else(|| error.get("message").and_then(Value::as_str))
            .unwrap_or("unknown error");
        return Err(ProviderError::Stream(msg.to_string()));
    }
    if let Some(t) = at(&event, "/message/content").and_then(Value::as_str) {
        request.emit_text(t);
        state.text.push_str(t);
    }
    for call in at(&event, "/message/tool_calls")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        let function = &call["function"];
        let id = match call.get("id").and_then(Value::as_str) {
            Some(id) if !id.is_empty() => id.to_string(),
            _ => format!("ollama_call_{}", state.calls.len()),
        };
        let arguments = match function.get("arguments") {
            Some(Value::String(s)) => s.clone(),
            Some(v @ Value::Object(_)) => v.to_string(),
            _ => "{}".to_string(),
        };
        state.calls.push(ToolCall {
            id,
            name: function["name"].as_str().unwrap_or_default().to_string(),
            arguments,
        });
    }
    if event.get("done") == Some(&Value::Bool(true)) {
        let count = |k: &str| event.get(k).and_then(Value::as_u64).unwrap_or(0);
        state.usage = Usage {
            input_tokens: count("prompt_eval_count"),
            output_tokens: count("eval_count"),
            cache_read_tokens: 0,
            cache_write_tokens: 0,
        };
        state.stop = Some(match event.get("done_reason").and_then(Value::as_str) {
            Some("stop") => StopReason::EndTurn,
            Some("length") => StopReason::MaxTokens,
            _ => StopReason::Other,
        });
    }
    Ok(())
}

fn wire_message(m: &Message) -> Value {
    match m {
        Message::System { text } => json!({"role": "system", "content": text}),
        Message::User { text } => json!({"role": "user", "content": text}),
        Message::Assistant { text, tool_calls } => {
            let mut v = json!({"role": "assistant", "content": text});
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| {
                        // Ollama wants the arguments as an object, not as JSON text.
                        let arguments = match serde_json::from_str::<Value>(&c.arguments) {
                            Ok(v @ Value::Object(_)) => v,
                            _ => Value::Object(Map::new()),
                        };
                        json!({"function": {"name": c.name, "arguments": arguments}})
                    })
                    .collect();
                v["tool_calls"] = json!(calls);
            }
            v
        }
        // No error flag on a tool message: the text says so.
        Message::ToolResult {
            name,
            content,
            is_error,
            ..
        } => {
            let content = if *is_error {
                format!("ERROR: {content}")
            } else {
                content.clone()
            };
            json!({"role": "tool", "content": content, "tool_name": name})
        }
    }
}

impl Provider for Ollama {
    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelResponse, ProviderError>> + Send {
        self.send(request)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn extended_bodies_are_the_bodies_encoded_afresh() {
        crate::body::assert_extends_as_afresh(Ollama::body, |request| {
            let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
            let mut body = json!({"model": request.model, "messages": messages, "stream": true});
            if !request.tools.is_empty() {
                body["tools"] = wire::function_tools(&request.tools, Dialect::Ollama);
            }
            body
        });
    }
}
