//! `mcp-host run -p PROMPT [-m provider:model] [--base-url URL] [--output-format
//! text|json|stream-json] [--max-steps N] [--allowed-tools PATTERNS] [--mode deny|ask|auto]
//! [--continue | --resume ID]`: one headless turn, saved as a conversation in the store.
//! Approvals come only from policy; nothing is ever asked on a terminal (an approval request
//! is dropped, which refuses the call).
//!
//! Exit status: 0 when the model finished, 3 when the step cap stopped it, 130 when
//! interrupted, 1 on errors.

use super::with_manager;
use crate::audit::Audit;
use crate::cli::{OutputFormat, RunArgs};
use crate::host::Host;
use crate::model::choose;
use crate::policy::compile;
use anyhow::Context as _;
use mcp_host_core::CallOutcome;
use mcp_host_engine::{
    Conversation, Engine, EngineConfig, Event, Gate, Observer, ToolSource, TurnEnd,
};
use mcp_host_policy::Decision;
use mcp_host_policy::{Answers, Rule, RuleSource};
use mcp_host_registry::catalogue::Entry;
use mcp_host_store::ConversationId;
use serde_json::Value;
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;

/// Audits everything and, for `stream-json`, also prints each event as a JSON line.
struct RunObserver<'a> {
    audit: &'a Audit,
    stream: bool,
}

impl RunObserver<'_> {
    fn emit(&self, line: Value) {
        if self.stream {
            // A `Value` always serialises; there is nothing to report if it did not.
            let _ = crate::output::print_json_line(&line);
        }
    }
}

impl Observer for RunObserver<'_> {
    fn decided(&self, entry: &Entry, args: &Value, decision: &Decision) {
        self.audit.decided(entry, args, decision);
        self.emit(json!({"type": "decision", "name": entry.name, "verdict": decision.verdict, "decided_by": decision.decided_by, "reason": decision.reason}));
    }

    fn called(
        &self,
        entry: &Entry,
        args: &Value,
        outcome: Result<&CallOutcome, String>,
        took: Duration,
        truncated: bool,
    ) {
        self.audit.called(entry, args, outcome, took, truncated);
    }

    fn event(&self, event: Event) {
        match event {
            Event::TextDelta(text) => self.emit(json!({"type": "text_delta", "text": text})),
            Event::CallBegun {
                call_id,
                name,
                server,
                ..
            } => self.emit(
                json!({"type": "tool_call", "call_id": call_id, "name": name, "server": server.as_str()}),
            ),
            Event::CallEnded {
                call_id,
                name,
                is_error,
                took,
                background_job,
                ..
            } => self.emit(json!({
                "type": "tool_result", "call_id": call_id, "name": name, "ok": !is_error,
                "duration_ms": took.as_millis() as u64, "background_job": background_job,
            })),
            Event::Notice(text) => self.emit(json!({"type": "notice", "text": text})),
            Event::Progress {
                call_id,
                progress,
                total,
                message,
            } => self.emit(json!({"type": "progress", "call_id": call_id, "progress": progress, "total": total, "message": message})),
            // Every call that was not sent (denied, unanswered, bad arguments) says why.
            Event::CallRefused {
                call_id,
                name,
                server,
                reason,
                ..
            } => self.emit(json!({
                "type": "tool_refused", "call_id": call_id, "name": name,
                "server": server.as_ref().map(|s| s.as_str()), "reason": reason,
            })),
            // Nobody can answer in a headless run: dropping the request refuses the call,
            // and the refusal that follows says so.
            Event::ApprovalRequested(_) => {}
        }
    }
}

pub async fn run(host: &Host, args: RunArgs) -> anyhow::Result<ExitCode> {
    let http = mcp_host_client::http_client(Duration::from_secs(10))?;
    let chosen = choose(
        args.model.as_deref(),
        args.base_url.as_deref(),
        &host.env,
        http,
    )?;
    let context_window = args.context_window.unwrap_or(chosen.context_window);
    let provider = chosen.provider;
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
    let hooks = host.hooks()?;
    let audit = Audit::new(&host.paths.data_dir);
    let store = host.store().await?;
    let answers = Answers::with_persisted(store.remembered().await?);
    let workdir = std::env::current_dir()
        .map(|d| d.display().to_string())
        .unwrap_or_default();
    let mut conversation = if let Some(id) = &args.resume {
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
    let manager = host.start(None)?;
    let pins = host.pins().await?;
    let wait = Duration::from_secs(args.server_wait);
    with_manager(host, manager, async move |m, cancel| {
        // Not the slowest server: the turn starts with the ready ones once every server has
        // settled or the wait is over, and the rest join at a later step.
        m.wait_settled(wait).await;
        let (tools, _, warnings) = ToolSource::start(pins, m).await?;
        for w in &warnings {
            crate::output::errln!("warning: {w}");
        }
        every_server_failed(m)?;
        let config = EngineConfig {
            model: chosen.model.clone(),
            max_steps: args.max_steps.max(1),
            mode: args.mode.into(),
            result_chars: mcp_host_engine::DEFAULT_RESULT_CHARS,
            context_window,
            store: Some(store.clone()),
            background_after: args.background_after.map(Duration::from_secs),
        };
        let observer = RunObserver {
            audit: &audit,
            stream: args.output_format == OutputFormat::StreamJson,
        };
        let engine = Engine {
            provider: &provider,
            manager: m,
            tools: &tools,
            gate: Gate {
                policy: &policy,
                hooks: &hooks,
            },
            observer: &observer,
            config,
        };
        let report = engine
            .run_turn(&mut conversation, &args.prompt, cancel)
            .await?;
        let conversation_id = conversation.id().map(ToString::to_string);
        let summary = json!({
            "result": report.text,
            "end": report.end,
            "steps": report.steps,
            "tool_calls": report.calls,
            "usage": report.usage,
            "conversation_id": conversation_id,
        });
        match args.output_format {
            OutputFormat::Text => crate::output::outln!("{}", report.text),
            OutputFormat::StreamJson => {
                let mut line = summary;
                line["type"] = json!("result");
                crate::output::print_json_line(&line)?;
            }
            OutputFormat::Json => crate::output::print_json(&summary)?,
        }
        Ok(match report.end {
            TurnEnd::Finished => ExitCode::SUCCESS,
            TurnEnd::StepLimit => ExitCode::from(3),
            TurnEnd::Cancelled => ExitCode::from(130),
        })
    })
    .await
}

/// A run whose configured servers all failed is an error, not a model turn without tools.
fn every_server_failed(m: &mcp_host_client::Manager) -> anyhow::Result<()> {
    use mcp_host_core::ServerState;
    let mut failed = Vec::new();
    for id in m.ids() {
        let Some(status) = m.status(id) else { continue };
        match &status.state {
            ServerState::Disabled | ServerState::PendingApproval => {}
            ServerState::Failed { reason } | ServerState::NeedsAuth { reason } => {
                failed.push(format!("`{id}`: {}", crate::output::one_line(reason, 200)));
            }
            _ => return Ok(()),
        }
    }
    if failed.is_empty() {
        return Ok(());
    }
    anyhow::bail!(
        "every configured server failed to start:\n  {}",
        failed.join("\n  ")
    )
}
