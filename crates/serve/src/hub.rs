//! This replica's live users: one engine session per user who is using it, started on first
//! use and stopped when idle, with at most one turn at a time. The hub starts turns (the
//! database row with its lease first, so no two replicas run one conversation at once),
//! routes each answer to the session whose turn asked (here, or through the other replica's
//! inbox), and pumps every session's events into the conversation's numbered event log.

use crate::db::{Db, DbError, now_ms};
use crate::journal::{ConversationRow, StoredEvent, TurnState};
use crate::metrics::Metrics;
use crate::start::{StartError, Started, UserStart};
use crate::streams::Streams;
use crate::users::User;
use crate::{Service, workers::Workers};
use mcp_host_core::decision::AnswerScope;
use mcp_host_core::event::{ElicitationAnswer, ServerView, ToolView};
use mcp_host_engine::session::{Op, SessionHandle};
use mcp_host_engine::{Approval, Event, TurnEnd};
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;
use std::time::Instant;
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error("the service is shutting down; try another replica")]
    Draining,
    #[error("{0}")]
    Busy(String),
    #[error("nothing is waiting for that answer")]
    NotWaiting,
    #[error("cannot start your session: {0}")]
    Start(#[from] StartError),
    #[error("cannot start your session: its thread pool has stopped")]
    Stopped,
    #[error(transparent)]
    Db(#[from] DbError),
}

/// An answer to what a turn asked, as the API and the inbox carry it.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Answer {
    Approval {
        call_id: String,
        allow: bool,
        #[serde(default = "once")]
        scope: Scope,
        #[serde(default)]
        reason: Option<String>,
    },
    Elicitation {
        id: String,
        answer: ElicitationAnswer,
    },
    Interrupt,
}

fn once() -> Scope {
    Scope::Once
}

#[derive(Clone, Copy, Debug, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    Once,
    Session,
    Always,
}

impl From<Scope> for AnswerScope {
    fn from(s: Scope) -> Self {
        match s {
            Scope::Once => Self::Once,
            Scope::Session => Self::Session,
            Scope::Always => Self::Always,
        }
    }
}

/// The turn a session is running, and where its events go.
struct ActiveTurn {
    id: String,
    conversation: String,
    next_seq: i64,
    /// The session was told to open the conversation; the engine id it opens (the same, or
    /// a new one) is recorded when the session says which.
    records_engine_id: bool,
    /// Call id → server, for latency by server.
    calls: HashMap<String, String>,
}

#[derive(Default)]
struct LinkState {
    engine_conversation: Option<String>,
    turn: Option<ActiveTurn>,
    servers: Vec<ServerView>,
    tools: Vec<ToolView>,
    /// Approval call ids and elicitation ids the session waits on.
    waiting: HashSet<String>,
    last_used: Option<Instant>,
}

/// One user's live session on this replica.
pub struct Link {
    pub user: User,
    handle: SessionHandle,
    state: Mutex<LinkState>,
    /// Cancelled when the session has ended (its servers stopped).
    pub ended: CancellationToken,
}

pub struct Hub {
    pub db: Db,
    pub service: Arc<Service>,
    workers: std::sync::Mutex<Option<Workers>>,
    links: Mutex<HashMap<String, Arc<Link>>>,
    /// Held while a user's session starts (so a user's two first requests start one).
    starting: Mutex<HashMap<String, Arc<Mutex<()>>>>,
    pub streams: Streams,
    pub metrics: Arc<Metrics>,
    /// Set on SIGTERM: no new turn starts here.
    pub draining: CancellationToken,
    /// Rung when an answer for a turn here may be waiting in this replica's inbox.
    pub inbox_bell: tokio::sync::Notify,
    /// Whether other replicas' writes are announced (PostgreSQL's notifications are up).
    pub listening: std::sync::atomic::AtomicBool,
}

/// How often streams and the inbox look anyway while notifications are up: only for a
/// notification lost with a dropped connection.
const POLL_WHILE_LISTENING: Duration = Duration::from_secs(2);

impl Hub {
    pub fn new(db: Db, service: Arc<Service>, workers: Workers) -> Self {
        Self {
            db,
            service,
            workers: std::sync::Mutex::new(Some(workers)),
            links: Mutex::default(),
            starting: Mutex::default(),
            streams: Streams::default(),
            metrics: Arc::default(),
            draining: CancellationToken::new(),
            inbox_bell: tokio::sync::Notify::new(),
            listening: std::sync::atomic::AtomicBool::new(false),
        }
    }

    /// How long a stream or the inbox waits before looking without a bell.
    pub fn poll_interval(&self) -> Duration {
        if self.listening.load(std::sync::atomic::Ordering::Relaxed) {
            self.service.poll.max(POLL_WHILE_LISTENING)
        } else {
            self.service.poll
        }
    }

    pub async fn link_of(&self, user: &User) -> Option<Arc<Link>> {
        self.links.lock().await.get(&user.id).cloned()
    }

    /// Users with a live session here.
    pub async fn active_users(&self) -> usize {
        self.links.lock().await.len()
    }

    /// `user`'s session, started (for `conversation`) if there is none.
    async fn link(
        self: &Arc<Self>,
        user: &User,
        conversation: &ConversationRow,
    ) -> Result<Arc<Link>, HubError> {
        if let Some(link) = self.live_link(&user.id).await {
            return Ok(link);
        }
        // One start per user at a time, and none holding the map: other users' starts, turns,
        // metrics and the drain go on while this user's servers come up.
        let gate = {
            let mut starting = self.starting.lock().await;
            starting.retain(|_, g| Arc::strong_count(g) > 1);
            starting.entry(user.id.clone()).or_default().clone()
        };
        let _one_at_a_time = gate.lock().await;
        if let Some(link) = self.live_link(&user.id).await {
            return Ok(link);
        }
        let start = UserStart {
            service: self.service.clone(),
            user: user.clone(),
            data: self.db.session_user_data(&user.id),
            enabled: self.startable_servers(user).await?,
            rules: self.db.user_rules(user).await?,
            conversation: conversation.clone(),
        };
        let (ready_tx, ready_rx) = tokio::sync::oneshot::channel();
        let sent = match self.workers.lock() {
            Ok(w) => w.as_ref().is_some_and(|w| {
                w.run(
                    &user.id,
                    Box::new(move || Box::pin(crate::start::run(start, ready_tx))),
                )
            }),
            Err(_) => false,
        };
        if !sent {
            return Err(HubError::Stopped);
        }
        let started: Started = ready_rx.await.map_err(|_| HubError::Stopped)??;
        let link = Arc::new(Link {
            user: user.clone(),
            handle: started.handle,
            state: Mutex::new(LinkState {
                engine_conversation: Some(started.engine_conversation.clone()),
                last_used: Some(Instant::now()),
                ..LinkState::default()
            }),
            ended: CancellationToken::new(),
        });
        if conversation.engine_id.as_ref() != Some(&started.engine_conversation) {
            self.db
                .set_engine_id(&conversation.id, &started.engine_conversation)
                .await?;
        }
        self.links
            .lock()
            .await
            .insert(user.id.clone(), link.clone());
        tokio::spawn(pump(self.clone(), link.clone(), started.events));
        Ok(link)
    }

    /// `user`'s session if it is running.
    async fn live_link(&self, user: &str) -> Option<Arc<Link>> {
        let links = self.links.lock().await;
        links.get(user).filter(|l| !l.ended.is_cancelled()).cloned()
    }

    /// The servers `user` enabled and may still enable (an admin may have withdrawn one).
    async fn startable_servers(&self, user: &User) -> Result<Vec<String>, DbError> {
        let granted = self.db.enableable(user).await?;
        let mut enabled = self.db.enabled_servers(user).await?;
        enabled.retain(|name| granted.contains(name));
        Ok(enabled)
    }

    /// Starts a turn of `user` in `conversation`; its events follow in the conversation's log.
    pub async fn start_turn(
        self: &Arc<Self>,
        user: &User,
        conversation: &ConversationRow,
        text: String,
    ) -> Result<String, HubError> {
        if self.draining.is_cancelled() {
            return Err(HubError::Draining);
        }
        // The engine id may have been set by an earlier turn (on any replica).
        let conversation = self
            .db
            .conversation(user, &conversation.id)
            .await?
            .unwrap_or_else(|| conversation.clone());
        let link = self.link(user, &conversation).await?;
        let mut state = link.state.lock().await;
        if state.turn.is_some() {
            return Err(HubError::Busy(
                "another turn of yours is running; wait for it or interrupt it".into(),
            ));
        }
        let lease_until = now_ms() + self.service.lease_ms;
        let turn = match self
            .db
            .start_turn(user, &conversation.id, &self.service.replica, lease_until)
            .await
        {
            Ok(id) => id,
            Err(DbError::Conflict(why)) => return Err(HubError::Busy(why)),
            Err(e) => return Err(e.into()),
        };
        let next_seq = match self.db.last_seq(&conversation.id).await {
            Ok(last) => last + 1,
            Err(e) => {
                // No turn is left holding the conversation for a session that never got it.
                let _ = self.db.end_turn(&turn, TurnState::Failed).await;
                return Err(e.into());
            }
        };
        // The session may have another conversation open: it opens this one (or a fresh one,
        // whose id is recorded, when it has no history yet).
        let records_engine_id = state.engine_conversation != conversation.engine_id;
        if records_engine_id {
            link.handle.submit(Op::Open(conversation.engine_id.clone()));
        }
        state.turn = Some(ActiveTurn {
            id: turn.clone(),
            conversation: conversation.id.clone(),
            next_seq,
            records_engine_id,
            calls: HashMap::new(),
        });
        state.last_used = Some(Instant::now());
        link.handle.submit(Op::UserTurn(text));
        self.metrics.turn_started();
        Ok(turn)
    }

    /// Delivers `answer` for the running turn of `conversation` (already checked to be the
    /// user's): to the session here, or to the inbox of the replica running it.
    pub async fn answer(
        &self,
        user: &User,
        conversation: &str,
        answer: Answer,
    ) -> Result<(), HubError> {
        let running = self.db.running_turn(conversation).await?;
        let Some(turn) = running else {
            return Err(HubError::NotWaiting);
        };
        if turn.replica != self.service.replica {
            let body =
                serde_json::to_string(&answer).map_err(|e| DbError::Corrupt(e.to_string()))?;
            self.db
                .post_to_inbox(&turn.replica, &turn.id, &body)
                .await?;
            return Ok(());
        }
        let link = self.link_of(user).await.ok_or(HubError::NotWaiting)?;
        if deliver(self, &link, &turn.id, answer).await {
            Ok(())
        } else {
            Err(HubError::NotWaiting)
        }
    }

    /// Answers left for this replica's turns by other replicas.
    pub async fn take_inbox(&self) -> Result<(), DbError> {
        for (turn, body) in self.db.take_inbox(&self.service.replica).await? {
            let Ok(answer) = serde_json::from_str::<Answer>(&body) else {
                continue;
            };
            let links: Vec<Arc<Link>> = self.links.lock().await.values().cloned().collect();
            for link in links {
                if deliver(self, &link, &turn, answer.clone()).await {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Ends the sessions idle for longer than the service's idle time (their servers stop).
    pub async fn stop_idle(&self) {
        let idle = self.service.idle_stop;
        let links: Vec<Arc<Link>> = self.links.lock().await.values().cloned().collect();
        for link in links {
            let state = link.state.lock().await;
            let quiet = state.last_used.is_some_and(|t| t.elapsed() >= idle);
            if state.turn.is_none() && quiet {
                link.handle.submit(Op::Shutdown);
            }
        }
    }

    /// A user's servers as their session last published them (none when it is not running).
    pub async fn live_servers(&self, user: &User) -> Option<(Vec<ServerView>, Vec<ToolView>)> {
        let link = self.link_of(user).await?;
        let state = link.state.lock().await;
        Some((state.servers.clone(), state.tools.clone()))
    }

    /// Ends a user's session (their server set changed; the next use starts a new one).
    pub async fn restart_user(&self, user: &User) {
        if let Some(link) = self.link_of(user).await
            && link.state.lock().await.turn.is_none()
        {
            link.handle.submit(Op::Shutdown);
        }
    }

    /// Turns running here.
    pub async fn running_turns(&self) -> usize {
        let links: Vec<Arc<Link>> = self.links.lock().await.values().cloned().collect();
        let mut n = 0;
        for link in links {
            n += usize::from(link.state.lock().await.turn.is_some());
        }
        n
    }

    /// Every live session's servers (for the metrics of connection states).
    pub async fn all_servers(&self) -> Vec<ServerView> {
        let links: Vec<Arc<Link>> = self.links.lock().await.values().cloned().collect();
        let mut out = Vec::new();
        for link in links {
            out.extend(link.state.lock().await.servers.iter().cloned());
        }
        out
    }

    /// Interrupts every running turn here (the drain deadline passed).
    pub async fn interrupt_all(&self) {
        let links: Vec<Arc<Link>> = self.links.lock().await.values().cloned().collect();
        for link in links {
            if link.state.lock().await.turn.is_some() {
                link.handle.submit(Op::Interrupt);
            }
        }
    }

    /// Ends every session and waits until each has stopped its servers.
    pub async fn stop_all(&self) {
        let links: Vec<Arc<Link>> = self.links.lock().await.values().cloned().collect();
        for link in &links {
            link.handle.submit(Op::Shutdown);
        }
        for link in links {
            link.ended.cancelled().await;
        }
        if let Ok(mut w) = self.workers.lock()
            && let Some(workers) = w.take()
        {
            // The threads only hold sessions, which have all ended.
            drop(tokio::task::spawn_blocking(move || workers.stop()));
        }
    }
}

/// Gives `answer` to `link`'s session if its running turn is `turn` and waits for it. An
/// answer to a server's question is recorded in the log (an approval's is: `decided`), so a
/// page replaying the turn knows the question is settled.
async fn deliver(hub: &Hub, link: &Link, turn: &str, answer: Answer) -> bool {
    let mut state = link.state.lock().await;
    if state.turn.as_ref().map(|t| t.id.as_str()) != Some(turn) {
        return false;
    }
    state.last_used = Some(Instant::now());
    let op = match answer {
        Answer::Interrupt => Op::Interrupt,
        Answer::Approval {
            call_id,
            allow,
            scope,
            reason,
        } => {
            if !state.waiting.remove(&call_id) {
                return false;
            }
            let scope = scope.into();
            Op::Answer {
                call_id,
                approval: if allow {
                    Approval::Allow { scope }
                } else {
                    Approval::Deny { scope, reason }
                },
            }
        }
        Answer::Elicitation { id, answer } => {
            if !state.waiting.remove(&id) {
                return false;
            }
            // The page opens a URL itself: the host must never open one on the service's
            // own machine, which is what the engine does for a person at a terminal.
            let answer = match answer {
                ElicitationAnswer::OpenUrl => ElicitationAnswer::Accept(serde_json::json!({})),
                other => other,
            };
            let action = match &answer {
                ElicitationAnswer::Accept(_) | ElicitationAnswer::OpenUrl => "accept",
                ElicitationAnswer::Decline => "decline",
                ElicitationAnswer::Cancel => "cancel",
            };
            if let Some(turn) = state.turn.as_mut() {
                let body =
                    serde_json::json!({"type": "elicitation_answered", "id": id, "action": action});
                record(hub, link, turn, body).await;
            }
            Op::AnswerElicitation { id, answer }
        }
    };
    link.handle.submit(op)
}

/// Appends `body` (an event's JSON, with its `type`) to the turn's conversation log as its
/// next event and rings the conversation's doorbell; `false` when another replica took the
/// conversation over (the turn is then interrupted: it may not write on).
async fn record(hub: &Hub, link: &Link, turn: &mut ActiveTurn, body: serde_json::Value) -> bool {
    let stored = StoredEvent {
        seq: turn.next_seq,
        turn_id: Some(turn.id.clone()),
        kind: body["type"].as_str().unwrap_or("event").to_string(),
        body: body.to_string(),
        at_ms: 0,
    };
    let written = match hub.db.append_event(&turn.conversation, &stored).await {
        Ok(()) => {
            turn.next_seq += 1;
            true
        }
        Err(e) => {
            tracing::warn!(turn = %turn.id, "stopping a turn that cannot record its events: {e}");
            link.handle.submit(Op::Interrupt);
            false
        }
    };
    hub.streams.notify(&turn.conversation);
    written
}

/// Moves a session's events into the database and its state, until the session ends.
async fn pump(
    hub: Arc<Hub>,
    link: Arc<Link>,
    mut events: tokio::sync::mpsc::UnboundedReceiver<Event>,
) {
    while let Some(event) = events.recv().await {
        if matches!(event, Event::Ended) {
            break;
        }
        route(&hub, &link, event).await;
    }
    // The session is over: a turn it did not end is interrupted (it cannot go on).
    let turn = link.state.lock().await.turn.take();
    if let Some(turn) = turn {
        if let Ok(true) = hub.db.interrupt_turn(&turn.id).await {
            hub.streams.notify(&turn.conversation);
        }
        hub.metrics.turn_ended();
    }
    let mut links = hub.links.lock().await;
    if links
        .get(&link.user.id)
        .is_some_and(|l| Arc::ptr_eq(l, &link))
    {
        links.remove(&link.user.id);
    }
    link.ended.cancel();
}

async fn route(hub: &Hub, link: &Link, event: Event) {
    let mut state = link.state.lock().await;
    match &event {
        Event::Servers { servers } => return state.servers = servers.clone(),
        Event::Tools { tools } => return state.tools = tools.clone(),
        Event::ModelChanged { .. } => return,
        Event::ConversationStarted { id, .. } => {
            state.engine_conversation = id.clone();
            if let (Some(turn), Some(id)) = (state.turn.as_mut(), id)
                && std::mem::take(&mut turn.records_engine_id)
            {
                // Without it the next turn would start afresh; the turn goes on regardless.
                let _ = hub.db.set_engine_id(&turn.conversation, id).await;
            }
            return;
        }
        Event::ApprovalRequested(p) => {
            state.waiting.insert(p.subject.call_id.clone());
        }
        Event::ElicitationRequested(r) => {
            state.waiting.insert(match r {
                mcp_host_core::event::ElicitationRequest::Form { id, .. }
                | mcp_host_core::event::ElicitationRequest::Url { id, .. } => id.clone(),
            });
        }
        Event::Decided { call_id, .. } => {
            state.waiting.remove(call_id);
        }
        Event::ElicitationWithdrawn { id } => {
            state.waiting.remove(id);
        }
        _ => {}
    }
    let Some(turn) = state.turn.as_mut() else {
        // Between turns (a notice after a resume, a background job): nobody follows it.
        return;
    };
    match &event {
        Event::CallBegun { subject, .. } => {
            turn.calls
                .insert(subject.call_id.clone(), subject.server.as_str().to_string());
        }
        Event::CallEnded {
            call_id,
            is_error,
            took_ms,
            ..
        } => {
            if let Some(server) = turn.calls.remove(call_id) {
                hub.metrics.call(&server, *took_ms, *is_error);
            }
        }
        _ => {}
    }
    let Ok(body) = serde_json::to_value(&event) else {
        return;
    };
    record(hub, link, turn, body).await;
    let end = match &event {
        Event::TurnEnded { report } => Some(match report.end {
            TurnEnd::Cancelled => TurnState::Cancelled,
            TurnEnd::Finished | TurnEnd::StepLimit => TurnState::Finished,
        }),
        Event::TurnFailed { .. } => Some(TurnState::Failed),
        _ => None,
    };
    // A turn cancelled because this replica is draining did not end by anyone's choice.
    let end = end.map(|e| match e {
        TurnState::Cancelled if hub.draining.is_cancelled() => TurnState::Interrupted,
        e => e,
    });
    if let Some(end) = end {
        if let Some(turn) = state.turn.take() {
            let _ = hub.db.end_turn(&turn.id, end).await;
            hub.metrics.turn_ended();
        }
        state.waiting.clear();
        state.last_used = Some(Instant::now());
    }
}
