//! Anthropic Messages with streaming (SSE). Tool use arrives as `content_block_start` with a
//! `tool_use` block (id, name) followed by `input_json_delta` fragments; tool results go
//! back as `tool_result` blocks (with `is_error`) grouped into one user message. The system
//! prompt and the tool list carry `cache_control` breakpoints so a stable catalogue is read
//! from the prompt cache.

use crate::body::{Sent, close_with_tools, head, write_json};
use crate::lowering::{Dialect, lower};
use crate::retry::Retry;
use crate::types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, ToolCall, Usage,
};
use crate::wire::{self, Auth, Flow, Framing, at};
use bytes::{Bytes, BytesMut};
use serde_json::{Value, json};
use std::future::Future;

pub const API_VERSION: &str = "2023-06-01";
const MAX_TOKENS: u32 = 8192;

#[derive(Clone, Debug)]
pub struct Anthropic {
    client: crate::http::ModelClient,
    endpoint: wire::Endpoint,
    api_key: Option<String>,
    pub retry: Retry,
    /// The last request's body, which the next step extends.
    sent: std::sync::Arc<Sent>,
}

impl Anthropic {
    pub fn new(client: crate::http::ModelClient, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            client,
            endpoint: wire::Endpoint::new(base_url.trim_end_matches('/'), "/v1/messages"),
            api_key,
            retry: Retry::default(),
            sent: std::sync::Arc::default(),
        }
    }

    /// The request's JSON: the last step's body with the messages added since. The system
    /// prompt goes first (all system messages, wherever they are, as one list); the history
    /// follows, its tool results grouped into one user message per step; then the tools.
    fn body(sent: &Sent, request: &ModelRequest) -> Bytes {
        let mut system: Vec<Value> = (request.messages.iter())
            .filter_map(|m| match m {
                Message::System { text } => Some(json!({"type": "text", "text": text})),
                _ => None,
            })
            .collect();
        let mut fields = json!({"model": request.model, "max_tokens": MAX_TOKENS, "stream": true});
        if let Some(last) = system.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
            fields["system"] = json!(system);
        }
        let head = head(&fields, "messages");
        let tail = |out: &mut BytesMut| {
            let last = (request.messages.iter()).rfind(|m| !matches!(m, Message::System { .. }));
            if matches!(last, Some(Message::ToolResult { .. })) {
                out.extend_from_slice(b"]}");
            }
            let tools = (!request.tools.is_empty()).then(|| sent.tools.get(&request.tools, tools));
            close_with_tools(out, tools.as_deref());
        };
        sent.body
            .body(&head, &request.messages, request.reuse, wire_item, tail)
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let body = Self::body(&self.sent, request);
        let response = wire::post_json(
            &self.client,
            self.retry,
            &self.endpoint,
            body,
            Auth::Header("x-api-key", self.api_key.as_deref()),
            &[("anthropic-version", API_VERSION)],
        )
        .await?;
        let mut text = String::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        // Which content block index is which tool call.
        // By block index: a stream is the endpoint's to fill with calls and deltas, and a search
        // of the calls for each delta cost their product.
        let mut block_to_call: std::collections::HashMap<u64, usize> =
            std::collections::HashMap::new();
        let mut stop = StopReason::Other;
        let mut usage = Usage::default();
        wire::each_payload(response, Framing::Sse, |data| {
            let Ok(event) = serde_json::from_str::<Value>(data) else {
                return Ok(Flow::Continue);
            };
            let index = event.get("index").and_then(Value::as_u64).unwrap_or(0);
            match event
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default()
            {
                "content_block_start" => {
                    let block = &event["content_block"];
                    if block["type"] == "tool_use" {
                        let id = block["id"]
                            .as_str()
                            .map_or_else(|| format!("toolu_{}", calls.len()), str::to_string);
                        calls.push(ToolCall {
                            id,
                            name: block["name"].as_str().unwrap_or_default().into(),
                            arguments: String::new(),
                        });
                        block_to_call.entry(index).or_insert(calls.len() - 1);
                    } else if let Some(t) = block["text"].as_str() {
                        request.emit_text(t);
                        text.push_str(t);
                    }
                }
                "content_block_delta" => {
                    let delta = &event["delta"];
                    if let Some(t) = delta.get("text").and_then(Value::as_str) {
                        request.emit_text(t);
                        text.push_str(t);
                    }
                    if let Some(j) = delta.get("partial_json").and_then(Value::as_str)
                        && let Some(c) = block_to_call.get(&index)
                    {
                        calls[*c].arguments.push_str(j);
                    }
                }
                "message_start" => {
                    let u = &event["message"]["usage"];
                    let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                    usage.input_tokens = count("input_tokens");
                    usage.cache_read_tokens = count("cache_read_input_tokens");
                    usage.cache_write_tokens = count("cache_creation_input_tokens");
                    usage.output_tokens = count("output_tokens");
                }
                "message_delta" => {
                    if let Some(n) = at(&event, "/usage/output_tokens").and_then(Value::as_u64) {
                        usage.output_tokens = n;
                    }
                    stop = match at(&event, "/delta/stop_reason").and_then(Value::as_str) {
                        Some("end_turn" | "stop_sequence") => StopReason::EndTurn,
                        Some("tool_use") => StopReason::ToolUse,
                        Some("max_tokens") => StopReason::MaxTokens,
                        _ => StopReason::Other,
                    };
                }
                "message_stop" => return Ok(Flow::Stop),
                "error" => {
                    let msg = at(&event, "/error/message")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown error");
                    return Err(ProviderError::Stream(msg.to_string()));
                }
                _ => {}
            }
            Ok(Flow::Continue)
        })
        .await?;
        Ok(ModelResponse {
            text,
            tool_calls: calls,
            stop,
            usage,
        })
    }
}

/// The history's message `i`, after what separates it from the one before: system
/// messages are in the head, not here; consecutive tool results share one user message.
fn wire_item(messages: &[Message], i: usize, out: &mut BytesMut) {
    let message = &messages[i];
    if matches!(message, Message::System { .. }) {
        return;
    }
    let before = (messages[..i].iter()).rfind(|m| !matches!(m, Message::System { .. }));
    let after_result = matches!(before, Some(Message::ToolResult { .. }));
    match message {
        Message::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => {
            if after_result {
                out.extend_from_slice(b",");
            } else {
                if before.is_some() {
                    out.extend_from_slice(b",");
                }
                out.extend_from_slice(b"{\"role\":\"user\",\"content\":[");
            }
            let block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error});
            write_json(out, &block);
        }
        _ => {
            if after_result {
                out.extend_from_slice(b"]}");
            }
            if before.is_some() {
                out.extend_from_slice(b",");
            }
            write_json(out, &wire_message(message));
        }
    }
}

/// A user or assistant message as the Messages API takes it.
fn wire_message(message: &Message) -> Value {
    match message {
        Message::Assistant { text, tool_calls } => {
            let mut content = Vec::new();
            if !text.is_empty() {
                content.push(json!({"type": "text", "text": text}));
            }
            for c in tool_calls {
                let input: Value = serde_json::from_str(&c.arguments).unwrap_or_else(|_| json!({}));
                content
                    .push(json!({"type": "tool_use", "id": c.id, "name": c.name, "input": input}));
            }
            json!({"role": "assistant", "content": content})
        }
        Message::User { text } => {
            json!({"role": "user", "content": [{"type": "text", "text": text}]})
        }
        // Never asked: `wire_item` writes these itself.
        Message::System { .. } | Message::ToolResult { .. } => Value::Null,
    }
}

/// The tools, the last one marked as the end of the cached prefix.
fn tools(tools: &[crate::types::ToolSpec]) -> Value {
    let mut tools: Vec<Value> = tools
        .iter()
        .map(|t| json!({"name": t.name, "description": t.description, "input_schema": lower(&t.input_schema, Dialect::Anthropic)}))
        .collect();
    if let Some(last) = tools.last_mut() {
        last["cache_control"] = json!({"type": "ephemeral"});
    }
    Value::Array(tools)
}

impl Provider for Anthropic {
    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelResponse, ProviderError>> + Send {
        self.send(request)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::ToolSpec;

    #[test]
    fn tool_results_of_one_step_share_a_user_message_and_caches_are_marked() {
        let request = ModelRequest::new(
            "m",
            vec![
                Message::System {
                    text: "be brief".into(),
                },
                Message::User { text: "hi".into() },
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![
                        ToolCall {
                            id: "a".into(),
                            name: "x".into(),
                            arguments: "{\"q\":1}".into(),
                        },
                        ToolCall {
                            id: "b".into(),
                            name: "y".into(),
                            arguments: String::new(),
                        },
                    ],
                },
                Message::ToolResult {
                    call_id: "a".into(),
                    name: "x".into(),
                    content: "1".into(),
                    is_error: false,
                },
                Message::ToolResult {
                    call_id: "b".into(),
                    name: "y".into(),
                    content: "no".into(),
                    is_error: true,
                },
            ],
            vec![ToolSpec {
                name: "x".into(),
                description: "d".into(),
                input_schema: json!({"type": "object"}),
            }],
        );
        let body = Anthropic::body(&Sent::default(), &request);
        let body: Value = serde_json::from_slice(&body).unwrap();
        let msgs = body["messages"].as_array().unwrap();
        assert_eq!(msgs.len(), 3);
        assert_eq!(msgs[1]["content"][0]["input"], json!({"q": 1}));
        assert_eq!(msgs[2]["content"].as_array().unwrap().len(), 2);
        assert_eq!(msgs[2]["content"][1]["is_error"], true);
        assert_eq!(body["system"][0]["cache_control"]["type"], "ephemeral");
        assert_eq!(body["tools"][0]["cache_control"]["type"], "ephemeral");
    }

    /// The body as it was built before steps extended the last one: every message encoded
    /// afresh into one value.
    fn encoded_afresh(request: &ModelRequest) -> Value {
        let mut system = Vec::new();
        let mut messages: Vec<Value> = Vec::new();
        for m in request.messages.iter() {
            match m {
                Message::System { text } => system.push(json!({"type": "text", "text": text})),
                Message::ToolResult {
                    call_id,
                    content,
                    is_error,
                    ..
                } => {
                    let block = json!({"type": "tool_result", "tool_use_id": call_id, "content": content, "is_error": is_error});
                    match messages.last_mut() {
                        Some(last)
                            if last["role"] == "user"
                                && last["content"][0]["type"] == "tool_result" =>
                        {
                            last["content"].as_array_mut().unwrap().push(block);
                        }
                        _ => messages.push(json!({"role": "user", "content": [block]})),
                    }
                }
                other => messages.push(wire_message(other)),
            }
        }
        let mut body = json!({"model": request.model, "max_tokens": MAX_TOKENS, "messages": messages, "stream": true});
        if let Some(last) = system.last_mut() {
            last["cache_control"] = json!({"type": "ephemeral"});
            body["system"] = json!(system);
        }
        if !request.tools.is_empty() {
            body["tools"] = tools(&request.tools);
        }
        body
    }

    #[test]
    fn extended_bodies_are_the_bodies_encoded_afresh() {
        crate::body::assert_extends_as_afresh(Anthropic::body, encoded_afresh);
    }
}
