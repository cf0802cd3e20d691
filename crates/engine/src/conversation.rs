//! One conversation's state: its history (each message with the turn it belongs to), the
//! tool exposure, the answers in force, the provenance of what is in context, background
//! jobs, and where it is persisted. Dropping it cancels its background calls.

use crate::availability::Availability;
use crate::background::BackgroundJob;
use crate::history;
use mcp_host_models::{Message, Reuse};
use mcp_host_policy::{Answers, Turn};
use mcp_host_registry::exposure::Exposure;
use mcp_host_store::ConversationId;
use std::collections::HashSet;

/// Per-conversation state.
#[derive(Debug)]
pub struct Conversation {
    /// Shared with the model request of the step in flight, so a step does not copy the
    /// whole history; changed through [`Conversation::history_mut`] (which copies only while
    /// a request still holds it).
    pub(crate) history: std::sync::Arc<Vec<Message>>,
    /// The turn each message of `history` belongs to (kept in step with it).
    pub(crate) turns: Vec<u32>,
    pub exposure: Exposure,
    pub answers: Answers,
    pub(crate) turn: Turn,
    /// Turns started so far.
    pub(crate) turn_no: u32,
    /// Once a result was stored, `read_result` is offered for the rest of the conversation.
    pub(crate) stored_results: bool,
    /// Calls that outlived their step, delivered at the next turn boundary.
    pub(crate) background: Vec<BackgroundJob>,
    /// Background jobs started so far (their ids count up).
    pub(crate) jobs_started: usize,
    /// Where the conversation is persisted, and how much of it already is.
    pub(crate) saved: Option<history::Saved>,
    /// Compaction rewrote old messages: the next save replaces the stored history.
    pub(crate) rewritten: bool,
    /// Which unusable servers the model was told about.
    pub(crate) unavailable: Availability,
    /// What the provider may reuse of the previous request: this conversation's key and how
    /// many leading messages are as they were then (only `push` keeps them; any other
    /// change to the history starts over).
    pub(crate) reuse: Reuse,
    /// Every tool call id in `history` (kept by `push`, rebuilt after any other change), so
    /// a step checks its new ids without a pass over the history.
    call_ids: Option<HashSet<String>>,
    /// The tools the last step offered, offered again while nothing they depend on moved.
    pub(crate) offered: Option<crate::turn::Offered>,
}

impl Conversation {
    /// A conversation kept in memory only.
    pub fn new(context_window: usize, answers: Answers) -> Self {
        Self {
            history: std::sync::Arc::default(),
            turns: Vec::new(),
            exposure: Exposure::for_context_window(context_window),
            answers,
            turn: Turn::default(),
            turn_no: 0,
            stored_results: false,
            background: Vec::new(),
            jobs_started: 0,
            saved: None,
            rewritten: false,
            unavailable: Availability::default(),
            reuse: Reuse {
                sender: rand::random(),
                unchanged: 0,
            },
            call_ids: Some(HashSet::new()),
            offered: None,
        }
    }

    /// The messages so far. Read-only outside the engine: a change that bypassed `push` and
    /// `history_mut` would leave the provider reusing JSON the conversation no longer vouches for.
    pub fn history(&self) -> &[Message] {
        &self.history
    }

    /// The stored conversation's id, when it is persisted.
    pub fn id(&self) -> Option<&ConversationId> {
        self.saved.as_ref().map(|s| &s.id)
    }

    /// Background calls still running.
    pub fn background_running(&self) -> usize {
        self.background
            .iter()
            .filter(|j| !j.task.is_finished())
            .count()
    }

    /// Background calls done and waiting for the next turn boundary.
    pub fn background_finished(&self) -> usize {
        self.background.len() - self.background_running()
    }

    /// The servers whose output is in this turn's context, by name (for front ends).
    pub(crate) fn provenance_names(&self) -> Vec<String> {
        self.turn
            .provenance()
            .iter()
            .map(ToString::to_string)
            .collect()
    }

    pub(crate) fn push(&mut self, message: Message) {
        if let (Some(ids), Message::Assistant { tool_calls, .. }) = (&mut self.call_ids, &message) {
            ids.extend(tool_calls.iter().map(|c| c.id.clone()));
        }
        std::sync::Arc::make_mut(&mut self.history).push(message);
        self.turns.push(self.turn_no);
    }

    /// The history, to change in place: what a provider kept of it is no longer vouched for.
    pub(crate) fn history_mut(&mut self) -> &mut Vec<Message> {
        self.reuse.unchanged = 0;
        self.call_ids = None;
        std::sync::Arc::make_mut(&mut self.history)
    }

    /// Whether a tool call id is taken by an earlier call of the conversation.
    pub(crate) fn call_id_taken(&mut self, id: &str) -> bool {
        let history = &self.history;
        let ids = self.call_ids.get_or_insert_with(|| {
            (history.iter())
                .flat_map(|m| match m {
                    Message::Assistant { tool_calls, .. } => tool_calls.as_slice(),
                    _ => &[],
                })
                .map(|c| c.id.clone())
                .collect()
        });
        ids.contains(id)
    }

    /// The reuse a request made now may claim; from then on all of today's messages count
    /// as sent.
    pub(crate) fn next_reuse(&mut self) -> Reuse {
        let now = self.reuse;
        self.reuse.unchanged = self.history.len();
        now
    }
}

impl Drop for Conversation {
    /// Calls still in the background belong to this conversation: their servers are told.
    fn drop(&mut self) {
        for job in &self.background {
            job.token.cancel();
        }
    }
}
