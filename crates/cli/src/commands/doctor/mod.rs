//! `mcp-host doctor [SERVER] [--json]`: every check a person would otherwise do by hand, in
//! the order a server gets used: its config (problems, unknown keys, missing variables, a
//! scope hiding another), its command and folder, its start and handshake (with the time
//! and era, and the server's own last words when it fails), its tools (schemas that do not
//! compile, text that reads as instructions, names the model sees), its confinement, and
//! one harmless call where that is safe (a trusted server's read-only tool that needs no
//! arguments). Each failure carries a one-line fix; the exit status is 1 when any check
//! failed.

mod oauth;

use super::with_manager;
use crate::cli::DoctorArgs;
use crate::host::Host;
use crate::output::{one_line, outln};
use mcp_host_config::{ServerReadiness, Transport};
use mcp_host_core::{ServerId, ServerState};
use mcp_host_engine::person::{DirectCall, DirectOutcome};
use mcp_host_registry::lint::Flag;
use serde::Serialize;
use std::collections::BTreeMap;
use std::process::ExitCode;
use std::time::{Duration, Instant};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    Note,
    Warn,
    Fail,
}

impl Level {
    fn word(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Note => "note",
            Self::Warn => "warn",
            Self::Fail => "FAIL",
        }
    }
}

#[derive(Debug, Serialize)]
struct Finding {
    server: String,
    check: &'static str,
    level: Level,
    message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    fix: Option<String>,
}

#[derive(Default)]
struct Report(Vec<Finding>);

impl Report {
    fn add(&mut self, server: &str, check: &'static str, level: Level, message: impl Into<String>) {
        self.0.push(Finding {
            server: server.to_string(),
            check,
            level,
            message: message.into(),
            fix: None,
        });
    }

    fn fix(
        &mut self,
        server: &str,
        check: &'static str,
        level: Level,
        message: impl Into<String>,
        fix: impl Into<String>,
    ) {
        self.add(server, check, level, message);
        if let Some(f) = self.0.last_mut() {
            f.fix = Some(fix.into());
        }
    }

    fn failed(&self, server: &str) -> bool {
        self.0
            .iter()
            .any(|f| f.server == server && f.level == Level::Fail)
    }
}

pub async fn run(host: &Host, args: DoctorArgs) -> anyhow::Result<ExitCode> {
    let mut report = Report::default();
    let chosen: Vec<_> = (host.config.entries.iter())
        .filter(|e| args.server.as_ref().is_none_or(|s| *s == e.name))
        .collect();
    if let Some(s) = &args.server
        && chosen.is_empty()
    {
        report.fix(
            s,
            "config",
            Level::Fail,
            "no server of this name is configured",
            "see `mcp-host mcp list`, or add it with `mcp-host mcp add`",
        );
    }
    if host.config.entries.is_empty() {
        report.fix(
            "-",
            "config",
            Level::Fail,
            "no MCP servers are configured",
            "add one with `mcp-host mcp add NAME -- COMMAND ARGS…` or `mcp-host mcp import`",
        );
    }
    config_checks(host, &chosen, &mut report);
    let startable: Vec<String> = chosen
        .iter()
        .filter(|e| matches!(e.readiness, ServerReadiness::Start(_)) && !report.failed(&e.name))
        .map(|e| e.name.clone())
        .collect();
    if !startable.is_empty() {
        let sound = host.config.is_sound();
        let started = Instant::now();
        let connected = if sound {
            host.connect(
                Some(&startable),
                mcp_host_engine::rules::compile(&host.config)?,
                None,
            )?
        } else {
            host.look(Some(&startable))?
        };
        let limit = host.settle_limit();
        let remembered = host.store().await?.remembered().await?;
        let r = &mut report;
        with_manager(host, connected, async move |c, cancel| {
            let m = &c.servers;
            // A server retrying after its first failure is reported with that failure: the
            // person wants the reason now, not after the retries.
            let started = &started;
            let waits = startable.iter().map(|name| async move {
                if let Some(mut rx) = m.manager().watch(&ServerId::new(name)) {
                    let settled = rx.wait_for(|s| s.state != ServerState::Starting);
                    let _ = tokio::time::timeout(limit, settled).await;
                }
                (name.clone(), started.elapsed())
            });
            let took: BTreeMap<String, Duration> =
                futures::future::join_all(waits).await.into_iter().collect();
            for name in &startable {
                let took = took.get(name).copied().unwrap_or_default();
                start_checks(m, name, took, r);
            }
            // A remote server waiting for a sign-in: walk what a sign-in would walk.
            // The HTTP client (and its CA roots) only when one is needed, and once.
            let mut http = None;
            for name in &startable {
                let waits = (m.status(&ServerId::new(name)))
                    .is_some_and(|s| matches!(s.state, ServerState::NeedsAuth { .. }));
                if let (true, Some(url)) = (waits, http_url(host, name)) {
                    if http.is_none() {
                        http = Some(host.http.get()?);
                    }
                    if let Some(http) = &http {
                        oauth::walk(http, name, &url, r).await;
                    }
                }
            }
            let (catalogue, _) = crate::catalogue::snapshot(host, m).await?;
            for name in &startable {
                if r.failed(name) {
                    continue;
                }
                tool_checks(&catalogue, name, r);
                if sound {
                    harmless_call(c, &catalogue, &remembered, name, cancel, r).await;
                }
            }
            Ok(ExitCode::SUCCESS)
        })
        .await?;
    }
    // One block per server, in the order of the configuration (findings were made check by
    // check); config-wide problems first.
    let order = |server: &str| {
        (host.config.entries.iter())
            .position(|e| e.name == server)
            .map_or(0, |i| i + 1)
    };
    report.0.sort_by_key(|f| order(&f.server));
    let failed = report.0.iter().any(|f| f.level == Level::Fail);
    if args.json {
        crate::output::print_json(&report.0)?;
    } else {
        print(&report);
    }
    Ok(if failed {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    })
}

fn print(report: &Report) {
    let mut last = None;
    for f in &report.0 {
        if last != Some(&f.server) {
            outln!("{}", mcp_host_config::visible(&f.server));
            last = Some(&f.server);
        }
        outln!(
            "  {:<4}  {:<7}  {}",
            f.level.word(),
            f.check,
            one_line(&f.message, 300)
        );
        if let Some(fix) = &f.fix {
            outln!("                 fix: {}", one_line(fix, 300));
        }
    }
    let failed = report.0.iter().filter(|f| f.level == Level::Fail).count();
    if failed == 0 {
        outln!("all checks passed");
    } else {
        outln!(
            "{failed} check{} failed",
            if failed == 1 { "" } else { "s" }
        );
    }
}

/// What the files say, before anything starts.
fn config_checks(host: &Host, chosen: &[&mcp_host_config::ServerEntry], report: &mut Report) {
    for p in &host.config.problems {
        let owner = chosen.iter().find(|e| {
            p.key == format!("mcpServers.{}", e.name)
                || p.key.starts_with(&format!("mcpServers.{}.", e.name))
        });
        let server = match owner {
            Some(e) => e.name.as_str(),
            None if p.is_fatal() => "(config)",
            None => continue,
        };
        let level = if p.is_fatal() {
            Level::Fail
        } else {
            Level::Warn
        };
        report.fix(
            server,
            "config",
            level,
            p.to_string(),
            format!("edit {}:{}", p.file.display(), p.line),
        );
    }
    for e in chosen {
        let name = e.name.as_str();
        if let Some(hidden) = e.shadows.first() {
            let all: Vec<&str> = e.shadows.iter().map(|s| s.label()).collect();
            report.fix(
                name,
                "config",
                Level::Warn,
                format!(
                    "also defined in {} (the {} definition is used)",
                    all.join(" and "),
                    e.scope.label()
                ),
                format!(
                    "remove the one you do not mean: mcp-host mcp remove {name} --scope {}",
                    hidden.label()
                ),
            );
        }
        match &e.readiness {
            ServerReadiness::Start(spec) => command_checks(host, name, &spec.transport, report),
            ServerReadiness::Disabled => report.add(
                name,
                "config",
                Level::Note,
                "disabled (`\"enabled\": false`); not started",
            ),
            ServerReadiness::PendingApproval => report.fix(
                name,
                "config",
                Level::Warn,
                "from this project's .mcp.json and waits for your approval; not started",
                format!("mcp-host servers approve {name}"),
            ),
            ServerReadiness::Denied => report.fix(
                name,
                "config",
                Level::Warn,
                "from this project's .mcp.json and you denied it; not started",
                format!("mcp-host servers approve {name} (if you now trust it)"),
            ),
            // The problem already says how to mend it (a missing variable names the
            // default to write); the fix points at where.
            ServerReadiness::Invalid(p) => report.fix(
                name,
                "config",
                Level::Fail,
                p.to_string(),
                format!("mend {}:{} as the message says (a missing variable: set it where mcp-host runs, or give the default shown)", p.file.display(), p.line),
            ),
        }
    }
}

/// A remote server's URL as configured.
fn http_url(host: &Host, name: &str) -> Option<String> {
    host.config
        .entries
        .iter()
        .find(|e| e.name == name)
        .and_then(|e| match &e.readiness {
            ServerReadiness::Start(spec) => match &spec.transport {
                Transport::Http { url, .. } => Some(url.clone()),
                Transport::Stdio { .. } => None,
            },
            _ => None,
        })
}

/// A stdio server's command and folder, as its process will look for them.
fn command_checks(host: &Host, name: &str, transport: &Transport, report: &mut Report) {
    let Transport::Stdio {
        command, env, cwd, ..
    } = transport
    else {
        return;
    };
    let folder = cwd.clone().unwrap_or_else(|| host.paths.cwd.clone());
    if !folder.is_dir() {
        report.fix(
            name,
            "command",
            Level::Fail,
            format!("working directory {} does not exist", folder.display()),
            format!("create it, or change `cwd` for `{name}`"),
        );
        return;
    }
    let path = env.get("PATH").or_else(|| host.env.get("PATH"));
    match mcp_host_client::stdio::resolve(command, path.map(String::as_str), &folder) {
        Ok(found) => report.add(name, "command", Level::Ok, found.display().to_string()),
        Err(e) => {
            let fix = match command.as_str() {
                "npx" | "node" => "install Node.js 20 or newer (it brings npx)".to_string(),
                "uvx" | "uv" => "install uv: pip install uv (it brings uvx)".to_string(),
                "docker" => "install Docker, or run the server another way".to_string(),
                _ => format!("install `{command}`, or give its full path in `command`"),
            };
            report.fix(name, "command", Level::Fail, e.to_string(), fix);
        }
    }
}

/// How the start went: ready (with its time and era), or why not and what to do.
fn start_checks(
    m: &mcp_host_engine::host::Servers,
    name: &str,
    took: Duration,
    report: &mut Report,
) {
    let id = ServerId::new(name);
    let Some(st) = m.status(&id) else {
        return;
    };
    let ms = took.as_millis();
    // The server's own last words say more than the host's account of the failure.
    let why = |reason: &str| match st.stderr_tail.last() {
        Some(line) => format!("{}  [{}]", one_line(line, 200), one_line(reason, 160)),
        None => one_line(reason, 300),
    };
    match &st.state {
        ServerState::Ready => {
            let era = st.era.as_ref().map_or("?", |e| e.version.as_str());
            report.add(
                name,
                "start",
                Level::Ok,
                format!("ready in {ms} ms, protocol {era}"),
            );
            if let Some(note) = &st.era_note {
                report.add(
                    name,
                    "start",
                    Level::Note,
                    format!("not the 2026-07-28 era: {note}"),
                );
            }
            if let Some(view) = &st.confinement {
                report.add(name, "sandbox", Level::Ok, view.short());
                for line in view.lines() {
                    report.add(name, "sandbox", Level::Note, line);
                }
            }
            for w in &st.warnings {
                report.add(name, "tools", Level::Warn, w.clone());
            }
        }
        ServerState::NeedsAuth { reason } => report.fix(
            name,
            "auth",
            Level::Fail,
            format!("needs you to sign in ({reason})"),
            format!("mcp-host auth login {name}"),
        ),
        ServerState::Failed { reason } | ServerState::Backoff { reason, .. } => {
            let fix = if reason.contains("connection refused")
                || reason.contains("Connection refused")
            {
                "nothing answers at its URL: start the server, or correct `url`".to_string()
            } else if st.stderr_tail.is_empty() {
                format!(
                    "run its command yourself to see why, or look at `mcp-host servers --json` for `{name}`"
                )
            } else {
                "the server's own message above says why: correct its `args`, `env` or `cwd`"
                    .to_string()
            };
            report.fix(name, "start", Level::Fail, why(reason), fix);
        }
        ServerState::Starting => report.fix(
            name,
            "start",
            Level::Fail,
            why(&format!("not ready after {ms} ms")),
            "raise its `timeout` (milliseconds), or run its command yourself to see where it stops",
        ),
        other => report.add(name, "start", Level::Note, other.label()),
    }
}

/// The server's tools as the model will get them.
fn tool_checks(
    catalogue: &mcp_host_registry::catalogue::Catalogue,
    name: &str,
    report: &mut Report,
) {
    let id = ServerId::new(name);
    let entries: Vec<_> = catalogue
        .entries()
        .iter()
        .filter(|e| e.key.server == id)
        .collect();
    let callable = entries.iter().filter(|e| e.callable).count();
    report.add(
        name,
        "tools",
        Level::Ok,
        format!("{} tools, {callable} callable", entries.len()),
    );
    for f in catalogue.server_flags(&id) {
        report.add(
            name,
            "tools",
            Level::Warn,
            mcp_host_engine::session::views::describe_flag(f),
        );
    }
    let plain = format!("{}__", mcp_host_registry::names::sanitize(name));
    // The same finding on many tools is one line naming them.
    let mut alike: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for e in &entries {
        for f in &e.flags {
            let text = mcp_host_engine::session::views::describe_flag(f);
            match f {
                Flag::SchemaUnavailable { .. } => report.fix(
                    name,
                    "tools",
                    Level::Warn,
                    format!("`{}`: {text}", e.key.tool),
                    format!("`\"allowUnvalidated\": true` on `{name}` offers it without checking arguments"),
                ),
                // Policy asks before such a call; `mcp-host tools` lists them.
                Flag::ReadsAsInstructions { .. } => {}
                _ => alike.entry(text).or_default().push(&e.key.tool),
            }
        }
        if e.name != format!("{plain}{}", mcp_host_registry::names::sanitize(&e.key.tool)) {
            report.add(
                name,
                "tools",
                Level::Note,
                format!("`{}` is called `{}` by the model", e.key.tool, e.name),
            );
        }
    }
    for (text, tools) in alike {
        let mut named: Vec<String> = tools.iter().take(3).map(|t| format!("`{t}`")).collect();
        if tools.len() > 3 {
            named.push(format!("{} more", tools.len() - 3));
        }
        report.add(
            name,
            "tools",
            Level::Warn,
            format!("{}: {text}", named.join(", ")),
        );
    }
}

/// Calls one tool that cannot change anything: read-only by a server the user trusts, with
/// no required arguments. Through the gate, like any call (rules, hooks, audit).
async fn harmless_call(
    c: &mcp_host_engine::host::Connected,
    catalogue: &mcp_host_registry::catalogue::Catalogue,
    remembered: &mcp_host_policy::Remembered,
    name: &str,
    cancel: &tokio_util::sync::CancellationToken,
    report: &mut Report,
) {
    let id = ServerId::new(name);
    let harmless = catalogue.entries().iter().find(|e| {
        e.key.server == id
            && e.trusted()
            && e.callable
            && (e.tool.annotations.as_ref())
                .and_then(|a| a.get("readOnlyHint"))
                .and_then(serde_json::Value::as_bool)
                == Some(true)
            && (e.tool.input_schema.get("required"))
                .and_then(serde_json::Value::as_array)
                .is_none_or(Vec::is_empty)
    });
    let Some(entry) = harmless else {
        return;
    };
    let started = Instant::now();
    let call = DirectCall {
        catalogue,
        entry,
        call_id: "doctor-1".into(),
        args: serde_json::json!({}),
        remembered,
        observer: &mcp_host_engine::Quiet,
    };
    let tool = &entry.key.tool;
    match c.gate.direct(call, cancel.clone()).await {
        DirectOutcome::Done { outcome, .. } if !outcome.is_error => {
            report.add(
                name,
                "call",
                Level::Ok,
                format!("`{tool}` answered in {} ms", started.elapsed().as_millis()),
            );
        }
        DirectOutcome::Done { .. } => report.add(
            name,
            "call",
            Level::Warn,
            format!("`{tool}` (read-only, no arguments) reported an error"),
        ),
        DirectOutcome::Denied(d) => report.add(
            name,
            "call",
            Level::Note,
            format!("`{tool}` not called: {}", d.reason),
        ),
        DirectOutcome::Invalid(why) => {
            report.add(name, "call", Level::Warn, format!("`{tool}`: {why}"))
        }
        DirectOutcome::Failed(e) => report.fix(
            name,
            "call",
            Level::Fail,
            format!("`{tool}` failed: {e}"),
            format!("try it yourself: mcp-host call {name} {tool}"),
        ),
    }
}
