//! The HTTP client model providers post through: HTTP/1.1 on hyper's connection API, the
//! connection kept between requests (a turn's steps all go to one origin, one after
//! another), proxies and TLS as `connect.rs` opens them. reqwest, which served before, did
//! per request what a model endpoint never needs: it parsed the URL twice (for its redirect
//! policy and its pending request) and went through redirect, retry and pool layers keyed
//! for any destination, about 50 k instructions of a turn step's 300 k. Here the endpoint
//! is parsed once, a request is its headers and body handed to the kept connection, and a
//! redirect is the model's endpoint telling the user where it moved: followed only when it
//! keeps the method, the body and the origin (307, 308 to the same scheme, host and port, so
//! the key never goes elsewhere), otherwise an error that names where.

mod connect;

use bytes::Bytes;
use http::header::{CONTENT_TYPE, HOST, HeaderName, HeaderValue, LOCATION, USER_AGENT};
use http::{HeaderMap, Request, StatusCode, Uri};
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::SendRequest;
use hyper_util::client::proxy::matcher::Matcher;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Connections kept idle per client, and for how long: a provider is one origin, and
/// servers close a keep-alive connection after a minute or more of silence.
const IDLE_MAX: usize = 4;
const IDLE_FOR: Duration = Duration::from_secs(55);
/// Redirects followed for one request (307 and 308 to the same origin only), and how much
/// of a redirect's own body is read past so its connection can be used again.
const REDIRECTS_MAX: usize = 5;
const REDIRECT_BODY_MAX: usize = 64 * 1024;
/// The `User-Agent` of every model request.
const AGENT: &str = concat!("mcp-host/", env!("CARGO_PKG_VERSION"));

/// A client for model endpoints; clones share its kept connections.
#[derive(Clone)]
pub struct ModelClient {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ModelClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ModelClient").finish_non_exhaustive()
    }
}

struct Inner {
    connect_timeout: Duration,
    proxies: Matcher,
    tls: connect::Tls,
    idle: Mutex<Vec<Kept>>,
}

/// A connection that finished its last response and can carry the next request.
struct Kept {
    origin: Origin,
    sender: SendRequest<Full<Bytes>>,
    since: Instant,
}

/// Where a connection goes: requests reuse one only to the same scheme, host and port.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Origin {
    https: bool,
    /// As the URI writes it (an IPv6 address in brackets), lower-case.
    host: String,
    port: u16,
}

/// A URL a provider posts to, parsed once.
#[derive(Clone, Debug)]
pub(crate) struct Target {
    origin: Origin,
    /// The whole URL: what a proxy is asked for, and what its rules match.
    uri: Uri,
    /// The path and query: what the endpoint itself is asked for.
    path: Uri,
    host_header: HeaderValue,
}

impl Target {
    pub(crate) fn parse(url: &str) -> Result<Self, String> {
        // What the errors quote: never a password the URL carries.
        let text = mcp_host_core::redact::url(url);
        let uri: Uri = url
            .parse()
            .map_err(|e| format!("`{text}` is not a URL: {e}"))?;
        let https = match uri.scheme_str() {
            Some(s) if s.eq_ignore_ascii_case("https") => true,
            Some(s) if s.eq_ignore_ascii_case("http") => false,
            _ => return Err(format!("`{text}` is not an http:// or https:// URL")),
        };
        let Some(authority) = uri.authority() else {
            return Err(format!("`{text}` has no host"));
        };
        if authority.as_str().contains('@') {
            return Err(format!(
                "`{text}` has a user name in it, which is not sent; give the key by its \
                 variable instead"
            ));
        }
        let host = authority.host().to_ascii_lowercase();
        let port = authority.port_u16().unwrap_or(if https { 443 } else { 80 });
        let path: Uri = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .map_err(|e| format!("`{text}` has a path that is not valid: {e}"))?;
        let host_header = HeaderValue::from_str(authority.as_str())
            .map_err(|e| format!("`{text}` has a host that is not valid: {e}"))?;
        Ok(Self {
            origin: Origin { https, host, port },
            uri,
            path,
            host_header,
        })
    }
}

/// Why a request got no answer.
#[derive(Debug)]
pub struct HttpError {
    kind: ErrorKind,
    detail: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum ErrorKind {
    /// No connection: worth another try later, unless refused.
    Connect {
        refused: bool,
    },
    Timeout,
    /// The connection broke, or the request could not be made.
    Request,
}

impl std::fmt::Display for HttpError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.detail)
    }
}

impl std::error::Error for HttpError {}

impl HttpError {
    fn connect(detail: String) -> Self {
        Self {
            kind: ErrorKind::Connect { refused: false },
            detail,
        }
    }

    fn io_connect(what: String, e: std::io::Error) -> Self {
        Self {
            kind: ErrorKind::Connect {
                refused: e.kind() == std::io::ErrorKind::ConnectionRefused,
            },
            detail: format!("{what}: {e}"),
        }
    }

    fn request(detail: String) -> Self {
        Self {
            kind: ErrorKind::Request,
            detail,
        }
    }

    /// The error with its causes: hyper's own message leaves out why.
    fn hyper(e: &hyper::Error) -> Self {
        let mut detail = e.to_string();
        let mut cause = std::error::Error::source(e);
        while let Some(c) = cause {
            let part = c.to_string();
            if !detail.contains(&part) {
                detail.push_str(": ");
                detail.push_str(&part);
            }
            cause = c.source();
        }
        Self::request(detail)
    }

    pub(crate) fn is_connect(&self) -> bool {
        matches!(self.kind, ErrorKind::Connect { .. })
    }

    pub(crate) fn is_timeout(&self) -> bool {
        self.kind == ErrorKind::Timeout
    }

    /// Nothing listens there: waiting will not change that.
    pub(crate) fn is_refused(&self) -> bool {
        self.kind == (ErrorKind::Connect { refused: true })
    }
}

/// An answer's status and headers, and its body to read.
pub(crate) struct Response {
    pub(crate) status: StatusCode,
    pub(crate) headers: HeaderMap,
    pub(crate) body: Body,
}

/// A response body read chunk by chunk. Read to its end, its connection goes back to the
/// client for the next request; dropped before, the connection closes with it.
pub(crate) struct Body {
    source: Source,
    keep: Option<(Arc<Inner>, Origin, SendRequest<Full<Bytes>>)>,
}

enum Source {
    Incoming(Incoming),
    /// A body made in a test, as a stream of chunks.
    #[cfg(test)]
    Stream(futures::stream::BoxStream<'static, Result<Bytes, std::io::Error>>),
}

impl Body {
    /// The next chunk of data; `None` at the end.
    pub(crate) async fn chunk(&mut self) -> Option<Result<Bytes, HttpError>> {
        loop {
            let frame = match &mut self.source {
                Source::Incoming(incoming) => incoming
                    .frame()
                    .await
                    .map(|f| f.map_err(|e| HttpError::hyper(&e))),
                #[cfg(test)]
                Source::Stream(s) => futures::StreamExt::next(s).await.map(|c| {
                    c.map(hyper::body::Frame::data)
                        .map_err(|e| HttpError::request(e.to_string()))
                }),
            };
            match frame {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) if !data.is_empty() => return Some(Ok(data)),
                    // Empty data, or trailers: nothing a provider reads.
                    _ => continue,
                },
                Some(Err(e)) => {
                    self.keep = None;
                    return Some(Err(e));
                }
                None => {
                    if let Some((inner, origin, sender)) = self.keep.take() {
                        inner.check_in(origin, sender);
                    }
                    return None;
                }
            }
        }
    }

    /// The body as text, at most `max` bytes of it (an error page is read to be shown).
    pub(crate) async fn text(mut self, max: usize) -> String {
        let mut bytes = Vec::new();
        while let Some(Ok(chunk)) = self.chunk().await {
            let room = max.saturating_sub(bytes.len());
            bytes.extend_from_slice(&chunk[..chunk.len().min(room)]);
            if bytes.len() >= max {
                break;
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }

    #[cfg(test)]
    pub(crate) fn from_stream(
        stream: impl futures::Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static,
    ) -> Self {
        Self {
            source: Source::Stream(Box::pin(stream)),
            keep: None,
        }
    }
}

impl ModelClient {
    /// A client whose connections must be made within `connect_timeout` (TCP, the proxy's
    /// tunnel and TLS together). The proxy variables are read now.
    pub fn new(connect_timeout: Duration) -> Self {
        Self::with_proxies(connect_timeout, Matcher::from_env())
    }

    fn with_proxies(connect_timeout: Duration, proxies: Matcher) -> Self {
        Self::with(connect_timeout, proxies, connect::Tls::default())
    }

    fn with(connect_timeout: Duration, proxies: Matcher, tls: connect::Tls) -> Self {
        Self {
            inner: Arc::new(Inner {
                connect_timeout,
                proxies,
                tls,
                idle: Mutex::new(Vec::new()),
            }),
        }
    }

    /// POSTs `body` as JSON to `target` with `headers`, following a redirect only as the
    /// module's header says.
    pub(crate) async fn post_json(
        &self,
        target: &Target,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<Response, HttpError> {
        let mut target = std::borrow::Cow::Borrowed(target);
        for _ in 0..=REDIRECTS_MAX {
            let response = self.send(&target, headers, body.clone()).await?;
            let moved = matches!(
                response.status,
                StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
            );
            let location = response.headers.get(LOCATION).and_then(|l| l.to_str().ok());
            match location {
                Some(location) if response.status.is_redirection() => {
                    let next = resolve(&target, location);
                    match next {
                        Ok(next) if moved && next.origin == target.origin => {
                            // Read to its end, so the connection carries the next request.
                            response.body.text(REDIRECT_BODY_MAX).await;
                            target = std::borrow::Cow::Owned(next);
                        }
                        _ => {
                            return Err(HttpError::request(format!(
                                "{} answered {} and points to `{}`: not followed, since a \
                                 model request goes only where it was configured to \
                                 (set the base URL to that address if it is right)",
                                target.uri,
                                response.status,
                                mcp_host_core::sanitize::one_line(location, 300)
                            )));
                        }
                    }
                }
                _ => return Ok(response),
            }
        }
        Err(HttpError::request(format!(
            "{} redirected more than {REDIRECTS_MAX} times",
            target.uri
        )))
    }

    async fn send(
        &self,
        target: &Target,
        headers: &[(HeaderName, HeaderValue)],
        body: Bytes,
    ) -> Result<Response, HttpError> {
        let proxy = self.inner.proxies.intercept(&target.uri);
        // Through a proxy to an `http://` endpoint the request names the endpoint whole.
        let absolute = proxy.is_some() && !target.origin.https;
        let auth = proxy
            .as_ref()
            .and_then(|p| p.basic_auth())
            .filter(|_| absolute);
        let request = || {
            let mut request = Request::post(if absolute {
                target.uri.clone()
            } else {
                target.path.clone()
            })
            .body(Full::new(body.clone()))
            .map_err(|e| HttpError::request(e.to_string()))?;
            let map = request.headers_mut();
            map.insert(HOST, target.host_header.clone());
            map.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
            // Some gateways in front of model servers refuse a request that names no agent.
            map.insert(USER_AGENT, HeaderValue::from_static(AGENT));
            for (name, value) in headers {
                map.insert(name.clone(), value.clone());
            }
            if let Some(auth) = auth {
                map.insert(http::header::PROXY_AUTHORIZATION, auth.clone());
            }
            Ok::<_, HttpError>(request)
        };
        if let Some(mut sender) = self.inner.check_out(&target.origin).await {
            match sender.try_send_request(request()?).await {
                Ok(response) => return Ok(self.answer(target, sender, response)),
                // A kept connection the endpoint closed while it sat idle fails before any
                // answer: the close can cross the request on the wire (a reset, a broken
                // pipe, or an end where the answer should be). The request then goes once
                // more on a new connection, as browsers resend on a reused one; any other
                // failure is the answer's.
                Err(e) if !stale(e.error()) => return Err(HttpError::hyper(e.error())),
                Err(_) => {}
            }
        }
        let mut sender = self.connect(target, proxy.as_ref()).await?;
        let response = sender.send_request(request()?).await.map_err(|e| {
            if e.is_incomplete_message() {
                HttpError::request(format!(
                    "{}: the connection closed before an answer came",
                    target.uri
                ))
            } else {
                HttpError::hyper(&e)
            }
        })?;
        Ok(self.answer(target, sender, response))
    }

    fn answer(
        &self,
        target: &Target,
        sender: SendRequest<Full<Bytes>>,
        response: http::Response<Incoming>,
    ) -> Response {
        let (parts, incoming) = response.into_parts();
        Response {
            status: parts.status,
            headers: parts.headers,
            body: Body {
                source: Source::Incoming(incoming),
                keep: Some((self.inner.clone(), target.origin.clone(), sender)),
            },
        }
    }

    async fn connect(
        &self,
        target: &Target,
        proxy: Option<&hyper_util::client::proxy::matcher::Intercept>,
    ) -> Result<SendRequest<Full<Bytes>>, HttpError> {
        let open = async {
            let io = connect::open(&self.inner.tls, &target.origin, proxy).await?;
            hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(io))
                .await
                .map_err(|e| HttpError::hyper(&e))
        };
        let (sender, connection) = tokio::time::timeout(self.inner.connect_timeout, open)
            .await
            .map_err(|_| HttpError {
                kind: ErrorKind::Timeout,
                detail: format!(
                    "connecting to {} took longer than {} s",
                    target.uri,
                    self.inner.connect_timeout.as_secs()
                ),
            })??;
        // The connection's own task reads and writes; it ends when the connection closes
        // or its last sender is dropped.
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(sender)
    }
}

impl Inner {
    async fn check_out(&self, origin: &Origin) -> Option<SendRequest<Full<Bytes>>> {
        loop {
            let kept = {
                let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
                let at = idle.iter().rposition(|k| &k.origin == origin)?;
                idle.swap_remove(at)
            };
            let mut sender = kept.sender;
            if kept.since.elapsed() < IDLE_FOR
                && !sender.is_closed()
                && sender.ready().await.is_ok()
            {
                return Some(sender);
            }
        }
    }

    fn check_in(&self, origin: Origin, sender: SendRequest<Full<Bytes>>) {
        if sender.is_closed() {
            return;
        }
        let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
        idle.retain(|k| k.since.elapsed() < IDLE_FOR && !k.sender.is_closed());
        if idle.len() >= IDLE_MAX {
            idle.remove(0);
        }
        idle.push(Kept {
            origin,
            sender,
            since: Instant::now(),
        });
    }
}

/// Whether a request on a reused connection failed because the connection was already
/// gone: it never left, or the endpoint's close met it (no answer, a reset, a broken pipe).
fn stale(e: &hyper::Error) -> bool {
    if e.is_canceled() || e.is_closed() || e.is_incomplete_message() {
        return true;
    }
    let mut cause = std::error::Error::source(e);
    while let Some(c) = cause {
        if let Some(io) = c.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::{BrokenPipe, ConnectionAborted, ConnectionReset};
            return matches!(io.kind(), ConnectionReset | BrokenPipe | ConnectionAborted);
        }
        cause = c.source();
    }
    false
}

/// Where `location` (absolute, or a path on the same origin) points from `target`.
fn resolve(target: &Target, location: &str) -> Result<Target, String> {
    if location.starts_with('/') && !location.starts_with("//") {
        let scheme = if target.origin.https { "https" } else { "http" };
        let host = target.host_header.to_str().unwrap_or_default();
        Target::parse(&format!("{scheme}://{host}{location}"))
    } else {
        Target::parse(location)
    }
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tls_tests;
