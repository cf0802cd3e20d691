//! Setting up a session: the connection (a stdio process with its wire, kept across
//! handshake attempts, or a fresh HTTP transport per attempt), the era probe the host drives
//! itself (`server/discover` with the whole start-up timeout, then `initialize` on the same
//! connection, then on a fresh one), and the errors that say why a handshake failed.

use super::*;
use crate::changes::ListChanges;
use crate::http::HttpWire;
use crate::lines::{FromServer, ToServer};
use rmcp::transport::streamable_http_client::StreamableHttpError;

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
        let streamable = match endpoint {
            // Every era since 2025-03-26 is on Streamable HTTP: the old transport means
            // `initialize`.
            Endpoint::Http {
                wire: HttpWire::LegacySse,
                ..
            } => return Box::pin(Self::legacy_sse(endpoint, timeout, features)).await,
            Endpoint::Http { .. } => true,
            Endpoint::Stdio { .. } | Endpoint::InProcess { .. } => false,
        };
        let connected = match choice {
            EraChoice::Modern => Self::open(endpoint, discover, timeout, features.clone()).await,
            EraChoice::Legacy => {
                let mode = ClientLifecycleMode::Initialize;
                Self::open(endpoint, mode, timeout, features.clone()).await
            }
            EraChoice::Auto => Self::probe(endpoint, timeout, features.clone()).await,
        };
        match connected {
            // The spec's backward compatibility: a 4xx to the first POST may be a server of
            // the old transport, which a GET of the same URL tells (its stream opens with
            // an `endpoint` event). Anything else and the Streamable failure stands.
            Err(ConnectError::Handshake {
                detail,
                transient: false,
                stderr_tail,
            }) if streamable => match Box::pin(Self::legacy_sse(endpoint, timeout, features)).await
            {
                Ok(mut session) => {
                    tracing::debug!(%detail, "Streamable HTTP refused; HTTP+SSE answered");
                    session.transport_note = Some(
                        "the server refused Streamable HTTP and serves the legacy HTTP+SSE transport (`\"type\": \"sse\"` skips the attempt)".into(),
                    );
                    Ok(session)
                }
                // Both reasons: an event stream that named another origin is worth seeing.
                Err(sse) => Err(ConnectError::Handshake {
                    detail: format!("{detail}; as HTTP+SSE: {sse}"),
                    transient: false,
                    stderr_tail,
                }),
            },
            other => other,
        }
    }

    /// A session over the legacy HTTP+SSE transport, which predates `server/discover`.
    async fn legacy_sse(
        endpoint: &Endpoint,
        timeout: Duration,
        features: ClientFeatures,
    ) -> Result<Self, ConnectError> {
        let parts = Parts::new(&features);
        let conn = Conn::Http(HttpWire::LegacySse);
        let closed = CancellationToken::new();
        let mode = ClientLifecycleMode::Initialize;
        let result = conn
            .handshake(endpoint, parts.handler(&mode), mode, timeout, &closed)
            .await?;
        Self::finish(endpoint, conn, result, timeout, closed, parts, None).await
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
            .handshake(
                endpoint,
                parts.handler(&discover),
                discover,
                timeout,
                &probe_closed,
            )
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
                parts.handler(&ClientLifecycleMode::Initialize),
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
            } if !matches!(endpoint, Endpoint::Http { .. }) || !transient => {
                tracing::debug!(%detail, "retrying as legacy on a fresh connection");
                let opened =
                    Self::open(endpoint, ClientLifecycleMode::Initialize, timeout, features).await;
                match opened {
                    Ok(mut s) => {
                        s.era_note = Some(format!("{note} ({detail})"));
                        Ok(s)
                    }
                    // Both eras failed: the probe's reason is kept, since the legacy
                    // refusal alone ("unsupported protocol version" from a 2026-07-28
                    // server whose discover answer was unusable) would hide the cause.
                    Err(ConnectError::Handshake {
                        detail: legacy,
                        transient,
                        stderr_tail,
                    }) => Err(ConnectError::Handshake {
                        detail: format!(
                            "{note} ({detail}); initialize on a fresh connection failed too: {legacy}"
                        ),
                        transient,
                        stderr_tail,
                    }),
                    Err(other) => Err(other),
                }
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
            .handshake(endpoint, parts.handler(&mode), mode, timeout, &closed)
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
                // A remote server may be briefly overloaded; a local one (a process, or
                // one in this process) that hangs at start will hang again.
                let transient = matches!(endpoint, Endpoint::Http { .. });
                let (process, _, _) = conn.into_parts();
                if let Some(mut p) = process {
                    tokio::spawn(async move { p.shutdown().await });
                }
                return Err(ConnectError::Timeout {
                    after: timeout,
                    transient,
                });
            }
        };
        let (process, line, transport) = conn.into_parts();
        let era = match check_version(&service) {
            Ok(era) => era,
            Err(e) => {
                service.cancellation_token().cancel();
                if let Some(mut p) = process {
                    p.shutdown().await;
                }
                return Err(e);
            }
        };
        let server_name = (service.peer().peer_info())
            .and_then(|i| i.server_info.as_ref().map(|s| s.name.clone()));
        after_connect(&service, &era, &parts, &closed).await;
        let stderr = process.as_ref().map(|p| p.stderr.clone());
        let process = std::sync::Mutex::new(process);
        Ok(Self {
            service,
            process,
            stderr,
            line,
            ended: OnceCell::new(),
            closed,
            era,
            era_note,
            transport,
            transport_note: None,
            tools_changed: parts.tools_changed,
            offers_changed: parts.offers_changed,
            server_name,
            progress: parts.progress,
        })
    }
}

/// The protocol version the server settled on, as an era, if this host speaks it.
fn check_version(service: &Service) -> Result<Era, ConnectError> {
    let era = Era {
        version: service.peer().peer_info().as_ref().map_or_else(
            || "unknown".to_string(),
            |i| i.protocol_version.as_str().to_string(),
        ),
    };
    if SUPPORTED_VERSIONS.contains(&era.version.as_str()) {
        return Ok(era);
    }
    Err(ConnectError::Handshake {
        detail: format!(
            "the server speaks protocol version {:?}; this host supports {}",
            era.version,
            SUPPORTED_VERSIONS.join(", ")
        ),
        transient: false,
        stderr_tail: Vec::new(),
    })
}

/// Sets up a connected session for its life: answers are never served from rmcp's cache
/// (a refresh after a change must get the server's current list), and a 2026-07-28 server that declared list
/// changes gets the `subscriptions/listen` stream it announces them on.
async fn after_connect(service: &Service, era: &Era, parts: &Parts, closed: &CancellationToken) {
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
}

type Handshake = Result<Result<Service, ClientInitializeError>, tokio::time::error::Elapsed>;

/// What every handshake attempt of one connection shares: the channels the handler pokes.
struct Parts {
    tools_changed: Arc<ListChanges>,
    offers_changed: Arc<Notify>,
    progress: ProgressRoutes,
    features: ClientFeatures,
    questions: Arc<tokio::sync::Semaphore>,
}

impl Parts {
    fn new(features: &ClientFeatures) -> Self {
        Self {
            tools_changed: Arc::new(ListChanges::default()),
            offers_changed: Arc::new(Notify::new()),
            progress: ProgressRoutes::default(),
            features: features.clone(),
            questions: Arc::new(tokio::sync::Semaphore::new(
                crate::handler::MAX_QUESTIONS_WAITING,
            )),
        }
    }

    fn handler(&self, mode: &ClientLifecycleMode) -> HostHandler {
        let modern = matches!(mode, ClientLifecycleMode::Discover { .. });
        HostHandler {
            info: client_config(ProtocolVersion::V_2025_11_25, modern, &self.features),
            tools_changed: self.tools_changed.clone(),
            offers_changed: self.offers_changed.clone(),
            features: self.features.clone(),
            progress: self.progress.clone(),
            questions: self.questions.clone(),
        }
    }
}

/// Newline-delimited JSON-RPC from a process's stdio or an in-process pipe.
pub(super) type LineWire = Wire<FromServer, ToServer>;

/// A connection being set up. A stdio process (or an in-process server) and its wire
/// outlive a handshake attempt, so a fallback to `initialize` talks to the same process;
/// HTTP gets a fresh transport per attempt (cheap, and a new session for the server).
#[allow(clippy::large_enum_variant)] // One per connection attempt, and short-lived.
enum Conn {
    Stdio {
        /// `None` for an in-process server.
        process: Option<StdioProcess>,
        wire: LineWire,
    },
    Http(HttpWire),
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
                    wire: Wire::new(
                        FromServer::Process(stdout),
                        ToServer::Process(stdin),
                        MAX_STDIO_LINE,
                    ),
                })
            }
            Endpoint::InProcess { name, dial } => {
                let pipe = dial.open(name).map_err(|reason| SpawnError::InProcess {
                    name: name.clone(),
                    reason,
                })?;
                Ok(Self::Stdio {
                    process: None,
                    wire: Wire::new(
                        FromServer::Pipe(pipe.from_server),
                        ToServer::Pipe(pipe.to_server),
                        MAX_STDIO_LINE,
                    ),
                })
            }
            Endpoint::Http { wire, .. } => Ok(Self::Http(*wire)),
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
                Self::Http(wire),
                Endpoint::Http {
                    url,
                    headers,
                    client,
                    auth,
                    ..
                },
            ) => {
                // Boxed: the HTTP handshake's future is 22 KB against stdio's 9, and every
                // future that awaits this one (up to the runner's task) is as big as its
                // biggest arm and is moved whole, a copy of that size, at each start.
                Box::pin(async {
                    let open = http::transport_for(client, auth.as_ref(), url, headers, *wire);
                    let inner = match tokio::time::timeout(timeout, open).await {
                        Ok(opened) => opened.map_err(|e| open_error(e).redact_url(url))?,
                        Err(_) => {
                            return Err(ConnectError::Timeout {
                                after: timeout,
                                transient: true,
                            });
                        }
                    };
                    Ok(handshake(Correlated::new(inner), handler, mode, timeout, closed).await)
                })
                .await?
            }
            // `Conn::new` made the connection from this endpoint.
            (Self::Http(_), Endpoint::Stdio { .. } | Endpoint::InProcess { .. }) => Ok(Err(
                ClientInitializeError::ConnectionClosed("not an HTTP endpoint".into()),
            )),
        })
    }

    /// Whether the decoder refused an answer during the handshake: a garbled answer to
    /// `server/discover` says nothing about the server's era.
    fn refused_during_handshake(&self) -> bool {
        match self {
            Self::Stdio { wire, .. } => wire.verdicts().refused_any(),
            Self::Http(_) => false,
        }
    }

    /// Before a second handshake on the same connection: nothing sent so far is awaited.
    fn forget_pending(&self) {
        if let Self::Stdio { wire, .. } = self {
            wire.verdicts().forget_pending();
        }
    }

    /// The process (if any), the line wire (stdio) and the transport.
    fn into_parts(self) -> (Option<StdioProcess>, Option<LineWire>, TransportKind) {
        match self {
            Self::Stdio { process, wire } => (process, Some(wire), TransportKind::Stdio),
            Self::Http(HttpWire::Streamable) => (None, None, TransportKind::Http),
            Self::Http(HttpWire::LegacySse) => (None, None, TransportKind::Sse),
        }
    }

    async fn fail(self, endpoint: &Endpoint, e: &ClientInitializeError) -> ConnectError {
        let refusal = match &self {
            Self::Stdio { wire, .. } => wire.verdicts().take_any(),
            Self::Http(_) => None,
        };
        let (process, _, _) = self.into_parts();
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
            Endpoint::Stdio { .. } | Endpoint::InProcess { .. } => err,
        }
    }
}

/// Why an HTTP transport could not be opened, classified like a failed handshake.
fn open_error(e: http::OpenError) -> ConnectError {
    let stream = match e {
        http::OpenError::Header(h) => return ConnectError::Header(h),
        http::OpenError::Stream(s) => s,
        http::OpenError::Client(e) => {
            return ConnectError::Handshake {
                detail: format!("cannot build the HTTP client: {e}"),
                transient: false,
                stderr_tail: Vec::new(),
            };
        }
    };
    if let Some(failure) = auth_failure(&stream) {
        return ConnectError::Auth(failure);
    }
    if let StreamableHttpError::AuthRequired(challenge) = &stream {
        return ConnectError::NeedsAuth(challenge.www_authenticate_header.clone());
    }
    ConnectError::Handshake {
        detail: http::describe(&stream),
        transient: http::classify(&stream) == HttpFailure::Transient,
        stderr_tail: Vec::new(),
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
    (tools_changed, offers_changed): (Arc<ListChanges>, Arc<Notify>),
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

async fn handshake_error(e: &ClientInitializeError, process: Option<StdioProcess>) -> ConnectError {
    if let Some(failure) = transport_error(e).and_then(|t| auth_failure(t.error.as_ref())) {
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
            // A server that exits with a status before it has answered fails the same way
            // the next time (a bad argument, a missing folder, a missing key): reported at
            // once with its stderr instead of after retries. One killed by a signal may
            // have been the machine's doing (out of memory) and is tried again.
            transient = matches!(
                how,
                ProcessExit::Signal(_) | ProcessExit::Killed | ProcessExit::Unknown
            );
            // Whether writing the next request or reading its answer noticed first is a
            // race the exit decides; either way the exit is the whole story.
            let detail = match e {
                ClientInitializeError::ConnectionClosed(_)
                | ClientInitializeError::TransportError { .. } => {
                    format!("server {how} during the handshake")
                }
                _ => format!("server {how} during the handshake ({e})"),
            };
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

#[cfg(test)]
mod tests {
    use super::*;

    fn size_of_connect<A, B, C, D, Fut>(_: impl FnOnce(A, B, C, D) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    fn size_of_handshake<A, B, C, D, E, Fut>(_: impl FnOnce(A, B, C, D, E) -> Fut) -> usize {
        std::mem::size_of::<Fut>()
    }

    /// Every start moves the connect future (and each future awaiting it, up to the
    /// runner's task) whole, a copy of its size. The HTTP handshake's future is more than
    /// twice stdio's; inline, it set the size of them all, so a stdio start copied the
    /// HTTP state too. It is boxed, so the connect future must stay smaller than it.
    #[test]
    fn the_http_handshake_does_not_set_the_size_of_a_stdio_connect() {
        let http = size_of_handshake(handshake::<Correlated<crate::http::HttpTransport>>);
        let stdio = size_of_handshake(handshake::<Wire<FromServer, ToServer>>);
        let connect = size_of_connect(Session::connect);
        assert!(stdio < http, "stdio {stdio} bytes, HTTP {http}");
        assert!(
            connect < http,
            "the connect future is {connect} bytes, the HTTP handshake's {http}"
        );
    }
}
