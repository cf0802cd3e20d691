//! One protocol session with one server, behind host-owned types: it puts a deadline on
//! every request, cancels what it gives up on, turns the wire's verdicts into typed errors
//! (a refused answer, a server that exited) and decodes results leniently; `connect` picks
//! the era. With `wire`, `listing`, `reading`, `handler`, `progress` and `http`, the only
//! code in this crate that touches rmcp (OAuth's use of it is in `mcp-host-auth`).

use crate::handler::{ClientFeatures, HostHandler, client_config};
use crate::http::{self, HttpFailure};
use crate::lenient;
use crate::progress::{ProgressRoutes, ProgressSink};
use crate::stdio::{ProcessExit, SpawnError, StdioLaunch, StdioProcess, SupervisorCommand};
use crate::wire::{Correlated, DirectAnswer, Wire};
use mcp_host_auth::{OAuth, OAuthError, auth_failure};
use mcp_host_core::{CallOutcome, Era, Partial, TransportKind};
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
use tokio::sync::{Notify, OnceCell};
use tokio_util::sync::CancellationToken;

mod connect;
mod input;
mod outcome;
mod task;
pub use input::MAX_INPUT_ROUNDS;
pub(crate) use input::Retry;
pub use task::{MAX_POLL, MAX_TASK_TIME, MIN_POLL};

/// The protocol versions this host speaks: 2026-07-28 without a handshake, the rest via
/// `initialize`. A server that settles on anything else is refused.
pub const SUPPORTED_VERSIONS: &[&str] = &[
    "2026-07-28",
    "2025-11-25",
    "2025-06-18",
    "2025-03-26",
    // The HTTP+SSE transport's revision: its servers are still deployed, and what the host
    // reads of a 2024-11-05 answer is a subset of the later ones.
    "2024-11-05",
];

/// Largest stdout line (one JSON-RPC message) accepted from a stdio server. Large results
/// are legitimate (the engine spills them to the result store), unbounded ones are not.
pub const MAX_STDIO_LINE: usize = 64 * 1024 * 1024;

/// Where a server lives.
#[derive(Clone, Debug)]
pub enum Endpoint {
    Stdio {
        /// Boxed: far larger than an http endpoint.
        launch: Box<StdioLaunch>,
        supervisor: SupervisorCommand,
        host_env: Arc<BTreeMap<String, String>>,
    },
    /// A server in this process behind an in-memory pipe (a simulation's): a stdio server
    /// in all but the process.
    InProcess {
        name: String,
        dial: crate::harness::Dial,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        client: crate::http::HttpClient,
        /// OAuth for this server; `None` sends requests as configured (static headers only).
        auth: Option<OAuth>,
        /// `Streamable` falls back to HTTP+SSE when the server refuses its first POST with
        /// a 4xx and serves an event stream instead, as the spec's backward-compatibility
        /// section says; `LegacySse` (`"type": "sse"`) speaks only the old transport.
        wire: http::HttpWire,
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

    /// Whether retrying later might succeed. Every variant is named, so a new one has to
    /// decide.
    pub fn is_transient(&self) -> bool {
        match self {
            Self::Handshake { transient, .. } | Self::Timeout { transient, .. } => *transient,
            // A command that cannot start, or a header the config got wrong, fails the same
            // way next time; authorization waits for a person (the runner parks it).
            Self::Spawn(_) | Self::Header(_) | Self::NeedsAuth(_) | Self::Auth(_) => false,
        }
    }
}

/// How many idle deadlines a request may last in all, progress or not.
pub const MAX_TOTAL_FACTOR: u32 = 10;

#[derive(Debug, Clone, thiserror::Error)]
pub enum RequestError {
    #[error("no response within {0:?} (request cancelled)")]
    Timeout(Duration),
    /// The request could not even be written: the server stopped reading its input.
    #[error("the server stopped reading its input: the request could not be sent within {0:?}")]
    NotReading(Duration),
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

/// A `tools/call` that failed, with what it got through first.
#[derive(Debug, thiserror::Error)]
#[error("{error}")]
pub struct CallFailed {
    pub error: RequestError,
    pub partial: Partial,
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
    /// The stdio wire: its decoder's verdicts (refused answers, a desynchronised stream),
    /// and `tools/call` sent over it past rmcp's service loop.
    line: Option<connect::LineWire>,
    /// How the server process ended, once known (shared by the runner and open requests).
    ended: OnceCell<Option<(String, Vec<String>)>>,
    closed: CancellationToken,
    era: Era,
    /// Why the session is in the older era although the newer one was tried.
    era_note: Option<String>,
    transport: TransportKind,
    /// Why the transport is not the one configured (a fallback to HTTP+SSE).
    transport_note: Option<String>,
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
    /// Why this session is in the older era although 2026-07-28 was tried first; `None`
    /// when the probe was answered, or was not made (a reconnect in a known era).
    pub fn era_note(&self) -> Option<&str> {
        self.era_note.as_deref()
    }

    /// The transport this session speaks, and why when it is not the one configured.
    pub fn transport(&self) -> (TransportKind, Option<&str>) {
        (self.transport, self.transport_note.as_deref())
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

    /// Waits until `at` (a paced re-listing's start), or less if the connection ends first,
    /// so a server that dies during the wait is noticed at once.
    pub(crate) async fn paced(&self, at: tokio::time::Instant) {
        tokio::select! {
            () = tokio::time::sleep_until(at) => {}
            () = self.closed.cancelled() => {}
        }
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
        progress: Option<ProgressSink>,
    ) -> Result<ServerResult, RequestError> {
        match (&self.line, req) {
            (Some(line), ClientRequest::CallToolRequest(call)) => {
                let result = self.request_direct(line, call, timeout, cancel, progress);
                self.explain_closed(result.await).await
            }
            // On its own heap allocation: a call's future (moved whole into its box, and
            // into each caller's state) would otherwise carry this path's state too.
            (_, req) => Box::pin(self.request_through_rmcp(req, timeout, cancel, progress)).await,
        }
    }

    /// [`Session::request`] through rmcp's service loop: every request but a stdio call.
    async fn request_through_rmcp(
        &self,
        req: ClientRequest,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
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
                if let Some(reason) =
                    self.line.as_ref().and_then(|l| l.verdicts().rejection(&id)) =>
            {
                Err(RequestError::Protocol(reason))
            }
            other => self.explain_closed(other).await,
        }
    }

    /// A request that found the connection closed says how the server process ended.
    async fn explain_closed<T>(&self, result: Result<T, RequestError>) -> Result<T, RequestError> {
        match result {
            // Boxed: the process's reaping is rare and its future large (see `request`).
            Err(RequestError::Closed) => match Box::pin(self.process_end()).await {
                Some((how, stderr_tail)) => Err(RequestError::Exited { how, stderr_tail }),
                None => Err(RequestError::Closed),
            },
            other => other,
        }
    }

    /// [`Session::request`] for a `tools/call` over stdio, past rmcp's service loop (see
    /// [`Wire::send_direct`]) with the same deadlines: idle `timeout`, restarted by each
    /// progress notification, and at most [`MAX_TOTAL_FACTOR`] times it in all; the server
    /// is told of a request given up on.
    async fn request_direct(
        &self,
        line: &connect::LineWire,
        mut req: CallToolRequest,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Result<ServerResult, RequestError> {
        self.stamp_stateless_meta(&mut req);
        let idle = tokio::time::sleep(timeout);
        let total = tokio::time::sleep(timeout.saturating_mul(MAX_TOTAL_FACTOR));
        tokio::pin!(idle, total);
        // The write is under the same deadlines: a server that stops reading its input
        // fills the pipe, and the write would wait for it forever.
        let sent = {
            let mut send = std::pin::pin!(line.send_direct(req));
            // Nearly always written at once (the pipe has room): the deadlines are set up
            // only for a write that has to wait.
            match futures::poll!(send.as_mut()) {
                std::task::Poll::Ready(sent) => Some(sent),
                std::task::Poll::Pending => tokio::select! {
                    biased;
                    sent = send => Some(sent),
                    () = cancel.cancelled() => None,
                    () = &mut idle => None,
                },
            }
        };
        let (id, token, answer) = match sent {
            Some(Ok(sent)) => sent,
            Some(Err(e)) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(RequestError::Protocol(e.to_string()));
            }
            Some(Err(_)) => return Err(RequestError::Closed),
            None => return Err(self.unsent(line, cancel, timeout)),
        };
        let heard = Arc::new(Notify::new());
        self.progress.watch(token.clone(), progress, heard.clone());
        let _routed = Routed {
            routes: &self.progress,
            token,
        };
        tokio::pin!(answer);
        let given_up = loop {
            // Biased as in `request`: an answer already delivered wins.
            tokio::select! {
                biased;
                answer = &mut answer => return match answer {
                    Ok(DirectAnswer::Result(result)) => Ok(result),
                    Ok(DirectAnswer::Error(e)) => Err(RequestError::Server {
                        code: e.code.0,
                        message: e.message.to_string(),
                    }),
                    Ok(DirectAnswer::Refused(reason)) => Err(RequestError::Protocol(reason)),
                    // The wire forgot the request: the connection ended under it.
                    Err(_) => Err(RequestError::Closed),
                },
                () = heard.notified() => {
                    idle.as_mut().reset(tokio::time::Instant::now() + timeout);
                }
                () = cancel.cancelled() => break ("cancelled by the host", RequestError::Cancelled),
                () = self.closed.cancelled() => return Err(RequestError::Closed),
                () = &mut idle => break ("request timeout", RequestError::Timeout(timeout)),
                () = &mut total => break ("request timeout", RequestError::Timeout(timeout)),
            }
        };
        let (reason, error) = given_up;
        let params = CancelledNotificationParam::new(Some(id), Some(reason.into()));
        // Best effort: a dead connection cannot be told anything. Sent through rmcp, whose
        // wire forgets the request as the notice leaves (a late answer is then dropped).
        let peer = self.service.peer();
        let notice = Box::pin(peer.notify_cancelled(params));
        let _ = tokio::time::timeout(Duration::from_secs(1), notice).await;
        Err(error)
    }

    /// Why a call given up on before its line was written whole ended. Nothing reached the
    /// server, so it is not told; but when part of the line did, the stream is out of step
    /// (the wire closed stdin and recorded why), and the connection is ended here, as after
    /// an over-long line, so that whoever holds it learns why and starts it again.
    fn unsent(
        &self,
        line: &connect::LineWire,
        cancel: &CancellationToken,
        timeout: Duration,
    ) -> RequestError {
        if let Some(fault) = line.verdicts().fault() {
            tracing::warn!(reason = %fault, "ending a stdio connection out of step");
            self.service.cancellation_token().cancel();
        }
        if cancel.is_cancelled() {
            RequestError::Cancelled
        } else {
            RequestError::NotReading(timeout)
        }
    }

    /// What rmcp puts in every request's `_meta` to a 2026-07-28 server, which keeps no
    /// session: the protocol version, and who the client is and what it can do.
    fn stamp_stateless_meta(&self, req: &mut CallToolRequest) {
        use rmcp::model::RequestMetaObject;
        if !self.era.is_modern() {
            return;
        }
        // rmcp's own test, on the version the server settled on.
        let Some(server) = self.service.peer().peer_info() else {
            return;
        };
        if server.protocol_version.has_initialize() {
            return;
        }
        let client = rmcp::ClientHandler::get_info(self.service.service());
        let meta = req.extensions.get_or_insert_default::<RequestMetaObject>();
        meta.set_protocol_version(server.protocol_version.clone());
        meta.set_client_info(client.client_info);
        meta.set_client_capabilities(client.capabilities);
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

    /// Calls a tool. `Ok` even when the tool reports `isError`; `Err` for protocol trouble,
    /// with the rounds and task the call got through first. The server's progress
    /// notifications for this call (and its task's status) go to `progress`.
    pub async fn call_tool(
        &self,
        name: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        timeout: Duration,
        cancel: &CancellationToken,
        progress: Option<ProgressSink>,
    ) -> Result<CallOutcome, CallFailed> {
        // Inside the host's span of this call, when traces are recorded: the server learns
        // where its own spans belong, and the span which era the server spoke.
        let traceparent = crate::trace::current_traceparent();
        tracing::Span::current().record("era", self.era.version.as_str());
        let make = |retry: input::Retry| {
            let mut params = CallToolRequestParams::new(name.to_string());
            params.arguments = arguments.clone();
            params.input_responses = retry.input_responses;
            params.request_state = retry.request_state;
            let mut request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
            // rmcp keeps a request's `_meta` beside its params and writes it out last.
            if let Some(traceparent) = &traceparent {
                use rmcp::model::GetMeta;
                request.get_meta_mut().set_traceparent(traceparent.clone());
            }
            request
        };
        let mut partial = Partial::default();
        let result = async {
            let answer = self
                .request_with_input(
                    make,
                    timeout,
                    cancel,
                    progress.clone(),
                    &mut partial.input_rounds,
                )
                .await?;
            let result = match answer {
                ServerResult::CreateTaskResult(created) => {
                    partial.task_id = Some(created.task.task_id.clone());
                    let rounds = &mut partial.input_rounds;
                    // Boxed: few calls start a task (see `request`).
                    Box::pin(self.follow_task(created, rounds, timeout, cancel, progress)).await?
                }
                ServerResult::CallToolResult(typed) => match outcome::text_call_result(typed) {
                    Ok(outcome) => return Ok(outcome),
                    Err(typed) => to_value(&ServerResult::CallToolResult(*typed))?,
                },
                other => to_value(&other)?,
            };
            lenient::parse_call_result(&result).map_err(RequestError::Protocol)
        }
        .await;
        match result {
            Ok(mut outcome) => {
                outcome.input_rounds = partial.input_rounds;
                outcome.task_id = partial.task_id;
                Ok(outcome)
            }
            Err(error) => Err(CallFailed { error, partial }),
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
                let fault = self.line.as_ref().and_then(|l| l.verdicts().fault());
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

pub(crate) fn to_value(r: &ServerResult) -> Result<Value, RequestError> {
    serde_json::to_value(r).map_err(|e| RequestError::Protocol(e.to_string()))
}

fn map_service_error(e: ServiceError) -> RequestError {
    if let ServiceError::TransportSend(t) = &e
        && let Some(failure) = auth_failure(t.error.as_ref())
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
