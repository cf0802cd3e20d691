//! `mcp-host tools [--server NAME] [--search QUERY [--limit K]] [--accept-changes] [--json]`:
//! the catalogue as the model would see it, with model-visible names, lint flags and pin
//! drift (with a diff).

use super::with_manager;
use crate::catalogue::snapshot;
use crate::cli::ToolsArgs;
use crate::host::Host;
use crate::output::{one_line, table};
use anyhow::bail;
use mcp_host_engine::session::views::describe_flag;
use mcp_host_registry::catalogue::Entry;
use mcp_host_registry::pins::{self, PinCheck};
use mcp_host_registry::search::hybrid::Ranking;
use serde_json::{Value, json};
use std::process::ExitCode;

pub async fn run(host: &Host, args: ToolsArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &args.server
        && !host.config.entries.iter().any(|e| &e.name == name)
    {
        bail!("no server named `{name}` is configured");
    }
    let only: Option<Vec<String>> = args.server.clone().map(|s| vec![s]);
    let manager = host.look(only.as_deref())?;
    let limit = host.settle_limit();
    with_manager(host, manager, async move |c, _cancel| {
        let m = &c.servers;
        super::settle(host, m, limit).await;
        let (mut catalogue, store) = snapshot(host, m).await?;
        if args.accept_changes {
            for e in catalogue
                .entries()
                .iter()
                .filter(|e| matches!(e.pin, Some(PinCheck::Drift(_))))
            {
                let definition = Entry::definition(&e.tool);
                pins::accept(&store, e.key.server.as_str(), &e.key.tool, &definition).await?;
                crate::output::errln!("accepted the current definition of `{}`", e.name);
            }
            catalogue.check_pins(&store).await?;
        }
        let shown: Vec<(&Entry, Option<f32>)> = match &args.search {
            Some(q) => {
                if catalogue.ranking() == Ranking::Lexical {
                    crate::output::errln!("ranking: {}", Ranking::Lexical.describe());
                }
                (catalogue.search(q, args.limit).into_iter())
                    .map(|(e, s)| (e, Some(s)))
                    .collect()
            }
            None => catalogue.entries().iter().map(|e| (e, None)).collect(),
        };
        if args.json {
            let rows: Vec<Value> = shown
                .iter()
                .map(|(e, score)| {
                    let mut r = row(e, *score);
                    r["serverFlags"] = json!(catalogue.server_flags(&e.key.server));
                    r
                })
                .collect();
            crate::output::print_json(&rows)?;
        } else {
            print_table(&shown);
            let mut servers: Vec<&mcp_host_core::ServerId> =
                shown.iter().map(|(e, _)| &e.key.server).collect();
            servers.dedup();
            for id in servers {
                for f in catalogue.server_flags(id) {
                    crate::output::errln!("warning: server `{id}`: {}", describe_flag(f));
                }
            }
        }
        Ok(ExitCode::SUCCESS)
    })
    .await
}

fn row(e: &Entry, score: Option<f32>) -> Value {
    let mut r = json!({
        "name": e.name,
        "server": e.key.server.as_str(),
        "tool": e.key.tool,
        "title": e.tool.title,
        "description": e.description,
        "inputSchema": e.tool.input_schema,
        "annotations": e.tool.annotations,
        "callable": e.callable,
        "flags": e.flags,
        "hash": e.hash,
        "pin": e.pin,
    });
    if let Some(s) = score {
        r["score"] = json!(s);
    }
    r
}

fn print_table(shown: &[(&Entry, Option<f32>)]) {
    let cells: Vec<Vec<String>> = shown
        .iter()
        .map(|(e, _)| {
            vec![
                e.name.clone(),
                e.key.server.to_string(),
                one_line(&e.key.tool, 64),
                one_line(&e.description, 70),
            ]
        })
        .collect();
    crate::output::out!(
        "{}",
        table(&["NAME", "SERVER", "TOOL", "DESCRIPTION"], &cells)
    );
    for (e, _) in shown {
        for f in &e.flags {
            crate::output::errln!("warning: `{}`: {}", e.name, describe_flag(f));
        }
        if let Some(PinCheck::Drift(d)) = &e.pin {
            crate::output::errln!(
                "warning: `{}` changed since it was first seen (accept with `mcp-host tools --accept-changes`):\n{}",
                e.name,
                mcp_host_core::sanitize::strip_terminal_escapes(&d.diff)
            );
        }
    }
}
