//! OpenAI Responses API with streaming (`POST {base}/responses`, `stream: true`, SSE). The
//! conversation goes as `input` items: messages, `function_call` items for the model's
//! calls and `function_call_output` items for their results; the system prompt goes as
//! `instructions`. Events are typed `response.*`: text arrives as `output_text.delta`, a
//! call as an `output_item.added` (keyed by `output_index`) followed by argument deltas
//! and a `done` with the full arguments. We keep no state on the server (`store: false`):
//! every request carries the whole history, as with the other providers.

use crate::body::{Sent, close_with_tools, head, write_json};
use crate::lowering::{Dialect, lower};
use crate::retry::Retry;
use crate::types::{
    Message, ModelRequest, ModelResponse, Provider, ProviderError, StopReason, ToolCall, Usage,
};
use crate::wire::{self, Flow, Framing, at};
use bytes::{Bytes, BytesMut};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::future::Future;

#[derive(Clone, Debug)]
pub struct OpenAiResponses {
    client: crate::http::ModelClient,
    endpoint: wire::Endpoint,
    api_key: Option<String>,
    pub retry: Retry,
    /// The last request's body, which the next step extends.
    sent: std::sync::Arc<Sent>,
}

/// A function call being streamed: the item id links argument deltas that name no index.
#[derive(Default)]
struct Call {
    item_id: String,
    call_id: String,
    name: String,
    arguments: String,
}

impl OpenAiResponses {
    pub fn new(client: crate::http::ModelClient, base_url: &str, api_key: Option<String>) -> Self {
        Self {
            client,
            endpoint: wire::Endpoint::new(base_url.trim_end_matches('/'), "/responses"),
            api_key,
            retry: Retry::default(),
            sent: std::sync::Arc::default(),
        }
    }

    /// The request's JSON: the last step's body with the messages added since. The system
    /// messages are the `instructions`; every other message is one or more `input` items.
    fn body(sent: &Sent, request: &ModelRequest) -> Bytes {
        let instructions: Vec<&str> = (request.messages.iter())
            .filter_map(|m| match m {
                Message::System { text } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        let mut fields = json!({"model": request.model, "stream": true, "store": false});
        if !instructions.is_empty() {
            fields["instructions"] = json!(instructions.join("\n\n"));
        }
        let head = head(&fields, "input");
        let tail = |out: &mut BytesMut| {
            let tools = (!request.tools.is_empty()).then(|| sent.tools.get(&request.tools, tools));
            close_with_tools(out, tools.as_deref());
        };
        sent.body
            .body(&head, &request.messages, request.reuse, wire_items, tail)
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
        let mut calls: BTreeMap<u64, Call> = BTreeMap::new();
        // Which call each item id is, for argument events that name no index: looked up, not
        // searched, as the stream's calls and events are the endpoint's to multiply.
        let mut by_item: HashMap<String, u64> = HashMap::new();
        let mut stop = None;
        let mut usage = Usage::default();
        wire::each_payload(response, Framing::Sse, |data| {
            let Ok(event) = serde_json::from_str::<Value>(data) else {
                return Ok(Flow::Continue);
            };
            let kind = event
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            match kind {
                "response.output_text.delta" => {
                    if let Some(t) = event.get("delta").and_then(Value::as_str) {
                        request.emit_text(t);
                        text.push_str(t);
                    }
                }
                "response.output_item.added" | "response.output_item.done" => {
                    let item = &event["item"];
                    if item["type"] != "function_call" {
                        return Ok(Flow::Continue);
                    }
                    let index = output_index(&event, &calls);
                    let call = calls.entry(index).or_default();
                    if let Some(id) = item.get("id").and_then(Value::as_str) {
                        call.item_id = id.to_string();
                        by_item.entry(call.item_id.clone()).or_insert(index);
                    }
                    if let Some(id) = item.get("call_id").and_then(Value::as_str) {
                        call.call_id = id.to_string();
                    }
                    if let Some(n) = item.get("name").and_then(Value::as_str) {
                        call.name = n.to_string();
                    }
                    // `added` carries "" and `done` the full text; either is the truth
                    // so far, unless it is empty and deltas already came.
                    if let Some(a) = item.get("arguments").and_then(Value::as_str)
                        && !a.is_empty()
                    {
                        call.arguments = a.to_string();
                    }
                }
                "response.function_call_arguments.delta"
                | "response.function_call_arguments.done" => {
                    let Some(call) = find_call(&event, &mut calls, &by_item) else {
                        return Ok(Flow::Continue);
                    };
                    if let Some(d) = event.get("delta").and_then(Value::as_str) {
                        call.arguments.push_str(d);
                    }
                    if let Some(a) = event.get("arguments").and_then(Value::as_str) {
                        call.arguments = a.to_string();
                    }
                }
                "response.completed" => {
                    usage = read_usage(&event["response"]["usage"]);
                    stop = Some(StopReason::EndTurn);
                    return Ok(Flow::Stop);
                }
                "response.incomplete" => {
                    let r = &event["response"];
                    usage = read_usage(&r["usage"]);
                    stop = Some(match at(r, "/incomplete_details/reason") {
                        Some(reason) if reason == "max_output_tokens" => StopReason::MaxTokens,
                        _ => StopReason::Other,
                    });
                    return Ok(Flow::Stop);
                }
                "response.failed" | "error" => {
                    return Err(ProviderError::Stream(error_message(&event)));
                }
                _ => {}
            }
            Ok(Flow::Continue)
        })
        .await?;
        let tool_calls: Vec<ToolCall> = calls
            .into_values()
            .enumerate()
            .map(|(i, c)| ToolCall {
                // A call without a call id is answered under its item id, or a made-up one.
                id: [c.call_id, c.item_id]
                    .into_iter()
                    .find(|id| !id.is_empty())
                    .unwrap_or_else(|| format!("call_{i}")),
                name: c.name,
                arguments: c.arguments,
            })
            .collect();
        let stop = match stop {
            Some(StopReason::EndTurn) if !tool_calls.is_empty() => StopReason::ToolUse,
            Some(s) => s,
            // The stream ended without saying how the response ended.
            None => StopReason::Other,
        };
        Ok(ModelResponse {
            text,
            tool_calls,
            stop,
            usage,
        })
    }
}

/// The event's `output_index`, or the next free one when a server leaves it out.
fn output_index(event: &Value, calls: &BTreeMap<u64, Call>) -> u64 {
    event
        .get("output_index")
        .and_then(Value::as_u64)
        .unwrap_or_else(|| calls.keys().next_back().map_or(0, |k| k + 1))
}

/// The call an argument event is about: by `output_index`, else by `item_id`.
fn find_call<'a>(
    event: &Value,
    calls: &'a mut BTreeMap<u64, Call>,
    by_item: &HashMap<String, u64>,
) -> Option<&'a mut Call> {
    if let Some(index) = event.get("output_index").and_then(Value::as_u64) {
        return Some(calls.entry(index).or_default());
    }
    let item_id = event.get("item_id").and_then(Value::as_str)?;
    calls.get_mut(by_item.get(item_id)?)
}

fn read_usage(u: &Value) -> Usage {
    let count = |k: &'static str| at(u, k).and_then(Value::as_u64).unwrap_or(0);
    Usage {
        input_tokens: count("/input_tokens"),
        output_tokens: count("/output_tokens"),
        cache_read_tokens: count("/input_tokens_details/cached_tokens"),
        cache_write_tokens: 0,
    }
}

/// The message of an `error` event (`message` at the top or under `error`) or of a
/// `response.failed` (under `response.error`).
fn error_message(event: &Value) -> String {
    ["/message", "/error/message", "/response/error/message"]
        .iter()
        .find_map(|p| at(event, p).and_then(Value::as_str))
        .unwrap_or("the response failed")
        .to_string()
}

/// The `input` items of message `i`, after a comma unless nothing came before them.
fn wire_items(messages: &[Message], i: usize, out: &mut BytesMut) {
    let mut first = !messages[..i].iter().any(has_items);
    for item in items(&messages[i]) {
        if !first {
            out.extend_from_slice(b",");
        }
        first = false;
        write_json(out, &item);
    }
}

/// Whether a message becomes any `input` item (system messages are the instructions; an
/// assistant message with neither text nor calls is nothing).
fn has_items(message: &Message) -> bool {
    match message {
        Message::System { .. } => false,
        Message::Assistant { text, tool_calls } => !text.is_empty() || !tool_calls.is_empty(),
        Message::User { .. } | Message::ToolResult { .. } => true,
    }
}

/// A message as `input` items.
fn items(message: &Message) -> Vec<Value> {
    match message {
        Message::System { .. } => Vec::new(),
        Message::User { text } => vec![
            json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]}),
        ],
        Message::Assistant { text, tool_calls } => {
            let mut items = Vec::new();
            if !text.is_empty() {
                items.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
            }
            for c in tool_calls {
                // The API wants JSON text here; a call the model made with no
                // arguments is sent back as the empty object.
                let arguments = if c.arguments.trim().is_empty() {
                    "{}"
                } else {
                    &c.arguments
                };
                items.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": arguments}));
            }
            items
        }
        // There is no error flag on a function result: the text says so.
        Message::ToolResult {
            call_id,
            content,
            is_error,
            ..
        } => {
            let output = if *is_error {
                format!("ERROR: {content}")
            } else {
                content.clone()
            };
            vec![json!({"type": "function_call_output", "call_id": call_id, "output": output})]
        }
    }
}

/// The tools: function tools are strict by default in this API; our schemas are lowered for
/// the non-strict dialect, so say so.
fn tools(tools: &[crate::types::ToolSpec]) -> Value {
    (tools.iter())
        .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": lower(&t.input_schema, Dialect::OpenAi), "strict": false}))
        .collect()
}

impl Provider for OpenAiResponses {
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
        crate::body::assert_extends_as_afresh(OpenAiResponses::body, encoded_afresh);
    }

    /// The body as it was built before steps extended the last one.
    fn encoded_afresh(request: &ModelRequest) -> Value {
        let mut instructions: Vec<&str> = Vec::new();
        let mut input: Vec<Value> = Vec::new();
        for m in request.messages.iter() {
            match m {
                Message::System { text } => instructions.push(text),
                Message::User { text } => input.push(json!({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})),
                Message::Assistant { text, tool_calls } => {
                    if !text.is_empty() {
                        input.push(json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": text}]}));
                    }
                    for c in tool_calls {
                        // The API wants JSON text here; a call the model made with no
                        // arguments is sent back as the empty object.
                        let arguments = if c.arguments.trim().is_empty() { "{}" } else { &c.arguments };
                        input.push(json!({"type": "function_call", "call_id": c.id, "name": c.name, "arguments": arguments}));
                    }
                }
                // There is no error flag on a function result: the text says so.
                Message::ToolResult {
                    call_id,
                    content,
                    is_error,
                    ..
                } => {
                    let output = if *is_error {
                        format!("ERROR: {content}")
                    } else {
                        content.clone()
                    };
                    input.push(json!({"type": "function_call_output", "call_id": call_id, "output": output}));
                }
            }
        }
        let mut body =
            json!({"model": request.model, "input": input, "stream": true, "store": false});
        if !instructions.is_empty() {
            body["instructions"] = json!(instructions.join("\n\n"));
        }
        if !request.tools.is_empty() {
            // Function tools are strict by default in this API; our schemas are lowered for
            // the non-strict dialect, so say so.
            let tools: Vec<Value> = request
                .tools
                .iter()
                .map(|t| json!({"type": "function", "name": t.name, "description": t.description, "parameters": lower(&t.input_schema, Dialect::OpenAi), "strict": false}))
                .collect();
            body["tools"] = json!(tools);
        }
        body
    }
}
