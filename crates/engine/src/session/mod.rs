//! One session: what a conversation needs, owned in one place, behind a queue pair. A front
//! end submits [`Op`]s (a user turn, an approval answer by call id, an answer to a server's
//! question, a person's direct call, an interrupt, server restart/enable/approve, a model
//! change, a new, resumed or opened conversation) and receives `mcp_host_core::event::Event`s. The
//! session owns the started servers and the gate, the live catalogue, the conversation and
//! its persistence, the pending approvals and questions, and the person's running calls; a
//! turn runs as a future beside them, so approvals are answered, a turn is interrupted and
//! servers are restarted while the model and the servers are busy.
//!
//! `mcp-host run` sends one turn and prints events; `mcp-host chat` turns keys into
//! operations and events into the screen; a hosted mode is one more adapter.

mod asks;
mod beside;
mod ops;
pub use ops::replay;
pub mod views;

use crate::host::{Connected, ElicitationAsk};
use crate::{
    Approval, Conversation, Engine, EngineConfig, EngineError, Observer, Reply, ToolSource,
    TurnReport,
};
use beside::beside;
use futures::StreamExt;
use futures::stream::FuturesUnordered;
use mcp_host_core::decision::Mode;
use mcp_host_core::event::{ApprovalPrompt, ElicitationAnswer, Event, ToolView};
use mcp_host_models::AnyProvider;
use mcp_host_store::Store;
use std::collections::{BTreeMap, HashMap};
use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How often server states are looked at for the `Servers` and `Tools` events.
const TICK: Duration = Duration::from_millis(250);
/// How long a session that is shutting down waits for a cancelled turn to wind down.
const QUIT_GRACE: Duration = Duration::from_secs(2);

/// What a front end asks of the session.
#[derive(Debug)]
pub enum Op {
    /// The person's message; `@server:uri` mentions are attached as that server's content.
    UserTurn(String),
    /// A server prompt (`/server:prompt name=value ... text`) sent as the next message.
    Prompt {
        server: String,
        prompt: String,
        args: String,
    },
    /// The answer to the approval question of `call_id`.
    Answer {
        call_id: String,
        approval: Approval,
    },
    /// The answer to a server's question, by the id its request carried.
    AnswerElicitation {
        id: String,
        answer: ElicitationAnswer,
    },
    /// A person's own call (chat's `/call`): runs beside the turn.
    DirectCall {
        server: String,
        tool: String,
        args: serde_json::Value,
    },
    /// Cancel the running turn (its calls' servers are told).
    Interrupt,
    Reconnect(String),
    SetEnabled {
        server: String,
        enabled: bool,
    },
    /// Approve a project server waiting for approval; it starts at once.
    ApproveProjectServer(String),
    /// `provider:model`, or empty to be told the current one.
    SetModel(String),
    /// Compact the conversation now (between turns), to make room for the next ones.
    Compact,
    NewConversation,
    /// Resume a stored conversation (the latest in this directory when `None`).
    Resume(Option<String>),
    /// Switch to this stored conversation, or to a new one when it cannot be resumed (or
    /// with `None`): unlike `Resume`, the current conversation is always left, so the turn
    /// submitted next goes where the front end meant it to.
    Open(Option<String>),
    /// End the session: the turn is cancelled, the servers stopped.
    Shutdown,
}

/// The model a session's turns use.
#[derive(Clone)]
pub struct ModelChoice {
    pub provider: Arc<AnyProvider>,
    /// `provider:model` as chosen.
    pub spec: String,
    /// The model's own name (sent to the provider).
    pub model: String,
    pub context_window: usize,
}

/// Records a person's approval of a project server: `Ok` with the note to show once it is
/// recorded (the session then starts the held server), `Err` with why not.
pub type ApproveServer = Box<dyn Fn(&str) -> Result<String, String> + Send + Sync>;

/// Fixed for the session.
pub struct Settings {
    pub mode: Mode,
    pub max_steps: usize,
    pub background_after: Option<Duration>,
    /// Overrides the chosen model's context window.
    pub context_window: Option<usize>,
    /// Where conversations are listed from (`/resume` with no id).
    pub workdir: String,
    /// The environment, read once (model keys, `BROWSER`).
    pub env: Arc<BTreeMap<String, String>>,
    /// Project servers waiting for approval, with what approving lets each run and send.
    pub waiting_servers: Vec<(String, Vec<String>)>,
    /// Records a project server's approval; its answer is told to the person.
    pub approve_server: ApproveServer,
    /// Whether a person is there to answer approvals. Headless, an approval question is
    /// refused at once (nobody could say yes), and the refusal says so.
    pub interactive: bool,
}

/// What a session starts with.
pub struct SessionSetup {
    pub connected: Connected,
    pub tools: ToolSource,
    pub store: Store,
    pub conversation: Conversation,
    pub model: Option<ModelChoice>,
    pub settings: Settings,
    /// Servers' questions for a person.
    pub questions: Option<mpsc::UnboundedReceiver<ElicitationAsk>>,
}

/// The parts turns and direct calls share with the session loop.
pub(crate) struct Shared {
    pub connected: Connected,
    pub tools: ToolSource,
    pub store: Store,
}

impl Shared {
    /// The engine for one turn (or compaction) of this session.
    fn engine<'s>(
        &'s self,
        model: &'s ModelChoice,
        observer: &'s dyn Observer,
        config: EngineConfig,
    ) -> Engine<'s, AnyProvider> {
        Engine {
            provider: &model.provider,
            servers: &self.connected.servers,
            tools: &self.tools,
            gate: &self.connected.gate,
            observer,
            config,
        }
    }
}

type TurnFuture =
    Pin<Box<dyn Future<Output = (Conversation, Result<TurnReport, EngineError>)> + Send>>;
type DirectFuture = Pin<Box<dyn Future<Output = ()> + Send>>;

/// Sends every event to the front end; keeps approval replies by call id.
struct SessionObserver {
    events: mpsc::UnboundedSender<Event>,
    approvals: Arc<Mutex<HashMap<String, Reply>>>,
    interactive: bool,
}

impl Observer for SessionObserver {
    fn event(&self, event: Event) {
        // A front end that went away cannot be told; the session ends with its queue.
        let _ = self.events.send(event);
    }

    fn approval(&self, prompt: ApprovalPrompt, reply: Reply) {
        if !self.interactive {
            return drop(reply);
        }
        if let Ok(mut pending) = self.approvals.lock() {
            pending.insert(prompt.subject.call_id.clone(), reply);
        }
        self.event(Event::ApprovalRequested(prompt));
    }
}

/// The session: run it with [`Session::run`] beside the front end.
pub struct Session {
    shared: Arc<Shared>,
    model: Option<ModelChoice>,
    settings: Settings,
    /// `None` while a turn owns it.
    conversation: Option<Conversation>,
    observer: Arc<SessionObserver>,
    questions: Option<mpsc::UnboundedReceiver<ElicitationAsk>>,
    /// Servers' questions waiting for the person.
    asks: asks::Asks,
    asked: usize,
    direct_calls: usize,
    turn_cancel: Option<CancellationToken>,
    /// Cancelled when the session ends: the person's calls still running are told.
    ending: CancellationToken,
}

/// The front end's side of the queue pair.
pub struct SessionHandle {
    ops: mpsc::UnboundedSender<Op>,
}

impl SessionHandle {
    /// Submits an operation; `false` when the session has ended.
    pub fn submit(&self, op: Op) -> bool {
        self.ops.send(op).is_ok()
    }
}

impl Session {
    /// A session, the handle to submit to it, and the events it sends. Nothing runs until
    /// [`Session::run`] is awaited.
    pub fn new(
        setup: SessionSetup,
    ) -> (
        Self,
        SessionHandle,
        mpsc::UnboundedReceiver<Op>,
        mpsc::UnboundedReceiver<Event>,
    ) {
        let (ops_tx, ops_rx) = mpsc::unbounded_channel();
        let (events_tx, events_rx) = mpsc::unbounded_channel();
        let interactive = setup.settings.interactive;
        let session = Self {
            shared: Arc::new(Shared {
                connected: setup.connected,
                tools: setup.tools,
                store: setup.store,
            }),
            model: setup.model,
            settings: setup.settings,
            conversation: Some(setup.conversation),
            observer: Arc::new(SessionObserver {
                events: events_tx,
                approvals: Arc::default(),
                interactive,
            }),
            questions: setup.questions,
            asks: asks::Asks::default(),
            asked: 0,
            direct_calls: 0,
            turn_cancel: None,
            ending: CancellationToken::new(),
        };
        (session, SessionHandle { ops: ops_tx }, ops_rx, events_rx)
    }

    fn emit(&self, event: Event) {
        self.observer.event(event);
    }

    fn notice(&self, text: impl Into<String>) {
        self.emit(crate::events::notice(text));
    }

    /// Runs until [`Op::Shutdown`] or the handle is dropped, then stops the servers.
    pub async fn run(mut self, mut ops: mpsc::UnboundedReceiver<Op>) {
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut turn: Option<TurnFuture> = None;
        let mut direct: FuturesUnordered<DirectFuture> = FuturesUnordered::new();
        let mut seen = Published::default();
        let mut refresh: Option<Refresh> = None;
        let mut questions = self.questions.take();
        loop {
            tokio::select! {
                op = ops.recv() => match op {
                    None | Some(Op::Shutdown) => break,
                    Some(op) => self.op(op, &mut turn, &mut direct).await,
                },
                done = async {
                    match turn.as_mut() {
                        Some(t) => t.await,
                        None => std::future::pending().await,
                    }
                } => {
                    turn = None;
                    self.turn_ended(done);
                }
                Some(()) = direct.next(), if !direct.is_empty() => {}
                Some(ask) = async {
                    match questions.as_mut() {
                        Some(q) => q.recv().await,
                        None => std::future::pending().await,
                    }
                } => self.question(ask),
                id = self.asks.withdrawn() => self.emit(Event::ElicitationWithdrawn { id }),
                Some((revisions, tools)) = async {
                    match refresh.as_mut() {
                        Some(r) => Some(r.await),
                        None => std::future::pending().await,
                    }
                } => {
                    refresh = None;
                    // Tried once per change, as before: a pin store that cannot be read
                    // fails the turn's own steps too, and a rebuild at every tick would
                    // only repeat the failure.
                    seen.revisions = revisions;
                    if let Some(tools) = tools {
                        self.emit(Event::Tools { tools });
                    }
                }
                _ = tick.tick() => self.publish(&mut seen, &mut refresh),
            }
        }
        // Ending mid-turn: the turn is cancelled (servers are told) and given a moment.
        self.ending.cancel();
        if let Some(t) = turn {
            if let Some(c) = &self.turn_cancel {
                c.cancel();
            }
            if let Ok((conv, _)) = tokio::time::timeout(QUIT_GRACE, t).await {
                self.conversation = Some(conv);
            }
        }
        let _ = tokio::time::timeout(QUIT_GRACE, async { while direct.next().await.is_some() {} })
            .await;
        if let Some(conv) = self.conversation.take() {
            conv.abandon(&self.shared.connected.gate, &*self.observer)
                .await;
        }
        self.shared.connected.servers.shutdown().await;
        self.emit(Event::Ended);
    }

    async fn op(
        &mut self,
        op: Op,
        turn: &mut Option<TurnFuture>,
        direct: &mut FuturesUnordered<DirectFuture>,
    ) {
        match op {
            Op::UserTurn(text) => {
                let text = self.attach_mentions(text).await;
                if let Some(t) = self.start_turn(text) {
                    *turn = Some(t);
                }
            }
            Op::Prompt {
                server,
                prompt,
                args,
            } => match self.prompt(&server, &prompt, &args).await {
                Ok(text) => {
                    if let Some(t) = self.start_turn(text) {
                        *turn = Some(t);
                    }
                }
                Err(why) => self.notice(why),
            },
            Op::Answer { call_id, approval } => {
                let reply =
                    (self.observer.approvals.lock().ok()).and_then(|mut p| p.remove(&call_id));
                if let Some(reply) = reply {
                    // An answer that arrives after the turn ended is dropped.
                    let _ = reply.send(approval);
                }
            }
            Op::AnswerElicitation { id, answer } => self.answer_question(&id, answer),
            Op::DirectCall { server, tool, args } => {
                if let Some(call) = self.direct_call(&server, &tool, args).await {
                    direct.push(call);
                }
            }
            Op::Interrupt => {
                if let Some(c) = &self.turn_cancel {
                    c.cancel();
                }
            }
            Op::Reconnect(server) => {
                let id = mcp_host_core::ServerId::new(&server);
                if self.shared.connected.servers.reconnect(&id) {
                    self.notice(format!("restarting `{server}`"));
                }
            }
            Op::SetEnabled { server, enabled } => {
                let id = mcp_host_core::ServerId::new(&server);
                if !self.shared.connected.servers.set_enabled(&id, enabled) && enabled {
                    self.notice(format!(
                        "`{server}` waits for your approval: press a in /mcp to see what it runs"
                    ));
                }
            }
            Op::ApproveProjectServer(server) => match (self.settings.approve_server)(&server) {
                Ok(note) => {
                    // It was held since the start with the definition just approved.
                    self.settings
                        .waiting_servers
                        .retain(|(name, _)| *name != server);
                    let id = mcp_host_core::ServerId::new(&server);
                    self.shared.connected.servers.approved(&id);
                    self.notice(note);
                }
                Err(why) => self.notice(why),
            },
            Op::SetModel(spec) => self.set_model(&spec),
            Op::Compact => {
                if let Some(t) = self.start_compaction() {
                    *turn = Some(t);
                }
            }
            Op::NewConversation => self.new_conversation().await,
            Op::Resume(id) => self.resume(id.as_deref()).await,
            Op::Open(id) => self.open(id.as_deref()).await,
            Op::Shutdown => {}
        }
    }

    /// The model and the conversation for a turn, or why there is no turn now.
    fn take_for_turn(&mut self) -> Option<(ModelChoice, Conversation, EngineConfig)> {
        let Some(model) = self.model.clone() else {
            self.notice(mcp_host_models::NO_MODEL);
            return None;
        };
        let Some(mut conversation) = self.conversation.take() else {
            self.notice("a turn is already running; wait, or Ctrl-C to cancel it");
            return None;
        };
        let window = self.settings.context_window.unwrap_or(model.context_window);
        conversation.exposure = mcp_host_registry::exposure::Exposure::for_context_window(window);
        let config = EngineConfig {
            model: model.model.clone(),
            max_steps: self.settings.max_steps,
            mode: self.settings.mode,
            result_chars: crate::DEFAULT_RESULT_CHARS,
            context_window: window,
            store: Some(self.shared.store.clone()),
            background_after: self.settings.background_after,
        };
        Some((model, conversation, config))
    }

    fn start_turn(&mut self, text: String) -> Option<TurnFuture> {
        let (model, mut conversation, config) = self.take_for_turn()?;
        let cancel = CancellationToken::new();
        self.turn_cancel = Some(cancel.clone());
        self.emit(Event::TurnStarted { text: text.clone() });
        let shared = self.shared.clone();
        let observer = self.observer.clone();
        Some(beside(async move {
            let engine = shared.engine(&model, &*observer, config);
            let report = engine.run_turn(&mut conversation, &text, &cancel).await;
            (conversation, report)
        }))
    }

    /// `/compact`: runs beside the loop like a turn (it may ask the model for a summary),
    /// and ends like one, with an empty report.
    fn start_compaction(&mut self) -> Option<TurnFuture> {
        let (model, mut conversation, config) = self.take_for_turn()?;
        let shared = self.shared.clone();
        let observer = self.observer.clone();
        Some(beside(async move {
            let engine = shared.engine(&model, &*observer, config);
            let outcome = engine.compact_now(&mut conversation).await;
            let report = outcome.map_err(EngineError::from).map(|_| TurnReport {
                text: String::new(),
                steps: 0,
                end: crate::TurnEnd::Finished,
                calls: Vec::new(),
                usage: Default::default(),
                conversation_id: conversation.id().map(ToString::to_string),
            });
            (conversation, report)
        }))
    }

    fn turn_ended(
        &mut self,
        (conversation, report): (Conversation, Result<TurnReport, EngineError>),
    ) {
        self.conversation = Some(conversation);
        self.turn_cancel = None;
        // Whatever is still waiting for an answer belonged to the turn: it is refused.
        if let Ok(mut pending) = self.observer.approvals.lock() {
            pending.clear();
        }
        self.emit(match report {
            Ok(report) => Event::TurnEnded {
                report: Box::new(report),
            },
            Err(e) => Event::TurnFailed {
                error: e.to_string(),
            },
        });
    }

    /// Publishes the servers when they moved, and starts rebuilding the catalogue's view
    /// when it changed. Mid-turn too: a turn can wait on a person for minutes, and a server
    /// that came up meanwhile belongs in every front end's tool list at once. The rebuild
    /// is its own future beside the turn, never awaited here: a turn mid-step holds the
    /// catalogue's lock, and waiting for it in this loop would stop polling the turn that
    /// must release it.
    fn publish(&self, seen: &mut Published, refresh: &mut Option<Refresh>) {
        let servers = &self.shared.connected.servers;
        let views = views::server_views(servers, &self.settings.waiting_servers);
        if views != seen.servers {
            seen.servers = views.clone();
            self.emit(Event::Servers { servers: views });
        }
        let revisions: Vec<u64> = (servers.ids())
            .filter_map(|id| servers.status(id).map(|s| s.revision))
            .collect();
        if revisions != seen.revisions && refresh.is_none() {
            let shared = self.shared.clone();
            *refresh = Some(beside(async move {
                let catalogue = shared.tools.current(&shared.connected.servers).await;
                (revisions, catalogue.ok().map(|c| views::tool_views(&c)))
            }));
        }
    }
}

/// A rebuild of the published tool list: the revisions it was built at, and the list
/// (`None` when the catalogue could not be read).
type Refresh = Pin<Box<dyn Future<Output = (Vec<u64>, Option<Vec<ToolView>>)> + Send>>;

/// What the front end was last told about the servers.
#[derive(Default)]
struct Published {
    servers: Vec<mcp_host_core::event::ServerView>,
    revisions: Vec<u64>,
}
