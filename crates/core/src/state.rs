//! Per-server connection states as the connection manager publishes them, and the status row
//! that `mcp-host servers` prints.

use serde::Serialize;
use std::time::Duration;

/// Which protocol era a connection speaks, with the exact version string negotiated.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Era {
    pub version: String,
}

impl Era {
    /// 2026-07-28 and later have no `initialize` handshake.
    pub fn is_modern(&self) -> bool {
        self.version.as_str() >= "2026-07-28"
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TransportKind {
    Stdio,
    /// Streamable HTTP.
    Http,
    /// The legacy HTTP+SSE transport (2024-11-05).
    Sse,
}

/// The published state of one server.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum ServerState {
    Starting,
    Ready,
    Backoff {
        attempt: u32,
        #[serde(rename = "retry_in_ms", serialize_with = "as_millis")]
        retry_in: Duration,
        reason: String,
    },
    NeedsAuth {
        reason: String,
    },
    Failed {
        reason: String,
    },
    Disabled,
    PendingApproval,
    Stopped,
}

fn as_millis<S: serde::Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_u64(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl ServerState {
    pub fn label(&self) -> &'static str {
        match self {
            Self::Starting => "starting",
            Self::Ready => "ready",
            Self::Backoff { .. } => "backoff",
            Self::NeedsAuth { .. } => "needs_auth",
            Self::Failed { .. } => "failed",
            Self::Disabled => "disabled",
            Self::PendingApproval => "pending_approval",
            Self::Stopped => "stopped",
        }
    }

    /// A state a one-shot command can report without waiting further.
    pub fn is_settled(&self) -> bool {
        !matches!(self, Self::Starting | Self::Backoff { .. })
    }

    pub fn error(&self) -> Option<&str> {
        match self {
            Self::Backoff { reason, .. } | Self::NeedsAuth { reason } | Self::Failed { reason } => {
                Some(reason)
            }
            _ => None,
        }
    }
}

/// Everything the host can say about one server at a moment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerStatus {
    pub state: ServerState,
    pub era: Option<Era>,
    pub tool_count: usize,
    /// Bumped every time the tools, prompts or resources are (re)listed: a catalogue built
    /// at an older revision is stale.
    pub revision: u64,
    /// Last lines the server wrote to stderr (sanitised), newest last.
    pub stderr_tail: Vec<String>,
    pub restarts: u32,
    /// Why the server is in an older era although 2026-07-28 was tried first.
    pub era_note: Option<String>,
    /// What a ready server's lists left out and why (page caps, cursor loops, broken
    /// entries), so a partial listing is never silent.
    pub warnings: Vec<String>,
    /// A local server's confinement and the denials it ran into; `None` for a remote one
    /// or one not started yet.
    pub confinement: Option<crate::confinement::ConfinementView>,
    /// The transport a ready remote server speaks, when it is not the configured one,
    /// with the reason (a Streamable HTTP server that refused, answered over HTTP+SSE).
    pub transport_note: Option<(TransportKind, String)>,
}

impl ServerStatus {
    pub fn new(state: ServerState) -> Self {
        Self {
            state,
            era: None,
            tool_count: 0,
            revision: 0,
            stderr_tail: Vec::new(),
            restarts: 0,
            era_note: None,
            warnings: Vec::new(),
            confinement: None,
            transport_note: None,
        }
    }
}
