//! The HTTP+SSE transport of protocol 2024-11-05, which servers still deploy: the client
//! GETs an event stream, whose first event (`endpoint`) names where to POST messages, and
//! every answer comes back on that one stream. Built over the same [`StreamableHttpClient`]
//! the Streamable HTTP transport uses (so OAuth's refusal rounds, the [`super::guarded`]
//! wrapper and the simulation's in-process servers serve both), it only adds what the old
//! transport differs in.
//!
//! Hostile input: the endpoint must be on the stream's own origin (a server naming another
//! host would have our messages, and any `Authorization` header, sent there), and it must
//! come first and within the start-up timeout; events larger than the message cap end the
//! stream, like the Streamable transport's do.

use super::MAX_HTTP_MESSAGE;
use super::guarded::Guarded;
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ServerJsonRpcMessage;
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
};
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::mpsc;

type Events = BoxStream<'static, Result<sse_stream::Sse, SseError>>;

/// The legacy transport over `C`: the open event stream and where messages go.
pub struct LegacySse<C> {
    client: Arc<Guarded<C>>,
    post_to: Arc<str>,
    headers: HashMap<HeaderName, HeaderValue>,
    events: Events,
    /// Answers a server put in a POST's body instead of on the stream (not what the old
    /// transport says, but harmless to accept).
    inline: (
        mpsc::UnboundedSender<ServerJsonRpcMessage>,
        mpsc::UnboundedReceiver<ServerJsonRpcMessage>,
    ),
}

impl<C: StreamableHttpClient + Sync + 'static> LegacySse<C> {
    /// GETs `url`'s event stream and waits for its `endpoint` event. The caller bounds the
    /// wait (a server that opens the stream and says nothing holds it otherwise).
    pub async fn open(
        client: Guarded<C>,
        url: &str,
        headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Self, StreamableHttpError<C::Error>> {
        let mut events = client
            .legacy_stream(url.into(), headers.clone(), MAX_HTTP_MESSAGE)
            .await?;
        let endpoint = loop {
            let Some(event) = events.next().await else {
                return Err(unexpected(
                    "the event stream ended before its `endpoint` event",
                ));
            };
            let event = event.map_err(|e| unexpected(format!("the event stream failed: {e}")))?;
            match (event.event.as_deref(), event.data) {
                (Some("endpoint"), Some(data)) => break data,
                // Comments and keep-alives carry no data.
                (_, None) => {}
                (other, Some(_)) => {
                    return Err(unexpected(format!(
                        "the event stream's first event is `{}`, not `endpoint`: not an HTTP+SSE server",
                        other.unwrap_or("message")
                    )));
                }
            }
        };
        let post_to = same_origin_endpoint(url, endpoint.trim()).map_err(unexpected)?;
        Ok(Self {
            client: Arc::new(client),
            post_to: post_to.into(),
            headers,
            events,
            inline: mpsc::unbounded_channel(),
        })
    }
}

/// The endpoint the server named, resolved against the stream's URL, if it is on the
/// stream's origin (scheme, host and port).
fn same_origin_endpoint(stream_url: &str, named: &str) -> Result<String, String> {
    let base = reqwest::Url::parse(stream_url).map_err(|e| format!("bad server URL: {e}"))?;
    let endpoint = base
        .join(named)
        .map_err(|e| format!("the `endpoint` event is not a URL ({e})"))?;
    if endpoint.origin() != base.origin() {
        return Err(format!(
            "the server named a message endpoint on another origin ({}); refused",
            endpoint.origin().ascii_serialization()
        ));
    }
    Ok(endpoint.to_string())
}

fn unexpected<E: std::error::Error + Send + Sync + 'static>(
    why: impl Into<Cow<'static, str>>,
) -> StreamableHttpError<E> {
    StreamableHttpError::UnexpectedServerResponse(why.into())
}

impl<C> Transport<RoleClient> for LegacySse<C>
where
    C: StreamableHttpClient + Sync + 'static,
{
    type Error = StreamableHttpError<C::Error>;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let client = self.client.clone();
        let post_to = self.post_to.clone();
        let headers = self.headers.clone();
        let inline = self.inline.0.clone();
        async move {
            match client
                .post_message(post_to, item, None, None, headers)
                .await?
            {
                StreamableHttpPostResponse::Accepted => Ok(()),
                StreamableHttpPostResponse::Json(message, _) => {
                    // The receiver lives as long as the transport; a closed one means
                    // the session is over and nobody waits for the answer.
                    let _ = inline.send(message);
                    Ok(())
                }
                _ => Err(unexpected(
                    "the server answered a message with an event stream; the HTTP+SSE transport answers only on its one stream",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            let event = tokio::select! {
                m = self.inline.1.recv() => return m,
                e = self.events.next() => e,
            };
            let event = match event? {
                Ok(event) => event,
                Err(e) => {
                    tracing::debug!(error = %e, "the HTTP+SSE event stream failed");
                    return None;
                }
            };
            let (None | Some("message")) = event.event.as_deref() else {
                continue;
            };
            let Some(data) = event.data else { continue };
            match serde_json::from_str::<ServerJsonRpcMessage>(&data) {
                Ok(message) => return Some(message),
                // A request waiting for it times out with the usual reason.
                Err(e) => tracing::warn!(error = %e, "dropped an event that is not JSON-RPC"),
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.events = futures::stream::empty().boxed();
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_must_be_on_the_streams_origin() {
        let stream = "http://127.0.0.1:8080/sse?key=1";
        assert_eq!(
            same_origin_endpoint(stream, "/messages?sessionId=ab").as_deref(),
            Ok("http://127.0.0.1:8080/messages?sessionId=ab")
        );
        assert_eq!(
            same_origin_endpoint(stream, "messages/").as_deref(),
            Ok("http://127.0.0.1:8080/messages/")
        );
        for elsewhere in [
            "http://127.0.0.2:8080/messages",
            "https://127.0.0.1:8080/messages",
            "http://127.0.0.1:8081/messages",
            "//evil.example/messages",
        ] {
            let refused = same_origin_endpoint(stream, elsewhere).unwrap_err();
            assert!(refused.contains("another origin"), "{elsewhere}: {refused}");
        }
    }
}
