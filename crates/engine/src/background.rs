//! Calls that outlived their step. Each keeps running on its own task; at the next turn
//! boundary the finished ones are delivered to the model (tagged, fitted to their budget
//! like any result) ahead of the user's message, and the running ones wait for a later
//! boundary. Dropping the conversation cancels them, and their servers are told.

use crate::dispatch::{CallTask, flatten};
use crate::{CallRecord, Conversation, Engine, Event};
use mcp_host_models::{Provider, ToolCall};
use mcp_host_registry::catalogue::Entry;
use serde_json::Value;
use std::time::Instant;
use tokio_util::sync::CancellationToken;

pub(crate) struct BackgroundJob {
    pub id: String,
    pub call_id: String,
    pub entry: Entry,
    pub args: Value,
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
            let outcome = flatten(job.task.await);
            let took = job.started.elapsed();
            self.observer.event(Event::Notice(format!(
                "background job {} ({}) finished after {} s",
                job.id,
                job.entry.name,
                took.as_secs()
            )));
            let call = ToolCall {
                id: job.call_id.clone(),
                name: job.entry.name.clone(),
                arguments: job.args.to_string(),
            };
            let mut record = CallRecord::new(&call);
            record.server = Some(job.entry.key.server.to_string());
            record.tool = Some(job.entry.key.tool.clone());
            record.background_job = Some(job.id.clone());
            record.duration_ms = Some(took.as_millis() as u64);
            let preview = match &outcome {
                Ok(o) => crate::render::preview_text(o),
                Err(e) => e.clone(),
            };
            let taken = self
                .take_result(conv, &job.entry, &job.call_id, &job.args, outcome, took)
                .await;
            record.is_error = taken.is_error;
            record.result_handle = taken.handle;
            let text = taken.text;
            // The job's card (shown as running in the background) ends now.
            self.observer.event(Event::CallEnded {
                call_id: job.call_id.clone(),
                name: job.entry.name.clone(),
                is_error: record.is_error,
                took,
                background_job: None,
                preview,
            });
            self.record_call(conv, &record, &call).await;
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
