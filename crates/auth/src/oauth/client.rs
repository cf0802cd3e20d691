//! The HTTP client an authorized Streamable HTTP transport uses: rmcp's `AuthClient` (tokens
//! on every request, one silent refresh when a token is rejected) around our reqwest client,
//! plus what rmcp leaves to the host: on a 401 or a 403 `insufficient_scope` from a POST, run
//! an authorization round and send the message again, at most
//! [`MAX_AUTHORIZATION_ROUNDS`] times per message. GETs and DELETEs never start a round: a
//! stream reconnect or a shutdown must not ask anyone anything.

use super::MAX_AUTHORIZATION_ROUNDS;
use super::flow::{Challenge, Next, Shared};
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::AuthClient;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

type Error = StreamableHttpError<reqwest::Error>;

/// What a Streamable HTTP transport to an OAuth-protected server sends through (made by
/// [`super::OAuth::client`]; the transport itself is `mcp-host-client`'s).
#[derive(Clone)]
pub struct AuthorizingClient {
    inner: AuthClient<reqwest::Client>,
    shared: Arc<Shared>,
}

impl AuthorizingClient {
    pub(crate) fn new(http: reqwest::Client, shared: Arc<Shared>) -> Self {
        let mut inner = shared.template.clone();
        inner.http_client = http;
        Self { inner, shared }
    }

    /// Sends with `call`; on a refusal, authorizes and sends again.
    async fn with_rounds<T, F, Fut>(&self, call: F) -> Result<T, Error>
    where
        F: Fn() -> Fut,
        Fut: Future<Output = Result<T, Error>>,
    {
        self.shared.load_stored().await;
        let mut rounds = 0;
        loop {
            let seen = self.shared.generation();
            let result = call().await;
            if rounds >= MAX_AUTHORIZATION_ROUNDS {
                return result;
            }
            let challenge = match &result {
                Err(StreamableHttpError::AuthRequired(e)) => {
                    Challenge::Unauthorized(&e.www_authenticate_header)
                }
                Err(StreamableHttpError::InsufficientScope(e)) => Challenge::InsufficientScope {
                    header: &e.www_authenticate_header,
                    scope: e.required_scope.as_deref(),
                },
                _ => return result,
            };
            rounds += 1;
            match self.shared.on_challenge(challenge, seen).await {
                Ok(Next::Retry) => {}
                Ok(Next::GiveUp) => return result,
                Err(e) => {
                    tracing::debug!(server = %self.shared.server_url, error = %e, "authorization failed");
                    return Err(StreamableHttpError::Auth(e));
                }
            }
        }
    }
}

impl StreamableHttpClient for AuthorizingClient {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.with_rounds(|| {
            self.inner.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.with_rounds(|| {
            self.inner.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        self.with_rounds(|| {
            self.inner.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        self.inner
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error> {
        self.inner
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error> {
        self.inner
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}
