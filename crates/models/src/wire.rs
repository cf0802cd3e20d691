//! What every provider client does the same way: POST a JSON body with the provider's kind
//! of key (retried as `retry.rs` says), then read the streamed answer as SSE `data` payloads
//! or NDJSON lines, each handed to the provider's own parser until it says stop.

use crate::lowering::{Dialect, lower};
use crate::ndjson::NdjsonParser;
use crate::retry::{self, Retry};
use crate::sse::SseParser;
use crate::types::ProviderError;
use crate::types::ToolSpec;
use futures::StreamExt;
use serde_json::{Value, json};

/// What `value.pointer(path)` finds, for a path written in this crate (no `~` escapes),
/// without the two strings serde_json allocates for every segment of it: a stream reads a
/// few paths from every event it receives.
pub(crate) fn at<'v>(value: &'v Value, path: &'static str) -> Option<&'v Value> {
    let mut found = value;
    for segment in path.split('/').skip(1) {
        found = match found {
            Value::Object(map) => map.get(segment)?,
            // As `pointer` reads an index: digits only, no leading zero.
            Value::Array(items) => {
                let digits = segment.bytes().all(|b| b.is_ascii_digit());
                if !digits || (segment.len() > 1 && segment.starts_with('0')) {
                    return None;
                }
                items.get(segment.parse::<usize>().ok()?)?
            }
            _ => return None,
        };
    }
    Some(found)
}

/// How a provider takes its key.
#[derive(Clone, Copy)]
pub(crate) enum Auth<'a> {
    /// `Authorization: Bearer KEY`.
    Bearer(Option<&'a str>),
    /// A header of its own (`x-api-key`, `x-goog-api-key`).
    Header(&'static str, Option<&'a str>),
}

/// Where a provider posts, parsed once: reqwest parses a URL given as text at every request.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    text: String,
    /// `None`: not a URL; each request then fails with reqwest's own account of why.
    url: Option<reqwest::Url>,
}

impl Endpoint {
    pub(crate) fn new(base_url: &str, path: &str) -> Self {
        let text = format!("{base_url}{path}");
        let url = reqwest::Url::parse(&text).ok();
        Self { text, url }
    }
}

/// Sends `body` to `url` and returns the (successful) streaming response.
pub(crate) async fn post(
    client: &reqwest::Client,
    retry: Retry,
    url: &str,
    body: &Value,
    auth: Auth<'_>,
    headers: &[(&'static str, &'static str)],
) -> Result<reqwest::Response, ProviderError> {
    let bytes = serde_json::to_vec(body).map_err(|e| ProviderError::Stream(e.to_string()))?;
    let endpoint = Endpoint::new(url, "");
    post_json(client, retry, &endpoint, bytes.into(), auth, headers).await
}

/// Sends an already serialised JSON body (serialised once, whatever the retries).
pub(crate) async fn post_json(
    client: &reqwest::Client,
    retry: Retry,
    endpoint: &Endpoint,
    body: bytes::Bytes,
    auth: Auth<'_>,
    headers: &[(&'static str, &'static str)],
) -> Result<reqwest::Response, ProviderError> {
    let build = || {
        let req = match &endpoint.url {
            Some(url) => client.post(url.clone()),
            None => client.post(endpoint.text.as_str()),
        };
        let mut req = req
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(body.clone());
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        match auth {
            Auth::Bearer(Some(key)) => req.bearer_auth(key),
            Auth::Header(name, Some(key)) => req.header(name, key),
            Auth::Bearer(None) | Auth::Header(_, None) => req,
        }
    };
    retry::send(retry, &endpoint.text, build).await
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Framing {
    Sse,
    Ndjson,
}

/// What a payload handler wants next.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Flow {
    Continue,
    Stop,
}

/// Hands each payload of the stream to `each` until the stream ends or `each` says stop.
pub(crate) async fn each_payload(
    response: reqwest::Response,
    framing: Framing,
    mut each: impl FnMut(&str) -> Result<Flow, ProviderError>,
) -> Result<(), ProviderError> {
    let mut stream = response.bytes_stream();
    let mut sse = SseParser::default();
    let mut ndjson = NdjsonParser::default();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| ProviderError::Stream(e.to_string()))?;
        let payloads = match framing {
            Framing::Sse => sse.feed(&chunk),
            Framing::Ndjson => ndjson.feed(&chunk),
        }
        .map_err(ProviderError::Stream)?;
        for payload in payloads {
            if each(&payload)? == Flow::Stop {
                return Ok(());
            }
        }
    }
    // NDJSON may end without a newline after its last line.
    if let Some(last) = ndjson.finish() {
        each(&last)?;
    }
    Ok(())
}

/// Tools in the OpenAI function shape that Chat Completions and Ollama share, with schemas
/// lowered for `dialect`.
pub(crate) fn function_tools(tools: &[ToolSpec], dialect: Dialect) -> Value {
    tools.iter().map(|t| function_tool(t, dialect)).collect()
}

pub(crate) fn function_tool(t: &ToolSpec, dialect: Dialect) -> Value {
    json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": lower(&t.input_schema, dialect)}})
}

#[cfg(test)]
mod at_tests {
    use super::*;

    /// `at` finds what serde_json's `pointer` finds, for the paths the providers read.
    #[test]
    fn at_agrees_with_pointer() {
        let event = json!({"choices": [{"delta": {"content": "hi", "tool_calls": [
            {"function": {"name": "f", "arguments": "{}"}}]}}], "usage": {"prompt_tokens": 3},
            "list": [1, 2], "n": 1});
        for path in [
            "/choices/0",
            "/choices/0/delta/content",
            "/choices/0/delta/tool_calls/0/function/name",
            "/choices/1",
            "/choices/x",
            "/usage/prompt_tokens",
            "/usage/missing",
            "/list/1",
            "/list/01",
            "/list/-1",
            "/n/0",
            "",
        ] {
            assert_eq!(at(&event, path), event.pointer(path), "{path}");
        }
    }
}
