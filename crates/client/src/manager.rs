//! The connection manager: exactly one supervised session per configured server, all started
//! in parallel. Each server has its own task (`runner.rs`) that connects, publishes its
//! state, refreshes tools on `list_changed`, restarts or reconnects inside the retry policy,
//! and stops in order on shutdown. A server that fails, hangs or lies affects only its own
//! task. This file owns the manager's API and the per-server slots the tasks fill.

use crate::backoff::RetryPolicy;
use crate::handler::{ElicitationAsk, Progress};
use crate::listing::{Offers, ToolList};
use crate::runner::Runner;
use crate::session::{RequestError, Session};
use crate::stdio::SupervisorCommand;
use mcp_host_config::ServerSpec;
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
                let runner = Runner::new(spec, slot.clone(), tx, opts.clone());
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
