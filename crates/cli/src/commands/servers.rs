//! `mcp-host servers [--json]` and `mcp-host servers approve|deny NAME`.

use super::with_manager;
use crate::cli::{ServersAction, ServersArgs};
use crate::host::Host;
use crate::output::{one_line, table};
use anyhow::bail;
use mcp_host_config::TrustAnswer;
use mcp_host_core::TransportKind;
use serde::Serialize;
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
    /// What its lists left out (page caps, cursor loops, broken entries).
    warnings: Vec<String>,
}

pub async fn run(host: &Host, args: ServersArgs) -> anyhow::Result<ExitCode> {
    if let Some(action) = args.action {
        return answer(host, action);
    }
    let manager = host.start(None)?;
    let limit = host.settle_limit();
    with_manager(host, manager, async move |m, _cancel| {
        m.wait_settled(limit).await;
        let rows: Vec<Row> = m
            .ids()
            .map(|id| {
                let st = m.status(id).unwrap_or_else(|| {
                    mcp_host_core::ServerStatus::new(mcp_host_core::ServerState::Stopped)
                });
                Row {
                    name: id.to_string(),
                    scope: host.scope_of(id.as_str()),
                    transport: m.transport(id).unwrap_or(TransportKind::Stdio),
                    trusted: m.spec(id).is_some_and(|s| s.trusted),
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
                    warnings: st.warnings,
                }
            })
            .collect();
        if args.json {
            println!("{}", serde_json::to_string_pretty(&rows)?);
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
                        r.error
                            .as_deref()
                            .map(|e| one_line(e, 100))
                            .unwrap_or_default(),
                    ]
                })
                .collect();
            print!(
                "{}",
                table(
                    &[
                        "NAME",
                        "SCOPE",
                        "TRANSPORT",
                        "ERA",
                        "STATE",
                        "TOOLS",
                        "ERROR"
                    ],
                    &cells
                )
            );
            print!("{}", notes(&rows));
            if rows.iter().any(|r| r.state == "pending_approval") {
                println!(
                    "\nProject servers wait for you: mcp-host servers approve NAME (or deny NAME)."
                );
            }
        }
        Ok(ExitCode::SUCCESS)
    })
    .await
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
    }
    if out.is_empty() {
        out
    } else {
        format!("\n{out}")
    }
}

fn answer(host: &Host, action: ServersAction) -> anyhow::Result<ExitCode> {
    let (name, answer) = match action {
        ServersAction::Approve { name } => (name, TrustAnswer::Approved),
        ServersAction::Deny { name } => (name, TrustAnswer::Denied),
    };
    let Some((_, hash)) = host.config.project_servers.iter().find(|(n, _)| *n == name) else {
        bail!(
            "`{name}` is not a server of this project's .mcp.json (project root {}); only project servers need approval",
            host.config.project_root.display()
        );
    };
    let mut ledger = host.ledger()?;
    ledger.record(&host.config.project_root, &name, hash, answer)?;
    let verb = if answer == TrustAnswer::Approved {
        "approved"
    } else {
        "denied"
    };
    println!("{verb} project server `{name}` (this definition; an edit will ask again)");
    Ok(ExitCode::SUCCESS)
}
