//! `mcp-host call SERVER TOOL [--args JSON|-] [--json]`: exit 0 on success, 1 when the call
//! failed or the tool reported `isError`.

use super::with_manager;
use crate::audit::{Audit, Subject};
use crate::catalogue::snapshot;
use crate::cli::CallArgs;
use crate::host::Host;
use crate::output::{one_line, render_content};
use crate::policy::compile;
use anyhow::{Context, bail};
use mcp_host_core::ServerId;
use mcp_host_engine::gate::{CallFacts, Gate, still_current, trusted};
use mcp_host_policy::{DecidedBy, Mode, Verdict};
use mcp_host_registry::pins::PinCheck;
use serde_json::{Map, Value};
use std::collections::BTreeSet;
use std::io::Read;
use std::process::ExitCode;
use std::time::Instant;

fn parse_args(raw: Option<&str>) -> anyhow::Result<Option<Map<String, Value>>> {
    let text = match raw {
        None => return Ok(None),
        Some("-") => {
            let mut s = String::new();
            std::io::stdin()
                .read_to_string(&mut s)
                .context("cannot read --args from stdin")?;
            s
        }
        Some(s) => s.to_string(),
    };
    match serde_json::from_str::<Value>(&text).context("--args is not valid JSON")? {
        Value::Object(m) => Ok(Some(m)),
        other => bail!("--args must be a JSON object, got {}", type_name(&other)),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

pub async fn run(host: &Host, args: CallArgs) -> anyhow::Result<ExitCode> {
    let arguments = parse_args(args.args.as_deref())?;
    // `call SERVER TOOL` starts one server; `call NAME` needs every server to know the names.
    let only = match &args.tool {
        Some(_) => {
            if !host.config.entries.iter().any(|e| e.name == args.target) {
                bail!("no server named `{}` is configured", args.target);
            }
            Some(args.target.as_str())
        }
        None => None,
    };
    let policy = compile(&host.config)?;
    let hooks = host.hooks()?;
    let remembered = host.store().await?.remembered().await?;
    let audit = Audit::new(&host.paths.data_dir);
    let manager = host.start(only)?;
    let limit = host.settle_limit();
    with_manager(host, manager, async move |m, cancel| {
        m.wait_settled(limit).await;
        let (catalogue, _) = snapshot(host, m).await?;
        let entry = match &args.tool {
            Some(tool) => catalogue.find(&ServerId::new(&args.target), tool),
            None => catalogue.get(&args.target),
        };
        let Some(entry) = entry else {
            let what = match &args.tool {
                Some(tool) => format!("server `{}` has no tool `{tool}`", args.target),
                None => format!("no tool has the model-visible name `{}`", args.target),
            };
            let state = m.status(&ServerId::new(&args.target)).map(|s| s.state);
            let why = state
                .as_ref()
                .and_then(|s| s.error())
                .map(|e| format!(" ({})", one_line(e, 300)));
            crate::output::errln!("error: {what}{}", why.unwrap_or_default());
            return Ok(ExitCode::FAILURE);
        };
        let as_value = Value::Object(arguments.clone().unwrap_or_default());
        if let Err(refusal) = catalogue.prepare_call(entry, &as_value) {
            crate::output::errln!("error: {refusal}");
            return Ok(ExitCode::FAILURE);
        }
        // The person typing this command is the one who would be asked: only deny stops it.
        let provenance = BTreeSet::new();
        let facts = CallFacts {
            trusted: trusted(m, &entry.key.server),
            mode: Mode::Ask,
            provenance: &provenance,
            remembered: &remembered,
        };
        let gate = Gate {
            policy: &policy,
            hooks: &hooks,
        };
        let decision = gate.decide(entry, &as_value, facts).await;
        let subject = Subject {
            name: &entry.name,
            server: entry.key.server.as_str(),
            tool: &entry.key.tool,
            args: &as_value,
        };
        let answered_by = match (&decision.verdict, &decision.decided_by) {
            (_, DecidedBy::Hook { .. }) => "hook",
            (Verdict::Ask, _) => "cli user",
            _ => "policy",
        };
        audit.decision(&subject, &decision, answered_by);
        if decision.verdict == Verdict::Deny {
            crate::output::errln!("error: denied: {}", decision.reason);
            return Ok(ExitCode::FAILURE);
        }
        if let Some(PinCheck::Drift(_)) = &entry.pin {
            crate::output::errln!(
                "warning: `{}` changed since it was first seen; see `mcp-host tools`",
                entry.name
            );
        }
        if let Err(why) = still_current(m, entry).await {
            crate::output::errln!("error: {why}");
            return Ok(ExitCode::FAILURE);
        }
        let started = Instant::now();
        let result = m
            .call(&entry.key.server, &entry.key.tool, arguments, cancel)
            .await;
        audit.call(
            &subject,
            result.as_ref().map_err(ToString::to_string),
            started.elapsed(),
            false,
        );
        let outcome = match result {
            Ok(o) => o,
            Err(e) => {
                crate::output::errln!("error: {e}");
                return Ok(ExitCode::FAILURE);
            }
        };
        for objection in gate.after(entry, &as_value, &outcome).await {
            crate::output::errln!("warning: a PostToolUse hook objected: {objection}");
        }
        if args.json {
            crate::output::print_json(&outcome)?;
        } else {
            let mut text: Vec<String> = outcome.content.iter().map(render_content).collect();
            if text.is_empty()
                && let Some(s) = &outcome.structured
            {
                text.push(crate::output::one_line(&s.to_string(), usize::MAX));
            }
            let body = text.join("\n");
            if outcome.is_error {
                crate::output::errln!("error: tool `{}` reported an error:\n{body}", entry.name);
            } else {
                crate::output::outln!("{body}");
            }
        }
        Ok(if outcome.is_error {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        })
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn args_must_be_an_object() {
        assert!(parse_args(Some("{\"a\":1}")).unwrap().is_some());
        assert!(parse_args(None).unwrap().is_none());
        let e = parse_args(Some("[1]")).unwrap_err().to_string();
        assert!(e.contains("an array"), "{e}");
        assert!(parse_args(Some("{nope")).is_err());
    }
}
