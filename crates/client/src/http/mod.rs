//! Building the HTTP transports (Streamable HTTP, rmcp's client over our reqwest client and caps,
//! OAuth's client around it when the server has OAuth, or a simulation's in-process
//! servers, and the legacy HTTP+SSE transport over the same clients; always inside
//! [`guarded`]'s wrapper) and classifying its failures by type,
//! never by message text.

use futures::future::Either;
use mcp_host_auth::{AuthorizingClient, OAuth};
use rmcp::service::{RoleClient, RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::common::client_side_sse::ExponentialBackoff;
use rmcp::transport::streamable_http_client::{
    HttpStatusError, StreamableHttpClient, StreamableHttpClientTransportConfig, StreamableHttpError,
};
use rmcp::transport::{StreamableHttpClientTransport, Transport};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

mod guarded;
mod in_process;
mod legacy_sse;
use guarded::{Guarded, Sever};
pub use in_process::InProcessHttp;
use legacy_sse::LegacySse;

/// Largest JSON body or SSE event accepted from a server.
pub const MAX_HTTP_MESSAGE: usize = 64 * 1024 * 1024;

pub use mcp_host_auth::install_crypto_provider;

/// What a remote server's transport sends through: our reqwest client, or a simulation's
/// servers in this process.
#[derive(Clone, Debug)]
pub enum HttpClient {
    Network(NetworkClient),
    InProcess(InProcessHttp),
}

impl From<reqwest::Client> for HttpClient {
    fn from(client: reqwest::Client) -> Self {
        Self::Network(client.into())
    }
}

impl From<NetworkClient> for HttpClient {
    fn from(client: NetworkClient) -> Self {
        Self::Network(client)
    }
}

/// The HTTP client for remote servers, built when the first one is connected to: building
/// it loads the system's CA roots, most of what an empty start costs, and a configuration
/// of stdio servers never needs it. Clones share the one client once it is built.
#[derive(Clone, Debug)]
pub struct NetworkClient {
    connect_timeout: Duration,
    built: Arc<OnceLock<reqwest::Client>>,
}

impl NetworkClient {
    /// A client built at its first use, with this connect timeout.
    pub fn lazy(connect_timeout: Duration) -> Self {
        Self {
            connect_timeout,
            built: Arc::default(),
        }
    }

    /// The client, built now if no clone has built it yet.
    pub fn get(&self) -> Result<reqwest::Client, reqwest::Error> {
        if let Some(client) = self.built.get() {
            return Ok(client.clone());
        }
        let client = http_client(self.connect_timeout)?;
        // Two first uses at once build two; the first stored is the one every clone keeps.
        Ok(self.built.get_or_init(|| client).clone())
    }

    /// Whether the client has been built (what a test of a stdio-only start checks).
    pub fn is_built(&self) -> bool {
        self.built.get().is_some()
    }
}

impl From<reqwest::Client> for NetworkClient {
    fn from(client: reqwest::Client) -> Self {
        Self {
            connect_timeout: Duration::ZERO,
            built: Arc::new(OnceLock::from(client)),
        }
    }
}

pub fn http_client(connect_timeout: Duration) -> Result<reqwest::Client, reqwest::Error> {
    install_crypto_provider();
    reqwest::Client::builder()
        .connect_timeout(connect_timeout)
        .build()
}

#[derive(Debug, thiserror::Error)]
pub enum HeaderError {
    #[error("header `{0}` is not a valid HTTP header name")]
    Name(String),
    #[error("header `{0}` has a value that is not valid in HTTP")]
    Value(String),
    #[error("header `{0}` is managed by the MCP transport and cannot be configured")]
    Reserved(String),
}

/// The headers a server's config adds to every request, checked: the transport's own (and,
/// with OAuth, `Authorization`) cannot be configured.
fn custom_headers(
    headers: &BTreeMap<String, String>,
    oauth: bool,
) -> Result<HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>, HeaderError> {
    let mut custom = HashMap::new();
    for (k, v) in headers {
        // These belong to the transport; a configured value would corrupt the session.
        let reserved = [
            "accept",
            "mcp-session-id",
            "last-event-id",
            "mcp-protocol-version",
        ]
        .iter()
        .any(|r| k.eq_ignore_ascii_case(r));
        if reserved || (oauth && k.eq_ignore_ascii_case("authorization")) {
            return Err(HeaderError::Reserved(k.clone()));
        }
        let name = reqwest::header::HeaderName::from_bytes(k.as_bytes())
            .map_err(|_| HeaderError::Name(k.clone()))?;
        let mut value =
            reqwest::header::HeaderValue::from_str(v).map_err(|_| HeaderError::Value(k.clone()))?;
        value.set_sensitive(true);
        custom.insert(name, value);
    }
    Ok(custom)
}

/// The Streamable HTTP transport over `client` with `custom` headers.
fn streamable<C: StreamableHttpClient>(
    client: C,
    url: &str,
    custom: HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>,
) -> StreamableHttpClientTransport<C> {
    let mut retry = ExponentialBackoff::default();
    retry.max_times = Some(5);
    retry.base_duration = Duration::from_millis(500);
    retry.max_delay = Some(Duration::from_secs(8));
    let mut config = StreamableHttpClientTransportConfig::with_uri(url.to_string())
        .custom_headers(custom)
        .max_sse_event_size(MAX_HTTP_MESSAGE)
        .max_json_response_size(MAX_HTTP_MESSAGE);
    config.retry_config = Arc::new(retry);
    StreamableHttpClientTransport::with_client(client, config)
}

/// Which of the two HTTP transports a connection speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpWire {
    /// Streamable HTTP (2025-03-26 and later).
    Streamable,
    /// HTTP+SSE (2024-11-05): an event stream, and POSTs to the endpoint it names.
    LegacySse,
}

impl HttpWire {
    /// The wire a config's `"type": "sse"` (`legacy_sse`) or `"http"` asks for.
    pub fn configured(legacy_sse: bool) -> Self {
        if legacy_sse {
            Self::LegacySse
        } else {
            Self::Streamable
        }
    }
}

/// One connection's HTTP transport, Streamable or legacy: over our reqwest client, over the
/// OAuth client around it, or to a simulation's server. Every way its failures are
/// `StreamableHttpError<reqwest::Error>`, so they are classified alike; every way its
/// exchanges end when it is dropped and carry only their own answers (see [`guarded`]).
pub struct HttpTransport {
    over: Over,
    _sever: Sever,
}

enum Over {
    Plain(Kind<reqwest::Client>),
    Authorized(Kind<AuthorizingClient>),
    InProcess(Kind<InProcessHttp>),
}

enum Kind<C: StreamableHttpClient + Sync> {
    Streamable(StreamableHttpClientTransport<Guarded<C>>),
    Legacy(LegacySse<C>),
}

impl<C: StreamableHttpClient + Sync + 'static> Kind<C> {
    async fn open(
        client: Guarded<C>,
        url: &str,
        custom: HashMap<reqwest::header::HeaderName, reqwest::header::HeaderValue>,
        wire: HttpWire,
    ) -> Result<Self, StreamableHttpError<C::Error>> {
        Ok(match wire {
            HttpWire::Streamable => Self::Streamable(streamable(client, url, custom)),
            HttpWire::LegacySse => Self::Legacy(LegacySse::open(client, url, custom).await?),
        })
    }
}

/// Why a transport could not be made.
#[derive(Debug, thiserror::Error)]
pub enum OpenError {
    #[error(transparent)]
    Header(#[from] HeaderError),
    /// The legacy transport's event stream could not be opened (Streamable HTTP opens
    /// nothing before its first message).
    #[error(transparent)]
    Stream(#[from] StreamableHttpError<reqwest::Error>),
    #[error("cannot build the HTTP client: {0}")]
    Client(reqwest::Error),
}

/// The transport for a fresh connection to the server at `url` over `client`: through
/// `auth`'s client when the server has OAuth (the `Authorization` header is then the
/// transport's, not the config's). The legacy transport opens its event stream here; the
/// caller bounds the wait.
pub async fn transport_for(
    client: &HttpClient,
    auth: Option<&OAuth>,
    url: &str,
    headers: &BTreeMap<String, String>,
    wire: HttpWire,
) -> Result<HttpTransport, OpenError> {
    // A simulation's servers have no OAuth: the runner attaches it only from a credential
    // vault, which a simulation does not give the manager.
    let oauth = auth.is_some() && matches!(client, HttpClient::Network(_));
    let custom = custom_headers(headers, oauth)?;
    let (over, sever) = match (client, auth) {
        (HttpClient::Network(c), None) => {
            let (c, sever) = Guarded::new(c.get().map_err(OpenError::Client)?);
            (Over::Plain(Kind::open(c, url, custom, wire).await?), sever)
        }
        (HttpClient::Network(c), Some(auth)) => {
            let (c, sever) = Guarded::new(auth.client(c.get().map_err(OpenError::Client)?));
            (
                Over::Authorized(Kind::open(c, url, custom, wire).await?),
                sever,
            )
        }
        (HttpClient::InProcess(c), _) => {
            let (c, sever) = Guarded::new(c.clone());
            (
                Over::InProcess(Kind::open(c, url, custom, wire).await?),
                sever,
            )
        }
    };
    Ok(HttpTransport {
        over,
        _sever: sever,
    })
}

impl<C: StreamableHttpClient + Sync + 'static> Transport<RoleClient> for Kind<C> {
    type Error = StreamableHttpError<C::Error>;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match self {
            Self::Streamable(t) => Either::Left(t.send(item)),
            Self::Legacy(t) => Either::Right(t.send(item)),
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        match self {
            Self::Streamable(t) => t.receive().await,
            Self::Legacy(t) => t.receive().await,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        match self {
            Self::Streamable(t) => t.close().await,
            Self::Legacy(t) => t.close().await,
        }
    }
}

impl Transport<RoleClient> for HttpTransport {
    type Error = StreamableHttpError<reqwest::Error>;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        match &mut self.over {
            Over::Plain(t) => Either::Left(t.send(item)),
            Over::Authorized(t) => Either::Right(Either::Left(t.send(item))),
            Over::InProcess(t) => Either::Right(Either::Right(t.send(item))),
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        match &mut self.over {
            Over::Plain(t) => t.receive().await,
            Over::Authorized(t) => t.receive().await,
            Over::InProcess(t) => t.receive().await,
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        match &mut self.over {
            Over::Plain(t) => t.close().await,
            Over::Authorized(t) => t.close().await,
            Over::InProcess(t) => t.close().await,
        }
    }
}

/// How an HTTP failure should be treated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HttpFailure {
    /// 5xx, 429, connection refused, timeouts: worth retrying.
    Transient,
    /// Anything else (404, 400, TLS, bad URL): retrying will not help.
    Permanent,
}

/// Walks an error's source chain looking for the typed causes that tell transient from
/// permanent.
pub fn classify(err: &(dyn std::error::Error + 'static)) -> HttpFailure {
    let mut cur = Some(err);
    while let Some(e) = cur {
        // rmcp's error does not expose its client error as `source()`; look inside it.
        match e.downcast_ref::<StreamableHttpError<reqwest::Error>>() {
            Some(StreamableHttpError::Client(r)) => return classify(r),
            Some(StreamableHttpError::Io(io)) => return classify(io),
            Some(
                StreamableHttpError::HttpStatus(_) | StreamableHttpError::UnexpectedEndOfStream,
            ) => {
                return HttpFailure::Transient;
            }
            _ => {}
        }
        if e.downcast_ref::<HttpStatusError>().is_some() {
            return HttpFailure::Transient;
        }
        if let Some(r) = e.downcast_ref::<reqwest::Error>() {
            let server_error = r
                .status()
                .is_some_and(|s| s.is_server_error() || s.as_u16() == 429);
            if r.is_connect() || r.is_timeout() || server_error {
                return HttpFailure::Transient;
            }
        }
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionRefused | ConnectionReset | TimedOut | ConnectionAborted
            ) {
                return HttpFailure::Transient;
            }
        }
        cur = e.source();
    }
    HttpFailure::Permanent
}

/// The error's own text followed by its deepest cause ("error sending request ...:
/// Connection refused"), which is what a person needs; rmcp's wrappers add only type names.
pub fn describe(err: &(dyn std::error::Error + 'static)) -> String {
    let mut top: &(dyn std::error::Error + 'static) = err;
    if let Some(StreamableHttpError::Client(r)) =
        err.downcast_ref::<StreamableHttpError<reqwest::Error>>()
    {
        top = r;
    }
    let mut deepest = top;
    while let Some(next) = deepest.source() {
        deepest = next;
    }
    if std::ptr::addr_eq(deepest, top) {
        top.to_string()
    } else {
        format!("{top}: {deepest}")
    }
}

/// Hides the secret parts of `url` (query string, password, user name) wherever `text`
/// repeats them, however the URL was spelled there: tokens must not reach logs or the
/// terminal.
pub fn redact_in(text: &str, url: &str) -> String {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        return text.to_string();
    };
    let mut out = text.to_string();
    let secrets = [parsed.query(), parsed.password(), Some(parsed.username())];
    for secret in secrets.into_iter().flatten().filter(|s| !s.is_empty()) {
        out = out.replace(secret, "REDACTED");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_and_queries_are_hidden() {
        let msg = "error sending request for url (https://h.example/mcp?key=s3cret)";
        let out = redact_in(msg, "https://user:pw@h.example/mcp?key=s3cret");
        assert_eq!(
            out,
            "error sending request for url (https://h.example/mcp?REDACTED)"
        );
    }

    /// Nothing loads CA roots until a remote server (or a model) needs the client; then
    /// every clone has the one built.
    #[test]
    fn the_client_is_built_at_first_use_and_shared() {
        let lazy = NetworkClient::lazy(Duration::from_secs(1));
        let clone = lazy.clone();
        assert!(!lazy.is_built() && !clone.is_built());
        clone.get().unwrap();
        assert!(lazy.is_built());
    }
}
