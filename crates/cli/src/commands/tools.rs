//! `mcp-host tools [--server NAME] [--json]`.

use super::with_manager;
use crate::cli::ToolsArgs;
use crate::host::Host;
use crate::output::{one_line, table};
use anyhow::bail;
use serde_json::json;
use std::process::ExitCode;

pub async fn run(host: &Host, args: ToolsArgs) -> anyhow::Result<ExitCode> {
    if let Some(name) = &args.server
        && !host.config.entries.iter().any(|e| &e.name == name)
    {
        bail!("no server named `{name}` is configured");
    }
    let manager = host.start(args.server.as_deref())?;
    let limit = host.settle_limit();
    with_manager(host, manager, async move |m, _cancel| {
        m.wait_settled(limit).await;
        let mut json_rows = Vec::new();
        let mut cells = Vec::new();
        for id in m.ids() {
            let state = m.status(id).map(|s| s.state);
            if let Some(s) = state.as_ref().filter(|s| s.label() != "ready") {
                eprintln!(
                    "warning: server `{id}` is {}{}",
                    s.label(),
                    s.error()
                        .map(|e| format!(": {}", one_line(e, 200)))
                        .unwrap_or_default()
                );
                continue;
            }
            let Some(list) = m.tools(id) else { continue };
            for issue in &list.issues {
                eprintln!(
                    "warning: server `{id}`: tool `{}` skipped: {}",
                    one_line(&issue.item, 64),
                    issue.reason
                );
            }
            for t in &list.items {
                json_rows.push(json!({
                    "server": id.as_str(),
                    "tool": t.name,
                    "title": t.title,
                    "description": t.description,
                    "inputSchema": t.input_schema,
                    "annotations": t.annotations,
                }));
                cells.push(vec![
                    id.to_string(),
                    one_line(&t.name, 64),
                    one_line(t.description.as_deref().unwrap_or_default(), 80),
                ]);
            }
        }
        if args.json {
            println!("{}", serde_json::to_string_pretty(&json_rows)?);
        } else {
            print!("{}", table(&["SERVER", "TOOL", "DESCRIPTION"], &cells));
        }
        Ok(ExitCode::SUCCESS)
    })
    .await
}
