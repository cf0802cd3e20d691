//! Calls that outlived their step. Each keeps running on its own task; at the next turn
//! boundary the finished ones are delivered to the model (tagged, fitted to their budget
//! like any result) ahead of the user's message, and the running ones wait for a later
//! boundary. A conversation given up with calls still out ([`Conversation::abandon`]) cancels
//! them, tells their servers, and writes each one's audit record, so every call has one
//! however its conversation ended; merely dropping it still cancels them.

use crate::dispatch::{CallTask, ended, joined_outcome};
use crate::events::notice;
use crate::gate::note_outcome;
use crate::{Conversation, Engine};
use mcp_host_core::event::CallRecord;
use mcp_host_models::{Provider, ToolCall};
use mcp_host_registry::catalogue::Entry;
use serde_json::Value;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) struct BackgroundJob {
    pub id: String,
    pub call_id: String,
    /// The turn the model made the call in, whose row of the call its final record replaces.
    pub turn: u32,
    /// The arguments as the model sent them, which the call's row keeps (`args` is what was
    /// sent to the server, after any hook's rewrite).
    pub arguments: String,
    pub entry: Entry,
    pub args: Value,
    /// The call's record as its step left it; finished when the result is delivered.
    pub record: CallRecord,
    pub task: CallTask,
    pub token: CancellationToken,
    pub started: Instant,
}

impl std::fmt::Debug for BackgroundJob {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BackgroundJob")
            .field("id", &self.id)
            .field("call_id", &self.call_id)
            .field("name", &self.entry.name)
            .field("finished", &self.task.is_finished())
            .finish()
    }
}

impl<P: Provider> Engine<'_, P> {
    /// Takes the finished background calls and returns their results as text to put before
    /// the user's message (empty when none finished).
    pub(crate) async fn deliver_background(&self, conv: &mut Conversation) -> String {
        let (done, running): (Vec<_>, Vec<_>) = std::mem::take(&mut conv.background)
            .into_iter()
            .partition(|j| j.task.is_finished());
        conv.background = running;
        let mut parts = Vec::new();
        for job in done {
            let outcome = joined_outcome(job.task.await);
            let took = job.started.elapsed();
            self.observer.event(notice(format!(
                "background job {} ({}) finished after {} s",
                job.id,
                job.entry.name,
                took.as_secs()
            )));
            let call = ToolCall {
                id: job.call_id.clone(),
                name: job.entry.name.clone(),
                arguments: job.arguments,
            };
            let mut record = job.record;
            note_outcome(&mut record, &outcome, took);
            // The job's card (shown as running in the background) ends now.
            let card = ended(&job.call_id, &job.entry.name, &outcome, took);
            let taken = self
                .take_result(conv, &job.entry, &job.call_id, &job.args, outcome)
                .await;
            record.is_error = taken.is_error;
            record.result_handle = taken.handle;
            record.truncated = taken.truncated;
            let text = taken.text;
            self.observer.event(card);
            self.finish_record(conv, job.turn, &record, &call);
            parts.push(format!(
                "<background-result job=\"{}\" tool=\"{}\" call_id=\"{}\" is_error=\"{}\">\n{text}\n</background-result>",
                job.id, job.entry.name, job.call_id, record.is_error
            ));
        }
        if parts.is_empty() {
            return String::new();
        }
        format!(
            "[Calls that finished in the background since the last message:]\n{}\n\n",
            parts.join("\n")
        )
    }
}

/// How long an abandoned background call gets to end after it was cancelled.
const ABANDON_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Conversation {
    /// Gives the conversation up: calls still in the background are cancelled (their servers
    /// are told), each is awaited briefly, and its one audit record is written with how it
    /// ended. Front ends call this instead of dropping a conversation with calls out.
    pub async fn abandon(mut self, gate: &crate::Gate, observer: &dyn crate::Observer) {
        for job in std::mem::take(&mut self.background) {
            job.token.cancel();
            let outcome = match tokio::time::timeout(ABANDON_GRACE, job.task).await {
                Ok(joined) => joined_outcome(joined),
                Err(_) => Err(crate::gate::CallFailure::Interrupted),
            };
            let mut record = job.record;
            note_outcome(&mut record, &outcome, job.started.elapsed());
            gate.record(&record, observer);
        }
    }
}
