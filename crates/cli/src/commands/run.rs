//! `mcp-host run -p PROMPT [-m provider:model] [--base-url URL] [--output-format
//! text|json|stream-json] [--max-steps N] [--allowed-tools PATTERNS] [--mode deny|ask|auto]
//! [--continue | --resume ID]`: one headless turn, saved as a conversation in the store.
//! Approvals come only from policy; nothing is ever asked on a terminal (the session refuses
//! an approval question at once, and the refusal says so). A thin adapter over the engine's
//! session: one `UserTurn`, its events printed for `stream-json`, its report summarised.
//!
//! Exit status: 0 when the model finished, 3 when the step cap stopped it, 130 when
//! interrupted, 1 on errors.

use crate::cli::{OutputFormat, RunArgs};
use crate::host::Host;
use anyhow::Context as _;
use mcp_host_engine::host::every_server_failed;
use mcp_host_engine::rules::compile;
use mcp_host_engine::session::{ModelChoice, Op, Session, SessionHandle, SessionSetup, Settings};
use mcp_host_engine::{Conversation, Event, ToolSource, TurnEnd, TurnReport};
use mcp_host_models::choose;
use mcp_host_policy::{Answers, Rule, RuleSource};
use mcp_host_store::ConversationId;
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;

pub async fn run(host: &Host, args: RunArgs) -> anyhow::Result<ExitCode> {
    let (model, base_url) = host.model_and_url(args.model.as_deref(), args.base_url.as_deref());
    let http = mcp_host_engine::host::model_client();
    let chosen = choose(model.as_deref(), base_url.as_deref(), &host.env, http)?;
    let context_window = args.context_window.unwrap_or(chosen.context_window);
    let mut policy = compile(&host.config)?;
    for (i, pattern) in args.allowed_tools.iter().enumerate() {
        let source = RuleSource {
            scope: "flag".into(),
            file: "command line".into(),
            key: format!("--allowed-tools[{i}]"),
        };
        policy.allow.push(Rule {
            pattern: pattern.clone(),
            when: None,
            source,
        });
    }
    let store = host.store().await?;
    let answers = Answers::with_persisted(store.remembered().await?);
    let workdir = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let conversation = if let Some(id) = &args.resume {
        let id = ConversationId::new(id)?;
        Conversation::resume(&store, &id, context_window, answers).await?
    } else if args.continue_latest {
        let latest = store
            .latest_conversation(&workdir)
            .await?
            .with_context(|| format!("no earlier conversation was started in {workdir}"))?;
        Conversation::resume(&store, &latest.id, context_window, answers).await?
    } else {
        Conversation::create(&store, &chosen.model, &workdir, context_window, answers).await?
    };
    let connected = host.connect(None, policy, None)?;
    let pins = host.pins().await?;
    // Not the slowest server: the turn starts with the ready ones once every server has
    // settled or the wait is over, and the rest join at a later step.
    let wait = Duration::from_secs(args.server_wait);
    tokio::select! {
        _ = connected.servers.wait_settled(wait) => {}
        () = host.interrupted.cancelled() => {
            connected.servers.shutdown().await;
            return Ok(ExitCode::from(130));
        }
    }
    let (tools, _, warnings) = match ToolSource::start(pins, &connected.servers).await {
        Ok(started) => started,
        Err(e) => {
            connected.servers.shutdown().await;
            return Err(e.into());
        }
    };
    for w in &warnings {
        crate::output::errln!("warning: {w}");
    }
    if let Some(failed) = every_server_failed(&connected.servers) {
        connected.servers.shutdown().await;
        anyhow::bail!(
            "every configured server failed to start:\n  {}",
            failed.join("\n  ")
        );
    }
    let setup = SessionSetup {
        connected,
        tools,
        store,
        conversation,
        model: Some(ModelChoice {
            context_window,
            ..ModelChoice::from(chosen)
        }),
        settings: Settings {
            mode: args.mode.into(),
            max_steps: usize::from(args.max_steps),
            background_after: args.background_after.map(Duration::from_secs),
            context_window: Some(context_window),
            workdir,
            env: host.env.clone(),
            waiting_servers: Vec::new(),
            approve_server: Box::new(|_| Err("a headless run approves no server".into())),
            interactive: false,
        },
        questions: None,
    };
    let (session, handle, ops, events) = Session::new(setup);
    handle.submit(Op::UserTurn(args.prompt.clone()));
    let stream = args.output_format == OutputFormat::StreamJson;
    let (_, outcome) = tokio::join!(session.run(ops), follow(host, &handle, events, stream));
    let report = outcome?;
    // Built only for the JSON formats: every call's record is in it (25 k instructions a
    // call at the end of a turn that prints only its text).
    let summary = || {
        json!({
            "result": report.text,
            "end": report.end,
            "steps": report.steps,
            "tool_calls": report.calls,
            "usage": report.usage,
            "conversation_id": report.conversation_id,
        })
    };
    match args.output_format {
        OutputFormat::Text => crate::output::outln!("{}", report.text),
        OutputFormat::StreamJson => {
            let mut line = summary();
            line["type"] = json!("result");
            crate::output::print_json_line(&line)?;
        }
        OutputFormat::Json => crate::output::print_json(&summary())?,
    }
    Ok(match report.end {
        TurnEnd::Finished => ExitCode::SUCCESS,
        TurnEnd::StepLimit => ExitCode::from(3),
        TurnEnd::Cancelled => ExitCode::from(130),
    })
}

/// Follows the session's events until its one turn ends (printing them for
/// `stream-json`), then ends the session. SIGINT or SIGTERM interrupts the turn.
async fn follow(
    host: &Host,
    handle: &SessionHandle,
    mut events: tokio::sync::mpsc::UnboundedReceiver<Event>,
    stream: bool,
) -> anyhow::Result<Box<TurnReport>> {
    let mut interrupted = false;
    let mut outcome = None;
    let mut refused: Vec<(String, String)> = Vec::new();
    loop {
        let event = tokio::select! {
            e = events.recv() => e,
            () = host.interrupted.cancelled(), if !interrupted => {
                interrupted = true;
                crate::output::errln!("interrupted: cancelling and stopping servers");
                handle.submit(Op::Interrupt);
                continue;
            }
        };
        let Some(event) = event else { break };
        if let Event::Decided {
            name,
            verdict: mcp_host_policy::Verdict::Deny,
            reason,
            ..
        } = &event
        {
            refused.push((name.clone(), reason.clone()));
        }
        match event {
            Event::TurnEnded { report } => {
                outcome = Some(Ok(report));
                handle.submit(Op::Shutdown);
            }
            Event::TurnFailed { error } => {
                outcome = Some(Err(anyhow::anyhow!(error)));
                handle.submit(Op::Shutdown);
            }
            Event::Ended => break,
            event if stream => emit(&event),
            _ => {}
        }
    }
    refusal_hint(host, &refused);
    outcome.unwrap_or_else(|| Err(anyhow::anyhow!("the session ended before the turn did")))
}

/// After a headless turn in which policy refused calls: which, why, and how to allow them
/// (a headless run has nobody to ask, so what no rule allows is refused).
fn refusal_hint(host: &Host, refused: &[(String, String)]) {
    let Some((first, why)) = refused.first() else {
        return;
    };
    let mut names: Vec<&str> = refused.iter().map(|(n, _)| n.as_str()).collect();
    names.sort_unstable();
    names.dedup();
    crate::output::errln!(
        "note: policy refused {} call{} ({}): {}",
        refused.len(),
        if refused.len() == 1 { "" } else { "s" },
        names.join(", "),
        crate::output::one_line(why, 200)
    );
    crate::output::errln!(
        "note: to allow them: --allowed-tools '{}', or add the name to permissions.allow in {} (`mcp-host policy explain {first}` shows the rule that decides)",
        names.join(","),
        host.paths.user_file.display()
    );
}

/// One event as a `stream-json` line.
fn emit(event: &Event) {
    let line = match event {
        Event::TextDelta { text } => json!({"type": "text_delta", "text": text}),
        Event::Decided {
            name,
            verdict,
            decided_by,
            reason,
            ..
        } => {
            json!({"type": "decision", "name": name, "verdict": verdict, "decided_by": decided_by, "reason": reason})
        }
        Event::CallBegun { subject, .. } => json!({
            "type": "tool_call", "call_id": subject.call_id, "name": subject.name,
            "server": subject.server.as_str(), "tool": subject.tool, "arguments": subject.args,
        }),
        Event::CallEnded {
            call_id,
            name,
            is_error,
            took_ms,
            background_job,
            preview,
        } => json!({
            "type": "tool_result", "call_id": call_id, "name": name, "ok": !is_error,
            "duration_ms": took_ms, "background_job": background_job, "preview": preview,
        }),
        Event::Notice { text } => json!({"type": "notice", "text": text}),
        Event::Progress {
            call_id,
            progress,
            total,
            message,
        } => {
            json!({"type": "progress", "call_id": call_id, "progress": progress, "total": total, "message": message})
        }
        // Every call that was not sent (denied, unanswered, bad arguments) says why.
        Event::CallRefused {
            call_id,
            name,
            server,
            reason,
            ..
        } => json!({
            "type": "tool_refused", "call_id": call_id, "name": name,
            "server": server.as_ref().map(|s| s.as_str()), "reason": reason,
        }),
        _ => return,
    };
    // A `Value` always serialises; there is nothing to report if it did not.
    let _ = crate::output::print_json_line(&line);
}
