//! One model step's tool calls: each is decided in call order (so approvals are asked in
//! order), the allowed ones are dispatched, and every call yields exactly one result, put
//! into the history in call order. A result enters the context through one place,
//! [`Engine::take_result`], whether it ended in its step or in the background, and every
//! call's one record is written through [`Engine::finish_record`].

use crate::background::BackgroundJob;
use crate::dispatch::{Dispatched, Job, Ran};
use crate::events::{millis, notice};
use crate::gate::{CallFailure, note_outcome};
use crate::{Budget, Conversation, Engine, Fit, Taken, cap, preview, render};
use mcp_host_core::CallOutcome;
use mcp_host_core::event::{CallRecord, CallSource, CallStatus, Event};
use mcp_host_models::{Message, Provider, ToolCall};
use mcp_host_policy::Origin;
use mcp_host_registry::catalogue::{Catalogue, Entry};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// What deciding a call gives.
#[expect(
    clippy::large_enum_variant,
    reason = "one per call of a step, moved once into its slot"
)]
pub(crate) enum Prepared<'c> {
    /// Answered without a server: a host tool's answer, or a refusal.
    Answered { content: String, record: CallRecord },
    /// Allowed: to be dispatched.
    Allowed(Box<Job<'c>>),
}

/// One call of a step, as it moves through the step. Each call has exactly one slot, so
/// each yields exactly one result.
enum CallSlot<'c> {
    Answered {
        content: String,
        /// Boxed: a record is far larger than `Dispatching`.
        record: Box<CallRecord>,
    },
    /// Handed to dispatch; filled with what it became.
    Dispatching,
    /// Boxed, like the record above: a finished call carries its whole outcome.
    Ran(Box<Ran<'c>>),
}

impl<P: Provider> Engine<'_, P> {
    /// Decides every call of a step (in order, so approvals are asked in order), dispatches
    /// the allowed ones, and puts every result into the history in call order.
    pub(crate) async fn run_step(
        &self,
        catalogue: &Catalogue,
        conv: &mut Conversation,
        calls: &[ToolCall],
        cancel: &CancellationToken,
        records: &mut Vec<CallRecord>,
    ) {
        let mut slots = Vec::with_capacity(calls.len());
        let mut jobs = Vec::new();
        for (index, call) in calls.iter().enumerate() {
            slots.push(
                match self.prepare(catalogue, conv, index, call, cancel).await {
                    Prepared::Answered { content, record } => CallSlot::Answered {
                        content,
                        record: Box::new(record),
                    },
                    Prepared::Allowed(job) => {
                        jobs.push(*job);
                        CallSlot::Dispatching
                    }
                },
            );
        }
        for ran in self.dispatch(jobs, cancel).await {
            let index = ran.index;
            slots[index] = CallSlot::Ran(Box::new(ran));
        }
        for (slot, call) in slots.into_iter().zip(calls) {
            let (content, record) = match slot {
                CallSlot::Answered { content, record } => (content, *record),
                CallSlot::Ran(ran) => self.finish_call(conv, call, *ran).await,
                // Dispatch joins every lane and drops no job, so each comes back; were one
                // missing, the model would still get a result for its call.
                CallSlot::Dispatching => {
                    let mut record =
                        CallRecord::new(&call.id, CallSource::Model, &call.name, String::new());
                    record.status = CallStatus::Failed;
                    record.is_error = true;
                    ("the call was not run".to_string(), record)
                }
            };
            conv.push(Message::ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error: record.is_error,
            });
            self.finish_record(conv, conv.turn_no, &record, call);
            records.push(record);
        }
    }

    /// A call's one record: the audit line, and the store's row when the conversation is
    /// persisted, both from the same record. `turn` is the turn the model made the call in.
    pub(crate) fn finish_record(
        &self,
        conv: &mut Conversation,
        turn: u32,
        record: &CallRecord,
        call: &ToolCall,
    ) {
        // A call that moved to the background is audited once, when its result arrives.
        if record.status != CallStatus::Background {
            self.gate.record(record, self.observer);
        }
        self.record_call(conv, turn, record, call);
    }

    /// Turns a dispatched call into what the model reads.
    async fn finish_call(
        &self,
        conv: &mut Conversation,
        call: &ToolCall,
        ran: Ran<'_>,
    ) -> (String, CallRecord) {
        let Ran {
            entry,
            args,
            record,
            dispatched,
            span,
            ..
        } = ran;
        let (text, record) = self
            .finish_dispatched(conv, call, entry, args, record, dispatched)
            .await;
        crate::otlp::record_call(&span, &record);
        (text, record)
    }

    /// A dispatched call's text for the model and its completed record.
    async fn finish_dispatched(
        &self,
        conv: &mut Conversation,
        call: &ToolCall,
        entry: &Entry,
        args: Value,
        mut record: CallRecord,
        dispatched: Dispatched,
    ) -> (String, CallRecord) {
        match dispatched {
            Dispatched::Done { outcome, took } => {
                note_outcome(&mut record, &outcome, took);
                let taken = self
                    .take_result(conv, entry, &call.id, &args, outcome)
                    .await;
                record.is_error = taken.is_error;
                record.result_handle = taken.handle;
                record.truncated = taken.truncated;
                (taken.text, record)
            }
            Dispatched::Background {
                task,
                token,
                started,
            } => {
                conv.jobs_started += 1;
                let job_id = format!("bg-{}", conv.jobs_started);
                if self.observer.follows_calls() {
                    self.observer.event(Event::CallEnded {
                        call_id: call.id.clone(),
                        name: call.name.clone(),
                        is_error: false,
                        took_ms: millis(started.elapsed()),
                        background_job: Some(job_id.clone()),
                        preview: format!("still running: moved to the background as {job_id}"),
                    });
                }
                record.status = CallStatus::Background;
                record.background_job = Some(job_id.clone());
                conv.background.push(BackgroundJob {
                    id: job_id.clone(),
                    call_id: call.id.clone(),
                    turn: conv.turn_no,
                    arguments: call.arguments.clone(),
                    entry: entry.clone(),
                    args,
                    record: record.clone(),
                    task,
                    token,
                    started,
                });
                let text = format!(
                    "This call is still running after {} seconds, so it moved to the background as job {job_id}. Its result will be delivered at the start of the user's next message; do not call it again meanwhile.",
                    started.elapsed().as_secs()
                );
                (text, record)
            }
        }
    }

    /// A call's outcome enters the context, whether it ended in its step or in the
    /// background: the `PostToolUse` hooks look at it, it is tagged with its origin, its media
    /// are stored as references, it is fitted to its budget, and the observer (the audit) is
    /// told what happened, including whether the model got less than all of it.
    pub(crate) async fn take_result(
        &self,
        conv: &mut Conversation,
        entry: &Entry,
        call_id: &str,
        args: &Value,
        outcome: Result<CallOutcome, CallFailure>,
    ) -> Taken {
        let outcome = match outcome {
            Ok(outcome) => outcome,
            Err(e) => {
                return Taken {
                    text: format!("the call failed: {e}"),
                    is_error: true,
                    handle: None,
                    truncated: false,
                };
            }
        };
        let objections = self.gate.after(entry, args, &outcome).await;
        let origin = Origin {
            server: entry.key.server.clone(),
            tool: entry.key.tool.clone(),
            call_id: call_id.to_string(),
        };
        let tagged = conv.turn.record(origin, outcome);
        let mut media_handles = Vec::new();
        for data in render::media(&tagged.value) {
            media_handles.push(match self.results() {
                Some(store) => store.put(data).await.ok(),
                None => None,
            });
        }
        let text = render(&tagged.value, &media_handles);
        let (mut text, handle, truncated) = self.fit(conv, entry, text).await;
        for objection in objections {
            self.observer.event(notice(format!(
                "a PostToolUse hook objected to {}: {objection}",
                entry.name
            )));
            text.push_str(&format!(
                "\n[the user's PostToolUse hook objected to this result: {objection}]"
            ));
        }
        Taken {
            text,
            is_error: tagged.value.is_error,
            handle,
            truncated,
        }
    }

    /// Fits a result to its budget: inline, inline with a size note, or stored and
    /// previewed (cut, when there is no store). Every cut is stated.
    async fn fit(
        &self,
        conv: &mut Conversation,
        entry: &Entry,
        text: String,
    ) -> (String, Option<String>, bool) {
        let budget = match entry.result_tokens() {
            Some(tokens) => Budget::configured(tokens),
            None => Budget::standard(self.config.result_chars),
        };
        match budget.fit(&text) {
            Fit::Inline => (text, None, false),
            Fit::InlineLarge { tokens } => {
                self.observer.event(notice(format!(
                    "{} returned a large result: about {tokens} tokens",
                    entry.name
                )));
                (
                    format!("{text}\n[note: this result is about {tokens} tokens]"),
                    None,
                    false,
                )
            }
            Fit::Spill { tokens } => {
                let stored = match self.results() {
                    Some(store) => store.put(&text).await.ok(),
                    None => None,
                };
                self.observer.event(notice(format!(
                    "{} returned about {tokens} tokens, over its cap of {}: {}",
                    entry.name,
                    budget.cap_tokens,
                    if stored.is_some() {
                        "stored, the model sees a preview"
                    } else {
                        "cut"
                    }
                )));
                match stored {
                    Some(handle) => {
                        conv.stored_results = true;
                        (preview(&text, &handle), Some(handle), true)
                    }
                    None => (cap(&text, budget.cap_chars), None, true),
                }
            }
        }
    }
}
