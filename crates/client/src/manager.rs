//! The connection manager: exactly one supervised session per configured server, all started
//! in parallel. Each server has its own task that connects, publishes its state, refreshes
//! tools on `list_changed`, restarts or reconnects inside the retry policy, and stops in
//! order on shutdown. A server that fails, hangs or lies affects only its own task.

use crate::backoff::{Next, Retrier, RetryPolicy};
use crate::handler::{ClientFeatures, ElicitationAsk, Progress};
use crate::listing::{Offers, ToolList};
use crate::session::{ConnectError, Endpoint, EraChoice, RequestError, Session};
use crate::stdio::{StdioLaunch, SupervisorCommand};
use mcp_host_auth::OAuth;
use mcp_host_config::{ServerSpec, Transport};
use mcp_host_core::{CallOutcome, ServerId, ServerState, ServerStatus, TransportKind};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::{Arc, RwLock};
use std::time::Duration;
use tokio::sync::{Notify, watch};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

/// Everything the manager needs from its environment, passed in explicitly.
#[derive(Clone, Debug)]
pub struct ManagerOptions {
    pub supervisor: SupervisorCommand,
    /// The host's environment; only allow-listed variables reach servers.
    pub host_env: Arc<BTreeMap<String, String>>,
    pub retry: RetryPolicy,
    pub http_client: reqwest::Client,
    /// How often an idle remote server is asked whether it is still there. A stdio server's
    /// exit is seen directly; a remote one can vanish without closing anything.
    pub health_interval: Duration,
    /// Where servers' questions for a person go (elicitation), when a person is there.
    pub ask_person: Option<tokio::sync::mpsc::UnboundedSender<ElicitationAsk>>,
    /// Where OAuth credentials are stored (`mcp-host auth login` puts them there); `None`
    /// connects remote servers without OAuth.
    pub credentials: Option<mcp_host_auth::CredentialVault>,
}

/// How many list warnings a status carries; the rest are counted (and in the log).
const MAX_WARNINGS: usize = 8;

/// How long a liveness check may take before the server counts as gone.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);

/// One configured server as the manager receives it.
#[derive(Clone, Debug)]
pub struct ServerSetup {
    pub id: ServerId,
    pub transport: TransportKind,
    /// What to start; `None` for servers that only show a state (disabled, pending, invalid).
    pub spec: Option<ServerSpec>,
    pub initial: ServerState,
}

#[derive(Debug, thiserror::Error)]
pub enum CallError {
    #[error("no server named `{0}` is configured")]
    UnknownServer(String),
    #[error("server `{server}` is not ready (state: {state})")]
    NotReady { server: String, state: String },
    #[error("server `{server}`: {source}")]
    Request {
        server: String,
        source: RequestError,
    },
    /// The server announced a tool-list change that was not applied in time: what it now
    /// offers cannot be checked, so nothing is sent.
    #[error(
        "server `{server}` changed its tools and the new list did not arrive within {waited:?}"
    )]
    ListStale { server: String, waited: Duration },
}

struct Slot {
    transport: TransportKind,
    spec: Option<ServerSpec>,
    status: watch::Receiver<ServerStatus>,
    session: RwLock<Option<Arc<Session>>>,
    tools: RwLock<Arc<ToolList>>,
    offers: RwLock<Arc<Offers>>,
    /// Poked when a request failed in a way that suggests the server is gone.
    suspect: Notify,
    /// Poked to restart the server now (a person asked), or to apply `enabled`.
    restart: Notify,
    /// A disabled server is stopped and stays stopped until enabled again.
    enabled: std::sync::atomic::AtomicBool,
}

pub struct Manager {
    slots: BTreeMap<ServerId, Arc<Slot>>,
    tasks: Vec<JoinHandle<()>>,
    stop: CancellationToken,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("servers", &self.slots.keys())
            .finish_non_exhaustive()
    }
}

impl Manager {
    /// Starts every startable server at once and returns immediately.
    pub fn start(servers: Vec<ServerSetup>, opts: ManagerOptions) -> Self {
        if let Some(dir) = &opts.supervisor.record_dir {
            let _ = std::fs::create_dir_all(dir);
            let ended = crate::procs::reap_leftovers(dir);
            if ended > 0 {
                tracing::warn!(
                    ended,
                    "ended server processes left behind by an earlier host"
                );
            }
        }
        let stop = CancellationToken::new();
        let mut slots = BTreeMap::new();
        let mut tasks = Vec::new();
        for s in servers {
            let (tx, rx) = watch::channel(ServerStatus::new(s.initial.clone()));
            let slot = Arc::new(Slot {
                transport: s.transport,
                spec: s.spec.clone(),
                status: rx,
                session: RwLock::new(None),
                tools: RwLock::new(Arc::new(ToolList::default())),
                offers: RwLock::new(Arc::new(Offers::default())),
                suspect: Notify::new(),
                restart: Notify::new(),
                enabled: std::sync::atomic::AtomicBool::new(true),
            });
            if let Some(spec) = s.spec {
                let endpoint = endpoint(&spec, &opts);
                let runner = Runner {
                    spec,
                    endpoint,
                    slot: slot.clone(),
                    status: tx,
                    opts: opts.clone(),
                };
                tasks.push(tokio::spawn(runner.run(stop.child_token())));
            }
            slots.insert(s.id, slot);
        }
        Self { slots, tasks, stop }
    }

    pub fn ids(&self) -> impl Iterator<Item = &ServerId> {
        self.slots.keys()
    }

    pub fn status(&self, id: &ServerId) -> Option<ServerStatus> {
        self.slots.get(id).map(|s| s.status.borrow().clone())
    }

    pub fn transport(&self, id: &ServerId) -> Option<TransportKind> {
        self.slots.get(id).map(|s| s.transport)
    }

    pub fn spec(&self, id: &ServerId) -> Option<&ServerSpec> {
        self.slots.get(id).and_then(|s| s.spec.as_ref())
    }

    pub fn tools(&self, id: &ServerId) -> Option<Arc<ToolList>> {
        self.slots
            .get(id)
            .and_then(|s| s.tools.read().ok().map(|t| t.clone()))
    }

    /// A receiver that sees every state change of one server.
    pub fn watch(&self, id: &ServerId) -> Option<watch::Receiver<ServerStatus>> {
        self.slots.get(id).map(|s| s.status.clone())
    }

    /// Waits until every server has settled (ready, failed, needs auth, ...) or `limit`
    /// passes. Returns whether all settled.
    pub async fn wait_settled(&self, limit: Duration) -> bool {
        let all = async {
            for slot in self.slots.values() {
                let mut rx = slot.status.clone();
                let _ = rx.wait_for(|s| s.state.is_settled()).await;
            }
        };
        tokio::time::timeout(limit, all).await.is_ok()
    }

    /// Calls a tool on a ready server with the server's tool timeout.
    pub async fn call(
        &self,
        id: &ServerId,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        cancel: &CancellationToken,
    ) -> Result<CallOutcome, CallError> {
        self.detached_call(id, tool, arguments, cancel.clone(), None)
            .await
    }

    /// The same call as a future that borrows nothing, so it can outlive the caller's step
    /// (a call moved to the background keeps running on its own task).
    pub fn detached_call(
        &self,
        id: &ServerId,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        cancel: CancellationToken,
        progress: Option<tokio::sync::mpsc::UnboundedSender<Progress>>,
    ) -> impl Future<Output = Result<CallOutcome, CallError>> + Send + 'static {
        let found = self.session(id).map(|(s, spec)| (s, spec.tool_timeout));
        let (server, tool) = (id.to_string(), tool.to_string());
        async move {
            let (session, timeout) = found?;
            session
                .call_tool(&tool, arguments, timeout, &cancel, progress)
                .await
                .map_err(|source| CallError::Request { server, source })
        }
    }

    /// The server's tool list, no older than the last change it announced before this was
    /// asked: a change announced and not yet applied is waited for, at most `limit`.
    pub async fn current_tools(
        &self,
        id: &ServerId,
        limit: Duration,
    ) -> Result<Arc<ToolList>, CallError> {
        let (session, _) = self.session(id)?;
        if !session.tools_changed.caught_up(limit).await {
            return Err(CallError::ListStale {
                server: id.to_string(),
                waited: limit,
            });
        }
        self.tools(id)
            .ok_or_else(|| CallError::UnknownServer(id.to_string()))
    }

    /// The ready session of a server, or why there is none.
    fn session(&self, id: &ServerId) -> Result<(Arc<Session>, &ServerSpec), CallError> {
        let slot = self
            .slots
            .get(id)
            .ok_or_else(|| CallError::UnknownServer(id.to_string()))?;
        let session = slot.session.read().ok().and_then(|s| s.clone());
        match (session, slot.spec.as_ref()) {
            (Some(session), Some(spec)) => Ok((session, spec)),
            _ => {
                let state = slot.status.borrow().state.label().to_string();
                Err(CallError::NotReady {
                    server: id.to_string(),
                    state,
                })
            }
        }
    }

    /// Restarts a server now: a live session is closed and a new one opened, a failed or
    /// backing-off server tries again at once with a fresh retry budget. Returns whether the
    /// server is known.
    pub fn reconnect(&self, id: &ServerId) -> bool {
        let Some(slot) = self.slots.get(id) else {
            return false;
        };
        slot.restart.notify_one();
        true
    }

    /// Stops a server and keeps it stopped (`false`), or starts it again (`true`).
    pub fn set_enabled(&self, id: &ServerId, enabled: bool) -> bool {
        let Some(slot) = self.slots.get(id) else {
            return false;
        };
        slot.enabled
            .store(enabled, std::sync::atomic::Ordering::SeqCst);
        slot.restart.notify_one();
        true
    }

    /// A server's prompt with its arguments filled in (`prompts/get`).
    pub async fn get_prompt(
        &self,
        id: &ServerId,
        name: &str,
        arguments: Map<String, Value>,
    ) -> Result<Vec<crate::PromptMessage>, CallError> {
        let (session, spec) = self.session(id)?;
        session
            .get_prompt(name, arguments, spec.tool_timeout)
            .await
            .map_err(|source| CallError::Request {
                server: id.to_string(),
                source,
            })
    }

    /// A resource's contents (`resources/read`).
    pub async fn read_resource(
        &self,
        id: &ServerId,
        uri: &str,
    ) -> Result<Vec<crate::ResourceText>, CallError> {
        let (session, spec) = self.session(id)?;
        session
            .read_resource(uri, spec.tool_timeout)
            .await
            .map_err(|source| CallError::Request {
                server: id.to_string(),
                source,
            })
    }

    /// The instructions a ready server gave for the model.
    pub fn instructions(&self, id: &ServerId) -> Option<String> {
        self.session(id).ok().and_then(|(s, _)| s.instructions())
    }

    /// A server's prompts, resources and resource templates as last listed.
    pub fn offers(&self, id: &ServerId) -> Option<Arc<Offers>> {
        self.slots
            .get(id)
            .and_then(|s| s.offers.read().ok().map(|o| o.clone()))
    }

    /// Stops every server in parallel, in the spec's order, and waits for all of them.
    pub async fn shutdown(self) {
        self.stop.cancel();
        futures::future::join_all(self.tasks).await;
    }
}

fn endpoint(spec: &ServerSpec, opts: &ManagerOptions) -> Endpoint {
    match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
        } => Endpoint::Stdio {
            launch: StdioLaunch {
                command: command.clone(),
                args: args.clone(),
                env: env.clone(),
                cwd: cwd.clone(),
            },
            supervisor: opts.supervisor.clone(),
            host_env: opts.host_env.clone(),
        },
        Transport::Http { url, headers } => Endpoint::Http {
            url: url.clone(),
            headers: headers.clone(),
            client: opts.http_client.clone(),
            auth: None,
        },
    }
}

/// The task that owns one server's lifecycle.
struct Runner {
    spec: ServerSpec,
    endpoint: Endpoint,
    slot: Arc<Slot>,
    status: watch::Sender<ServerStatus>,
    opts: ManagerOptions,
}

enum Ended {
    Stopped,
    Lost(String),
    /// A person asked for a restart (or disabled the server).
    Restart,
}

impl Runner {
    fn publish(&self, f: impl FnOnce(&mut ServerStatus)) {
        self.status.send_modify(f);
    }

    fn set_state(&self, state: ServerState) {
        self.publish(|s| s.state = state);
    }

    async fn run(mut self, stop: CancellationToken) {
        self.attach_oauth().await;
        let remote = matches!(self.endpoint, Endpoint::Http { .. });
        let mut retrier = Retrier::new(self.opts.retry.clone(), remote);
        // Once an era worked, reconnects use it directly instead of probing again.
        let mut era_choice = EraChoice::Auto;
        loop {
            if !self.slot.enabled.load(std::sync::atomic::Ordering::SeqCst) {
                self.set_state(ServerState::Disabled);
                tokio::select! {
                    () = self.slot.restart.notified() => continue,
                    () = stop.cancelled() => break,
                }
            }
            self.set_state(ServerState::Starting);
            let features = ClientFeatures {
                elicitation_defaults: self.spec.elicitation_defaults,
                ask_person: (self.opts.ask_person.clone())
                    .map(|tx| (ServerId::new(&self.spec.name), tx)),
            };
            let connect = Session::connect(
                &self.endpoint,
                era_choice,
                self.spec.startup_timeout,
                features,
            );
            let result = tokio::select! {
                r = connect => r,
                () = stop.cancelled() => break,
            };
            let (reason, transient) = match result {
                Ok(session) => {
                    retrier.on_ready();
                    era_choice = if session.era().is_modern() {
                        EraChoice::Modern
                    } else {
                        EraChoice::Legacy
                    };
                    match self.serve(Arc::new(session), &stop).await {
                        Ended::Stopped => break,
                        Ended::Lost(reason) => (reason, true),
                        Ended::Restart => {
                            retrier = Retrier::new(self.opts.retry.clone(), remote);
                            continue;
                        }
                    }
                }
                Err(e @ (ConnectError::NeedsAuth(_) | ConnectError::Auth(_))) => {
                    let reason = match e {
                        ConnectError::NeedsAuth(challenge) => challenge,
                        other => other.to_string(),
                    };
                    self.set_state(ServerState::NeedsAuth { reason });
                    tokio::select! {
                        () = self.slot.restart.notified() => continue,
                        () = stop.cancelled() => break,
                    }
                }
                Err(e) => {
                    if let ConnectError::Handshake { stderr_tail, .. } = &e {
                        let tail = stderr_tail.clone();
                        self.publish(|s| s.stderr_tail = tail);
                    }
                    (e.to_string(), e.is_transient())
                }
            };
            match retrier.on_failure(
                transient,
                tokio::time::Instant::now(),
                rand::random::<f64>(),
            ) {
                Next::GiveUp => {
                    self.set_state(ServerState::Failed { reason });
                    tokio::select! {
                        () = self.slot.restart.notified() => {
                            retrier = Retrier::new(self.opts.retry.clone(), remote);
                        }
                        () = stop.cancelled() => break,
                    }
                }
                Next::RetryAfter { attempt, delay } => {
                    tracing::info!(server = %self.spec.name, attempt, ?delay, %reason, "retrying");
                    self.publish(|s| {
                        s.state = ServerState::Backoff {
                            attempt,
                            retry_in: delay,
                            reason,
                        };
                        s.restarts += 1;
                    });
                    tokio::select! {
                        () = tokio::time::sleep(delay) => {}
                        () = self.slot.restart.notified() => {
                            retrier = Retrier::new(self.opts.retry.clone(), remote);
                        }
                        () = stop.cancelled() => break,
                    }
                }
            }
        }
        self.set_state(ServerState::Stopped);
    }

    /// Gives a remote server OAuth when it can be used without a person (see
    /// [`OAuth::for_server`]); otherwise a 401 leaves the server in `needs_auth`.
    async fn attach_oauth(&mut self) {
        let Some(vault) = self.opts.credentials.clone() else {
            return;
        };
        let Endpoint::Http { auth, .. } = &mut self.endpoint else {
            return;
        };
        match OAuth::for_server(vault, &self.spec).await {
            Ok(oauth) => *auth = oauth,
            Err(e) => tracing::warn!(server = %self.spec.name, error = %e, "OAuth not used"),
        }
    }

    /// Runs a ready session until it ends or the host stops.
    async fn serve(&self, session: Arc<Session>, stop: &CancellationToken) -> Ended {
        if let Err(e) = self.refresh_tools(&session).await {
            let reason = format!("listing tools failed: {e}");
            session.shutdown().await;
            return Ended::Lost(reason);
        }
        self.refresh_offers(&session).await;
        if let Ok(mut s) = self.slot.session.write() {
            *s = Some(session.clone());
        }
        let era = session.era().clone();
        let note = session.era_note().map(str::to_string);
        self.publish(|s| {
            s.state = ServerState::Ready;
            s.era = Some(era);
            // A reconnect in the known era makes no probe: the first one's reason stands.
            if note.is_some() {
                s.era_note = note;
            }
        });
        let remote = matches!(self.endpoint, Endpoint::Http { .. });
        let every = self.opts.health_interval;
        let mut health = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let ended = loop {
            let check = tokio::select! {
                _ = health.tick(), if remote => true,
                () = self.slot.suspect.notified() => true,
                () = session.closed() => {
                    let (how, tail) = session.reap().await;
                    self.publish(|s| s.stderr_tail = tail);
                    break Ended::Lost(how);
                }
                () = session.tools_changed.notified() => {
                    if let Err(e) = self.refresh_tools(&session).await {
                        tracing::warn!(server = %self.spec.name, error = %e, "tool refresh failed");
                    }
                    false
                }
                () = session.offers_changed.notified() => {
                    self.refresh_offers(&session).await;
                    false
                }
                () = stop.cancelled() => {
                    session.shutdown().await;
                    break Ended::Stopped;
                }
                () = self.slot.restart.notified() => {
                    session.shutdown().await;
                    break Ended::Restart;
                }
            };
            if check && let Err(e) = session.check_alive(HEALTH_TIMEOUT).await {
                session.shutdown().await;
                break Ended::Lost(format!("the server stopped answering ({e})"));
            }
        };
        if let Ok(mut s) = self.slot.session.write() {
            *s = None;
        }
        ended
    }

    async fn refresh_offers(&self, session: &Session) {
        let offers = session.list_offers(self.spec.startup_timeout).await;
        for issue in offers
            .prompts
            .issues
            .iter()
            .chain(&offers.resources.issues)
            .chain(&offers.templates.issues)
        {
            tracing::warn!(server = %self.spec.name, item = %issue.item, reason = %issue.reason, "list entry skipped");
        }
        if let Ok(mut o) = self.slot.offers.write() {
            *o = Arc::new(offers);
        }
        let warnings = self.list_warnings();
        self.publish(|s| {
            s.revision += 1;
            s.warnings = warnings;
        });
    }

    /// What the current lists left out, one line each (at most [`MAX_WARNINGS`]).
    fn list_warnings(&self) -> Vec<String> {
        let tools = self.slot.tools.read().ok().map(|t| t.clone());
        let offers = self.slot.offers.read().ok().map(|o| o.clone());
        let mut lists = Vec::new();
        if let Some(t) = &tools {
            lists.push(("tools/list", &t.issues));
        }
        if let Some(o) = &offers {
            lists.push(("prompts/list", &o.prompts.issues));
            lists.push(("resources/list", &o.resources.issues));
            lists.push(("resources/templates/list", &o.templates.issues));
        }
        // What cut a whole list first, so the truncation below never hides it.
        let mut all = Vec::new();
        for whole in [true, false] {
            for (what, issues) in &lists {
                all.extend(crate::listing::warnings(what, issues, whole));
            }
        }
        if all.len() > MAX_WARNINGS {
            let more = all.len() - (MAX_WARNINGS - 1);
            all.truncate(MAX_WARNINGS - 1);
            all.push(format!("… and {more} more (see the log)"));
        }
        all
    }

    async fn refresh_tools(&self, session: &Session) -> Result<(), RequestError> {
        let covers = session.tools_changed.refresh_begins();
        let list = session.list_tools(self.spec.startup_timeout).await?;
        for issue in &list.issues {
            tracing::warn!(server = %self.spec.name, tool = %issue.item, reason = %issue.reason, "tool skipped");
        }
        let count = list.items.len();
        if let Ok(mut t) = self.slot.tools.write() {
            *t = Arc::new(list);
        }
        let warnings = self.list_warnings();
        self.publish(|s| {
            s.tool_count = count;
            s.revision += 1;
            s.warnings = warnings;
        });
        session.tools_changed.refreshed(covers);
        Ok(())
    }
}
