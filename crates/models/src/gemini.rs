//! Google Gemini `streamGenerateContent` with `alt=sse`. Each event is a whole
//! `GenerateContentResponse`: text parts to append, and function calls that arrive whole
//! (never in fragments), usually without ids, so we make ids up. Roles are `user` and
//! `model`; tool results go back as `functionResponse` parts of one `user` content per step.
//! Gemini 3 rejects a replayed function call without the `thoughtSignature` it came with,
//! and our `ToolCall` has no place for one, so the provider remembers signatures by call id
//! (bounded) and, for a call it does not know, sends Google's documented "skip the
//! validator" value instead. A step's body extends the last one (`body.rs`), and the
//! tools' lowered declarations are made once per tool list, as for the other providers.

use crate::body::{Sent, close_with_tools, head, write_json};
use crate::lowering::{Dialect, lower};
use crate::retry::Retry;
use crate::types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, ToolCall, ToolSpec,
    Usage,
};
use crate::wire::{self, Auth, Flow, Framing, at};
use bytes::{Bytes, BytesMut};
use serde_json::{Map, Value, json};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The prefix of ids we make up; such ids are ours and are not sent back to Gemini.
const SYNTHETIC_ID: &str = "gemini_call_";
/// What Google's docs say to send for a function call whose signature is lost.
const SKIP_SIGNATURE: &str = "skip_thought_signature_validator";
/// Signatures remembered at most; past this all are forgotten at once (older calls are
/// then replayed with the skip value, which Gemini accepts).
const MAX_SIGNATURES: usize = 4096;
/// Their bytes at most, cleared the same way: each is the endpoint's to make as long as an
/// event allows (4 MiB), and 4,096 of those were 16 GiB kept for the session.
const MAX_SIGNATURE_BYTES: usize = 64 * 1024 * 1024;

/// Remembered signatures, and their bytes.
#[derive(Debug, Default)]
struct Signatures {
    map: HashMap<String, String>,
    bytes: usize,
}

#[derive(Clone, Debug)]
pub struct Gemini {
    client: crate::http::ModelClient,
    base_url: String,
    api_key: Option<String>,
    pub retry: Retry,
    /// Thought signatures by call id, shared by clones.
    signatures: Arc<Mutex<Signatures>>,
    /// The last bodies sent, one for models that need signatures and one for those that do
    /// not (an item is written for one of them), shared by clones.
    sent: Arc<[Sent; 2]>,
    /// Made-up call ids count up across responses, so a signature finds its own call.
    next_id: Arc<AtomicU64>,
}

impl Gemini {
    /// `base_url` is the API host (`https://generativelanguage.googleapis.com`); one that
    /// already ends in an API version (`/v1beta`, `/v1`, `/v1alpha`) is used as it is.
    pub fn new(client: crate::http::ModelClient, base_url: &str, api_key: Option<String>) -> Self {
        let base = base_url.trim_end_matches('/');
        let versioned = ["/v1beta", "/v1", "/v1alpha"]
            .iter()
            .any(|v| base.ends_with(v));
        Self {
            client,
            base_url: if versioned {
                base.to_string()
            } else {
                format!("{base}/v1beta")
            },
            api_key,
            retry: Retry::default(),
            signatures: Arc::default(),
            sent: Arc::default(),
            next_id: Arc::default(),
        }
    }

    fn signature(&self, id: &str) -> Option<String> {
        self.signatures.lock().ok()?.map.get(id).cloned()
    }

    fn remember_signature(&self, id: &str, signature: &str) {
        if let Ok(mut kept) = self.signatures.lock() {
            if kept.map.len() >= MAX_SIGNATURES
                || kept.bytes + signature.len() > MAX_SIGNATURE_BYTES
            {
                *kept = Signatures::default();
            }
            kept.bytes += signature.len();
            if let Some(old) = kept.map.insert(id.to_string(), signature.to_string()) {
                kept.bytes -= old.len();
            }
        }
    }

    /// The request's JSON: the last step's body with the messages added since (see
    /// `body.rs`), the tools' declarations lowered once per tool list. The system messages,
    /// wherever they are, go first as one instruction; the history follows, each step's tool
    /// results grouped into one `user` content; then the tools.
    fn body(&self, request: &ModelRequest) -> Bytes {
        // Models before Gemini 3 never required signatures; do not send them a made-up one.
        let skip_signature = !["gemini-1", "gemini-2"]
            .iter()
            .any(|old| model_name(&request.model).starts_with(old));
        // Items are written for one of the two, so each keeps its own body.
        let sent = &self.sent[usize::from(skip_signature)];
        let system: Vec<Value> = (request.messages.iter())
            .filter_map(|m| match m {
                Message::System { text } => Some(json!({"text": text})),
                _ => None,
            })
            .collect();
        let mut fields = json!({});
        if !system.is_empty() {
            fields["systemInstruction"] = json!({"parts": system});
        }
        let head = head(&fields, "contents");
        let tail = |out: &mut BytesMut| {
            if matches!(
                last_written(&request.messages),
                Some(Message::ToolResult { .. })
            ) {
                out.extend_from_slice(b"]}");
            }
            let tools =
                (!request.tools.is_empty()).then(|| sent.tools.get(&request.tools, declarations));
            close_with_tools(out, tools.as_deref());
        };
        let item = |messages: &[Message], i: usize, out: &mut BytesMut| {
            self.wire_item(messages, i, skip_signature, out);
        };
        sent.body
            .body(&head, &request.messages, request.reuse, item, tail)
    }

    /// Message `i` as the items of `contents`, after those before it: nothing for a system
    /// message or an empty assistant turn (Gemini rejects a content without parts); a tool
    /// result joins the `user` content of the results just before it, or opens one.
    fn wire_item(&self, messages: &[Message], i: usize, skip_signature: bool, out: &mut BytesMut) {
        let message = &messages[i];
        if !writes(message) {
            return;
        }
        let before = last_written(&messages[..i]);
        let after_result = matches!(before, Some(Message::ToolResult { .. }));
        if let Message::ToolResult {
            call_id,
            name,
            content,
            is_error,
        } = message
        {
            if after_result {
                out.extend_from_slice(b",");
            } else {
                if before.is_some() {
                    out.extend_from_slice(b",");
                }
                out.extend_from_slice(b"{\"role\":\"user\",\"parts\":[");
            }
            write_json(out, &function_response(call_id, name, content, *is_error));
            return;
        }
        if after_result {
            out.extend_from_slice(b"]}");
        }
        if before.is_some() {
            out.extend_from_slice(b",");
        }
        write_json(out, &self.content(message, skip_signature));
    }

    /// A user or assistant message as a Gemini content.
    fn content(&self, message: &Message, skip_signature: bool) -> Value {
        match message {
            Message::Assistant { text, tool_calls } => {
                let mut parts = Vec::new();
                if !text.is_empty() {
                    parts.push(json!({"text": text}));
                }
                for (i, c) in tool_calls.iter().enumerate() {
                    let mut call = json!({"name": c.name, "args": arguments_object(&c.arguments)});
                    if !c.id.starts_with(SYNTHETIC_ID) {
                        call["id"] = json!(c.id);
                    }
                    let mut part = json!({"functionCall": call});
                    // Of parallel calls only the first carries a signature.
                    let signature = self
                        .signature(&c.id)
                        .or_else(|| (i == 0 && skip_signature).then(|| SKIP_SIGNATURE.into()));
                    if let Some(s) = signature {
                        part["thoughtSignature"] = json!(s);
                    }
                    parts.push(part);
                }
                json!({"role": "model", "parts": parts})
            }
            Message::User { text } => json!({"role": "user", "parts": [{"text": text}]}),
            // Never asked: `wire_item` writes these itself.
            Message::System { .. } | Message::ToolResult { .. } => Value::Null,
        }
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let url = format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            self.base_url,
            model_name(&request.model)
        );
        let body = self.body(request);
        let response = wire::post_json(
            &self.client,
            self.retry,
            &wire::Endpoint::new(&url, ""),
            body,
            Auth::Header("x-goog-api-key", self.api_key.as_deref()),
            &[],
        )
        .await?;
        let mut text = String::new();
        let mut calls: Vec<ToolCall> = Vec::new();
        let mut stop = StopReason::Other;
        let mut usage = Usage::default();
        wire::each_payload(response, Framing::Sse, |data| {
            let Ok(event) = serde_json::from_str::<Value>(data) else {
                return Ok(Flow::Continue);
            };
            if let Some(error) = event.get("error") {
                let msg = error["message"].as_str().unwrap_or("unknown error");
                return Err(ProviderError::Stream(msg.to_string()));
            }
            if let Some(u) = event.get("usageMetadata").filter(|u| u.is_object()) {
                // Counts are running totals: the last event's are the response's.
                let count = |k: &str| u.get(k).and_then(Value::as_u64).unwrap_or(0);
                usage = Usage {
                    input_tokens: count("promptTokenCount"),
                    // Thinking is billed as output.
                    output_tokens: count("candidatesTokenCount") + count("thoughtsTokenCount"),
                    cache_read_tokens: count("cachedContentTokenCount"),
                    cache_write_tokens: 0,
                };
            }
            let Some(candidate) = at(&event, "/candidates/0") else {
                return Ok(Flow::Continue);
            };
            for part in at(candidate, "/content/parts")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
            {
                if let Some(call) = part.get("functionCall") {
                    let id = match call.get("id").and_then(Value::as_str) {
                        Some(id) if !id.is_empty() => id.to_string(),
                        _ => {
                            let n = self.next_id.fetch_add(1, Ordering::Relaxed);
                            format!("{SYNTHETIC_ID}{n}")
                        }
                    };
                    if let Some(s) = part.get("thoughtSignature").and_then(Value::as_str) {
                        self.remember_signature(&id, s);
                    }
                    let args = call.get("args").cloned().unwrap_or_else(|| json!({}));
                    calls.push(ToolCall {
                        id,
                        name: call["name"].as_str().unwrap_or_default().to_string(),
                        arguments: args.to_string(),
                    });
                } else if let Some(t) = part.get("text").and_then(Value::as_str) {
                    // Thought summaries are not part of the answer.
                    if part.get("thought") != Some(&Value::Bool(true)) {
                        request.emit_text(t);
                        text.push_str(t);
                    }
                }
            }
            if let Some(reason) = candidate.get("finishReason").and_then(Value::as_str) {
                stop = match reason {
                    "STOP" => StopReason::EndTurn,
                    "MAX_TOKENS" => StopReason::MaxTokens,
                    _ => StopReason::Other,
                };
            }
            Ok(Flow::Continue)
        })
        .await?;
        // Gemini ends a turn with calls as STOP.
        if !calls.is_empty() {
            stop = StopReason::ToolUse;
        }
        Ok(ModelResponse {
            text,
            tool_calls: calls,
            stop,
            usage,
        })
    }
}

/// The model id without the `models/` prefix the API's own listings use.
fn model_name(model: &str) -> &str {
    model.strip_prefix("models/").unwrap_or(model)
}

/// A call's arguments as the object Gemini wants (`args` is a Struct, never a string).
fn arguments_object(arguments: &str) -> Value {
    match serde_json::from_str::<Value>(arguments) {
        Ok(v @ Value::Object(_)) => v,
        _ => Value::Object(Map::new()),
    }
}

impl Provider for Gemini {
    fn complete(
        &self,
        request: &ModelRequest,
    ) -> impl Future<Output = Result<ModelResponse, ProviderError>> + Send {
        self.send(request)
    }
}

/// Whether `message` writes anything into `contents`.
fn writes(message: &Message) -> bool {
    match message {
        Message::System { .. } => false,
        Message::Assistant { text, tool_calls } => !text.is_empty() || !tool_calls.is_empty(),
        Message::User { .. } | Message::ToolResult { .. } => true,
    }
}

/// The last of `messages` that wrote anything.
fn last_written(messages: &[Message]) -> Option<&Message> {
    messages.iter().rfind(|m| writes(m))
}

/// A tool's result as a `functionResponse` part.
fn function_response(call_id: &str, name: &str, content: &str, is_error: bool) -> Value {
    let response = if is_error {
        json!({"error": content})
    } else {
        json!({"content": content})
    };
    let mut result = json!({"name": name, "response": response});
    if !call_id.starts_with(SYNTHETIC_ID) {
        result["id"] = json!(call_id);
    }
    json!({"functionResponse": result})
}

/// The tools as Gemini declares them: each schema lowered to its dialect.
fn declarations(tools: &[ToolSpec]) -> Value {
    let declarations: Vec<Value> = tools
        .iter()
        .map(|t| {
            let mut d = json!({"name": t.name, "description": t.description});
            let parameters = lower(&t.input_schema, Dialect::Gemini);
            // Gemini rejects an object schema with no properties: a tool without
            // parameters declares none.
            if parameters["properties"]
                .as_object()
                .is_some_and(|p| !p.is_empty())
            {
                d["parameters"] = parameters;
            }
            d
        })
        .collect();
    json!([{"functionDeclarations": declarations}])
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The body extended step by step is, at every step, the one the whole history makes.
    #[test]
    fn extended_bodies_are_the_bodies_encoded_afresh() {
        let client = crate::http::ModelClient::new(std::time::Duration::from_secs(1));
        let gemini = Gemini::new(client, "http://127.0.0.1:1", None);
        gemini.remember_signature("b", "sig-b");
        for model in ["gemini-3-pro", "gemini-2.5-flash"] {
            let gemini = gemini.clone();
            crate::body::assert_extends_as_afresh(
                |sent, request| {
                    let _ = sent;
                    let mut request = request.clone();
                    request.model = model.into();
                    gemini.body(&request)
                },
                |request| {
                    let mut request = request.clone();
                    request.model = model.into();
                    encoded_afresh(&gemini, &request)
                },
            );
        }
    }

    fn encoded_afresh(gemini: &Gemini, request: &ModelRequest) -> Value {
        let this = gemini;
        // Models before Gemini 3 never required signatures; do not send them a made-up one.
        let skip_signature = !["gemini-1", "gemini-2"]
            .iter()
            .any(|old| model_name(&request.model).starts_with(old));
        let mut system = Vec::new();
        let mut contents: Vec<Value> = Vec::new();
        for m in request.messages.iter() {
            match m {
                Message::System { text } => system.push(json!({"text": text})),
                Message::User { text } => {
                    contents.push(json!({"role": "user", "parts": [{"text": text}]}));
                }
                Message::Assistant { .. } => {
                    let content = this.content(m, skip_signature);
                    // Gemini rejects a content without parts.
                    if content["parts"].as_array().is_some_and(|p| !p.is_empty()) {
                        contents.push(content);
                    }
                }
                Message::ToolResult {
                    call_id,
                    name,
                    content,
                    is_error,
                } => {
                    let part = function_response(call_id, name, content, *is_error);
                    // The results of one step go back together, as one content.
                    match contents.last_mut() {
                        Some(last)
                            if last["role"] == "user"
                                && last["parts"][0].get("functionResponse").is_some() =>
                        {
                            if let Some(parts) = last["parts"].as_array_mut() {
                                parts.push(part);
                            }
                        }
                        _ => contents.push(json!({"role": "user", "parts": [part]})),
                    }
                }
            }
        }
        let mut body = json!({"contents": contents});
        if !system.is_empty() {
            body["systemInstruction"] = json!({"parts": system});
        }
        if !request.tools.is_empty() {
            body["tools"] = declarations(&request.tools);
        }
        body
    }

    /// Signatures as long as an event allows are kept to their byte limit, however many.
    #[test]
    fn remembered_signatures_are_bounded_in_bytes() {
        let client = crate::http::ModelClient::new(std::time::Duration::from_secs(1));
        let gemini = Gemini::new(client, "http://127.0.0.1:1", None);
        let long = "s".repeat(4 << 20);
        for i in 0..40 {
            gemini.remember_signature(&format!("c{i}"), &long);
        }
        let kept = gemini.signatures.lock().unwrap();
        let map = &kept.map;
        let bytes: usize = map.values().map(String::len).sum();
        assert_eq!(bytes, kept.bytes);
        assert!(bytes <= MAX_SIGNATURE_BYTES, "{bytes}");
        assert!(map.contains_key("c39"), "the newest is kept");
    }
}
