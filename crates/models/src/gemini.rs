//! Google Gemini `streamGenerateContent` with `alt=sse`. Each event is a whole
//! `GenerateContentResponse`: text parts to append, and function calls that arrive whole
//! (never in fragments), usually without ids, so we make ids up. Roles are `user` and
//! `model`; tool results go back as `functionResponse` parts of one `user` content per step.
//! Gemini 3 rejects a replayed function call without the `thoughtSignature` it came with,
//! and our `ToolCall` has no place for one, so the provider remembers signatures by call id
//! (bounded) and, for a call it does not know, sends Google's documented "skip the
//! validator" value instead.

use crate::lowering::{Dialect, lower};
use crate::retry::Retry;
use crate::types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, ToolCall, Usage,
};
use crate::wire::{self, Auth, Flow, Framing, at};
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

#[derive(Clone, Debug)]
pub struct Gemini {
    client: crate::http::ModelClient,
    base_url: String,
    api_key: Option<String>,
    pub retry: Retry,
    /// Thought signatures by call id, shared by clones.
    signatures: Arc<Mutex<HashMap<String, String>>>,
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
            next_id: Arc::default(),
        }
    }

    fn signature(&self, id: &str) -> Option<String> {
        self.signatures.lock().ok()?.get(id).cloned()
    }

    fn remember_signature(&self, id: &str, signature: &str) {
        if let Ok(mut map) = self.signatures.lock() {
            let bytes: usize = map.values().map(String::len).sum::<usize>() + signature.len();
            if map.len() >= MAX_SIGNATURES || bytes > MAX_SIGNATURE_BYTES {
                map.clear();
            }
            map.insert(id.to_string(), signature.to_string());
        }
    }

    fn body(&self, request: &ModelRequest) -> Value {
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
                Message::Assistant { text, tool_calls } => {
                    let mut parts = Vec::new();
                    if !text.is_empty() {
                        parts.push(json!({"text": text}));
                    }
                    for (i, c) in tool_calls.iter().enumerate() {
                        let mut call =
                            json!({"name": c.name, "args": arguments_object(&c.arguments)});
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
                    // Gemini rejects a content without parts.
                    if !parts.is_empty() {
                        contents.push(json!({"role": "model", "parts": parts}));
                    }
                }
                Message::ToolResult {
                    call_id,
                    name,
                    content,
                    is_error,
                } => {
                    let response = if *is_error {
                        json!({"error": content})
                    } else {
                        json!({"content": content})
                    };
                    let mut result = json!({"name": name, "response": response});
                    if !call_id.starts_with(SYNTHETIC_ID) {
                        result["id"] = json!(call_id);
                    }
                    let part = json!({"functionResponse": result});
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
            let declarations: Vec<Value> = request
                .tools
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
            body["tools"] = json!([{"functionDeclarations": declarations}]);
        }
        body
    }

    async fn send(&self, request: &ModelRequest) -> Result<ModelResponse, ProviderError> {
        let url = format!(
            "{}/models/{}:streamGenerateContent?alt=sse",
            self.base_url,
            model_name(&request.model)
        );
        let body = self.body(request);
        let response = wire::post(
            &self.client,
            self.retry,
            &url,
            &body,
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Signatures as long as an event allows are kept to their byte limit, however many.
    #[test]
    fn remembered_signatures_are_bounded_in_bytes() {
        let client = crate::http::ModelClient::new(std::time::Duration::from_secs(1));
        let gemini = Gemini::new(client, "http://127.0.0.1:1", None);
        let long = "s".repeat(4 << 20);
        for i in 0..40 {
            gemini.remember_signature(&format!("c{i}"), &long);
        }
        let map = gemini.signatures.lock().unwrap();
        let bytes: usize = map.values().map(String::len).sum();
        assert!(bytes <= MAX_SIGNATURE_BYTES, "{bytes}");
        assert!(map.contains_key("c39"), "the newest is kept");
    }
}
