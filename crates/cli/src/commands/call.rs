//! `mcp-host call SERVER TOOL [--args JSON|-] [--json] [--repeat N]`: exit 0 on success, 1
//! when the call failed or the tool reported `isError`. `--repeat N` makes the same call N
//! times in sequence, each through the whole gate, and tells their timing on stderr.

use super::with_manager;
use crate::catalogue::snapshot;
use crate::cli::CallArgs;
use crate::host::Host;
use crate::output::{one_line, render_content};
use anyhow::{Context, bail};
use mcp_host_core::ServerId;
use mcp_host_engine::person::{DirectCall, DirectOutcome};
use mcp_host_engine::rules::compile;
use mcp_host_engine::{Event, Observer};
use mcp_host_registry::pins::PinCheck;
use serde_json::{Map, Value};
use std::io::Read;
use std::process::ExitCode;

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
    // `call SERVER TOOL` starts that server; `call NAME` the servers that could own the
    // name (usually one), which resolve it as all of them would.
    let only = match &args.tool {
        Some(_) => {
            if !host.config.entries.iter().any(|e| e.name == args.target) {
                bail!(
                    "no server named `{}` is configured (see `mcp-host mcp list`)",
                    mcp_host_config::visible(&args.target)
                );
            }
            vec![args.target.clone()]
        }
        None => host.servers_owning(&args.target),
    };
    host.startable(&only, &args.target)?;
    let policy = compile(&host.config)?;
    let remembered = host.store().await?.remembered().await?;
    let connected = host.connect(Some(&only), policy, None)?;
    let limit = host.settle_limit();
    with_manager(host, connected, async move |c, cancel| {
        let m = &c.servers;
        super::settle(host, m, limit).await;
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
        if let Some(PinCheck::Drift(_)) = &entry.pin {
            crate::output::errln!(
                "warning: `{}` changed since it was first seen; see `mcp-host tools`",
                entry.name
            );
        }
        let args_value = Value::Object(arguments.unwrap_or_default());
        let mut timings = Timings::new(args.repeat);
        let mut outcome = None;
        for i in 0..args.repeat {
            let call = DirectCall {
                catalogue: &catalogue,
                entry,
                call_id: format!("direct-{}", i + 1),
                args: args_value.clone(),
                remembered: &remembered,
                observer: &Warnings,
            };
            let started = std::time::Instant::now();
            let done = c.gate.direct(call, cancel.clone()).await;
            timings.took(started.elapsed());
            match done {
                DirectOutcome::Done {
                    outcome: o,
                    objections,
                } => {
                    for objection in objections {
                        crate::output::errln!("warning: a PostToolUse hook objected: {objection}");
                    }
                    outcome = Some(o);
                }
                DirectOutcome::Invalid(why) => {
                    crate::output::errln!("error: {why}");
                    return Ok(ExitCode::FAILURE);
                }
                DirectOutcome::Denied(d) => {
                    crate::output::errln!("error: denied: {}", d.reason);
                    return Ok(ExitCode::FAILURE);
                }
                DirectOutcome::Failed(e) => {
                    crate::output::errln!("error: {e}");
                    return Ok(ExitCode::FAILURE);
                }
            }
        }
        timings.report();
        // `repeat` is at least 1, so a call was made.
        let Some(outcome) = outcome else {
            return Ok(ExitCode::FAILURE);
        };
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
                crate::output::write_out(&body, true);
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

/// `--repeat N`: each call's round trip through the gate and the host's CPU over all of
/// them, told on stderr once the calls are done (nothing when the call is made once).
struct Timings {
    took: Vec<std::time::Duration>,
    cpu_at_start: std::time::Duration,
}

impl Timings {
    fn new(repeat: u32) -> Self {
        Self {
            took: Vec::with_capacity(repeat as usize),
            cpu_at_start: host_cpu(),
        }
    }

    fn took(&mut self, d: std::time::Duration) {
        self.took.push(d);
    }

    fn report(mut self) {
        if self.took.len() < 2 {
            return;
        }
        let cpu = host_cpu().saturating_sub(self.cpu_at_start);
        let n = self.took.len();
        self.took.sort_unstable();
        let at = |q: f64| self.took[((n - 1) as f64 * q) as usize].as_micros();
        crate::output::errln!(
            "{n} calls: p50 {} µs, p90 {} µs, p99 {} µs; host CPU {} µs per call",
            at(0.5),
            at(0.9),
            at(0.99),
            cpu.as_micros() / n as u128
        );
    }
}

/// CPU time of this process, all threads, user and system.
fn host_cpu() -> std::time::Duration {
    use nix::sys::resource::{UsageWho, getrusage};
    let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else {
        return std::time::Duration::ZERO;
    };
    let us = |t: nix::sys::time::TimeVal| {
        std::time::Duration::new(t.tv_sec() as u64, t.tv_usec() as u32 * 1000)
    };
    us(usage.user_time()) + us(usage.system_time())
}

/// The one-shot call shows only what a person must know while it runs: notices.
struct Warnings;

impl Observer for Warnings {
    fn event(&self, event: Event) {
        if let Event::Notice { text } = event {
            crate::output::errln!("warning: {text}");
        }
    }

    fn follows_calls(&self) -> bool {
        false
    }
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
