//! Telling the model which configured servers it cannot use now, and why, so it can say so
//! to the user instead of answering as if those tools did not exist. Said at a turn
//! boundary, in front of the user's message, only when it changed since the model was last
//! told (a server that recovers is mentioned once too).

use crate::connections::Connections;
use mcp_host_core::sanitize::one_line;
use mcp_host_core::{ServerId, ServerState};
use std::collections::BTreeMap;

/// Characters of one server's reason the model is given.
const REASON_CHARS: usize = 200;

/// What the model was last told, per server that was not usable.
#[derive(Debug, Default)]
pub(crate) struct Availability {
    told: BTreeMap<ServerId, String>,
}

impl Availability {
    /// The note for this turn boundary, empty when nothing changed.
    pub(crate) fn note(&mut self, servers: &dyn Connections) -> String {
        let now: BTreeMap<ServerId, String> = servers
            .ids()
            .into_iter()
            .filter_map(|id| {
                let status = servers.status(&id)?;
                unusable(&id, &status.state).map(|why| (id, why))
            })
            .collect();
        if now == self.told {
            return String::new();
        }
        let mut lines: Vec<String> = now
            .iter()
            .map(|(id, why)| format!("- `{id}`: {why}"))
            .collect();
        lines.extend(
            (self.told.keys())
                .filter(|id| !now.contains_key(*id))
                .map(|id| format!("- `{id}`: available again")),
        );
        self.told = now;
        format!(
            "[mcp-host: configured MCP servers whose tools you cannot use right now; if the request needs one, tell the user why instead of answering without it]\n{}\n\n",
            lines.join("\n")
        )
    }
}

/// Why a server's tools are missing, or `None` when it is usable (or the user turned it off).
fn unusable(id: &ServerId, state: &ServerState) -> Option<String> {
    let why = |prefix: &str, reason: &str| format!("{prefix}: {}", one_line(reason, REASON_CHARS));
    Some(match state {
        ServerState::Ready | ServerState::Disabled => return None,
        ServerState::Starting => "still starting; its tools appear when it is ready".into(),
        ServerState::Backoff { reason, .. } => why("reconnecting after an error", reason),
        ServerState::NeedsAuth { reason } => why("needs the user to sign in", reason),
        ServerState::Failed { reason } => why("failed", reason),
        ServerState::PendingApproval => format!(
            "a project server the user has not approved yet (`mcp-host servers approve {id}`)"
        ),
        ServerState::Stopped => "stopped".into(),
    })
}
