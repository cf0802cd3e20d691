//! `mcp-host run -p PROMPT [-m provider:model] [--base-url URL] [--output-format text|json]
//! [--max-steps N] [--allowed-tools PATTERNS] [--mode deny|ask|auto]`: one headless turn.
//! Approvals come only from policy; nothing is ever asked on a terminal.
//!
//! Exit status: 0 when the model finished, 3 when the step cap stopped it, 1 on errors.

use super::with_manager;
use crate::audit::Audit;
use crate::catalogue::snapshot;
use crate::cli::{OutputFormat, RunArgs};
use crate::host::Host;
use crate::policy::compile;
use anyhow::bail;
use mcp_host_core::CallOutcome;
use mcp_host_engine::{Conversation, Engine, EngineConfig, Observer, ResultStore, TurnEnd};
use mcp_host_models::{Anthropic, AnyProvider, OpenAiCompatible};
use mcp_host_policy::Decision;
use mcp_host_policy::{Answers, Rule, RuleSource};
use mcp_host_registry::catalogue::Entry;
use serde_json::Value;
use serde_json::json;
use std::process::ExitCode;
use std::time::Duration;

/// Audits everything and, for `stream-json`, also prints each event as a JSON line.
struct RunObserver<'a> {
    audit: &'a Audit,
    stream: bool,
}

impl Observer for RunObserver<'_> {
    fn decided(&self, entry: &Entry, args: &Value, decision: &Decision) {
        self.audit.decided(entry, args, decision);
        if self.stream {
            println!(
                "{}",
                json!({"type": "decision", "name": entry.name, "verdict": decision.verdict, "reason": decision.reason})
            );
        }
    }

    fn called(
        &self,
        entry: &Entry,
        args: &Value,
        outcome: Result<&CallOutcome, String>,
        took: Duration,
    ) {
        if self.stream {
            let (ok, error) = match &outcome {
                Ok(o) => (!o.is_error, None),
                Err(e) => (false, Some(e.clone())),
            };
            println!(
                "{}",
                json!({"type": "tool_result", "name": entry.name, "ok": ok, "error": error, "duration_ms": took.as_millis() as u64})
            );
        }
        self.audit.called(entry, args, outcome, took);
    }
}

const NO_MODEL: &str = "no model configured: pass -m provider:model (for example \
`-m openai-compatible:llama3 --base-url http://127.0.0.1:8080/v1`, or `-m openai:gpt-4.1` with \
OPENAI_API_KEY set), or set MCP_HOST_MODEL";

/// A context window assumed when the provider does not say (it sizes the tool budget).
const DEFAULT_CONTEXT_WINDOW: usize = 128_000;

pub async fn run(host: &Host, args: RunArgs) -> anyhow::Result<ExitCode> {
    let env = |k: &str| host.env.get(k).cloned().filter(|v| !v.is_empty());
    let Some(model) = args.model.clone().or_else(|| env("MCP_HOST_MODEL")) else {
        bail!(NO_MODEL)
    };
    let Some((provider_name, model_name)) = model.split_once(':') else {
        bail!("`{model}` is not provider:model; {NO_MODEL}")
    };
    let http = mcp_host_client::http_client(Duration::from_secs(10))?;
    let provider = match provider_name {
        "openai-compatible" => {
            let Some(base) = args.base_url.clone().or_else(|| env("OPENAI_BASE_URL")) else {
                bail!("openai-compatible needs --base-url (or OPENAI_BASE_URL)")
            };
            AnyProvider::OpenAiCompatible(OpenAiCompatible::new(http, &base, env("OPENAI_API_KEY")))
        }
        "openai" => {
            let Some(key) = env("OPENAI_API_KEY") else {
                bail!("openai needs OPENAI_API_KEY")
            };
            let base = args
                .base_url
                .clone()
                .unwrap_or_else(|| "https://api.openai.com/v1".into());
            AnyProvider::OpenAiCompatible(OpenAiCompatible::new(http, &base, Some(key)))
        }
        "anthropic" => {
            let key = env("ANTHROPIC_API_KEY");
            // A local or proxy endpoint may need no key; the real API does.
            if key.is_none() && args.base_url.is_none() {
                bail!("anthropic needs ANTHROPIC_API_KEY");
            }
            let base = args
                .base_url
                .clone()
                .unwrap_or_else(|| "https://api.anthropic.com".into());
            AnyProvider::Anthropic(Anthropic::new(http, &base, key))
        }
        other => bail!(
            "provider `{other}` is not supported yet (supported: anthropic, openai, openai-compatible)"
        ),
    };
    let mut policy = compile(&host.config);
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
    let audit = Audit::new(&host.paths.data_dir);
    let store = host.store().await?;
    let answers = Answers::with_persisted(store.remembered().await?);
    let manager = host.start(None)?;
    let limit = host.settle_limit();
    with_manager(host, manager, async move |m, cancel| {
        m.wait_settled(limit).await;
        let (catalogue, _) = snapshot(host, m).await?;
        let config = EngineConfig {
            model: model_name.to_string(),
            max_steps: args.max_steps.max(1),
            mode: args.mode.into(),
            result_chars: mcp_host_engine::DEFAULT_RESULT_CHARS,
            context_window: DEFAULT_CONTEXT_WINDOW,
            results: Some(ResultStore::new(host.paths.data_dir.join("results"))),
        };
        let observer = RunObserver { audit: &audit, stream: args.output_format == OutputFormat::StreamJson };
        let engine = Engine {
            provider: &provider,
            manager: m,
            catalogue: &catalogue,
            policy: &policy,
            observer: &observer,
            config,
        };
        let mut conversation = Conversation::new(DEFAULT_CONTEXT_WINDOW, answers);
        let report = engine
            .run_turn(&mut conversation, &args.prompt, cancel)
            .await?;
        match args.output_format {
            OutputFormat::Text => println!("{}", report.text),
            OutputFormat::StreamJson => println!(
                "{}",
                json!({"type": "result", "result": report.text, "end": report.end, "steps": report.steps, "tool_calls": report.calls})
            ),
            OutputFormat::Json => println!(
                "{}",
                serde_json::to_string_pretty(&json!({
                    "result": report.text,
                    "end": report.end,
                    "steps": report.steps,
                    "tool_calls": report.calls,
                }))?
            ),
        }
        Ok(match report.end {
            TurnEnd::Finished => ExitCode::SUCCESS,
            TurnEnd::StepLimit => ExitCode::from(3),
            TurnEnd::Cancelled => ExitCode::from(130),
        })
    })
    .await
}
