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

/// How a provider takes its key.
#[derive(Clone, Copy)]
pub(crate) enum Auth<'a> {
    /// `Authorization: Bearer KEY`.
    Bearer(Option<&'a str>),
    /// A header of its own (`x-api-key`, `x-goog-api-key`).
    Header(&'static str, Option<&'a str>),
}

/// [`post`] with a bearer key (when there is one) and no other headers: the OpenAI-style
/// providers and Ollama.
pub(crate) async fn post_bearer(
    client: &reqwest::Client,
    retry: Retry,
    url: &str,
    body: &Value,
    key: Option<&str>,
) -> Result<reqwest::Response, ProviderError> {
    post(client, retry, url, body, Auth::Bearer(key), &[]).await
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
    let build = || {
        let mut req = client.post(url).json(body);
        for (name, value) in headers {
            req = req.header(*name, *value);
        }
        match auth {
            Auth::Bearer(Some(key)) => req.bearer_auth(key),
            Auth::Header(name, Some(key)) => req.header(name, key),
            Auth::Bearer(None) | Auth::Header(_, None) => req,
        }
    };
    retry::send(retry, url, build).await
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
    tools
        .iter()
        .map(|t| json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": lower(&t.input_schema, dialect)}}))
        .collect()
}
