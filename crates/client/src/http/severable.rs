//! Cutting a Streamable HTTP transport loose from the server when the host lets go of it.
//!
//! rmcp's transport worker awaits its first request (the `initialize` or `server/discover`
//! POST, and the event stream its answer comes on) without watching its own cancellation,
//! so a handshake the host gave up on (its start-up timeout) left the worker task and its
//! HTTP connection alive until the server ended the stream: a server that opens the stream
//! and stays silent kept one connection per attempt forever. Every request and every event
//! stream of a transport goes through [`Severable`], which ends them all once the
//! transport's [`Sever`] handle is dropped. Found by the simulation.

use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;
use tokio_util::sync::{CancellationToken, DropGuard};

type Events = BoxStream<'static, Result<sse_stream::Sse, SseError>>;

/// An HTTP client whose requests and streams end when the transport is dropped.
#[derive(Clone)]
pub struct Severable<C> {
    inner: C,
    cut: CancellationToken,
}

/// Held by the transport; dropping it ends everything its client still has open.
pub struct Sever(#[allow(dead_code)] DropGuard);

impl<C> Severable<C> {
    pub fn new(inner: C) -> (Self, Sever) {
        let cut = CancellationToken::new();
        let sever = Sever(cut.clone().drop_guard());
        (Self { inner, cut }, sever)
    }

    /// `call`, unless the transport is dropped first; an event stream it returns ends
    /// then too.
    async fn unless_cut<T, E>(
        &self,
        call: impl Future<Output = Result<T, StreamableHttpError<E>>>,
        streams: impl FnOnce(T, &CancellationToken) -> T,
    ) -> Result<T, StreamableHttpError<E>>
    where
        E: std::error::Error + Send + Sync + 'static,
    {
        tokio::select! {
            r = call => r.map(|t| streams(t, &self.cut)),
            () = self.cut.cancelled() => Err(StreamableHttpError::TransportChannelClosed),
        }
    }
}

fn until_cut(events: Events, cut: &CancellationToken) -> Events {
    events.take_until(cut.clone().cancelled_owned()).boxed()
}

fn answer_until_cut(
    response: StreamableHttpPostResponse,
    cut: &CancellationToken,
) -> StreamableHttpPostResponse {
    match response {
        StreamableHttpPostResponse::Sse(events, session) => {
            StreamableHttpPostResponse::Sse(until_cut(events, cut), session)
        }
        other => other,
    }
}

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Severable<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>> {
        let call = (self.inner).post_message(uri, message, session_id, auth_header, custom_headers);
        self.unless_cut(call, answer_until_cut).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>> {
        let call = self.inner.post_message_with_max_sse_event_size(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        self.unless_cut(call, answer_until_cut).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, StreamableHttpError<C::Error>> {
        let call = self.inner.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        );
        self.unless_cut(call, answer_until_cut).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        let call = (self.inner).delete_session(uri, session_id, auth_header, custom_headers);
        self.unless_cut(call, |(), _| ()).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<C::Error>> {
        let call =
            (self.inner).get_stream(uri, session_id, last_event_id, auth_header, custom_headers);
        self.unless_cut(call, until_cut).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<C::Error>> {
        let call = self.inner.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        );
        self.unless_cut(call, until_cut).await
    }
}
