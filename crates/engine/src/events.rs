//! How the engine tells a front end what happens in a turn. The events themselves are the
//! plain data of `mcp_host_core::event`; only an approval question travels with a reply
//! channel, handed to the observer beside its prompt, so an answer is matched to its call by
//! construction and never fished out of a shared queue. An observer that cannot ask anybody
//! (headless) drops the reply, which refuses the call.

use mcp_host_core::decision::AnswerScope;
use mcp_host_core::event::{ApprovalPrompt, CallSubject, Event};
use mcp_host_registry::catalogue::Entry;
use mcp_host_registry::pins::PinCheck;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::sync::oneshot;

/// The answer to an approval request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "answer", rename_all = "lowercase")]
pub enum Approval {
    Allow {
        scope: AnswerScope,
    },
    /// `reason`, when given, is passed to the model with the refusal.
    Deny {
        scope: AnswerScope,
        reason: Option<String>,
    },
}

/// Where an approval's answer goes; dropping it refuses the call.
pub type Reply = oneshot::Sender<Approval>;

/// Told about every event of a turn. Both methods have defaults: see nothing, ask nobody.
pub trait Observer: Sync {
    fn event(&self, _event: Event) {}
    /// Whether it shows calls as they go (`CallBegun`, `Progress`, `CallEnded`). One that
    /// does not is not sent them: each costs a copy of the arguments or a preview of the
    /// result, on every call.
    fn follows_calls(&self) -> bool {
        true
    }
    /// A call waits for a person: show `prompt`, and send the answer on `reply`.
    fn approval(&self, _prompt: ApprovalPrompt, _reply: Reply) {}
}

/// Observes nothing and asks nobody.
pub struct Quiet;

impl Observer for Quiet {
    fn follows_calls(&self) -> bool {
        false
    }
}

/// The subject of a call to a catalogue entry.
pub(crate) fn subject(
    entry: &Entry,
    call_id: &str,
    args: &Value,
    provenance: Vec<String>,
) -> CallSubject {
    CallSubject {
        call_id: call_id.to_string(),
        name: entry.name.clone(),
        server: entry.key.server.clone(),
        tool: entry.key.tool.clone(),
        args: args.clone(),
        provenance,
    }
}

/// What the person reads before saying yes to a call.
pub(crate) fn approval_prompt(subject: CallSubject, entry: &Entry, reason: &str) -> ApprovalPrompt {
    let drift_diff = match &entry.pin {
        Some(PinCheck::Drift(d)) => Some(d.diff.clone()),
        _ => None,
    };
    ApprovalPrompt {
        subject,
        reason: reason.to_string(),
        // What the host removed from, or found in, the tool's text is part of what the
        // person reads before saying yes.
        description: match mcp_host_registry::lint::model_text_note(&entry.flags) {
            Some(note) => format!("{}\n\n{note}", entry.description),
            None => entry.description.clone(),
        },
        annotations: entry.tool.annotations.clone(),
        annotations_believed: entry.trusted() && entry.tool.annotations.is_some(),
        drift_diff,
    }
}

/// A notice event.
pub(crate) fn notice(text: impl Into<String>) -> Event {
    Event::Notice { text: text.into() }
}

/// Milliseconds, saturating (a call does not run for 584 million years).
pub(crate) fn millis(took: std::time::Duration) -> u64 {
    u64::try_from(took.as_millis()).unwrap_or(u64::MAX)
}
