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
use crate::wire::{Correlated, Verdicts, Wire};
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
use rmcp::transport::Transport;
use rmcp::{service::RxJsonRpcMessage, service::TxJsonRpcMessage};
use serde_json::Value;
use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio::process::{ChildStdin, ChildStdout};
use tokio::sync::{Notify, OnceCell, mpsc};
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
    /// The server process ended while the request was open.
    #[error("{how}{}", stderr_suffix(.stderr_tail))]
    Exited {
        how: String,
        stderr_tail: Vec<String>,
    },
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
    /// The stdio decoder's verdicts (refused answers, a desynchronised stream).
    verdicts: Option<Verdicts>,
    /// How the server process ended, once known (shared by the runner and open requests).
    ended: OnceCell<Option<(String, Vec<String>)>>,
    closed: CancellationToken,
    era: Era,
    /// Why the session is in the older era although the newer one was tried.
    era_note: Option<String>,
    /// Notified when the server says its tool list changed.
    pub tools_changed: Arc<Notify>,
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
    /// Connects, choosing the era. With `Auto` the host drives the probe itself:
    /// `server/discover` may take the whole start-up timeout (a server still starting is
    /// not mistaken for an old one, as rmcp's fixed 10 s probe does); a correlated error
    /// answer, or silence for that long, falls back to `initialize` on the same connection
    /// (the same process for stdio), and the reason is kept ([`Session::era_note`]). A
    /// probe that fails otherwise (the process died, the answer was unusable) is retried
    /// once as legacy on a fresh connection, because some servers lock a connection to the
    /// era of its first request.
    pub async fn connect(
        endpoint: &Endpoint,
        choice: EraChoice,
        timeout: Duration,
        features: ClientFeatures,
    ) -> Result<Self, ConnectError> {
        let discover = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        match choice {
            EraChoice::Modern => Self::open(endpoint, discover, timeout, features).await,
            EraChoice::Legacy => {
                Self::open(endpoint, ClientLifecycleMode::Initialize, timeout, features).await
            }
            EraChoice::Auto => Self::probe(endpoint, timeout, features).await,
        }
    }

    async fn probe(
        endpoint: &Endpoint,
        timeout: Duration,
        features: ClientFeatures,
    ) -> Result<Self, ConnectError> {
        let discover = ClientLifecycleMode::Discover {
            preferred_versions: vec![ProtocolVersion::V_2026_07_28],
        };
        let parts = Parts::new(&features);
        let conn = Conn::new(endpoint)?;
        let probe_closed = CancellationToken::new();
        let first = conn
            .handshake(endpoint, parts.handler(), discover, timeout, &probe_closed)
            .await?;
        let note = match first {
            // A garbled answer to `server/discover` is an answer: the server speaks it.
            Ok(Err(e)) if conn.refused_during_handshake() => {
                return Err(conn.fail(endpoint, &e).await);
            }
            Ok(Ok(service)) => {
                // The probe's transport is the session's: its end is the session's end.
                let result = Ok(Ok(service));
                return Self::finish(endpoint, conn, result, timeout, probe_closed, parts, None)
                    .await;
            }
            Ok(Err(ClientInitializeError::JsonRpcError(e))) if !is_modern_rejection(&e) => {
                format!(
                    "server/discover was answered with error {}: {}",
                    e.code.0,
                    mcp_host_core::sanitize::strip_terminal_escapes(&e.message)
                )
            }
            Err(_) => format!("server/discover had no answer within {timeout:?}"),
            Ok(Err(e)) => {
                let err = conn.fail(endpoint, &e).await;
                let note = "the probe with server/discover failed";
                return Self::afresh(endpoint, err, timeout, features, note).await;
            }
        };
        tracing::debug!(%note, "falling back to initialize on the same connection");
        conn.forget_pending();
        let closed = CancellationToken::new();
        let second = conn
            .handshake(
                endpoint,
                parts.handler(),
                ClientLifecycleMode::Initialize,
                timeout,
                &closed,
            )
            .await?;
        if let Ok(Err(e)) = &second {
            let err = conn.fail(endpoint, e).await;
            let note = format!("{note}; initialize on that connection failed too");
            return Self::afresh(endpoint, err, timeout, features, &note).await;
        }
        Self::finish(endpoint, conn, second, timeout, closed, parts, Some(note)).await
    }

    /// After a failed handshake: once more with `initialize` on a fresh connection (a new
    /// process), since some servers lock a connection to the era of its first request or
    /// exit on a request they do not know; a failure that says nothing about eras stands.
    async fn afresh(
        endpoint: &Endpoint,
        err: ConnectError,
        timeout: Duration,
        features: ClientFeatures,
        note: &str,
    ) -> Result<Self, ConnectError> {
        match err {
            ConnectError::Handshake {
                detail, transient, ..
            } if matches!(endpoint, Endpoint::Stdio { .. }) || !transient => {
                tracing::debug!(%detail, "retrying as legacy on a fresh connection");
                let mut s =
                    Self::open(endpoint, ClientLifecycleMode::Initialize, timeout, features)
                        .await?;
                s.era_note = Some(format!("{note} ({detail})"));
                Ok(s)
            }
            other => Err(other),
        }
    }

    async fn open(
        endpoint: &Endpoint,
        mode: ClientLifecycleMode,
        timeout: Duration,
        features: ClientFeatures,
    ) -> Result<Self, ConnectError> {
        let parts = Parts::new(&features);
        let conn = Conn::new(endpoint)?;
        let closed = CancellationToken::new();
        let result = conn
            .handshake(endpoint, parts.handler(), mode, timeout, &closed)
            .await?;
        Self::finish(endpoint, conn, result, timeout, closed, parts, None).await
    }

    /// Turns a handshake's outcome into a session (or the error that says why not).
    async fn finish(
        endpoint: &Endpoint,
        conn: Conn,
        result: Handshake,
        timeout: Duration,
        closed: CancellationToken,
        parts: Parts,
        era_note: Option<String>,
    ) -> Result<Self, ConnectError> {
        let service = match result {
            Ok(Ok(service)) => service,
            Ok(Err(e)) => return Err(conn.fail(endpoint, &e).await),
            Err(_) => {
                let (process, _) = conn.into_parts();
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
        let (process, verdicts) = conn.into_parts();
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
                let notify = (parts.tools_changed.clone(), parts.offers_changed.clone());
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
            verdicts,
            ended: OnceCell::new(),
            closed,
            era,
            era_note,
            tools_changed: parts.tools_changed,
            offers_changed: parts.offers_changed,
            server_name,
            progress: parts.progress,
        })
    }

    /// Why this session is in the older era although 2026-07-28 was tried first; `None`
    /// when the probe was answered, or was not made (a reconnect in a known era).
    pub fn era_note(&self) -> Option<&str> {
        self.era_note.as_deref()
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
        // Biased: an answer already delivered wins over the connection closing right after
        // it (the wire fails pending requests with the reason, then ends).
        let result = tokio::select! {
            biased;
            r = handle.await_response() => r.map_err(map_service_error),
            () = cancel.cancelled() => {
                let params = CancelledNotificationParam::new(
                    Some(id.clone()),
                    Some("cancelled by the host".into()),
                );
                // Best effort: a dead connection cannot be told anything.
                let _ = tokio::time::timeout(Duration::from_secs(1), peer.notify_cancelled(params)).await;
                Err(RequestError::Cancelled)
            }
            () = self.closed.cancelled() => Err(RequestError::Closed),
        };
        drop(routed);
        match result {
            // The decoder refused the answer: say why, not what rmcp was told.
            Err(RequestError::Server { .. })
                if let Some(reason) = self.verdicts.as_ref().and_then(|v| v.rejection(&id)) =>
            {
                Err(RequestError::Protocol(reason))
            }
            Err(RequestError::Closed) => match self.process_end().await {
                Some((how, stderr_tail)) => Err(RequestError::Exited { how, stderr_tail }),
                None => Err(RequestError::Closed),
            },
            other => other,
        }
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
        self.process_end()
            .await
            .unwrap_or_else(|| ("the connection closed".into(), Vec::new()))
    }

    /// How the server process ended and its last stderr lines, worked out once (the runner
    /// and every request open at the time ask); `None` without a process to reap (HTTP, or
    /// one already stopped by [`Session::shutdown`]).
    async fn process_end(&self) -> Option<(String, Vec<String>)> {
        self.ended
            .get_or_init(|| async {
                self.close_transport(Duration::from_secs(1)).await;
                let mut p = self.take_process()?;
                let fault = self.verdicts.as_ref().and_then(Verdicts::fault);
                let how = match &fault {
                    // Out of step: it will not stop by itself, and is not worth waiting for.
                    Some(_) => p.shutdown().await,
                    None => match tokio::time::timeout(Duration::from_secs(3), p.wait_exit()).await
                    {
                        Ok(how) => how,
                        // stdout closed but the process lives on: stop it.
                        Err(_) => p.shutdown().await,
                    },
                };
                p.stderr_closed().await;
                let why = match fault {
                    Some(fault) => format!("{fault}; the server was stopped"),
                    None => format!("server {how}"),
                };
                Some((why, p.stderr_tail(5)))
            })
            .await
            .clone()
    }
}

type Handshake = Result<Result<Service, ClientInitializeError>, tokio::time::error::Elapsed>;

/// What every handshake attempt of one connection shares: the channels the handler pokes.
struct Parts {
    tools_changed: Arc<Notify>,
    offers_changed: Arc<Notify>,
    progress: ProgressRoutes,
    features: ClientFeatures,
}

impl Parts {
    fn new(features: &ClientFeatures) -> Self {
        Self {
            tools_changed: Arc::new(Notify::new()),
            offers_changed: Arc::new(Notify::new()),
            progress: ProgressRoutes::default(),
            features: features.clone(),
        }
    }

    fn handler(&self) -> HostHandler {
        HostHandler {
            info: client_config(ProtocolVersion::V_2025_11_25, &self.features),
            tools_changed: self.tools_changed.clone(),
            offers_changed: self.offers_changed.clone(),
            features: self.features.clone(),
            progress: self.progress.clone(),
        }
    }
}

type StdioWire = Wire<ChildStdout, ChildStdin>;

/// A connection being set up. A stdio process and its wire outlive a handshake attempt,
/// so a fallback to `initialize` talks to the same process; HTTP gets a fresh transport
/// per attempt (cheap, and a new session for the server).
#[allow(clippy::large_enum_variant)] // One per connection attempt, and short-lived.
enum Conn {
    Stdio {
        process: Option<StdioProcess>,
        wire: StdioWire,
    },
    Http,
}

impl Conn {
    fn new(endpoint: &Endpoint) -> Result<Self, ConnectError> {
        match endpoint {
            Endpoint::Stdio {
                launch,
                supervisor,
                host_env,
            } => {
                let (process, stdin, stdout) = StdioProcess::spawn(launch, supervisor, host_env)?;
                Ok(Self::Stdio {
                    process: Some(process),
                    wire: Wire::new(stdout, stdin, MAX_STDIO_LINE),
                })
            }
            Endpoint::Http { .. } => Ok(Self::Http),
        }
    }

    async fn handshake(
        &self,
        endpoint: &Endpoint,
        handler: HostHandler,
        mode: ClientLifecycleMode,
        timeout: Duration,
        closed: &CancellationToken,
    ) -> Result<Handshake, ConnectError> {
        Ok(match (self, endpoint) {
            (Self::Stdio { wire, .. }, _) => {
                handshake(wire.clone(), handler, mode, timeout, closed).await
            }
            (
                Self::Http,
                Endpoint::Http {
                    url,
                    headers,
                    client,
                    auth: None,
                },
            ) => {
                let inner = http::transport(client.clone(), url, headers, false)?;
                handshake(Correlated::new(inner), handler, mode, timeout, closed).await
            }
            (
                Self::Http,
                Endpoint::Http {
                    url,
                    headers,
                    client,
                    auth: Some(auth),
                },
            ) => {
                let inner = http::transport(auth.client(client.clone()), url, headers, true)?;
                handshake(Correlated::new(inner), handler, mode, timeout, closed).await
            }
            // `Conn::new` made the connection from this endpoint.
            (Self::Http, Endpoint::Stdio { .. }) => Ok(Err(
                ClientInitializeError::ConnectionClosed("not an HTTP endpoint".into()),
            )),
        })
    }

    /// Whether the decoder refused an answer during the handshake: a garbled answer to
    /// `server/discover` says nothing about the server's era.
    fn refused_during_handshake(&self) -> bool {
        match self {
            Self::Stdio { wire, .. } => wire.verdicts().refused_any(),
            Self::Http => false,
        }
    }

    /// Before a second handshake on the same connection: nothing sent so far is awaited.
    fn forget_pending(&self) {
        if let Self::Stdio { wire, .. } = self {
            wire.verdicts().forget_pending();
        }
    }

    fn into_parts(self) -> (Option<StdioProcess>, Option<Verdicts>) {
        match self {
            Self::Stdio { process, wire } => (process, Some(wire.verdicts())),
            Self::Http => (None, None),
        }
    }

    async fn fail(self, endpoint: &Endpoint, e: &ClientInitializeError) -> ConnectError {
        let refusal = match &self {
            Self::Stdio { wire, .. } => wire.verdicts().take_any(),
            Self::Http => None,
        };
        let (process, _) = self.into_parts();
        let err = match refusal {
            Some(reason) => {
                if let Some(mut p) = process {
                    tokio::spawn(async move { p.shutdown().await });
                }
                ConnectError::Handshake {
                    detail: format!("invalid answer to the handshake: {reason}"),
                    transient: false,
                    stderr_tail: Vec::new(),
                }
            }
            None => handshake_error(e, process).await,
        };
        match endpoint {
            Endpoint::Http { url, .. } => err.redact_url(url),
            Endpoint::Stdio { .. } => err,
        }
    }
}

/// Errors to `server/discover` that come from a 2026-07-28 server refusing this request,
/// not from an older server that does not know the method.
fn is_modern_rejection(e: &rmcp::model::ErrorData) -> bool {
    use rmcp::model::ErrorCode;
    matches!(
        e.code,
        ErrorCode::MISSING_REQUIRED_CLIENT_CAPABILITY | ErrorCode::HEADER_MISMATCH
    )
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
    (tools_changed, offers_changed): (Arc<Notify>, Arc<Notify>),
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
