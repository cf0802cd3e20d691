//! OpenAI-compatible Chat Completions with streaming (`stream: true`, SSE), which OpenAI,
//! vLLM, llama.cpp's server and LM Studio all speak. Tool calls arrive as deltas by index:
//! the first carries id and name, later ones append argument text. Lenient: unknown finish
//! reasons are kept as `Other`, a missing call id is synthesised, an `error` chunk ends the
//! stream with `ProviderError::Stream`.

use crate::body::{Sent, comma_separated, head, write_json};
use crate::lowering::Dialect;
use crate::retry::Retry;
use crate::types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, ToolCall, ToolSpec,
    Usage,
};
use crate::wire::{self, Flow, Framing};
use chunk::Payload;

mod chunk;
use bytes::{Bytes, BytesMut};
use serde::Serialize;
use serde_json::json;
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::future::Future;

#[derive(Clone, Debug)]
pub struct OpenAiCompatible {
    client: crate::http::ModelClient,
    endpoint: wire::Endpoint,
    api_key: Option<String>,
    pub retry: Retry,
    sent: std::sync::Arc<Sent>,
}

impl OpenAiCompatible {
    pub fn new(client: crate::http::ModelClient, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            client,
            endpoint: wire::Endpoint::new(base_url.trim_end_matches('/'), "/chat/completions"),
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
                let encode = |t: &[ToolSpec]| wire::function_tools(t, Dialect::OpenAi);
                out.extend_from_slice(b",\"tools\":");
                out.extend_from_slice(&sent.tools.get(&request.tools, encode));
            }
            out.extend_from_slice(b"}");
        };
        let messages = &request.messages;
        let encode = comma_separated(|m, out| write_json(out, &wire_message(m)));
        (sent.body).body(&head, messages, request.reuse, encode, tail)
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
        let mut text = String::new();
        let mut calls: BTreeMap<u64, ToolCall> = BTreeMap::new();
        let mut stop = StopReason::Other;
        let mut usage = Usage::default();
        wire::each_payload(response, Framing::Sse, |data| {
            if data == "[DONE]" {
                return Ok(Flow::Stop);
            }
            let mut spare = None;
            let chunk = match chunk::read(data, &mut spare) {
                Payload::Chunk(chunk) => chunk,
                Payload::Error(message) => return Err(ProviderError::Stream(message)),
                Payload::Skip => return Ok(Flow::Continue),
            };
            if let Some(u) = &chunk.usage {
                usage = Usage {
                    input_tokens: u.prompt_tokens.unwrap_or(0),
                    output_tokens: u.completion_tokens.unwrap_or(0),
                    cache_read_tokens: u.cached_tokens().unwrap_or(0),
                    cache_write_tokens: 0,
                };
            }
            let Some(choice) = chunk.choice() else {
                return Ok(Flow::Continue);
            };
            if let Some(t) = &choice.delta.content {
                request.emit_text(t);
                text.push_str(t);
            }
            for d in choice.delta.tool_calls.iter().flatten() {
                let index = d.index.unwrap_or(calls.len() as u64);
                let call = calls.entry(index).or_insert_with(|| ToolCall {
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                if let Some(id) = &d.id {
                    call.id = id.to_string();
                }
                if let Some(f) = &d.function {
                    if let Some(n) = &f.name {
                        call.name.push_str(n);
                    }
                    if let Some(a) = &f.arguments {
                        call.arguments.push_str(a);
                    }
                }
            }
            if let Some(reason) = &choice.finish_reason {
                stop = match reason.as_ref() {
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

/// A message as Chat Completions takes it, written straight from the history's strings (a
/// `Value` built and dropped per message was most of a step's body).
#[derive(Serialize)]
struct WireMessage<'a> {
    role: &'static str,
    // The members in the order the body always had them (a tool result's id before its
    // content), so a prompt cache keyed on the bytes still matches across the change.
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_call_id: Option<&'a str>,
    /// `null` for an assistant message that only calls tools.
    content: Option<Cow<'a, str>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    tool_calls: Option<Vec<WireCall<'a>>>,
}

#[derive(Serialize)]
struct WireCall<'a> {
    id: &'a str,
    r#type: &'static str,
    function: WireFunction<'a>,
}

#[derive(Serialize)]
struct WireFunction<'a> {
    name: &'a str,
    arguments: &'a str,
}

fn wire_message(m: &Message) -> WireMessage<'_> {
    fn plain<'a>(role: &'static str, text: &'a str) -> WireMessage<'a> {
        WireMessage {
            role,
            content: Some(Cow::Borrowed(text)),
            tool_calls: None,
            tool_call_id: None,
        }
    }
    match m {
        Message::System { text } => plain("system", text),
        Message::User { text } => plain("user", text),
        Message::Assistant { text, tool_calls } => WireMessage {
            role: "assistant",
            content: (!text.is_empty()).then_some(Cow::Borrowed(text)),
            tool_calls: (!tool_calls.is_empty()).then(|| {
                (tool_calls.iter())
                    .map(|c| WireCall {
                        id: &c.id,
                        r#type: "function",
                        function: WireFunction {
                            name: &c.name,
                            arguments: &c.arguments,
                        },
                    })
                    .collect()
            }),
            tool_call_id: None,
        },
        // Chat Completions has no error flag on tool results: the text says so.
        Message::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => WireMessage {
            role: "tool",
            tool_call_id: Some(call_id),
            content: Some(if *is_error {
                Cow::Owned(format!("ERROR: {content}"))
            } else {
                Cow::Borrowed(content)
            }),
            tool_calls: None,
        },
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
    use serde_json::Value;

    /// What the body was before messages were reused: every message encoded at each step.
    fn encoded_afresh(request: &ModelRequest) -> Value {
        let messages: Vec<Value> = (request.messages.iter())
            .map(|m| serde_json::to_value(wire_message(m)).unwrap())
            .collect();
        let mut body = json!({"model": request.model, "messages": messages, "stream": true,
            "stream_options": {"include_usage": true}});
        if !request.tools.is_empty() {
            body["tools"] = wire::function_tools(&request.tools, Dialect::OpenAi);
        }
        body
    }

    /// The bytes the body always had, member order included (a prompt cache keys on them).
    #[test]
    fn messages_are_written_with_their_members_in_the_order_they_always_had() {
        let call = ToolCall {
            id: "c1".into(),
            name: "t".into(),
            arguments: "{}".into(),
        };
        let cases = [
            (
                Message::User { text: "hi".into() },
                r#"{"role":"user","content":"hi"}"#,
            ),
            (
                Message::Assistant {
                    text: String::new(),
                    tool_calls: vec![call],
                },
                r#"{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"t","arguments":"{}"}}]}"#,
            ),
            (
                Message::ToolResult {
                    call_id: "c1".into(),
                    name: "t".into(),
                    content: "no".into(),
                    is_error: true,
                },
                r#"{"role":"tool","tool_call_id":"c1","content":"ERROR: no"}"#,
            ),
        ];
        for (message, expected) in cases {
            assert_eq!(
                serde_json::to_string(&wire_message(&message)).unwrap(),
                expected
            );
        }
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
