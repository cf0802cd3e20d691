//! `mcp-host chat` (and `mcp-host` with no command): the interactive host. One loop owns the
//! screen and waits on four things at once: keys, engine events, the running turn, and a
//! tick (timers, server states). A turn is a future that owns the conversation while it runs
//! and hands it back when it ends, so the loop stays responsive: approvals are answered, a
//! turn is interrupted, and the `/mcp` panel works while the model and the servers are busy.
//! Without a model the host still starts, connects the servers and takes `/call`.

mod bridge;
mod screen;
mod slash;

pub(crate) use screen::restore_terminal;

use crate::audit::Audit;
use crate::cli::ChatArgs;
use crate::host::Host;
use crate::model::{Chosen, choose};
use crate::policy::compile;
use bridge::{ChatObserver, Pending, scope, server_rows, tool_rows, updates};
use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind};
use futures::StreamExt;
use mcp_host_client::Manager;
use mcp_host_client::{ElicitationAsk, ElicitationKind, ElicitationReply};
use mcp_host_engine::{
    Approval, Conversation, Engine, EngineConfig, EngineError, Event, Gate, ToolSource, TurnEnd,
    TurnReport,
};
use mcp_host_models::{AnyProvider, Usage};
use mcp_host_policy::{Answers, Mode, Policy};
use mcp_host_store::Store;
use mcp_host_tui::{
    App, Command, ElicitationAnswer, ElicitationRequest, SessionInfo, StatusInfo, Update,
};
use std::future::Future;
use std::pin::Pin;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// How often timers and server states are refreshed on screen.
const TICK: Duration = Duration::from_millis(250);
/// How long a quitting host waits for a cancelled turn to wind down.
const QUIT_GRACE: Duration = Duration::from_secs(2);

/// What woke the loop.
enum Step {
    Terminal(Option<std::io::Result<TermEvent>>),
    Engine(Event),
    Direct(Update),
    Ask(ElicitationAsk),
    TurnDone((Conversation, Result<TurnReport, EngineError>)),
    Tick,
    Interrupted,
}

type TurnFuture<'a> =
    Pin<Box<dyn Future<Output = (Conversation, Result<TurnReport, EngineError>)> + 'a>>;

/// What the chat loop owns besides the screen.
pub(crate) struct Chat<'a> {
    host: &'a Host,
    manager: &'a Manager,
    policy: &'a Policy,
    /// Shared with `/call`'s tasks, which run the `PostToolUse` hooks when their call ends.
    hooks: &'a Arc<mcp_host_engine::Hooks>,
    audit: &'a Audit,
    store: Store,
    /// The catalogue each model step reads (rebuilt when the servers moved).
    tools: &'a ToolSource,
    app: App,
    mode: Mode,
    context_window: Option<usize>,
    model: Option<(Arc<AnyProvider>, String, String, usize)>,
    /// `None` while a turn owns it.
    conversation: Option<Conversation>,
    pending: Pending,
    events: mpsc::UnboundedSender<Event>,
    turn_cancel: Option<CancellationToken>,
    usage: Usage,
    /// Results of `/call`s, which run beside the turn.
    direct: mpsc::UnboundedSender<Update>,
    direct_calls: usize,
    /// Servers' questions waiting for the person, by the id the screen knows them by.
    /// (reply, the URL for a URL request).
    asks: std::collections::HashMap<
        String,
        (
            tokio::sync::oneshot::Sender<ElicitationReply>,
            Option<String>,
        ),
    >,
    asked: usize,
    quit: bool,
}

pub async fn run(host: &Host, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let store = host.store().await?;
    let answers = Answers::with_persisted(store.remembered().await?);
    let http = mcp_host_client::http_client(Duration::from_secs(10))?;
    let chosen = choose(
        args.model.as_deref(),
        args.base_url.as_deref(),
        &host.env,
        http,
    );
    let policy = compile(&host.config)?;
    let hooks = Arc::new(host.hooks()?);
    let tools = ToolSource::live(host.pins().await?);
    let audit = Audit::new(&host.paths.data_dir);
    let workdir = workdir();
    let conversation = match &args.resume {
        Some(id) => {
            let id = mcp_host_store::ConversationId::new(id)?;
            Conversation::resume(&store, &id, 0, answers).await?
        }
        None => Conversation::create(&store, "", &workdir, 0, answers).await?,
    };
    let (ask_tx, ask_rx) = mpsc::unbounded_channel();
    let manager = host.start_with(None, Some(ask_tx))?;
    let mut screen = screen::Screen::enter(&host.paths.data_dir.join("chat-stderr.log"))?;
    let (events_tx, events_rx) = mpsc::unbounded_channel();
    let (direct_tx, direct_rx) = mpsc::unbounded_channel();
    let info = SessionInfo {
        no_color: host.env.get("NO_COLOR").is_some_and(|v| !v.is_empty()),
    };
    let mut chat = Chat {
        host,
        manager: &manager,
        policy: &policy,
        hooks: &hooks,
        audit: &audit,
        store,
        tools: &tools,
        app: App::new(info),
        mode: args.mode.into(),
        context_window: args.context_window,
        model: None,
        conversation: Some(conversation),
        pending: Pending::default(),
        events: events_tx,
        turn_cancel: None,
        usage: Usage::default(),
        direct: direct_tx,
        direct_calls: 0,
        asks: std::collections::HashMap::new(),
        asked: 0,
        quit: false,
    };
    match chosen {
        Ok(c) => chat.set_model(c),
        Err(e) => chat.app.apply(Update::Notice(format!("{e}"))),
    }
    for p in &host.config.problems {
        chat.app.apply(Update::Notice(format!("config: {p}")));
    }
    if args.resume.is_some() {
        chat.replay_history();
    }
    chat.status();
    let result = chat.run(&mut screen, events_rx, direct_rx, ask_rx).await;
    drop(screen);
    manager.shutdown().await;
    result.map(|()| ExitCode::SUCCESS)
}

/// Opens a URL the person agreed to, or says to open it by hand.
fn open_url(url: &str, env: &std::collections::BTreeMap<String, String>) -> String {
    if !(url.starts_with("https://") || url.starts_with("http://")) {
        return format!("not opened (not an http(s) URL): {url}");
    }
    if crate::browser::open(url, env) {
        format!("opened in your browser: {url}")
    } else {
        format!("open this URL in your browser to continue: {url}")
    }
}

fn workdir() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}

impl<'a> Chat<'a> {
    async fn run(
        &mut self,
        screen: &mut screen::Screen,
        mut events: mpsc::UnboundedReceiver<Event>,
        mut direct: mpsc::UnboundedReceiver<Update>,
        mut asks: mpsc::UnboundedReceiver<ElicitationAsk>,
    ) -> anyhow::Result<()> {
        let mut keys = EventStream::new();
        let mut tick = tokio::time::interval(TICK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut turn: Option<TurnFuture<'a>> = None;
        let mut last_rows = Vec::new();
        let mut last_revisions = Vec::new();
        while !self.quit {
            screen.terminal.draw(|f| self.app.render(f))?;
            let interrupted = self.host.interrupted.clone();
            // Branches only report what happened; the handling below may then touch
            // everything, the running turn included.
            let step = tokio::select! {
                key = keys.next() => Step::Terminal(key),
                Some(event) = events.recv() => Step::Engine(event),
                Some(update) = direct.recv() => Step::Direct(update),
                Some(ask) = asks.recv() => Step::Ask(ask),
                done = async {
                    match turn.as_mut() {
                        Some(t) => t.await,
                        None => std::future::pending().await,
                    }
                } => Step::TurnDone(done),
                _ = tick.tick() => Step::Tick,
                () = interrupted.cancelled() => Step::Interrupted,
            };
            match step {
                Step::Terminal(Some(Ok(TermEvent::Key(k)))) if k.kind != KeyEventKind::Release => {
                    for command in self.app.on_key(k) {
                        if let Some(t) = self.command(command).await {
                            turn = Some(t);
                        }
                    }
                }
                Step::Terminal(Some(Ok(TermEvent::Paste(text)))) => self.app.on_paste(&text),
                Step::Terminal(Some(Ok(_))) => {}
                // The terminal went away: nothing more can be asked or shown.
                Step::Terminal(Some(Err(_)) | None) | Step::Interrupted => self.quit = true,
                Step::Engine(event) => {
                    // Everything already queued is applied before the next draw: a fast
                    // stream costs one frame per wake-up, not one per delta.
                    let mut next = Some(event);
                    while let Some(event) = next {
                        for update in updates(event, &mut self.pending) {
                            self.app.apply(update);
                        }
                        next = events.try_recv().ok();
                    }
                }
                Step::Direct(update) => self.app.apply(update),
                Step::Ask(ask) => self.ask_person(ask),
                Step::TurnDone(done) => {
                    turn = None;
                    self.turn_ended(done);
                }
                Step::Tick => {
                    let revisions: Vec<u64> = (self.manager.ids())
                        .filter_map(|id| self.manager.status(id).map(|s| s.revision))
                        .collect();
                    let rows = server_rows(self.manager, &self.project_servers_waiting());
                    if rows != last_rows {
                        self.app.apply(Update::Servers(rows.clone()));
                        last_rows = rows;
                    }
                    if revisions != last_revisions && turn.is_none() {
                        last_revisions = revisions;
                        self.refresh_tools().await;
                    }
                }
            }
        }
        // Quitting mid-turn: the turn is cancelled (servers are told) and given a moment.
        if let Some(t) = turn {
            if let Some(c) = &self.turn_cancel {
                c.cancel();
            }
            let _ = tokio::time::timeout(QUIT_GRACE, t).await;
        }
        Ok(())
    }

    fn project_servers_waiting(&self) -> Vec<(String, Vec<String>)> {
        let config = &self.host.config;
        (config.entries.iter())
            .filter(|e| {
                matches!(
                    e.readiness,
                    mcp_host_config::ServerReadiness::PendingApproval
                )
            })
            .map(|e| {
                let text = config
                    .project_server(&e.name)
                    .map(crate::commands::approval_text)
                    .unwrap_or_default();
                (e.name.clone(), text.lines().map(str::to_string).collect())
            })
            .collect()
    }

    async fn refresh_tools(&mut self) {
        // The same live catalogue the turns read: built once per change, not per look.
        if let Ok(catalogue) = self.tools.current(self.manager).await {
            self.app.apply(Update::Tools(tool_rows(&catalogue)));
        }
    }

    fn set_model(&mut self, chosen: Chosen) {
        let label = chosen.model.clone();
        let window = self.context_window.unwrap_or(chosen.context_window);
        let spec = chosen.spec.clone();
        self.model = Some((Arc::new(chosen.provider), label, spec, window));
        self.status();
    }

    fn status(&mut self) {
        self.app.apply(Update::Status(StatusInfo {
            model: self.model.as_ref().map(|m| m.2.clone()),
            mode: format!("{:?}", self.mode).to_lowercase(),
            input_tokens: self.usage.input_tokens,
            output_tokens: self.usage.output_tokens,
        }));
    }

    /// Handles one command from the screen; returns a turn to run when one starts.
    async fn command(&mut self, command: Command) -> Option<TurnFuture<'a>> {
        match command {
            Command::Submit(text) => {
                let text = self.attach_mentions(text).await;
                return self.start_turn(text);
            }
            Command::Slash { name, args } => {
                if let Some(text) = self.slash(&name, &args).await {
                    return self.start_turn(text);
                }
            }
            Command::Approve { call_id, scope: s } => {
                self.pending
                    .answer(&call_id, Approval::Allow { scope: scope(s) });
            }
            Command::Deny { call_id, reason } => self.pending.answer(
                &call_id,
                Approval::Deny {
                    scope: mcp_host_policy::AnswerScope::Once,
                    reason,
                },
            ),
            Command::CancelTurn => {
                if let Some(c) = &self.turn_cancel {
                    c.cancel();
                }
            }
            Command::Quit => self.quit = true,
            Command::Reconnect(server) => {
                self.manager
                    .reconnect(&mcp_host_core::ServerId::new(&server));
                self.app
                    .apply(Update::Notice(format!("restarting `{server}`")));
            }
            Command::SetEnabled { server, enabled } => {
                self.manager
                    .set_enabled(&mcp_host_core::ServerId::new(&server), enabled);
            }
            Command::ApproveProjectServer(server) => self.approve_project_server(&server),
            Command::ElicitationAnswer { id, answer } => self.answer_person(&id, answer),
        }
        None
    }

    /// Shows a server's question (form or URL); the reply waits for the person.
    fn ask_person(&mut self, ask: ElicitationAsk) {
        self.asked += 1;
        let id = format!("ask-{}", self.asked);
        let server = ask.server.to_string();
        let (request, url) = match ask.kind {
            ElicitationKind::Form { message, schema } => (
                ElicitationRequest::Form {
                    id: id.clone(),
                    server,
                    message,
                    schema,
                },
                None,
            ),
            ElicitationKind::Url { message, url } => (
                ElicitationRequest::Url {
                    id: id.clone(),
                    server,
                    message,
                    url: url.clone(),
                },
                Some(url),
            ),
        };
        self.asks.insert(id, (ask.reply, url));
        self.app.apply(Update::Elicitation(request));
    }

    fn answer_person(&mut self, id: &str, answer: ElicitationAnswer) {
        let Some((reply, url)) = self.asks.remove(id) else {
            return;
        };
        let reply_with = match answer {
            ElicitationAnswer::Accept(content) => ElicitationReply::Accept(content),
            ElicitationAnswer::Decline => ElicitationReply::Decline,
            ElicitationAnswer::Cancel => ElicitationReply::Cancel,
            // The person agreed to open it: the browser takes it from here (the server
            // learns the outcome out of band), and the request is accepted.
            ElicitationAnswer::OpenUrl => {
                let note = open_url(url.as_deref().unwrap_or_default(), &self.host.env);
                self.app.apply(Update::Notice(note));
                ElicitationReply::Accept(serde_json::json!({}))
            }
        };
        let _ = reply.send(reply_with);
    }

    fn approve_project_server(&mut self, name: &str) {
        let config = &self.host.config;
        // The definition loaded at start-up is the one the panel showed; its hash is approved.
        let note = match config.project_server(name) {
            Some(server) => match self.host.ledger().and_then(|mut l| {
                l.record(
                    &config.project_root,
                    name,
                    &server.hash,
                    mcp_host_config::TrustAnswer::Approved,
                )?;
                Ok(())
            }) {
                Ok(()) => format!(
                    "approved project server `{name}` (this definition); it starts the next time mcp-host starts"
                ),
                Err(e) => format!("could not record the approval: {e}"),
            },
            None => format!("`{name}` is not a project server waiting for approval"),
        };
        self.app.apply(Update::Notice(note));
    }

    fn start_turn(&mut self, text: String) -> Option<TurnFuture<'a>> {
        let Some((provider, _, spec, window)) = self.model.clone() else {
            self.app
                .apply(Update::Notice(crate::model::NO_MODEL.to_string()));
            return None;
        };
        let Some(mut conversation) = self.conversation.take() else {
            self.app.apply(Update::Notice(
                "a turn is already running; wait, or Ctrl-C to cancel it".into(),
            ));
            return None;
        };
        conversation.exposure = mcp_host_registry::exposure::Exposure::for_context_window(window);
        let cancel = CancellationToken::new();
        self.turn_cancel = Some(cancel.clone());
        self.app.apply(Update::UserMessage(text.clone()));
        self.app.set_busy(true);
        let (manager, policy, hooks) = (self.manager, self.policy, &**self.hooks);
        let tools = self.tools;
        let observer = ChatObserver {
            audit: self.audit,
            events: self.events.clone(),
        };
        let config = EngineConfig {
            model: spec
                .split_once(':')
                .map_or(spec.clone(), |(_, m)| m.to_string()),
            max_steps: 50,
            mode: self.mode,
            result_chars: mcp_host_engine::DEFAULT_RESULT_CHARS,
            context_window: window,
            store: Some(self.store.clone()),
            background_after: Some(mcp_host_engine::DEFAULT_BACKGROUND_AFTER),
        };
        Some(Box::pin(async move {
            let engine = Engine {
                provider: &*provider,
                manager,
                tools,
                gate: Gate { policy, hooks },
                observer: &observer,
                config,
            };
            let report = engine.run_turn(&mut conversation, &text, &cancel).await;
            (conversation, report)
        }))
    }

    fn turn_ended(
        &mut self,
        (conversation, report): (Conversation, Result<TurnReport, EngineError>),
    ) {
        self.conversation = Some(conversation);
        self.turn_cancel = None;
        self.pending.clear();
        self.app.set_busy(false);
        let note = match report {
            Ok(r) => {
                self.usage += r.usage;
                match r.end {
                    TurnEnd::Finished => None,
                    TurnEnd::StepLimit => Some(r.text),
                    TurnEnd::Cancelled => Some("cancelled".to_string()),
                }
            }
            Err(e) => Some(format!("the turn failed: {e}")),
        };
        self.app.apply(Update::TurnEnded { note });
        self.status();
    }

    /// Shows a resumed conversation's user and assistant messages.
    fn replay_history(&mut self) {
        let Some(conv) = &self.conversation else {
            return;
        };
        let mut updates = vec![Update::ClearTranscript];
        for m in &conv.history {
            match m {
                mcp_host_models::Message::User { text } => {
                    updates.push(Update::UserMessage(text.clone()));
                }
                mcp_host_models::Message::Assistant { text, .. } if !text.is_empty() => {
                    updates.push(Update::TextDelta(text.clone()));
                    updates.push(Update::TurnEnded { note: None });
                }
                _ => {}
            }
        }
        for u in updates {
            self.app.apply(u);
        }
    }
}
