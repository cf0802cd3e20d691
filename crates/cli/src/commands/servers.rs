//! `mcp-host servers [--json]` and `mcp-host servers approve|deny NAME`. Approving shows
//! exactly what the definition runs and sends (as written) and asks on the terminal; without
//! one it needs `--yes`.

use super::with_manager;
use crate::cli::{ServersAction, ServersArgs};
use crate::host::Host;
use crate::output::one_line;
use anyhow::{Context, bail};
use mcp_host_config::{ProjectServer, TrustAnswer};
use mcp_host_core::TransportKind;
use mcp_host_core::confinement::ConfinementView;
use serde::Serialize;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

#[derive(Serialize)]
struct Row {
    name: String,
    scope: &'static str,
    transport: TransportKind,
    /// Whether policy may believe this server's annotations (`trust` in its config).
    trusted: bool,
    state: &'static str,
    era: Option<String>,
    tools: usize,
    prompts: usize,
    resources: usize,
    error: Option<String>,
    restarts: u32,
    stderr_tail: Vec<String>,
    /// Why the server is in an older era although 2026-07-28 was tried.
    era_note: Option<String>,
    /// Why it speaks another transport than the configured one (a fallback to HTTP+SSE).
    transport_note: Option<String>,
    /// What its lists left out (page caps, cursor loops, broken entries).
    warnings: Vec<String>,
    /// A local server's confinement: level, what it may read, write and reach, the kernel
    /// mechanisms, and the denials it ran into.
    sandbox: Option<ConfinementView>,
}

pub async fn run(host: &Host, args: ServersArgs) -> anyhow::Result<ExitCode> {
    if let Some(action) = args.action {
        return answer(host, action);
    }
    // Started even with no server configured: starting is also when the processes an
    // earlier host left behind are found and ended.
    let manager = host.look(None)?;
    let limit = host.settle_limit();
    with_manager(host, manager, async move |c, _cancel| {
        let m = &c.servers;
        super::settle(host, m, limit).await;
        let rows: Vec<Row> = m
            .ids()
            .map(|id| {
                let st = m.status(id).unwrap_or_else(|| {
                    mcp_host_core::ServerStatus::new(mcp_host_core::ServerState::Stopped)
                });
                Row {
                    name: id.to_string(),
                    scope: host.scope_of(id.as_str()),
                    // The one in use when the server fell back from the configured one.
                    transport: (st.transport_note.as_ref().map(|(t, _)| *t))
                        .or_else(|| m.transport(id))
                        .unwrap_or(TransportKind::Stdio),
                    trusted: m.facts(id).is_some_and(|f| f.trusted),
                    state: st.state.label(),
                    era: st.era.map(|e| e.version),
                    tools: st.tool_count,
                    prompts: m.offers(id).map_or(0, |o| o.prompts.items.len()),
                    resources: m.offers(id).map_or(0, |o| o.resources.items.len()),
                    error: match &st.state {
                        // Say what fixes it, not only what the server answered.
                        mcp_host_core::ServerState::NeedsAuth { reason } => Some(format!(
                            "sign in with `mcp-host auth login {id}` ({reason})"
                        )),
                        other => other.error().map(str::to_string),
                    },
                    restarts: st.restarts,
                    stderr_tail: st.stderr_tail,
                    era_note: st.era_note,
                    transport_note: st.transport_note.map(|(_, why)| why),
                    warnings: st.warnings,
                    sandbox: st.confinement,
                }
            })
            .collect();
        if args.json {
            crate::output::print_json(&rows)?;
        } else if host.config.entries.is_empty() {
            super::mcp::nothing_configured(&mcp_host_config::ScopeFiles::new(&host.paths));
        } else {
            let cells: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    vec![
                        r.name.clone(),
                        r.scope.into(),
                        format!("{:?}", r.transport).to_lowercase(),
                        r.era.clone().unwrap_or_else(|| "-".into()),
                        r.state.into(),
                        r.tools.to_string(),
                        r.sandbox
                            .as_ref()
                            .map_or("-", ConfinementView::short)
                            .to_string(),
                        error_cell(r),
                    ]
                })
                .collect();
            crate::output::out!(
                "{}",
                crate::output::table_within(
                    &[
                        "NAME",
                        "SCOPE",
                        "TRANSPORT",
                        "ERA",
                        "STATE",
                        "TOOLS",
                        "SANDBOX",
                        "ERROR"
                    ],
                    &cells,
                    crate::output::terminal_width(),
                )
            );
            crate::output::out!("{}", notes(&rows));
            if rows.iter().any(|r| r.state == "pending_approval") {
                crate::output::outln!(
                    "\nProject servers wait for you: mcp-host servers approve NAME (or deny NAME)."
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    })
    .await
}

/// Why a server is not ready, as the server itself said it when it did (its last stderr
/// line says more than the host's account of the handshake), with that account after it.
fn error_cell(r: &Row) -> String {
    let Some(error) = r.error.as_deref() else {
        return String::new();
    };
    match r.stderr_tail.last() {
        Some(said) if r.state == "failed" => {
            format!("{}  [{}]", one_line(said, 300), one_line(error, 300))
        }
        _ => one_line(error, 600),
    }
}

/// Below the table: each server's list warnings and era fallback, one line each.
fn notes(rows: &[Row]) -> String {
    let mut out = String::new();
    for r in rows {
        for w in &r.warnings {
            out.push_str(&format!("{}: {}\n", r.name, one_line(w, 160)));
        }
        if let (Some(note), Some(era)) = (&r.era_note, &r.era) {
            out.push_str(&format!("{}: era {era}: {}\n", r.name, one_line(note, 160)));
        }
        if let Some(note) = &r.transport_note {
            let transport = format!("{:?}", r.transport).to_lowercase();
            out.push_str(&format!(
                "{}: {transport}: {}\n",
                r.name,
                one_line(note, 200)
            ));
        }
        for line in r.sandbox.iter().flat_map(ConfinementView::lines) {
            out.push_str(&format!("{}: {}\n", r.name, one_line(&line, 200)));
        }
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

fn answer(host: &Host, action: ServersAction) -> anyhow::Result<ExitCode> {
    let (name, answer, yes) = match action {
        ServersAction::Approve { name, yes } => (name, TrustAnswer::Approved, yes),
        ServersAction::Deny { name } => (name, TrustAnswer::Denied, true),
    };
    let Some(server) = host.config.project_server(&name) else {
        bail!(
            "`{name}` is not a server of this project's .mcp.json (project root {}); only project servers need approval",
            host.config.project_root.display()
        );
    };
    if answer == TrustAnswer::Approved {
        crate::output::out!("{}", approval_text(server));
        if !yes && !confirm()? {
            crate::output::outln!("not approved");
            return Ok(ExitCode::FAILURE);
        }
    }
    let mut ledger = host.ledger()?;
    ledger.record(&host.config.project_root, &name, &server.hash, answer)?;
    let verb = if answer == TrustAnswer::Approved {
        "approved"
    } else {
        "denied"
    };
    crate::output::outln!(
        "{verb} project server `{name}` (this definition; an edit will ask again)"
    );
    Ok(ExitCode::SUCCESS)
}

/// What approving `server` lets run and be sent, as `servers approve` and chat's `/mcp`
/// panel show it.
pub(crate) fn approval_text(server: &ProjectServer) -> String {
    let mut text = format!(
        "Project server `{}` ({}:{}:{}) will, once approved:\n",
        mcp_host_config::visible(&server.name),
        mcp_host_config::visible(&server.file.display().to_string()),
        server.line,
        server.column
    );
    for line in mcp_host_config::describe_definition(&server.raw) {
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(
        "${VAR} references are shown as written; they are read from your environment when it starts.\n",
    );
    text
}

/// Asks y/N on the terminal; without one, refuses (an approval must be someone's answer).
fn confirm() -> anyhow::Result<bool> {
    let stdin = std::io::stdin();
    if !stdin.is_terminal() {
        bail!(
            "not approved: standard input is not a terminal to confirm on; pass --yes to approve this definition as shown"
        );
    }
    // A constant prompt, no newline: written as it is.
    let mut err = std::io::stderr();
    err.write_all(b"Approve it? [y/N] ").ok();
    err.flush().ok();
    let mut line = String::new();
    stdin
        .lock()
        .read_line(&mut line)
        .context("cannot read the answer")?;
    Ok(matches!(
        line.trim().to_ascii_lowercase().as_str(),
        "y" | "yes"
    ))
}
