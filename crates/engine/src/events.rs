//! What the engine tells a front end while a turn runs: streamed text, calls begun and
//! ended, notices (budget warnings, compaction, background jobs), and approval requests.
//! An approval request carries its own reply channel, so an answer is matched to its call
//! by construction and never fished out of a shared queue; a front end that cannot ask
//! anybody (headless) simply drops the request, which refuses the call.

use mcp_host_core::{CallOutcome, ServerId};
use mcp_host_policy::{AnswerScope, Decision};
use mcp_host_registry::catalogue::Entry;
use mcp_host_registry::pins::PinCheck;
use serde::Serialize;
use serde_json::Value;
use std::time::Duration;
use tokio::sync::oneshot;

/// The answer to an approval request.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
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

/// A call that policy says needs a person's yes.
#[derive(Debug)]
pub struct ApprovalRequest {
    pub call_id: String,
    /// The model-visible name.
    pub name: String,
    pub server: ServerId,
    /// The server's own tool name.
    pub tool: String,
    pub args: Value,
    /// Why policy asks, in one sentence.
    pub reason: String,
    /// The tool's description as the catalogue shows it (sanitised, capped), followed by
    /// the host's note on hidden characters removed and instruction-like text, if any.
    pub description: String,
    /// The tool's annotations as the server sent them.
    pub annotations: Option<Value>,
    /// Whether policy believes those annotations (only a trusted server's).
    pub annotations_believed: bool,
    /// The unified diff, when the definition changed since it was pinned.
    pub drift_diff: Option<String>,
    /// Servers whose output was in the context when the model made this call.
    pub provenance: Vec<String>,
    reply: oneshot::Sender<Approval>,
}

impl ApprovalRequest {
    pub(crate) fn new(
        entry: &Entry,
        call_id: &str,
        args: &Value,
        reason: &str,
        trusted: bool,
        provenance: Vec<String>,
    ) -> (Self, oneshot::Receiver<Approval>) {
        let (reply, answer) = oneshot::channel();
        let drift_diff = match &entry.pin {
            Some(PinCheck::Drift(d)) => Some(d.diff.clone()),
            _ => None,
        };
        let request = Self {
            call_id: call_id.to_string(),
            name: entry.name.clone(),
            server: entry.key.server.clone(),
            tool: entry.key.tool.clone(),
            args: args.clone(),
            reason: reason.to_string(),
            // What the host removed from, or found in, the tool's text is part of what the
            // person reads before saying yes.
            description: match mcp_host_registry::lint::model_text_note(&entry.flags) {
                Some(note) => format!("{}\n\n{note}", entry.description),
                None => entry.description.clone(),
            },
            annotations: entry.tool.annotations.clone(),
            annotations_believed: trusted && entry.tool.annotations.is_some(),
            drift_diff,
            provenance,
            reply,
        };
        (request, answer)
    }

    /// Answers the request. An answer that arrives after the turn ended is dropped.
    pub fn answer(self, approval: Approval) {
        let _ = self.reply.send(approval);
    }
}

/// Something that happened in a turn.
#[derive(Debug)]
pub enum Event {
    /// A piece of the model's text as it streams.
    TextDelta(String),
    /// A call was allowed and sent to its server.
    CallBegun {
        call_id: String,
        name: String,
        server: ServerId,
        /// The server's own tool name.
        tool: String,
        args: Value,
        /// Servers whose output was in the context when the model made this call.
        provenance: Vec<String>,
    },
    /// A call's result is back (or it failed, or was moved to the background).
    CallEnded {
        call_id: String,
        name: String,
        is_error: bool,
        took: Duration,
        /// Set when the call moved to the background instead of ending.
        background_job: Option<String>,
        /// The start of what came back (sanitised), for a front end's preview.
        preview: String,
    },
    /// A call was not sent: denied, unanswered, or its arguments were refused.
    CallRefused {
        call_id: String,
        name: String,
        /// The server and its own tool name, when the name resolved in the catalogue.
        server: Option<ServerId>,
        tool: Option<String>,
        /// What the model asked to send; the raw text as a string when it was not JSON.
        arguments: Value,
        reason: String,
    },
    /// A running call's server reported progress (the message is sanitised).
    Progress {
        call_id: String,
        progress: f64,
        total: Option<f64>,
        message: Option<String>,
    },
    /// Drop it to refuse; answer it to decide.
    ApprovalRequested(ApprovalRequest),
    /// Something the user should know: a large result, a compaction, a background job done.
    Notice(String),
}

/// Told about every decision, every call and every event, so a front end can show and audit
/// them. Every method has a default that does nothing (and so refuses approvals).
pub trait Observer: Sync {
    fn decided(&self, _entry: &Entry, _args: &Value, _decision: &Decision) {}
    /// A call ended; `truncated`: the model got a preview or a cut, not all of it.
    fn called(
        &self,
        _entry: &Entry,
        _args: &Value,
        _outcome: Result<&CallOutcome, String>,
        _took: Duration,
        _truncated: bool,
    ) {
    }
    fn event(&self, _event: Event) {}
}

/// Observes nothing.
pub struct Quiet;

impl Observer for Quiet {}
