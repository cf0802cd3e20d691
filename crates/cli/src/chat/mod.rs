//! `mcp-host chat` (and `mcp-host` with no command): the interactive host, as a thin adapter
//! over the engine's session. One loop owns the screen and waits on keys, the session's
//! events and a redraw tick: keys become the screen's commands and those become session
//! operations; events go to the screen as they are. The session runs beside the loop, so
//! approvals are answered, a turn is interrupted and the `/mcp` panel works while the model
//! and the servers are busy. Without a model the host still starts, connects the servers and
//! takes `/call`.

mod screen;
mod slash;

pub(crate) use screen::restore_terminal;

use crate::cli::{ChatArgs, ModeArg};
use crate::host::Host;
use crossterm::event::{Event as TermEvent, EventStream, KeyEventKind};
use futures::StreamExt;
use mcp_host_config::ServerReadiness;
use mcp_host_engine::rules::compile;
use mcp_host_engine::session::{ModelChoice, Op, Session, SessionHandle, SessionSetup, Settings};
use mcp_host_engine::{Conversation, DEFAULT_BACKGROUND_AFTER, Event, ToolSource};
use mcp_host_models::choose;
use mcp_host_policy::Answers;
use mcp_host_tui::{App, Command, SessionInfo, StatusInfo, Update};
use std::process::ExitCode;
use std::time::Duration;
use tokio::sync::mpsc;

/// How often timers are redrawn.
const TICK: Duration = Duration::from_millis(250);
/// A chat turn may take more steps than a headless run: a person watches it and can stop it.
const CHAT_MAX_STEPS: usize = 50;

pub async fn run(host: &Host, args: ChatArgs) -> anyhow::Result<ExitCode> {
    let store = host.store().await?;
    let answers = Answers::with_persisted(store.remembered().await?);
    {
        use std::io::IsTerminal;
        if !std::io::stdin().is_terminal() || !std::io::stdout().is_terminal() {
            anyhow::bail!(
                "the interactive host needs a terminal, and standard input or output is not one; \
                 in a script use `mcp-host -p PROMPT` (the same as `mcp-host run -p PROMPT`)"
            );
        }
    }
    let (model, base_url) = host.model_and_url(args.model.as_deref(), args.base_url.as_deref());
    let chosen = choose(
        model.as_deref(),
        base_url.as_deref(),
        &host.env,
        mcp_host_engine::host::model_client(),
    );
    let policy = compile(&host.config)?;
    let tools = ToolSource::live(host.pins().await?);
    let workdir = workdir();
    let conversation = match &args.resume {
        Some(id) => {
            let id = mcp_host_store::ConversationId::new(id)?;
            Conversation::resume(&store, &id, 0, answers).await?
        }
        None => Conversation::create(&store, "", &workdir, 0, answers).await?,
    };
    let (ask_tx, ask_rx) = mpsc::unbounded_channel();
    let connected = host.connect(None, policy, Some(ask_tx))?;
    let mut screen = screen::Screen::enter(&host.paths.data_dir.join("chat-stderr.log"))?;
    let mut app = App::new(SessionInfo {
        no_color: host.env.get("NO_COLOR").is_some_and(|v| !v.is_empty()),
    });
    let (model, model_note) = match chosen {
        Ok(c) => (Some(ModelChoice::from(c)), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let mode: mcp_host_policy::Mode = match (args.mode, host.config.defaults.mode) {
        (Some(m), _) => m.into(),
        (None, Some(m)) => ModeArg::from(m).into(),
        (None, None) => ModeArg::Ask.into(),
    };
    app.apply(Update::Status(StatusInfo {
        model: model.as_ref().map(|m| m.spec.clone()),
        mode: format!("{mode:?}").to_lowercase(),
        input_tokens: 0,
        output_tokens: 0,
    }));
    if let Some(note) = model_note {
        app.apply(Update::Notice(note));
    }
    for p in &host.config.problems {
        app.apply(Update::Notice(format!("config: {p}")));
    }
    for e in &host.config.entries {
        if e.readiness == ServerReadiness::PendingApproval {
            app.apply(Update::Notice(format!(
                "project server `{}` waits for your approval: /mcp, select it, press a",
                mcp_host_config::visible(&e.name)
            )));
        }
    }
    if args.resume.is_some() {
        app.on_event(&Event::ConversationStarted {
            id: conversation.id().map(ToString::to_string),
            replay: mcp_host_engine::session::replay(&conversation),
        });
    }
    let settings = Settings {
        mode,
        max_steps: CHAT_MAX_STEPS,
        background_after: Some(DEFAULT_BACKGROUND_AFTER),
        context_window: args.context_window,
        workdir,
        env: host.env.clone(),
        waiting_servers: waiting_servers(host),
        approve_server: approver(host),
        interactive: true,
    };
    let setup = SessionSetup {
        connected,
        tools,
        store,
        conversation,
        model,
        settings,
        questions: Some(ask_rx),
    };
    let (session, handle, ops, events) = Session::new(setup);
    let (_, result) = tokio::join!(
        session.run(ops),
        screen_loop(host, &mut screen, &mut app, &handle, events)
    );
    drop(screen);
    result.map(|()| ExitCode::SUCCESS)
}

/// Keys to operations, events to the screen, until the person quits and the session ends.
async fn screen_loop(
    host: &Host,
    screen: &mut screen::Screen,
    app: &mut App,
    session: &SessionHandle,
    mut events: mpsc::UnboundedReceiver<Event>,
) -> anyhow::Result<()> {
    let mut keys = EventStream::new();
    let mut tick = tokio::time::interval(TICK);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
    let mut quitting = false;
    loop {
        screen.terminal.draw(|f| app.render(f))?;
        tokio::select! {
            key = keys.next(), if !quitting => match key {
                Some(Ok(TermEvent::Key(k))) if k.kind != KeyEventKind::Release => {
                    for command in app.on_key(k) {
                        quitting |= command == Command::Quit;
                        slash::submit(session, command, app);
                    }
                }
                Some(Ok(TermEvent::Paste(text))) => app.on_paste(&text),
                Some(Ok(_)) => {}
                // The terminal went away: nothing more can be asked or shown.
                Some(Err(_)) | None => {
                    quitting = true;
                    session.submit(Op::Shutdown);
                }
            },
            event = events.recv() => {
                // Everything already queued is shown before the next draw: a fast stream
                // costs one frame per wake-up, not one per delta.
                let mut next = event;
                while let Some(event) = next {
                    if event == Event::Ended {
                        return Ok(());
                    }
                    app.on_event(&event);
                    next = events.try_recv().ok();
                }
                if events.is_closed() {
                    return Ok(());
                }
            }
            _ = tick.tick() => {}
            () = host.interrupted.cancelled(), if !quitting => {
                quitting = true;
                session.submit(Op::Shutdown);
            }
        }
    }
}

/// The project servers waiting for approval, with what approving each lets run and send
/// (the lines the `/mcp` panel shows before asking).
fn waiting_servers(host: &Host) -> Vec<(String, Vec<String>)> {
    let config = &host.config;
    (config.entries.iter())
        .filter(|e| matches!(e.readiness, ServerReadiness::PendingApproval))
        .map(|e| {
            let text = config
                .project_server(&e.name)
                .map(crate::commands::approval_text)
                .unwrap_or_default();
            (e.name.clone(), text.lines().map(str::to_string).collect())
        })
        .collect()
}

/// Records a project server's approval in the trust ledger: the definition loaded at start-up
/// (the one the panel showed) is the one approved.
fn approver(host: &Host) -> mcp_host_engine::session::ApproveServer {
    let config = host.config.clone();
    let ledger_path = host.paths.trust_file();
    Box::new(move |name| match config.project_server(name) {
        Some(server) => {
            let recorded = mcp_host_config::TrustLedger::open(&ledger_path).and_then(|mut l| {
                l.record(
                    &config.project_root,
                    name,
                    &server.hash,
                    mcp_host_config::TrustAnswer::Approved,
                )
            });
            match recorded {
                Ok(()) => Ok(format!(
                    "approved project server `{name}` (this definition); starting it"
                )),
                Err(e) => Err(format!("could not record the approval: {e}")),
            }
        }
        None => Err(format!(
            "`{name}` is not a project server waiting for approval"
        )),
    })
}

pub(crate) fn workdir() -> String {
    std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default()
}
