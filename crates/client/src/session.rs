//! One protocol session with one server, behind host-owned types. This is the only module
//! (with `http.rs` and `oauth/`) that touches rmcp: it picks the era (probe
//! `server/discover`, fall back to `initialize` on a fresh connection), puts a deadline on
//! every request, cancels what it gives up on, follows cursors with caps, and decodes
//! results leniently.

use crate::handler::{ClientFeatures, HostHandler, Progress, ProgressRoutes, client_config};
use crate::http::{self, HttpFailure};
use crate::lenient;
use crate::oauth::{self, OAuth, OAuthError};
use crate::stdio::{ProcessExit, SpawnError, StdioLaunch, StdioProcess, SupervisorCommand};
use mcp_host_core::{CallOutcome, Era};
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CancelledNotificationParam, ClientRequest,
    DiscoverRequest, DiscoverRequestParams, PingRequest, ProtocolVersion, ServerNotification,
    ServerResult, SubscriptionFilter,
};
use rmcp::service::{
    ClientInitializeError, ClientLifecycleMode, PeerRequestOptions, RoleClient, RunningService,
    ServiceError, serve_client_with_lifecycle,
};
use rmcp::transport::{Transport, async_rw::AsyncRwTransport};
use rmcp::{service::RxJsonRpcMessage, service::TxJsonRpcMessage};
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::{Notify, mpsc};
use tokio_util::sync::CancellationToken;

/// The protocol versions this host speaks: 2026-07-28 without a handshake, the rest via
/// `initialize`. A server that settles on anything else is refused.
pub const SUPPORTED_VERSIONS: &[&str] = &["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26"];

/// Largest stdout line (one JSON-RPC message) accepted from a stdio server. Large results
/// are legitimate (the engine spills them to the result store), unbounded ones are not.
pub const MAX_STDIO_LINE: usize = 64 * 1024 * 1024;

/// Where a server lives.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Stdio {
        launch: StdioLaunch,
        supervisor: SupervisorCommand,
        host_env: Arc<BTreeMap<String, String>>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        client: reqwest::Client,
        /// OAuth for this server; `None` sends requests as configured (static headers only).
        auth: Option<OAuth>,
    },
}

/// Which lifecycle to use. `Auto` probes; the others are used once the era is known.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EraChoice {
    Auto,
    Modern,
    Legacy,
}

#[derive(Debug, thiserror::Error)]
pub enum ConnectError {
    #[error(transparent)]
    Spawn(#[from] SpawnError),
    #[error(transparent)]
    Header(#[from] http::HeaderError),
    #[error("server requires authorization: {0}")]
    NeedsAuth(String),
    /// Authorization was attempted and did not succeed.
    #[error(transparent)]
    Auth(OAuthError),
    #[error("no answer to the handshake within {after:?}")]
    Timeout {
        after: Duration,
        /// A remote server may be briefly overloaded; a local process that hangs at start
        /// will hang again.
        transient: bool,
    },
    #[error("{detail}{}", stderr_suffix(.stderr_tail))]
    Handshake {
        detail: String,
        /// Worth another try with a fresh connection (network blips, 5xx, a crash).
        transient: bool,
        stderr_tail: Vec<String>,
    },
}

fn stderr_suffix(tail: &[String]) -> String {
    match tail.last() {
        Some(line) => format!(" (stderr: {line})"),
        None => String::new(),
    }
}

impl ConnectError {
    /// Hides credentials in `url` wherever the message repeats it.
    fn redact_url(self, url: &str) -> Self {
        match self {
            Self::Handshake {
                detail,
                transient,
                stderr_tail,
            } => Self::Handshake {
                detail: http::redact_in(&detail, url),
                transient,
                stderr_tail,
            },
            Self::NeedsAuth(challenge) => Self::NeedsAuth(http::redact_in(&challenge, url)),
            Self::Auth(e) => Self::Auth(e.map_text(|t| http::redact_in(t, url))),
            other => other,
        }
    }

    /// Whether retrying later might succeed.
    pub fn is_transient(&self) -> bool {
        matches!(
            self,
            Self::Handshake {
                transient: true,
                ..
            } | Self::Timeout {
                transient: true,
                ..
            }
        )
    }
}

/// How many idle deadlines a request may last in all, progress or not.
pub const MAX_TOTAL_FACTOR: u32 = 10;

#[derive(Debug, Clone, thiserror::Error)]
pub enum RequestError {
    #[error("no response within {0:?} (request cancelled)")]
    Timeout(Duration),
    #[error("request cancelled")]
    Cancelled,
    #[error("connection to the server is closed")]
    Closed,
    #[error("server error {code}: {message}")]
    Server { code: i32, message: String },
    #[error("invalid response: {0}")]
    Protocol(String),
    #[error("server requires authorization")]
    NeedsAuth,
    #[error(transparent)]
    Auth(OAuthError),
}

/// Unregisters a request's progress route however the request ends (cancelled futures too).
struct Routed<'a> {
    routes: &'a ProgressRoutes,
    token: rmcp::model::ProgressToken,
}

impl Drop for Routed<'_> {
    fn drop(&mut self) {
        self.routes.remove(&self.token);
    }
}

/// Marks `closed` when the transport ends, however it ends.
struct Watched<T> {
    inner: T,
    closed: CancellationToken,
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Watched<T> {
    type Error = T::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let msg = self.inner.receive().await;
        if msg.is_none() {
            self.closed.cancel();
        }
        msg
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let r = self.inner.close().await;
        self.closed.cancel();
        r
    }
}

impl<T> Drop for Watched<T> {
    fn drop(&mut self) {
        self.closed.cancel();
    }
}

type Service = RunningService<RoleClient, HostHandler>;

/// A live session.
pub struct Session {
    service: Service,
    /// Taken out (under the lock, never held across an await) when the session ends.
    process: std::sync::Mutex<Option<StdioProcess>>,
    stderr: Option<Arc<std::sync::Mutex<crate::stdio::StderrRing>>>,
    closed: CancellationToken,
    era: Era,
    /// Told when the server says its tool list changed; counts what refreshes applied.
    pub tools_changed: Arc<crate::changes::ListChanges>,
    /// Notified when the server says its prompt or resource list changed.
    pub offers_changed: Arc<Notify>,
    pub server_name: Option<String>,
    /// Where progress notifications for in-flight requests go.
    progress: ProgressRoutes,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session")
            .field("era", &self.era)
            .finish_non_exhaustive()
    }
}

impl Session {
    /// Connects, choosing the era. With `Auto`, a handshake that fails at the protocol level
    /// is retried once as legacy on a fresh connection (a new process for stdio), because
    /// some servers lock a connection to the era of its first request.
    pub async fn connect(
        endpoint: &Endpoint,
        choice: EraChoice,
        timeout: Duration,
        features: ClientFeatures,
    ) -> Result<Self, ConnectError> {
        let first = match choice {
            EraChoice::Auto => ClientLifecycleMode::Auto {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
                legacy_version: Some(ProtocolVersion::V_2025_11_25),
            },
            EraChoice::Modern => ClientLifecycleMode::Discover {
                preferred_versions: vec![ProtocolVersion::V_2026_07_28],
            },
            EraChoice::Legacy => ClientLifecycleMode::Initialize,
        };
        let stdio = matches!(endpoint, Endpoint::Stdio { .. });
        match Self::open(endpoint, first, timeout, features.clone()).await {
            // A stdio server that died or misbehaved during the probe may simply be a legacy
            // server that insists on `initialize` first: treat it as legacy and respawn.
            Err(ConnectError::Handshake {
                detail, transient, ..
            }) if choice == EraChoice::Auto && (stdio || !transient) => {
                tracing::debug!(%detail, "probe failed; retrying as legacy on a fresh connection");
                Self::open(endpoint, ClientLifecycleMode::Initialize, timeout, features).await
            }
            other => other,
        }
    }

    async fn open(
        endpoint: &Endpoint,
        mode: ClientLifecycleMode,
        timeout: Duration,
        features: ClientFeatures,
    ) -> Result<Self, ConnectError> {
        let tools_changed = Arc::new(crate::changes::ListChanges::default());
        let offers_changed = Arc::new(Notify::new());
        let progress = ProgressRoutes::default();
        let handler = HostHandler {
            info: client_config(ProtocolVersion::V_2025_11_25, &features),
            tools_changed: tools_changed.clone(),
            offers_changed: offers_changed.clone(),
            features,
            progress: progress.clone(),
        };
        let closed = CancellationToken::new();
        let (result, process) = match endpoint {
            Endpoint::Stdio {
                launch,
                supervisor,
                host_env,
            } => {
                let (process, stdin, stdout) = StdioProcess::spawn(launch, supervisor, host_env)?;
                let inner = AsyncRwTransport::new_client(stdout, stdin)
                    .with_max_line_length(MAX_STDIO_LINE);
                (
                    handshake(inner, handler, mode, timeout, &closed).await,
                    Some(process),
                )
            }
            Endpoint::Http {
                url,
                headers,
                client,
                auth: None,
            } => {
                let inner = http::transport(client.clone(), url, headers, false)?;
                (
                    handshake(inner, handler, mode, timeout, &closed).await,
                    None,
                )
            }
            Endpoint::Http {
                url,
                headers,
                client,
                auth: Some(auth),
            } => {
                let inner = http::transport(auth.client(client.clone()), url, headers, true)?;
                (
                    handshake(inner, handler, mode, timeout, &closed).await,
                    None,
                )
            }
        };
        let service = match result {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => {
                let err = handshake_error(&e, process).await;
                return Err(match endpoint {
                    Endpoint::Http { url, .. } => err.redact_url(url),
                    Endpoint::Stdio { .. } => err,
                });
            }
            Err(_) => {
                let transient = process.is_none();
                if let Some(mut p) = process {
                    tokio::spawn(async move { p.shutdown().await });
                }
                return Err(ConnectError::Timeout {
                    after: timeout,
                    transient,
                });
            }
        };
        let info = service.peer().peer_info();
        let era = Era {
            version: info.as_ref().map_or_else(
                || "unknown".to_string(),
                |i| i.protocol_version.as_str().to_string(),
            ),
        };
        if !SUPPORTED_VERSIONS.contains(&era.version.as_str()) {
            let detail = format!(
                "the server speaks protocol version {:?}; this host supports {}",
                era.version,
                SUPPORTED_VERSIONS.join(", ")
            );
            service.cancellation_token().cancel();
            if let Some(mut p) = process {
                p.shutdown().await;
            }
            return Err(ConnectError::Handshake {
                detail,
                transient: false,
                stderr_tail: Vec::new(),
            });
        }
        let server_name = info.and_then(|i| i.server_info.as_ref().map(|s| s.name.clone()));
        service
            .peer()
            .set_response_cache_config(rmcp::service::ClientCacheConfig::disabled())
            .await;
        if era.is_modern()
            && let Some(info) = service.peer().peer_info()
        {
            let caps = &info.capabilities;
            let wants = Changes {
                tools: caps.tools.as_ref().and_then(|t| t.list_changed) == Some(true),
                prompts: caps.prompts.as_ref().and_then(|p| p.list_changed) == Some(true),
                resources: caps.resources.as_ref().and_then(|r| r.list_changed) == Some(true),
            };
            if wants.tools || wants.prompts || wants.resources {
                let notify = (tools_changed.clone(), offers_changed.clone());
                tokio::spawn(listen_for_changes(
                    service.peer().clone(),
                    wants,
                    notify,
                    closed.clone(),
                ));
            }
        }
        let stderr = process.as_ref().map(|p| p.stderr.clone());
        let process = std::sync::Mutex::new(process);
        Ok(Self {
            service,
            process,
            stderr,
            closed,
            era,
            tools_changed,
            offers_changed,
            server_name,
            progress,
        })
    }

    /// Whether the server declared prompts and resources (in `initialize` or `server/discover`).
    pub fn offers_declared(&self) -> (bool, bool) {
        let info = self.service.peer().peer_info();
        let caps = info.as_ref().map(|i| &i.capabilities);
        (
            caps.is_some_and(|c| c.prompts.is_some()),
            caps.is_some_and(|c| c.resources.is_some()),
        )
    }

    /// The server's `instructions` (untrusted text meant for the model), if it gave any.
    pub fn instructions(&self) -> Option<String> {
        self.service
            .peer()
            .peer_info()
            .and_then(|i| i.instructions.clone())
            .filter(|t| !t.trim().is_empty())
    }

    pub fn era(&self) -> &Era {
        &self.era
    }

    pub fn stderr_tail(&self, n: usize) -> Vec<String> {
        (self
            .stderr
            .as_ref()
            .and_then(|r| r.lock().ok().map(|r| r.tail(n))))
        .unwrap_or_default()
    }

    fn take_process(&self) -> Option<StdioProcess> {
        self.process.lock().ok().and_then(|mut p| p.take())
    }

    /// Ends the protocol loop, which drops the transport and so closes the server's stdin.
    async fn close_transport(&self, wait: Duration) {
        self.service.cancellation_token().cancel();
        let _ = tokio::time::timeout(wait, self.closed.cancelled()).await;
    }

    /// Resolves when the connection has ended (server exited, stream closed).
    pub async fn closed(&self) {
        self.closed.cancelled().await;
    }

    /// Sends one request with an idle deadline; on timeout or cancellation the server is
    /// told. Every progress notification the server sends for this request restarts the idle
    /// deadline (rmcp matches them by the progress token it puts on every request), and a
    /// hard ceiling of [`MAX_TOTAL_FACTOR`] times the deadline stops a server that reports
    /// progress forever.
    pub(crate) async fn request(
        &self,
        req: ClientRequest,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<mpsc::UnboundedSender<Progress>>,
    ) -> Result<ServerResult, RequestError> {
        let options = PeerRequestOptions::with_timeout(timeout)
            .reset_timeout_on_progress()
            .with_max_total_timeout(timeout.saturating_mul(MAX_TOTAL_FACTOR));
        let peer = self.service.peer().clone();
        let handle = peer
            .send_request_with_option(req, options)
            .await
            .map_err(map_service_error)?;
        let id = handle.id.clone();
        let token = handle.progress_token.clone();
        if let Some(sink) = progress {
            self.progress.add(token.clone(), sink);
        }
        let routed = Routed {
            routes: &self.progress,
            token,
        };
        // On its own deadline rmcp tells the server; cancellation is ours to announce.
        let result = tokio::select! {
            r = handle.await_response() => r.map_err(map_service_error),
            () = cancel.cancelled() => {
                let params = CancelledNotificationParam::new(
                    Some(id),
                    Some("cancelled by the host".into()),
                );
                // Best effort: a dead connection cannot be told anything.
                let _ = tokio::time::timeout(Duration::from_secs(1), peer.notify_cancelled(params)).await;
                Err(RequestError::Cancelled)
            }
            () = self.closed.cancelled() => Err(RequestError::Closed),
        };
        drop(routed);
        result
    }

    /// Asks whether the server is still there: `ping` in the legacy era, `server/discover`
    /// in 2026-07-28 (which has no ping). An error *answer* still proves it is alive.
    pub async fn check_alive(&self, timeout: Duration) -> Result<(), RequestError> {
        let req = if self.era.is_modern() {
            ClientRequest::DiscoverRequest(DiscoverRequest::new(DiscoverRequestParams {}))
        } else {
            ClientRequest::PingRequest(PingRequest::default())
        };
        match self
            .request(req, timeout, &CancellationToken::new(), None)
            .await
        {
            Ok(_) | Err(RequestError::Server { .. }) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Calls a tool. `Ok` even when the tool reports `isError`; `Err` for protocol trouble.
    /// The server's progress notifications for this call go to `progress`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<mpsc::UnboundedSender<Progress>>,
    ) -> Result<CallOutcome, RequestError> {
        let mut params = CallToolRequestParams::new(name.to_string());
        if let Some(args) = arguments {
            params = params.with_arguments(args);
        }
        let req = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        match self.request(req, timeout, cancel, progress).await? {
            ServerResult::InputRequiredResult(_) => Err(RequestError::Protocol(
                "the server asked for more input (input_required), which this host does not support yet".into(),
            )),
            ServerResult::CreateTaskResult(_) => Err(RequestError::Protocol(
                "the server answered with a task, which this host does not support yet".into(),
            )),
            other => lenient::parse_call_result(&to_value(&other)?).map_err(RequestError::Protocol),
        }
    }

    /// Closes the session: stdin is closed first, then the process is stopped in order.
    /// Returns how the server process ended (`None` for HTTP).
    pub async fn shutdown(&self) -> Option<ProcessExit> {
        self.close_transport(Duration::from_secs(2)).await;
        let mut p = self.take_process()?;
        Some(p.shutdown().await)
    }

    /// After [`Session::closed`] fired: says why, reaping the process (stdio) and
    /// returning the last stderr lines.
    pub async fn reap(&self) -> (String, Vec<String>) {
        self.close_transport(Duration::from_secs(1)).await;
        let Some(mut p) = self.take_process() else {
            return ("the connection closed".into(), Vec::new());
        };
        let how = match tokio::time::timeout(Duration::from_secs(3), p.wait_exit()).await {
            Ok(how) => how,
            // stdout closed but the process lives on: stop it.
            Err(_) => p.shutdown().await,
        };
        p.stderr_closed().await;
        (format!("server {how}"), p.stderr_tail(5))
    }
}

/// Runs the lifecycle handshake over `inner`, watched so that `closed` fires when it ends.
async fn handshake<T: Transport<RoleClient> + 'static>(
    inner: T,
    handler: HostHandler,
    mode: ClientLifecycleMode,
    timeout: Duration,
    closed: &CancellationToken,
) -> Result<Result<Service, ClientInitializeError>, tokio::time::error::Elapsed> {
    let transport = Watched {
        inner,
        closed: closed.clone(),
    };
    tokio::time::timeout(
        timeout,
        serve_client_with_lifecycle(handler, transport, mode),
    )
    .await
}

/// Which list changes a 2026-07-28 server declared it can announce.
#[derive(Clone, Copy, Debug)]
struct Changes {
    tools: bool,
    prompts: bool,
    resources: bool,
}

/// In 2026-07-28 a server pushes list changes only on a `subscriptions/listen` stream the
/// client opened; this keeps one open for the life of the session.
async fn listen_for_changes(
    peer: rmcp::service::Peer<RoleClient>,
    wants: Changes,
    (tools_changed, offers_changed): (Arc<crate::changes::ListChanges>, Arc<Notify>),
    closed: CancellationToken,
) {
    let mut filter = SubscriptionFilter::builder();
    if wants.tools {
        filter = filter.tools_list_changed();
    }
    if wants.prompts {
        filter = filter.prompts_list_changed();
    }
    if wants.resources {
        filter = filter.resources_list_changed();
    }
    let opened = tokio::select! {
        r = tokio::time::timeout(Duration::from_secs(10), peer.listen(filter.build())) => r,
        () = closed.cancelled() => return,
    };
    let Ok(Ok(mut subscription)) = opened else {
        tracing::debug!("server declared listChanged but refused subscriptions/listen");
        return;
    };
    loop {
        tokio::select! {
            n = subscription.next() => match n {
                Ok(Some(ServerNotification::ToolListChangedNotification(_))) => tools_changed.notify_one(),
                Ok(Some(
                    ServerNotification::PromptListChangedNotification(_)
                    | ServerNotification::ResourceListChangedNotification(_),
                )) => offers_changed.notify_one(),
                Ok(Some(_)) => {}
                Ok(None) | Err(_) => break,
            },
            () = closed.cancelled() => break,
        }
    }
}

pub(crate) fn to_value(r: &ServerResult) -> Result<Value, RequestError> {
    serde_json::to_value(r).map_err(|e| RequestError::Protocol(e.to_string()))
}

fn map_service_error(e: ServiceError) -> RequestError {
    if let ServiceError::TransportSend(t) = &e
        && let Some(failure) = oauth::auth_failure(t.error.as_ref())
    {
        return RequestError::Auth(failure);
    }
    if e.is_authorization_required() {
        return RequestError::NeedsAuth;
    }
    match e {
        ServiceError::McpError(d) => RequestError::Server {
            code: d.code.0,
            message: d.message.to_string(),
        },
        ServiceError::Timeout { timeout } => RequestError::Timeout(timeout),
        ServiceError::Cancelled { .. } => RequestError::Cancelled,
        ServiceError::TransportClosed | ServiceError::TransportSend(_) => RequestError::Closed,
        other => RequestError::Protocol(other.to_string()),
    }
}

async fn handshake_error(e: &ClientInitializeError, process: Option<StdioProcess>) -> ConnectError {
    if let Some(failure) = transport_error(e).and_then(|t| oauth::auth_failure(t.error.as_ref())) {
        return ConnectError::Auth(failure);
    }
    if e.is_authorization_required() {
        let challenge = e.auth_challenge().unwrap_or("401/403 from server");
        return ConnectError::NeedsAuth(challenge.to_string());
    }
    let mut stderr_tail = Vec::new();
    let mut transient = false;
    if let Some(mut p) = process {
        // A crash at start: wait briefly for the exit so its last words are in the ring.
        if let Ok(how) = tokio::time::timeout(Duration::from_secs(2), p.wait_exit()).await {
            p.stderr_closed().await;
            stderr_tail = p.stderr_tail(5);
            transient = how != ProcessExit::SpawnFailed;
            let detail = format!("server {how} during the handshake ({e})");
            return ConnectError::Handshake {
                detail,
                transient,
                stderr_tail,
            };
        }
        stderr_tail = p.stderr_tail(5);
        tokio::spawn(async move { p.shutdown().await });
    } else if let Some(error) = transport_error(e) {
        transient = http::classify(error.error.as_ref()) == HttpFailure::Transient;
        let detail = http::describe(error.error.as_ref());
        return ConnectError::Handshake {
            detail,
            transient,
            stderr_tail,
        };
    }
    ConnectError::Handshake {
        detail: e.to_string(),
        transient,
        stderr_tail,
    }
}

/// The transport failure behind a handshake error, looking through a failed legacy fallback.
fn transport_error(e: &ClientInitializeError) -> Option<&rmcp::transport::DynamicTransportError> {
    match e {
        ClientInitializeError::TransportError { error, .. } => Some(error),
        ClientInitializeError::LegacyFallbackFailed { fallback, discover } => {
            transport_error(fallback).or_else(|| transport_error(discover))
        }
        _ => None,
    }
}
