//! What every provider client does the same way: POST a JSON body with the provider's kind
//! of key (retried as `retry.rs` says), then read the streamed answer as SSE `data` payloads
//! or NDJSON lines, each handed to the provider's own parser until it says stop.

use crate::http::{ModelClient, Response, Target};
use crate::lowering::{Dialect, lower};
use crate::ndjson::NdjsonParser;
use crate::retry::{self, Retry};
use crate::sse::SseParser;
use crate::types::ProviderError;
use crate::types::ToolSpec;
use http::header::{AUTHORIZATION, HeaderName, HeaderValue};
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

/// Where a provider posts, parsed once.
#[derive(Clone, Debug)]
pub(crate) struct Endpoint {
    text: String,
    /// `Err`: not a URL the client can post to; each request then fails with why.
    target: Result<Target, String>,
}

impl Endpoint {
    pub(crate) fn new(base_url: &str, path: &str) -> Self {
        let url = format!("{base_url}{path}");
        let target = Target::parse(&url);
        // Errors quote the endpoint: without a password or key its URL may carry.
        let text = mcp_host_core::redact::url(&url).into_owned();
        Self { text, target }
    }
}

/// Sends an already serialised JSON body (serialised once, whatever the retries).
pub(crate) async fn post_json(
    client: &ModelClient,
    retry: Retry,
    endpoint: &Endpoint,
    body: bytes::Bytes,
    auth: Auth<'_>,
    headers: &[(&'static str, &'static str)],
) -> Result<Response, ProviderError> {
    let unreachable = |detail: String| ProviderError::Unreachable {
        url: endpoint.text.clone(),
        detail,
    };
    let target = endpoint
        .target
        .as_ref()
        .map_err(|e| unreachable(e.clone()))?;
    let mut all = Vec::with_capacity(headers.len() + 1);
    for (name, value) in headers {
        all.push((
            HeaderName::from_static(name),
            HeaderValue::from_static(value),
        ));
    }
    let key = match auth {
        Auth::Bearer(Some(key)) => Some((AUTHORIZATION, format!("Bearer {key}"))),
        Auth::Header(name, Some(key)) => Some((HeaderName::from_static(name), key.to_string())),
        Auth::Bearer(None) | Auth::Header(_, None) => None,
    };
    if let Some((name, value)) = key {
        let mut value = HeaderValue::try_from(value).map_err(|_| {
            unreachable("the API key has characters an HTTP header cannot carry".into())
        })?;
        value.set_sensitive(true);
        all.push((name, value));
    }
    retry::send(retry, &endpoint.text, || {
        client.post_json(target, &all, body.clone())
    })
    .await
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

/// The most one response's stream may carry. Each event is bounded by the readers, but the
/// text and call arguments a provider collects from them were not: an endpoint that never
/// ended its stream (hostile, or a gateway stuck in a loop) filled the host's memory. A real
/// response, images included, is a few megabytes.
pub const MAX_RESPONSE_BYTES: usize = 64 * 1024 * 1024;

/// Hands each payload of the stream to `each` until the stream ends or `each` says stop.
pub(crate) async fn each_payload(
    response: Response,
    framing: Framing,
    mut each: impl FnMut(&str) -> Result<Flow, ProviderError>,
) -> Result<(), ProviderError> {
    let mut stream = response.body;
    let mut sse = SseParser::default();
    let mut ndjson = NdjsonParser::default();
    let mut read = 0usize;
    while let Some(chunk) = stream.chunk().await {
        let chunk = chunk.map_err(|e| ProviderError::Stream(e.to_string()))?;
        read += chunk.len();
        if read > MAX_RESPONSE_BYTES {
            return Err(ProviderError::Stream(format!(
                "the response passed {} MiB without ending; it was stopped there",
                MAX_RESPONSE_BYTES >> 20
            )));
        }
        let payloads = match framing {
            Framing::Sse => sse.feed(&chunk),
            Framing::Ndjson => ndjson.feed(&chunk),
        }
        .map_err(ProviderError::Stream)?;
        for payload in payloads {
            if each(&payload)? == Flow::Stop {
                finish_in_background(stream);
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

/// How much of a stream past its last event is read so its connection can be used again,
/// and for how long: a server ends its body right after that event (the chunked body's last
/// chunk), so a well-behaved one needs a few bytes and microseconds.
const FINISH_BYTES: usize = 64 * 1024;
const FINISH_WITHIN: std::time::Duration = std::time::Duration::from_secs(5);

/// Reads the rest of a stream whose last event was read, on a task of its own, so the turn
/// goes on at once. A body dropped before its end closes its connection, and the next step
/// opened a new one (a TLS handshake with a real provider): found as one connection every
/// four steps in a long turn, when the body's last chunk came a moment after `[DONE]`. Read
/// to its end, the connection goes back to the pool. Whatever a server sends after its last
/// event is ignored; past [`FINISH_BYTES`] or [`FINISH_WITHIN`] the stream is dropped.
fn finish_in_background(mut stream: crate::http::Body) {
    tokio::spawn(async move {
        let rest = async {
            let mut read = 0;
            while let Some(Ok(chunk)) = stream.chunk().await {
                read += chunk.len();
                if read > FINISH_BYTES {
                    return;
                }
            }
        };
        let _ = tokio::time::timeout(FINISH_WITHIN, rest).await;
    });
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
mod finish_tests {
    use super::*;
    use bytes::Bytes;
    use futures::StreamExt;
    use futures::channel::mpsc;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    type Sender = mpsc::UnboundedSender<Result<Bytes, std::io::Error>>;

    /// A response whose body is what `tx` sends; `ended` is set once it is read to its end.
    fn streamed() -> (Response, Sender, Arc<AtomicBool>) {
        let (tx, rx) = mpsc::unbounded();
        let ended = Arc::new(AtomicBool::new(false));
        let flag = ended.clone();
        let end = futures::stream::once(async move { flag.store(true, Ordering::SeqCst) })
            .filter_map(|()| async { None });
        let response = Response {
            status: http::StatusCode::OK,
            headers: http::HeaderMap::new(),
            body: crate::http::Body::from_stream(rx.chain(end)),
        };
        (response, tx, ended)
    }

    async fn read_to_done(response: Response) -> Vec<String> {
        let mut seen = Vec::new();
        each_payload(response, Framing::Sse, |p| {
            seen.push(p.to_string());
            Ok(if p == "[DONE]" {
                Flow::Stop
            } else {
                Flow::Continue
            })
        })
        .await
        .unwrap();
        seen
    }

    #[tokio::test]
    async fn a_stream_stopped_at_its_last_event_is_still_read_to_its_end() {
        let (response, tx, ended) = streamed();
        tx.unbounded_send(Ok(Bytes::from_static(b"data: {}\n\ndata: [DONE]\n\n")))
            .unwrap();
        assert_eq!(read_to_done(response).await, ["{}", "[DONE]"]);
        // The body's end comes a moment after its last event, as a chunked body's last
        // chunk does: it is still read, so the connection can carry the next request.
        let _ = tx.unbounded_send(Ok(Bytes::from_static(b": after\n\n")));
        drop(tx);
        for _ in 0..100 {
            if ended.load(Ordering::SeqCst) {
                break;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            ended.load(Ordering::SeqCst),
            "the body was dropped before its end"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_stream_that_goes_on_past_its_last_event_is_let_go() {
        // One that never ends: dropped after a while.
        let (response, silent, _) = streamed();
        silent
            .unbounded_send(Ok(Bytes::from_static(b"data: [DONE]\n\n")))
            .unwrap();
        read_to_done(response).await;
        tokio::time::sleep(FINISH_WITHIN + std::time::Duration::from_secs(1)).await;
        assert!(silent.is_closed(), "a silent stream was kept");
        // One that keeps sending: dropped past the bytes read for its end.
        let (response, chatty, _) = streamed();
        chatty
            .unbounded_send(Ok(Bytes::from_static(b"data: [DONE]\n\n")))
            .unwrap();
        read_to_done(response).await;
        let mut sent = 0;
        while !chatty.is_closed() && sent <= 2 * FINISH_BYTES {
            let _ = chatty.unbounded_send(Ok(Bytes::from(vec![b':'; 4096])));
            sent += 4096;
            tokio::task::yield_now().await;
        }
        assert!(chatty.is_closed(), "a stream that kept sending was kept");
        assert!(sent > FINISH_BYTES);
    }
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
