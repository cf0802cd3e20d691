//! Between the engine and the screen: an observer that audits every decision and call and
//! forwards every event to the chat loop, and the translations from engine events, server
//! states and catalogue entries to what the screen shows. Approval requests are kept here,
//! by call id, until the person answers; the screen only ever sees a description of them.

use crate::audit::Audit;
use crate::commands::tools::describe_flag;
use mcp_host_client::Manager;
use mcp_host_core::{CallOutcome, ServerState};
use mcp_host_engine::{Approval, ApprovalRequest, Event, Observer};
use mcp_host_policy::{AnswerScope, Decision};
use mcp_host_registry::catalogue::{Catalogue, Entry};
use mcp_host_registry::pins::PinCheck;
use mcp_host_tui::{
    ApprovalPrompt, ApprovalScope, CallCard, CallState, ServerRow, ToolRow, Update,
};
use serde_json::Value;
use std::collections::HashMap;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedSender;

/// Audits, and passes events to the chat loop.
pub struct ChatObserver<'a> {
    pub audit: &'a Audit,
    pub events: UnboundedSender<Event>,
}

impl Observer for ChatObserver<'_> {
    fn decided(&self, entry: &Entry, args: &Value, decision: &Decision) {
        self.audit.decided(entry, args, decision);
    }

    fn called(
        &self,
        entry: &Entry,
        args: &Value,
        outcome: Result<&CallOutcome, String>,
        took: Duration,
        truncated: bool,
    ) {
        self.audit.called(entry, args, outcome, took, truncated);
    }

    fn event(&self, event: Event) {
        // The loop ended: a dropped approval request is a refusal, which is right.
        let _ = self.events.send(event);
    }
}

/// Approval requests waiting for the person, by call id.
#[derive(Default)]
pub struct Pending {
    requests: HashMap<String, ApprovalRequest>,
}

impl Pending {
    /// Answers the request for `call_id`, if it is still waiting.
    pub fn answer(&mut self, call_id: &str, approval: Approval) {
        if let Some(request) = self.requests.remove(call_id) {
            request.answer(approval);
        }
    }

    /// The turn ended: whatever is still waiting is refused.
    pub fn clear(&mut self) {
        self.requests.clear();
    }
}

pub fn scope(s: ApprovalScope) -> AnswerScope {
    match s {
        ApprovalScope::Once => AnswerScope::Once,
        ApprovalScope::Session => AnswerScope::Session,
        ApprovalScope::Always => AnswerScope::Always,
    }
}

/// What the screen gets for one engine event (approval requests are kept in `pending`).
pub fn updates(event: Event, pending: &mut Pending) -> Vec<Update> {
    match event {
        Event::TextDelta(text) => vec![Update::TextDelta(text)],
        Event::CallBegun {
            call_id,
            name,
            server,
            tool,
            args,
            provenance,
        } => vec![Update::CallStarted(CallCard {
            call_id,
            name,
            server: server.to_string(),
            tool,
            args,
            provenance,
        })],
        Event::CallEnded {
            call_id,
            is_error,
            took,
            background_job,
            preview,
            ..
        } => {
            let state = match background_job {
                Some(job) => CallState::Background(job),
                None if is_error => CallState::Failed,
                None => CallState::Done,
            };
            vec![Update::CallFinished {
                call_id,
                state,
                took_ms: u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
                preview,
            }]
        }
        Event::CallRefused {
            call_id,
            name,
            server,
            tool,
            arguments,
            reason,
        } => vec![
            Update::CallStarted(CallCard {
                call_id: call_id.clone(),
                name: name.clone(),
                server: server.map(|s| s.to_string()).unwrap_or_default(),
                tool: tool.unwrap_or(name),
                args: arguments,
                provenance: Vec::new(),
            }),
            Update::CallFinished {
                call_id,
                state: CallState::Denied,
                took_ms: 0,
                preview: reason,
            },
        ],
        Event::ApprovalRequested(request) => {
            let card = CallCard {
                call_id: request.call_id.clone(),
                name: request.name.clone(),
                server: request.server.to_string(),
                tool: request.tool.clone(),
                args: request.args.clone(),
                provenance: request.provenance.clone(),
            };
            let prompt = ApprovalPrompt {
                call_id: request.call_id.clone(),
                name: request.name.clone(),
                server: request.server.to_string(),
                tool: request.tool.clone(),
                args: request.args.clone(),
                reason: request.reason.clone(),
                description: request.description.clone(),
                annotations: request.annotations.clone(),
                annotations_believed: request.annotations_believed,
                drift_diff: request.drift_diff.clone(),
            };
            pending.requests.insert(request.call_id.clone(), request);
            vec![Update::CallStarted(card), Update::ApprovalRequested(prompt)]
        }
        Event::Notice(text) => vec![Update::Notice(text)],
        Event::Progress {
            call_id,
            progress,
            total,
            message,
        } => vec![Update::Progress {
            call_id,
            progress,
            total,
            message,
        }],
    }
}

/// The servers as the status line and the `/mcp` panel show them.
/// `needs_approval`: each project server waiting for approval, with what approving it lets
/// run and send (the lines the `/mcp` panel shows before asking).
pub fn server_rows(m: &Manager, needs_approval: &[(String, Vec<String>)]) -> Vec<ServerRow> {
    m.ids()
        .filter_map(|id| {
            let status = m.status(id)?;
            let last_error = status.state.error().map(ToString::to_string);
            let waiting = needs_approval.iter().find(|(n, _)| n == id.as_str());
            Some(ServerRow {
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
pub fn tool_rows(catalogue: &Catalogue) -> Vec<ToolRow> {
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
            ToolRow {
                name: e.name.clone(),
                server: e.key.server.to_string(),
                description: e.description.clone(),
                flags,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_call_gets_a_card_with_its_server_tool_and_arguments() {
        let event = Event::CallRefused {
            call_id: "c1".into(),
            name: "f__write".into(),
            server: Some(mcp_host_core::ServerId::new("f")),
            tool: Some("write".into()),
            arguments: serde_json::json!({"path": "/etc/passwd"}),
            reason: "denied: rule".into(),
        };
        let ups = updates(event, &mut Pending::default());
        let Some(Update::CallStarted(card)) = ups.first() else {
            panic!("no card first: {ups:?}");
        };
        assert_eq!((card.server.as_str(), card.tool.as_str()), ("f", "write"));
        assert_eq!(card.args, serde_json::json!({"path": "/etc/passwd"}));
        assert!(matches!(
            ups.get(1),
            Some(Update::CallFinished {
                state: CallState::Denied,
                ..
            })
        ));
    }
}
