//! The HTTP client an authorized Streamable HTTP transport uses: rmcp's `AuthClient` (tokens
//! on every request, one silent refresh when a token is rejected) around our reqwest client,
//! plus what rmcp leaves to the host: on a 401 or a 403 `insufficient_scope` from a POST, run
//! an authorization round and send the message again, at most
//! [`MAX_AUTHORIZATION_ROUNDS`] times per message. GETs and DELETEs never start a round: a
//! stream reconnect or a shutdown must not ask anyone anything.
//!
//! A DPoP-bound token (see `dpop.rs`) goes around rmcp's Bearer attachment: `Authorization:
//! DPoP` and a fresh proof of the request's method and URL on every request. A server's
//! `use_dpop_nonce` refusal is answered once per request with its nonce; rmcp's transport
//! does not hand back a 401's headers, so the nonce is read from the answer to a `ping` sent
//! with the same credential (harmless if the server takes it).

use super::MAX_AUTHORIZATION_ROUNDS;
use super::bound::Presentation;
use super::dpop::{self, Bound};
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
                // Answered by the request itself; a server that keeps asking is not helped
                // by a new sign-in.
                Err(StreamableHttpError::AuthRequired(e))
                    if dpop::wants_nonce(&e.www_authenticate_header) =>
                {
                    return result;
                }
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

impl AuthorizingClient {
    /// One POST with the credential presented as the store's token asks.
    async fn post_once(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let http = &self.inner.http_client;
        let bound = match self.presentation().await? {
            Presentation::Bearer => {
                return self
                    .inner
                    .post_message_with_response_limits(
                        uri,
                        message,
                        session_id,
                        auth_header,
                        custom_headers,
                        limits,
                    )
                    .await;
            }
            Presentation::Anonymous => {
                return http
                    .post_message_with_response_limits(
                        uri,
                        message,
                        session_id,
                        None,
                        custom_headers,
                        limits,
                    )
                    .await;
            }
            Presentation::Bound(bound) => bound,
        };
        let headers = self.proven(&bound, "POST", &uri, &custom_headers)?;
        let sent = http
            .post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                None,
                headers,
                limits,
            )
            .await;
        match &sent {
            Err(StreamableHttpError::AuthRequired(e))
                if dpop::wants_nonce(&e.www_authenticate_header)
                    && self
                        .fetch_nonce(&bound, &uri, session_id.as_deref(), &custom_headers)
                        .await =>
            {
                let headers = self.proven(&bound, "POST", &uri, &custom_headers)?;
                http.post_message_with_response_limits(
                    uri, message, session_id, None, headers, limits,
                )
                .await
            }
            _ => sent,
        }
    }

    async fn presentation(&self) -> Result<Presentation, Error> {
        self.shared
            .presentation()
            .await
            .map_err(StreamableHttpError::Auth)
    }

    /// `headers` with the bound token and a fresh proof for `method` to `uri`.
    fn proven(
        &self,
        bound: &Bound,
        method: &str,
        uri: &str,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) -> Result<HashMap<HeaderName, HeaderValue>, Error> {
        let nonce = self.shared.resource_nonce.get();
        let proof = bound
            .key
            .proof(method, uri, Some(&bound.access_token), nonce.as_deref())
            .map_err(|e| StreamableHttpError::Auth(e.into()))?;
        let value = |v: String| {
            HeaderValue::from_str(&v).map_err(|_| {
                StreamableHttpError::Auth(rmcp::transport::auth::AuthError::InvalidTokenType(
                    "the access token is not a valid header value".into(),
                ))
            })
        };
        let mut headers = headers.clone();
        headers.insert(
            reqwest::header::AUTHORIZATION,
            value(format!("DPoP {}", bound.access_token))?,
        );
        headers.insert(HeaderName::from_static("dpop"), value(proof)?);
        Ok(headers)
    }

    /// Asks the server for its current nonce with a `ping` under the same credential and
    /// session; whether it gave one.
    async fn fetch_nonce(
        &self,
        bound: &Bound,
        uri: &str,
        session_id: Option<&str>,
        headers: &HashMap<HeaderName, HeaderValue>,
    ) -> bool {
        // The headers that describe the message itself would not match a ping.
        let mut kept: HashMap<HeaderName, HeaderValue> = headers
            .iter()
            .filter(|(k, _)| {
                let k = k.as_str();
                k != "mcp-method" && k != "mcp-name" && !k.starts_with("mcp-param-")
            })
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        if headers.contains_key("mcp-method") {
            kept.insert(
                HeaderName::from_static("mcp-method"),
                HeaderValue::from_static("ping"),
            );
        }
        let Ok(kept) = self.proven(bound, "POST", uri, &kept) else {
            return false;
        };
        let mut request = self
            .inner
            .http_client
            .post(uri)
            .header(
                reqwest::header::ACCEPT,
                "application/json, text/event-stream",
            )
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .body(r#"{"jsonrpc":"2.0","id":"mcp-host-dpop-nonce","method":"ping"}"#);
        for (k, v) in kept {
            request = request.header(k, v);
        }
        if let Some(id) = session_id {
            request = request.header("mcp-session-id", id);
        }
        match request.send().await {
            Ok(response) => self.shared.resource_nonce.take_from(response.headers()),
            Err(e) => {
                tracing::debug!(server = %self.shared.server_url, error = %e, "DPoP nonce request failed");
                false
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
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
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
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            limits,
        )
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
        // Boxed: the request's future nests rmcp's, several times over, and would otherwise
        // sit whole on the stack of the task that polls it (a debug build overflowed it).
        self.with_rounds(|| {
            Box::pin(self.post_once(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                auth_header.clone(),
                custom_headers.clone(),
                limits,
            ))
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
        let http = &self.inner.http_client;
        match self.presentation().await? {
            Presentation::Bearer => {
                self.inner
                    .delete_session(uri, session_id, auth_header, custom_headers)
                    .await
            }
            Presentation::Anonymous => {
                http.delete_session(uri, session_id, None, custom_headers)
                    .await
            }
            Presentation::Bound(bound) => {
                let headers = self.proven(&bound, "DELETE", &uri, &custom_headers)?;
                http.delete_session(uri, session_id, None, headers).await
            }
        }
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error> {
        self.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default().max_sse_event_size,
        )
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
        let http = &self.inner.http_client;
        let (client_auth, headers) = match self.presentation().await? {
            Presentation::Bearer => {
                return self
                    .inner
                    .get_stream_with_max_sse_event_size(
                        uri,
                        session_id,
                        last_event_id,
                        auth_header,
                        custom_headers,
                        max_sse_event_size,
                    )
                    .await;
            }
            Presentation::Anonymous => (None, custom_headers),
            Presentation::Bound(bound) => {
                let headers = self.proven(&bound, "GET", &uri, &custom_headers)?;
                (None, headers)
            }
        };
        http.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            client_auth,
            headers,
            max_sse_event_size,
        )
        .await
    }
}
