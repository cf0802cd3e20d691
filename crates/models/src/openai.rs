//! OpenAI-compatible Chat Completions with streaming (`stream: true`, SSE), which OpenAI,
//! vLLM, llama.cpp's server and LM Studio all speak. Tool calls arrive as deltas by index:
//! the first carries id and name, later ones append argument text. Lenient: unknown finish
//! reasons are kept as `Other`, a missing call id is synthesised, an `error` chunk ends the
//! stream with `ProviderError::Stream`.

use crate::body::{Growing, comma_separated, head};
use crate::lowering::Dialect;
use crate::retry::Retry;
use crate::types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, ToolCall, Usage,
};
use crate::wire::{self, Flow, Framing, at};
use bytes::{Bytes, BytesMut};
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::future::Future;

#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    client: reqwest::Client,
    base_url: String,
    api_key: Option<String>,
    pub retry: Retry,
    sent: std::sync::Arc<Sent>,
}

/// What the provider sent last: the body, which the next step extends, and each tool's JSON.
#[derive(Debug, Default)]
struct Sent {
    body: Growing<Message>,
    tools: wire::Sent<crate::types::ToolSpec>,
}

impl OpenAiCompatible {
    pub fn new(client: reqwest::Client, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            client,
            base_url: base_url.trim_end_matches('/').to_string(),
            api_key,
            retry: Retry::default(),
            sent: std::sync::Arc::default(),
        }
    }

    /// The request's JSON: the last step's body with the messages added since (the model
    /// and the messages first, so that only what follows them is written again).
    fn body(sent: &Sent, request: &ModelRequest) -> Bytes {
        let head = head(&json!({"model": request.model}), "messages");
        let tail = |out: &mut BytesMut| {
            // `include_usage` adds a last chunk with token counts; servers that do not know
            // it ignore it.
            out.extend_from_slice(b"],\"stream\":true,\"stream_options\":{\"include_usage\":true}");
            if !request.tools.is_empty() {
                out.extend_from_slice(b",\"tools\":");
                let encode = |t: &crate::types::ToolSpec| wire::function_tool(t, Dialect::OpenAi);
                sent.tools.write_array(&request.tools, encode, out);
            }
            out.extend_from_slice(b"}");
        };
        let messages = &request.messages;
        let encode = comma_separated(wire_message);
        (sent.body).body(&head, messages, request.reuse, encode, tail)
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let url = format!("{}/chat/completions", self.base_url);
        let body = Self::body(&self.sent, request);
        let response = wire::post_json(
            &self.client,
            self.retry,
            &url,
            body,
            wire::Auth::Bearer(self.api_key.as_deref()),
            &[],
        )
        .await?;
        let mut text = String::new();
        let mut calls: BTreeMap<u64, ToolCall> = BTreeMap::new();
        let mut stop = StopReason::Other;
        let mut usage = Usage::default();
        wire::each_payload(response, Framing::Sse, |data| {
            if data == "[DONE]" {
                return Ok(Flow::Stop);
            }
            let Ok(event) = serde_json::from_str::<Value>(data) else {
                return Ok(Flow::Continue);
            };
            // vLLM, llama.cpp and proxies report a failure mid-stream as an `error`
            // object in place of a chunk.
            if let Some(error) = event.get("error").filter(|e| !e.is_null()) {
                let msg = error
                    .get("message")
                    .and_then(Value::as_str)
                    .or_else(|| error.as_str())
                    .unwrap_or("unknown error");
                return Err(ProviderError::Stream(msg.to_string()));
            }
            if let Some(u) = event.get("usage").filter(|u| u.is_object()) {
                let count = |k: &'static str| at(u, k).and_then(Value::as_u64).unwrap_or(0);
                usage = Usage {
                    input_tokens: count("/prompt_tokens"),
                    output_tokens: count("/completion_tokens"),
                    cache_read_tokens: count("/prompt_tokens_details/cached_tokens"),
                    cache_write_tokens: 0,
                };
            }
            let Some(choice) = at(&event, "/choices/0") else {
                return Ok(Flow::Continue);
            };
            if let Some(t) = at(choice, "/delta/content").and_then(Value::as_str) {
                request.emit_text(t);
                text.push_str(t);
            }
            for d in at(choice, "/delta/tool_calls")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                let index = d
                    .get("index")
                    .and_then(Value::as_u64)
                    .unwrap_or(calls.len() as u64);
                let call = calls.entry(index).or_insert_with(|| ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                if let Some(id) = d.get("id").and_then(Value::as_str) {
                    call.id = id.to_string();
                }
                if let Some(n) = at(d, "/function/name").and_then(Value::as_str) {
                    call.name.push_str(n);
                }
                if let Some(a) = at(d, "/function/arguments").and_then(Value::as_str) {
                    call.arguments.push_str(a);
                }
            }
            if let Some(reason) = choice.get("finish_reason").and_then(Value::as_str) {
                stop = match reason {
                    "stop" => StopReason::EndTurn,
                    "tool_calls" | "function_call" => StopReason::ToolUse,
                    "length" => StopReason::MaxTokens,
                    _ => StopReason::Other,
                };
            }
            Ok(Flow::Continue)
        })
        .await?;
        let tool_calls = calls
            .into_values()
            .enumerate()
            .map(|(i, mut c)| {
                if c.id.is_empty() {
                    c.id = format!("call_{i}");
                }
                c
            })
            .collect();
        Ok(ModelResponse {
            text,
            tool_calls,
            stop,
            usage,
        })
    }
}

fn wire_message(m: &Message) -> Value {
    match m {
        Message::System { text } => json!({"role": "system", "content": text}),
        Message::User { text } => json!({"role": "user", "content": text}),
        Message::Assistant { text, tool_calls } => {
            let mut v = json!({"role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) }});
            if !tool_calls.is_empty() {
                let calls: Vec<Value> = tool_calls
                    .iter()
                    .map(|c| json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}))
                    .collect();
                v["tool_calls"] = json!(calls);
            }
            v
        }
        // Chat Completions has no error flag on tool results: the text says so.
        Message::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => {
            let content = if *is_error {
                format!("ERROR: {content}")
            } else {
                content.clone()
            };
            json!({"role": "tool", "tool_call_id": call_id, "content": content})
        }
    }
}

impl Provider for OpenAiCompatible {
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

    /// What the body was before messages were reused: every message encoded at each step.
    fn encoded_afresh(request: &ModelRequest) -> Value {
        let messages: Vec<Value> = request.messages.iter().map(wire_message).collect();
        let mut body = json!({"model": request.model, "messages": messages, "stream": true,
            "stream_options": {"include_usage": true}});
        if !request.tools.is_empty() {
            body["tools"] = wire::function_tools(&request.tools, Dialect::OpenAi);
        }
        body
    }

    #[test]
    fn reused_messages_make_the_same_body_as_encoding_afresh() {
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{\"a\":1}".into(),
        };
        let mut history = vec![
            Message::System { text: "sys".into() },
            Message::User {
                text: "hi \"there\"\n".into(),
            },
        ];
        let mut steps = Vec::new();
        for i in 0..3 {
            history.push(Message::Assistant {
                text: String::new(),
                tool_calls: vec![call.clone()],
            });
            history.push(Message::ToolResult {
                call_id: "c1".into(),
                name: "t".into(),
                content: format!("result {i}"),
                is_error: false,
            });
            steps.push(history.clone());
        }
        // A compaction rewrites the start: nothing after the change may be reused.
        let mut rewritten = history.clone();
        rewritten[1] = Message::User {
            text: "summary".into(),
        };
        steps.push(rewritten);
        steps.push(vec![Message::User {
            text: "other".into(),
        }]);
        let tool = |name: &str| crate::types::ToolSpec {
            name: name.into(),
            description: "d".into(),
            input_schema: json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
        };
        let toolsets = [
            vec![tool("a"), tool("b")],
            vec![tool("a"), tool("b")],
            vec![tool("b")],
        ];
        // Compared item by item, and taken on the sender's word as a conversation gives it
        // (appends vouched for, the rewrite and the other conversation not).
        let vouched = [Some(0), Some(4), Some(6), Some(0), None];
        for vouch in [false, true] {
            let sent = Sent::default();
            for (i, messages) in steps.iter().enumerate() {
                let tools = toolsets.get(i).cloned().unwrap_or_default();
                let mut request = ModelRequest::new("m", messages.clone(), tools);
                if vouch {
                    request.reuse = vouched[i].map(|unchanged| crate::Reuse {
                        sender: 7,
                        unchanged,
                    });
                }
                let body: Value =
                    serde_json::from_slice(&OpenAiCompatible::body(&sent, &request)).unwrap();
                assert_eq!(body, encoded_afresh(&request), "step {i}, vouched {vouch}");
            }
        }
    }
}
