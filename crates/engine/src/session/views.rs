//! What a front end lists: the servers (state, era, transport, errors, notes, approval) and
//! the catalogue's tools with their flags as short labels, built from the manager and the
//! catalogue for the session's `Servers` and `Tools` events and for the model-free commands.

use mcp_host_client::Manager;
use mcp_host_core::ServerState;
use mcp_host_core::event::{ServerView, ToolView};
use mcp_host_core::sanitize::one_line;
use mcp_host_registry::catalogue::Catalogue;
use mcp_host_registry::lint::Flag;
use mcp_host_registry::pins::PinCheck;

/// The servers as the status line and the `/mcp` panel show them.
/// `needs_approval`: each project server waiting for approval, with what approving it lets
/// run and send (the lines the `/mcp` panel shows before asking).
pub fn server_views(m: &Manager, needs_approval: &[(String, Vec<String>)]) -> Vec<ServerView> {
    m.ids()
        .filter_map(|id| {
            let status = m.status(id)?;
            let last_error = status.state.error().map(ToString::to_string);
            let waiting = needs_approval.iter().find(|(n, _)| n == id.as_str());
            Some(ServerView {
                name: id.to_string(),
                state: status.state.label().replace('_', " "),
                era: status.era.as_ref().map(|e| e.version.clone()),
                transport: m
                    .transport(id)
                    .map(|t| format!("{t:?}").to_lowercase())
                    .unwrap_or_default(),
                tools: status.tool_count,
                last_error,
                stderr_tail: status.stderr_tail.clone(),
                needs_approval: waiting.is_some(),
                definition: waiting.map(|(_, d)| d.clone()).unwrap_or_default(),
                notes: notes(&status),
                enabled: !matches!(status.state, ServerState::Disabled),
                sandbox: (status.confinement.as_ref()).map_or_else(Vec::new, |c| c.lines()),
            })
        })
        .collect()
}

/// A server's list warnings and era fallback, for the `/mcp` panel.
fn notes(status: &mcp_host_core::ServerStatus) -> Vec<String> {
    let mut out = status.warnings.clone();
    if let (Some(note), Some(era)) = (&status.era_note, &status.era) {
        out.push(format!("era {}: {note}", era.version));
    }
    out
}

/// The catalogue as the `/tools` browser lists it.
pub fn tool_views(catalogue: &Catalogue) -> Vec<ToolView> {
    catalogue
        .entries()
        .iter()
        .map(|e| {
            let mut flags: Vec<String> = e.flags.iter().map(describe_flag).collect();
            match &e.pin {
                Some(PinCheck::Drift(_)) => flags.push("changed since pinned".into()),
                Some(PinCheck::New) => flags.push("new".into()),
                _ => {}
            }
            if !e.callable {
                flags.push("not callable".into());
            }
            ToolView {
                name: e.name.clone(),
                server: e.key.server.to_string(),
                description: e.description.clone(),
                flags,
            }
        })
        .collect()
}

pub fn describe_flag(f: &Flag) -> String {
    match f {
        Flag::Confusable {
            other_server,
            other_tool,
        } => {
            format!(
                "name looks like `{}` of server `{other_server}`",
                one_line(other_tool, 64)
            )
        }
        Flag::HiddenCharacters {
            field,
            count,
            examples,
        } => {
            format!(
                "{count} invisible or direction-changing character(s) in {field} ({})",
                examples.join(", ")
            )
        }
        Flag::DescriptionCut {
            original_chars,
            limit,
        } => {
            format!("description cut from {original_chars} to {limit} characters")
        }
        Flag::SchemaUnavailable { reason } => format!("not callable: {reason}"),
        Flag::SchemaUnvalidated { reason } => format!("arguments are not validated: {reason}"),
        Flag::ReadsAsInstructions { field, phrases } => {
            let quoted: Vec<String> = phrases
                .iter()
                .map(|p| format!("\"{}\"", one_line(p, 40)))
                .collect();
            format!(
                "{field} reads as instructions to the model ({}); calls ask first",
                quoted.join(", ")
            )
        }
    }
}
