//! Starting one user's engine session on this replica: the admin's catalogue cut down to the
//! servers this user enabled, the admin's rules with the user's own narrowing rules added,
//! the user's private store, pins, audit log, credentials and run records (all under
//! `users/<id>/`, so no path is shared with another user; credentials sealed with the
//! service key), and the conversation the first
//! turn is for. Runs on the user's worker thread; hands the session's channels back.

use crate::Service;
use crate::db::UserData;
use crate::journal::ConversationRow;
use crate::users::{NarrowList, User};
use mcp_host_engine::host::{Guards, HostSetup};
use mcp_host_engine::session::{Op, Session, SessionHandle, SessionSetup, Settings};
use mcp_host_engine::{Audit, Conversation, Event, Hooks, ToolSource};
use mcp_host_policy::{Answers, Rule, RuleSource};
use mcp_host_store::{ConversationId, Store};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc;

/// What starting a user's session needs, all owned (it crosses to the worker thread).
pub struct UserStart {
    pub service: Arc<Service>,
    pub user: User,
    /// The user's engine store, pins and credentials, in the service database.
    pub data: UserData,
    pub enabled: Vec<String>,
    pub rules: Vec<(NarrowList, String)>,
    pub conversation: ConversationRow,
}

/// A started session, as the main runtime keeps it.
pub struct Started {
    pub handle: SessionHandle,
    pub events: mpsc::UnboundedReceiver<Event>,
    /// The engine conversation the session has open.
    pub engine_conversation: String,
}

#[derive(Debug, thiserror::Error)]
pub enum StartError {
    #[error("no model is configured for the service (--model)")]
    NoModel,
    #[error(transparent)]
    Store(#[from] mcp_host_store::StoreError),
    #[error(transparent)]
    Pins(#[from] mcp_host_store::pins::PinError),
    #[error(transparent)]
    Hooks(#[from] mcp_host_engine::hooks::HookError),
    #[error(transparent)]
    Host(#[from] mcp_host_engine::host::HostError),
    #[error(transparent)]
    History(#[from] mcp_host_engine::HistoryError),
}

/// The longest a new session waits for its servers before its first turn starts (the
/// others join the catalogue at a later step).
const SETTLE: Duration = Duration::from_secs(30);

/// Builds the session and runs it to its end; `ready` gets its channels (or why not) first.
pub async fn run(
    start: UserStart,
    ready: tokio::sync::oneshot::Sender<Result<Started, StartError>>,
) {
    match build(start).await {
        Ok((session, ops, started)) => {
            if ready.send(Ok(started)).is_ok() {
                session.run(ops).await;
            }
        }
        Err(e) => {
            let _ = ready.send(Err(e));
        }
    }
}

async fn build(
    start: UserStart,
) -> Result<(Session, mpsc::UnboundedReceiver<Op>, Started), StartError> {
    let service = &start.service;
    let model = service.model.clone().ok_or(StartError::NoModel)?;
    let dir = service.user_dir(&start.user);
    let (store, pins) = (start.data.store.clone(), start.data.pins.clone());
    let mut config = service.catalogue.clone();
    config.entries.retain(|e| start.enabled.contains(&e.name));
    let policy = narrowed(&service.policy, &start.rules);
    let (ask_tx, ask_rx) = mpsc::unbounded_channel();
    let setup = HostSetup {
        config: &config,
        env: service.env.clone(),
        supervisor: service.supervisor.clone(),
        zygote: Some(service.zygote.clone()),
        record_dir: dir.join("run"),
        credentials: service.vault(&start.user, &start.data),
        // Each user's own, built only when one of their servers is remote.
        http: mcp_host_engine::host::lazy_http_client(),
        only: None,
        // Users' servers' stderr stays in their status (the page shows it), not in files.
        log_dir: None,
        ask_person: Some(ask_tx),
        // Users sign in to remote servers from the page, with the service's own callback.
        sign_in_here: false,
        protected: vec![service.data_dir.clone()],
    };
    let guards = Guards {
        policy,
        hooks: Hooks::compile(&config)?.with_env(service.env.clone()),
        audit: Some(Audit::new(&dir)),
    };
    let connected = mcp_host_engine::host::connect(setup, guards)?;
    connected.servers.wait_settled(SETTLE).await;
    let (tools, _, _) = ToolSource::start(pins, &connected.servers).await?;
    let workdir = dir.display().to_string();
    let conversation = open_conversation(&store, &start.conversation, &model, &workdir).await?;
    let engine_conversation = conversation
        .id()
        .map(ToString::to_string)
        .unwrap_or_default();
    let setup = SessionSetup {
        connected,
        tools,
        store,
        conversation,
        model: Some(model),
        settings: Settings {
            mode: service.mode,
            max_steps: service.max_steps,
            background_after: None,
            context_window: None,
            workdir,
            env: service.env.clone(),
            waiting_servers: Vec::new(),
            approve_server: Box::new(|_| Err("the hosted mode has no project servers".into())),
            interactive: true,
        },
        questions: Some(ask_rx),
    };
    let (session, handle, ops, events) = Session::new(setup);
    Ok((
        session,
        ops,
        Started {
            handle,
            events,
            engine_conversation,
        },
    ))
}

/// The admin's policy with the user's own rules added: deny and ask rules only, so a user
/// narrows what the admin allows and never widens it.
fn narrowed(
    policy: &mcp_host_policy::Policy,
    rules: &[(NarrowList, String)],
) -> mcp_host_policy::Policy {
    let mut policy = policy.clone();
    for (i, (list, pattern)) in rules.iter().enumerate() {
        let rule = Rule {
            pattern: pattern.clone(),
            when: None,
            source: RuleSource {
                scope: "user".into(),
                file: "service database".into(),
                key: format!("user_rules[{i}]"),
            },
        };
        match list {
            NarrowList::Deny => policy.deny.push(rule),
            NarrowList::Ask => policy.ask.push(rule),
        }
    }
    policy
}

/// The conversation's engine history from the user's store (in the service database, so
/// whichever replica ran its last turn), or a fresh one when it has none yet.
async fn open_conversation(
    store: &Store,
    row: &ConversationRow,
    model: &mcp_host_engine::session::ModelChoice,
    workdir: &str,
) -> Result<Conversation, StartError> {
    let answers = Answers::with_persisted(store.remembered().await?);
    if let Some(Ok(id)) = row.engine_id.as_deref().map(ConversationId::new)
        && let Ok(c) = Conversation::resume(store, &id, model.context_window, answers.clone()).await
    {
        return Ok(c);
    }
    Ok(Conversation::create(store, &model.model, workdir, model.context_window, answers).await?)
}
