//! The Streamable HTTP client for a simulation's remote servers: requests go to the
//! harness's [`WebServers`] instead of a socket, and what comes back is turned into exactly
//! what rmcp's own reqwest client makes of the same HTTP outcome (a body decoded by the
//! same deserializer, a 404 to a session as its expiry, a 5xx as a status error, a refused
//! connection as an I/O error), so rmcp's transport, the session and the runner above it
//! run unchanged.

use crate::harness::{WebAnswer, WebKind, WebRequest, WebServers};
use futures::StreamExt;
use futures::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, HttpStatusError, SseError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse,
};
use std::collections::HashMap;
use std::sync::Arc;

/// rmcp's error over its reqwest client, so failures classify as a real server's do (the
/// simulation never makes the `Client` variant: it has no `reqwest::Error` to give).
type Error = StreamableHttpError<reqwest::Error>;

/// One simulated remote server's client side.
#[derive(Clone)]
pub struct InProcessHttp {
    pub server: String,
    pub web: Arc<dyn WebServers>,
}

impl std::fmt::Debug for InProcessHttp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("InProcessHttp")
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

impl InProcessHttp {
    async fn ask(
        &self,
        session: Option<Arc<str>>,
        auth_header: Option<String>,
        headers: &HashMap<HeaderName, HeaderValue>,
        kind: WebKind,
    ) -> WebAnswer {
        let configured = (headers.get(&reqwest::header::AUTHORIZATION))
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        let request = WebRequest {
            server: self.server.clone(),
            session: session.map(|s| s.to_string()),
            bearer: auth_header.or(configured),
            kind,
        };
        self.web.request(request).await
    }
}

fn events(
    events: BoxStream<'static, String>,
) -> BoxStream<'static, Result<sse_stream::Sse, SseError>> {
    events
        .map(|data| {
            Ok(sse_stream::Sse {
                data: Some(data),
                ..Default::default()
            })
        })
        .boxed()
}

/// A status that is not success, as rmcp's reqwest client reports it.
fn failed(status: u16, had_session: bool) -> Error {
    match status {
        404 if had_session => StreamableHttpError::SessionExpired,
        429 | 500..=599 => StreamableHttpError::HttpStatus(HttpStatusError::new(status, None)),
        _ => StreamableHttpError::UnexpectedServerResponse(format!("HTTP {status}").into()),
    }
}

/// A 401, as rmcp's reqwest client reports one that carries a challenge.
fn unauthorized(challenge: String) -> Error {
    StreamableHttpError::AuthRequired(AuthRequiredError::new(challenge))
}

/// A connection that failed: refused (nothing was sent) or reset (it may have been handled).
fn lost(kind: std::io::ErrorKind) -> Error {
    StreamableHttpError::Io(kind.into())
}

impl StreamableHttpClient for InProcessHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        _uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let had_session = session_id.is_some();
        let body = serde_json::to_string(&message)?;
        let answer = self
            .ask(
                session_id,
                auth_header,
                &custom_headers,
                WebKind::Post(body),
            )
            .await;
        match answer {
            WebAnswer::Accepted => Ok(StreamableHttpPostResponse::Accepted),
            WebAnswer::Json { body, session } => Ok(StreamableHttpPostResponse::Json(
                serde_json::from_str(&body)?,
                session,
            )),
            WebAnswer::Events { events: e, session } => {
                Ok(StreamableHttpPostResponse::Sse(events(e), session))
            }
            WebAnswer::Status(status) => Err(failed(status, had_session)),
            WebAnswer::Unauthorized(challenge) => Err(unauthorized(challenge)),
            WebAnswer::Refused => Err(lost(std::io::ErrorKind::ConnectionRefused)),
            WebAnswer::Reset => Err(lost(std::io::ErrorKind::ConnectionReset)),
        }
    }

    async fn delete_session(
        &self,
        _uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let answer = self
            .ask(
                Some(session_id),
                auth_header,
                &custom_headers,
                WebKind::Delete,
            )
            .await;
        match answer {
            WebAnswer::Status(405) => Err(StreamableHttpError::ServerDoesNotSupportDeleteSession),
            WebAnswer::Status(status) => Err(failed(status, true)),
            WebAnswer::Unauthorized(challenge) => Err(unauthorized(challenge)),
            WebAnswer::Refused => Err(lost(std::io::ErrorKind::ConnectionRefused)),
            WebAnswer::Reset => Err(lost(std::io::ErrorKind::ConnectionReset)),
            WebAnswer::Accepted | WebAnswer::Json { .. } | WebAnswer::Events { .. } => Ok(()),
        }
    }

    async fn get_stream(
        &self,
        _uri: Arc<str>,
        session_id: Option<Arc<str>>,
        _last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<sse_stream::Sse, SseError>>, Error> {
        let had_session = session_id.is_some();
        let answer = self
            .ask(session_id, auth_header, &custom_headers, WebKind::Listen)
            .await;
        match answer {
            WebAnswer::Events { events: e, .. } => Ok(events(e)),
            WebAnswer::Status(405) => Err(StreamableHttpError::ServerDoesNotSupportSse),
            WebAnswer::Status(status) => Err(failed(status, had_session)),
            WebAnswer::Unauthorized(challenge) => Err(unauthorized(challenge)),
            WebAnswer::Refused => Err(lost(std::io::ErrorKind::ConnectionRefused)),
            WebAnswer::Reset => Err(lost(std::io::ErrorKind::ConnectionReset)),
            WebAnswer::Accepted | WebAnswer::Json { .. } => {
                Err(StreamableHttpError::UnexpectedContentType(None))
            }
        }
    }
}
