//! The connection manager: exactly one supervised session per configured server, all started
//! in parallel. Each server has its own task (`runner.rs`) that connects, publishes its
//! state, refreshes tools on `list_changed`, restarts or reconnects inside the retry policy,
//! and stops in order on shutdown. A server that fails, hangs or lies affects only its own
//! task. This file owns the manager's API and the per-server slots the tasks fill.

use crate::backoff::RetryPolicy;
use crate::handler::ElicitationAsk;
use crate::listing::{Offers, ToolList};
use crate::progress::ProgressSink;
use crate::runner::Runner;
use crate::sandbox::Confined;
use crate::session::{RequestError, Session};
use crate::stdio::SupervisorCommand;
use mcp_host_config::ServerSpec;
use mcp_host_core::{
    CallOutcome, Partial, ServerId, ServerState, ServerStatus, ToolDescriptor, TransportKind,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
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
    pub http_client: crate::NetworkClient,
    /// How often an idle remote server is asked whether it is still there. A stdio server's
    /// exit is seen directly; a remote one can vanish without closing anything.
    pub health_interval: Duration,
    /// Where servers' questions for a person go (elicitation), when a person is there.
    pub ask_person: Option<tokio::sync::mpsc::UnboundedSender<ElicitationAsk>>,
    /// The person's browser runs on this machine (a chat), so a sign-in a stored credential
    /// needs can be put to them (through `ask_person`) and come back to a loopback listener.
    /// Not for a hosted service, whose users' browsers are elsewhere.
    pub sign_in_here: bool,
    /// Where OAuth credentials are stored (`mcp-host auth login` puts them there); `None`
    /// connects remote servers without OAuth.
    pub credentials: Option<mcp_host_auth::CredentialVault>,
    /// A deterministic simulation's in-process servers, seeded jitter and state log; `None`
    /// in the host.
    pub harness: Option<crate::harness::Harness>,
    /// Where each stdio server's stderr is kept (`NAME.log`, rotated), when anywhere.
    pub log_dir: Option<PathBuf>,
}

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
        /// What a `tools/call` got through before it failed (empty for other requests).
        partial: Partial,
    },
    /// The server announced a tool-list change that was not applied in time: what it now
    /// offers cannot be checked, so nothing is sent.
    #[error(
        "server `{server}` changed its tools and the new list did not arrive within {waited:?}"
    )]
    ListStale { server: String, waited: Duration },
    #[error("server `{server}` no longer offers `{tool}`")]
    NoLongerOffered { server: String, tool: String },
    /// The server's definition differs from the one the call was decided on.
    #[error("the definition of `{tool}` on server `{server}` changed after it was decided on")]
    DefinitionChanged { server: String, tool: String },
    #[error("the call to server `{server}` was interrupted before it was sent")]
    Interrupted { server: String },
}

/// What a call requires of the server's tool before it is sent.
#[derive(Clone, Debug)]
pub struct Expect {
    /// The definition the call was decided on, exactly as the server sent it.
    pub definition: Arc<ToolDescriptor>,
    /// How long to wait for a tool list the server announced as changed.
    pub wait: Duration,
}

/// One server as the manager and its task share it: the task writes, the manager reads.
pub(crate) struct Slot {
    transport: TransportKind,
    spec: Option<ServerSpec>,
    status: watch::Receiver<ServerStatus>,
    pub(crate) session: RwLock<Option<Arc<Session>>>,
    pub(crate) tools: RwLock<Arc<ToolList>>,
    pub(crate) offers: RwLock<Arc<Offers>>,
    /// Poked when a request failed in a way that suggests the server is gone.
    pub(crate) suspect: Notify,
    /// Poked to restart the server now (a person asked), or to apply `enabled`.
    pub(crate) restart: Notify,
    /// A disabled server is stopped and stays stopped until enabled again.
    pub(crate) enabled: std::sync::atomic::AtomicBool,
    /// A local server's confinement and denials, as its process keeps them.
    pub(crate) confined: Confined,
}

pub struct Manager {
    slots: Slots,
    /// Taken by the first shutdown.
    tasks: std::sync::Mutex<Vec<JoinHandle<()>>>,
    stop: CancellationToken,
    /// Counts changes of any server's state or list revision ([`Manager::changes`]).
    changes: Arc<AtomicU64>,
}

impl std::fmt::Debug for Manager {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Manager")
            .field("servers", &self.slots.keys())
            .finish_non_exhaustive()
    }
}

type Slots = Arc<BTreeMap<ServerId, Arc<Slot>>>;

/// The one capability that sends `tools/call` to a server. It is made only together with
/// the manager ([`Manager::start`]) and cannot be cloned, so whoever holds it is the host's
/// call gate: no other code can reach a server's tools, by construction.
pub struct ToolCaller {
    slots: Slots,
}

impl std::fmt::Debug for ToolCaller {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCaller").finish_non_exhaustive()
    }
}

/// Publishes a server's confinement account on its status channel whenever it changes (a
/// denial, a mechanism confirmed), so whoever watches the status sees it without asking.
async fn publish_confinement(
    confined: Confined,
    status: watch::Sender<ServerStatus>,
    stop: CancellationToken,
) {
    loop {
        tokio::select! {
            () = stop.cancelled() => return,
            () = confined.changed() => {}
        }
        let view = confined.view();
        status.send_if_modified(|s| {
            let moved = s.confinement != view;
            s.confinement.clone_from(&view);
            moved
        });
    }
}

impl Manager {
    /// Starts every startable server at once and returns immediately, with the one
    /// capability to call their tools.
    pub fn start(servers: Vec<ServerSetup>, opts: ManagerOptions) -> (Self, ToolCaller) {
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
        // From a random start, so no other manager's count (a catalogue kept for another set
        // of servers) can stand where this one does.
        let changes = Arc::new(AtomicU64::new(rand::random()));
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
                // A server given in any other state (a project server waiting for a
                // person) is held: its runner waits until it is enabled.
                enabled: std::sync::atomic::AtomicBool::new(s.initial == ServerState::Starting),
                confined: Confined::default(),
            });
            if let Some(spec) = s.spec {
                let account =
                    publish_confinement(slot.confined.clone(), tx.clone(), stop.child_token());
                tasks.push(tokio::spawn(account));
                let runner = Runner::new(spec, slot.clone(), tx, opts.clone(), changes.clone());
                // Boxed here, where it is made: unboxed, tokio moves a future this size (15
                // KB) by value through each layer of `spawn`, a copy at each.
                tasks.push(tokio::spawn(Box::pin(runner.run(stop.child_token()))));
            }
            slots.insert(s.id, slot);
        }
        let slots = Arc::new(slots);
        let caller = ToolCaller {
            slots: slots.clone(),
        };
        let tasks = std::sync::Mutex::new(tasks);
        let manager = Self {
            slots,
            tasks,
            stop,
            changes,
        };
        (manager, caller)
    }

    pub fn ids(&self) -> impl Iterator<Item = &ServerId> {
        self.slots.keys()
    }

    pub fn status(&self, id: &ServerId) -> Option<ServerStatus> {
        self.slots.get(id).map(|s| {
            let mut status = s.status.borrow().clone();
            status.confinement = s.confined.view();
            status
        })
    }

    /// A count that moves whenever any server's state or list revision changes, after the
    /// change: while it stands still, what [`Manager::state_and_revision`] reads of every
    /// server stands still too, so a turn's step need not read them all.
    pub fn changes(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// A server's state (its label) and list revision, read where they are kept: what a
    /// turn asks of every server at every step (is the catalogue still current?), which
    /// [`Manager::status`] answered by copying each whole status.
    pub fn state_and_revision(&self, id: &ServerId) -> Option<(&'static str, u64)> {
        self.slots.get(id).map(|s| {
            let status = s.status.borrow();
            (status.state.label(), status.revision)
        })
    }

    pub fn transport(&self, id: &ServerId) -> Option<TransportKind> {
        self.slots.get(id).map(|s| s.transport)
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

    /// Stops a server and keeps it stopped (`false`), or starts it again (`true`). A
    /// server held for a person's approval is not started this way (only [`Self::approved`]
    /// starts it): `false` then.
    pub fn set_enabled(&self, id: &ServerId, enabled: bool) -> bool {
        let Some(slot) = self.slots.get(id) else {
            return false;
        };
        if enabled && slot.status.borrow().state == ServerState::PendingApproval {
            return false;
        }
        slot.enabled
            .store(enabled, std::sync::atomic::Ordering::SeqCst);
        slot.restart.notify_one();
        true
    }

    /// Starts a server held for a person's approval, once that approval is recorded.
    pub fn approved(&self, id: &ServerId) -> bool {
        let Some(slot) = self.slots.get(id) else {
            return false;
        };
        slot.enabled
            .store(true, std::sync::atomic::Ordering::SeqCst);
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
        let (session, spec) = session(&self.slots, id)?;
        session
            .get_prompt(name, arguments, spec.tool_timeout)
            .await
            .map_err(|source| CallError::Request {
                server: id.to_string(),
                source,
                partial: Partial::default(),
            })
    }

    /// A resource's contents (`resources/read`).
    pub async fn read_resource(
        &self,
        id: &ServerId,
        uri: &str,
    ) -> Result<Vec<crate::ResourceText>, CallError> {
        let (session, spec) = session(&self.slots, id)?;
        session
            .read_resource(uri, spec.tool_timeout)
            .await
            .map_err(|source| CallError::Request {
                server: id.to_string(),
                source,
                partial: Partial::default(),
            })
    }

    /// The instructions a ready server gave for the model.
    pub fn instructions(&self, id: &ServerId) -> Option<String> {
        session(&self.slots, id)
            .ok()
            .and_then(|(s, _)| s.instructions())
    }

    /// A server's prompts, resources and resource templates as last listed.
    pub fn offers(&self, id: &ServerId) -> Option<Arc<Offers>> {
        self.slots
            .get(id)
            .and_then(|s| s.offers.read().ok().map(|o| o.clone()))
    }

    /// Stops every server in parallel, in the spec's order, and waits for all of them.
    /// Stops every server and waits for their tasks. A second shutdown has nothing left
    /// to wait for.
    pub async fn shutdown(&self) {
        self.stop.cancel();
        // A poisoned lock only means a panic elsewhere; the tasks are still there to join.
        let tasks = std::mem::take(&mut *self.tasks.lock().unwrap_or_else(|p| p.into_inner()));
        futures::future::join_all(tasks).await;
    }
}

impl ToolCaller {
    /// Calls a tool on a ready server with the server's tool timeout. The future borrows
    /// nothing, so it can outlive the caller's step (a call moved to the background keeps
    /// running on its own task). With `expect`, the server's current definition of the tool
    /// (after any change it announced has arrived) must be the expected one, or nothing is
    /// sent; comparing the descriptors is the same test as comparing their pin hashes.
    pub fn detached_call(
        &self,
        id: &ServerId,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        expect: Option<Expect>,
        cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> impl Future<Output = Result<CallOutcome, CallError>> + Send + use<> {
        let slots = self.slots.clone();
        let (id, tool) = (id.clone(), tool.to_string());
        async move {
            if let Some(expect) = expect {
                let current = tokio::select! {
                    r = current_tools(&slots, &id, expect.wait) => r?,
                    () = cancel.cancelled() => {
                        return Err(CallError::Interrupted { server: id.to_string() });
                    }
                };
                let server = id.to_string();
                match current.items.iter().find(|t| t.name == tool) {
                    None => return Err(CallError::NoLongerOffered { server, tool }),
                    // The same allocation is the same definition: a catalogue's entries
                    // hold the listing's own `Arc`s, so a deep comparison is only for a list
                    // read again since.
                    Some(t) if !Arc::ptr_eq(t, &expect.definition) && **t != *expect.definition => {
                        return Err(CallError::DefinitionChanged { server, tool });
                    }
                    Some(_) => {}
                }
            }
            let (session, spec) = session(&slots, &id)?;
            let timeout = spec.tool_timeout;
            session
                .call_tool(&tool, arguments, timeout, &cancel, progress)
                .await
                .map_err(|failed| CallError::Request {
                    server: id.to_string(),
                    source: failed.error,
                    partial: failed.partial,
                })
        }
    }

    /// The same call, awaited here, with no check of the definition (tests of the
    /// connection layer).
    pub async fn call(
        &self,
        id: &ServerId,
        tool: &str,
        arguments: Option<Map<String, Value>>,
        cancel: &CancellationToken,
    ) -> Result<CallOutcome, CallError> {
        self.detached_call(id, tool, arguments, None, cancel.clone(), None)
            .await
    }
}

/// The server's tool list, no older than the last change it announced before this was
/// asked: a change announced and not yet applied is waited for, at most `limit`.
async fn current_tools(
    slots: &BTreeMap<ServerId, Arc<Slot>>,
    id: &ServerId,
    limit: Duration,
) -> Result<Arc<ToolList>, CallError> {
    let (session, _) = session(slots, id)?;
    if !session.tools_changed.caught_up(limit).await {
        return Err(CallError::ListStale {
            server: id.to_string(),
            waited: limit,
        });
    }
    (slots.get(id))
        .and_then(|s| s.tools.read().ok().map(|t| t.clone()))
        .ok_or_else(|| CallError::UnknownServer(id.to_string()))
}

/// The ready session of a server, or why there is none.
fn session<'s>(
    slots: &'s BTreeMap<ServerId, Arc<Slot>>,
    id: &ServerId,
) -> Result<(Arc<Session>, &'s ServerSpec), CallError> {
    let slot = slots
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
