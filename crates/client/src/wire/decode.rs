//! Decoding one line of the stdio wire: the general path through rmcp's types, with the
//! envelope checks that name why a line is refused, and the fast paths for the answers a
//! requester waits on (a `tools/call` result read straight into its type, a listing page
//! kept as the JSON the server wrote), tried only while such an answer is awaited.

use super::MAX_MESSAGE_DEPTH;
use rmcp::model::{
    CallToolResult, JsonRpcMessage, JsonRpcResponse, JsonRpcVersion2_0, RequestId, ServerResult,
};
use rmcp::service::{RoleClient, RxJsonRpcMessage};
use serde::Deserialize;
use serde::de::IgnoredAny;
use serde_json::Value;
use serde_json::value::RawValue;

/// What a line turned out to be.
#[derive(Debug)]
pub(crate) enum Decoded {
    Message(Box<RxJsonRpcMessage<RoleClient>>),
    /// Meant as a response to `id`, but unusable: that request fails with `reason`.
    BadResponse {
        id: RequestId,
        reason: String,
    },
    /// A request from the server that cannot be served; `id: None` is answered with
    /// `"id": null` because the id itself is invalid.
    BadRequest {
        id: Option<RequestId>,
        reason: String,
    },
    /// Nothing to answer or fail (stdout noise, a broken notification, a response to no
    /// valid id).
    Ignored(String),
}

/// The envelope of a message that did not decode, read without interpreting its contents
/// (ignored values are skipped without a recursion limit or string validation, so the id
/// can be recovered from a line that is otherwise broken).
#[derive(Deserialize)]
pub(super) struct Head {
    #[serde(default, deserialize_with = "present")]
    jsonrpc: Option<Value>,
    #[serde(default, deserialize_with = "present")]
    id: Option<Value>,
    #[serde(default, deserialize_with = "present_any")]
    method: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present_any")]
    result: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present_any")]
    error: Option<IgnoredAny>,
}

/// The id a response answers (a message without `method`, with a string or integer id),
/// read without decoding the rest; `None` for anything else, and for what does not parse
/// (no request has such an id, so it can answer none).
pub(crate) fn answered_id(text: &str) -> Option<RequestId> {
    let head: Head = serde_json::from_str(text).ok()?;
    match (head.method, head.id) {
        (None, Some(id)) => serde_json::from_value(id).ok(),
        _ => None,
    }
}

/// A member that is there, even as `null` (`Option` alone reads `null` as absent).
pub(super) fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

pub(super) fn present_any<'de, D: serde::Deserializer<'de>>(
    d: D,
) -> Result<Option<IgnoredAny>, D::Error> {
    IgnoredAny::deserialize(d).map(Some)
}

/// JSON-RPC ids in MCP are strings or integers, never null, fractions or structures.
pub(super) fn valid_id(v: &Value) -> Option<RequestId> {
    match v {
        Value::String(s) => Some(RequestId::String(s.as_str().into())),
        Value::Number(n) => n.as_i64().map(RequestId::Number),
        _ => None,
    }
}

/// What one string-aware pass over a line finds (brackets and escapes inside strings are
/// not structure): how deeply arrays and objects nest, and whether a string has a
/// `\uD800`–`\uDFFF` escape.
pub(super) struct Scan {
    depth: usize,
    surrogate_escape: bool,
}

pub(super) fn scan(line: &[u8]) -> Scan {
    let (mut depth, mut max, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    let mut surrogate_escape = false;
    for (i, &b) in line.iter().enumerate() {
        if in_string {
            match (escaped, b) {
                (true, b'u') => {
                    let hex = line.get(i + 1..i + 3).unwrap_or_default();
                    surrogate_escape |=
                        matches!(hex, [b'd' | b'D', b'8'..=b'9' | b'a'..=b'f' | b'A'..=b'F']);
                    escaped = false;
                }
                (true, _) => escaped = false,
                (false, b'\\') => escaped = true,
                (false, b'"') => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                max = max.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    Scan {
        depth: max,
        surrogate_escape,
    }
}

/// How deeply arrays and objects nest in `line`, not counting brackets inside strings.
pub(crate) fn nesting_depth(line: &[u8]) -> usize {
    scan(line).depth
}

/// Whether skipping `line`'s values checks all that reading them would: nested no deeper
/// than [`MAX_MESSAGE_DEPTH`], and no `\uD800`–`\uDFFF` escape (a valid pair sends the line
/// the general way too, which reads it as before).
pub(super) fn reads_like_skipped(line: &[u8]) -> bool {
    let found = scan(line);
    found.depth <= MAX_MESSAGE_DEPTH && !found.surrogate_escape
}

/// A response read as its envelope and its result's text, for [`decode_call_result`].
#[derive(Deserialize)]
pub(super) struct ResultEnvelope<'a> {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    #[serde(borrow)]
    result: &'a RawValue,
    #[serde(default, deserialize_with = "present_any")]
    method: Option<IgnoredAny>,
    #[serde(default, deserialize_with = "present_any")]
    error: Option<IgnoredAny>,
}

/// The most common answer of all: a response whose result has only text blocks and perhaps
/// `isError`, read without the buffering that rmcp's tagged content blocks cost (each block
/// is read twice there). Any other member, here or in the result, any other kind of block,
/// or a block with more than its type and text fails this, and the line is read by rmcp's
/// own types as before.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlainTextResponse {
    jsonrpc: JsonRpcVersion2_0,
    id: RequestId,
    result: PlainTextResult,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlainTextResult {
    content: Vec<PlainText>,
    #[serde(rename = "isError")]
    is_error: Option<bool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct PlainText {
    #[serde(rename = "type")]
    _kind: TextKind,
    text: String,
}

#[derive(Deserialize)]
pub(super) enum TextKind {
    #[serde(rename = "text")]
    Text,
}

impl PlainTextResult {
    /// What rmcp's types read from the same result: no `resultType`, no structured
    /// content, no `_meta`.
    fn into_result(self) -> CallToolResult {
        let content = self
            .content
            .into_iter()
            .map(|t| rmcp::model::ContentBlock::text(t.text))
            .collect();
        let mut result = CallToolResult::success(content);
        result.result_type = None;
        result.is_error = self.is_error;
        result
    }
}

/// The members of a `tools/call` result, looked at only to see whether it starts a task.
#[derive(Deserialize)]
pub(super) struct CallResultKeys {
    #[serde(default, deserialize_with = "present_any")]
    task: Option<IgnoredAny>,
}

/// The answer to a `tools/call` or a listing decoded straight into what its requester
/// uses. rmcp's own path buffers the message and tries every kind of result in turn until
/// one fits (`CallToolResult` is the sixteenth), building and dropping an error for each:
/// most of a call's decoding, and of a listing's. `None` sends the line the general way,
/// which then decides exactly as before.
pub(super) fn decode_awaited(
    line: &[u8],
    expecting: Expecting,
    awaited: impl FnOnce(&RequestId) -> Awaited,
) -> Option<RxJsonRpcMessage<RoleClient>> {
    // With no call or listing awaited (a handshake, a start's other requests), no line can
    // be one's answer: tried as one anyway, an `initialize` answer was read three times.
    if !expecting.calls && !expecting.listings {
        return None;
    }
    // The common answer in one pass, which reads every byte of the line as the general
    // path would (nothing is skipped): any other line fails at its first other member.
    if expecting.calls
        && let Ok(plain) = serde_json::from_slice::<PlainTextResponse>(line)
    {
        if awaited(&plain.id) != Awaited::Call {
            return None;
        }
        return Some(JsonRpcMessage::Response(JsonRpcResponse {
            jsonrpc: plain.jsonrpc,
            id: plain.id,
            result: ServerResult::CallToolResult(plain.result.into_result()),
        }));
    }
    // The envelope first, so any other line (a notification, a server's request) costs one
    // skimming pass here and nothing more.
    let envelope: ResultEnvelope = serde_json::from_slice(line).ok()?;
    if envelope.method.is_some() || envelope.error.is_some() {
        return None;
    }
    let result = match awaited(&envelope.id) {
        Awaited::Call => ServerResult::CallToolResult(decode_call_result(line, &envelope)?),
        Awaited::Listing => ServerResult::CustomResult(decode_listing(line)?),
        Awaited::Other => return None,
    };
    Some(JsonRpcMessage::Response(JsonRpcResponse {
        jsonrpc: envelope.jsonrpc,
        id: envelope.id,
        result,
    }))
}

/// A `tools/call` result, unless it is one the general path must judge: one that starts a
/// task (`task`), or one `CallToolResult` refuses (an `input_required` round, no known
/// member).
pub(super) fn decode_call_result(
    line: &[u8],
    envelope: &ResultEnvelope<'_>,
) -> Option<CallToolResult> {
    // serde_json checks less in a value it skips (here: the envelope's other members, and
    // the result's beyond `CallToolResult`'s) than in one it reads: no depth limit, no UTF-8
    // check, lone surrogates let through. The general path reads every value, so what it
    // would refuse for those reasons is left to it.
    if std::str::from_utf8(line).is_err() || !reads_like_skipped(line) {
        return None;
    }
    let keys: CallResultKeys = serde_json::from_str(envelope.result.get()).ok()?;
    if keys.task.is_some() {
        return None;
    }
    serde_json::from_str(envelope.result.get()).ok()
}

/// A listing page exactly as the server wrote it, read in full (so with every check the
/// general path makes), for the lenient decoder, which reads it from JSON anyway: rmcp's
/// types would only be turned back into JSON for it. A page with any member beside the
/// envelope's three, a result that is not an object, or one whose `resultType` is not
/// `complete` goes the general way.
pub(super) fn decode_listing(line: &[u8]) -> Option<rmcp::model::CustomResult> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct ListingResponse {
        #[serde(rename = "jsonrpc")]
        _jsonrpc: JsonRpcVersion2_0,
        #[serde(rename = "id")]
        _id: RequestId,
        result: serde_json::Map<String, Value>,
    }
    let page: ListingResponse = serde_json::from_slice(line).ok()?;
    match page.result.get("resultType") {
        None => {}
        Some(Value::String(kind)) if kind == "complete" => {}
        Some(_) => return None,
    }
    Some(rmcp::model::CustomResult(Value::Object(page.result)))
}

/// Decodes one line (without its newline). `awaited` says what a pending request is: the
/// answer to a `tools/call` or a listing takes its own path ([`decode_awaited`]).
pub(crate) fn decode(
    line: &[u8],
    expecting: Expecting,
    awaited: impl FnOnce(&RequestId) -> Awaited,
) -> Decoded {
    let line = line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line);
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    if line.iter().all(u8::is_ascii_whitespace) {
        return Decoded::Ignored("empty line".into());
    }
    if let Some(msg) = decode_awaited(line, expecting, awaited) {
        return Decoded::Message(Box::new(msg));
    }
    let failure = match serde_json::from_slice::<RxJsonRpcMessage<RoleClient>>(line) {
        Ok(msg) => return Decoded::Message(Box::new(msg)),
        Err(_) if nesting_depth(line) > MAX_MESSAGE_DEPTH => {
            format!("the message is nested deeper than {MAX_MESSAGE_DEPTH} levels")
        }
        Err(e) => format!("it does not decode ({e})"),
    };
    let Ok(head) = serde_json::from_slice::<Head>(line) else {
        return Decoded::Ignored(format!("not a JSON-RPC message ({failure})"));
    };
    let reason = envelope_problem(&head).unwrap_or(failure);
    let id = head.id.as_ref().map(valid_id);
    match (head.method.is_some(), id) {
        (true, Some(Some(id))) => Decoded::BadRequest {
            id: Some(id),
            reason,
        },
        (true, Some(None)) => Decoded::BadRequest {
            id: None,
            reason: "the request id is not a string or an integer".into(),
        },
        (false, Some(Some(id))) => Decoded::BadResponse { id, reason },
        (_, _) => Decoded::Ignored(reason),
    }
}

/// What is wrong with a message's envelope, if anything is.
pub(super) fn envelope_problem(head: &Head) -> Option<String> {
    match &head.jsonrpc {
        Some(Value::String(v)) if v == "2.0" => {}
        Some(other) => return Some(format!("`jsonrpc` is {other}, not \"2.0\"")),
        None => return Some("the `jsonrpc` member is missing".into()),
    }
    if head.method.is_some() {
        return None;
    }
    match (head.result.is_some(), head.error.is_some()) {
        (true, true) => Some("the response has both `result` and `error`".into()),
        (false, false) => Some("the response has neither `result` nor `error`".into()),
        _ => None,
    }
}

/// What an awaited answer answers, which decides how it is decoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Awaited {
    /// A `tools/call`: decoded straight into its type ([`decode_call_result`]).
    Call,
    /// A page of `tools/list`, `prompts/list`, `resources/list` or
    /// `resources/templates/list`: kept as JSON for the lenient decoder
    /// ([`decode_listing`]).
    Listing,
    /// Anything else, or nothing: rmcp's types decide.
    Other,
}

/// Which kinds of answer some request still awaits: a line is tried as one only then.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Expecting {
    pub(crate) calls: bool,
    pub(crate) listings: bool,
}

impl Expecting {
    /// Every kind: each line is tried as each.
    #[cfg(test)]
    pub(crate) const ANY: Self = Self {
        calls: true,
        listings: true,
    };
}
