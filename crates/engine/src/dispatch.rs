//! Sending a step's allowed calls to their servers. Calls to different servers run in
//! parallel; within one server, calls run one at a time in the model's order, except tools
//! a trusted server marks read-only, which run in parallel unless the server is configured
//! `parallel: false`. Every call runs on its own task with its own cancellation token (a
//! child of the turn's), so an interrupt tells each server and the step waits for every task
//! to end: nothing is left behind. A call still running after the background threshold
//! keeps running on its task, and the step goes on without it.

use crate::Engine;
use crate::events::{millis, subject};
use crate::gate::{CallFailure, Permit};
use crate::progress::PacedProgress;
use mcp_host_core::event::{CallRecord, CallSource, Event};
use mcp_host_core::{CallOutcome, ServerId};
use mcp_host_models::Provider;
use mcp_host_policy::hints;
use mcp_host_registry::catalogue::Entry;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// An allowed call, by its position in the step.
pub(crate) struct Job<'c> {
    pub index: usize,
    pub call_id: String,
    pub entry: &'c Entry,
    pub args: Value,
    /// What the gate allowed; spent when the call is sent.
    pub permit: Permit,
    /// Servers whose output was in the context when the call was made (for the front end).
    pub provenance: Vec<String>,
    pub record: CallRecord,
}

/// A dispatched job: what it was, and how it came back.
pub(crate) struct Ran<'c> {
    pub index: usize,
    pub entry: &'c Entry,
    pub args: Value,
    pub record: CallRecord,
    pub dispatched: Dispatched,
    /// The call's trace span, given its outcome once the record is complete.
    pub span: tracing::Span,
}

pub(crate) type CallTask = JoinHandle<Result<CallOutcome, CallFailure>>;

/// How a dispatched call came back.
pub(crate) enum Dispatched {
    Done {
        outcome: Result<CallOutcome, CallFailure>,
        took: Duration,
    },
    /// Still running past the threshold: its task and token go to the conversation.
    Background {
        task: CallTask,
        token: CancellationToken,
        started: Instant,
    },
}

/// Splits jobs into lanes: each lane runs its jobs in order, lanes run concurrently.
pub(crate) fn lanes<'c>(
    jobs: Vec<Job<'c>>,
    may_overlap: impl Fn(&Entry) -> bool,
) -> Vec<Vec<Job<'c>>> {
    let mut serial: BTreeMap<ServerId, Vec<Job<'c>>> = BTreeMap::new();
    let mut lanes = Vec::new();
    for job in jobs {
        if may_overlap(job.entry) {
            lanes.push(vec![job]);
        } else {
            serial
                .entry(job.entry.key.server.clone())
                .or_default()
                .push(job);
        }
    }
    lanes.extend(serial.into_values());
    lanes
}

/// Whether a call may overlap others on its server: the server allows it, and the tool is
/// read-only by a hint the policy believes (only a trusted server's are).
pub(crate) fn may_overlap(entry: &Entry) -> bool {
    entry.parallel() && hints(entry.trusted(), entry.tool.annotations.as_ref()).read_only
}

impl<P: Provider> Engine<'_, P> {
    /// Runs the jobs and returns each one, with how it came back.
    pub(crate) async fn dispatch<'c>(
        &self,
        jobs: Vec<Job<'c>>,
        cancel: &CancellationToken,
    ) -> Vec<Ran<'c>> {
        let lanes = lanes(jobs, may_overlap);
        let runs = lanes.into_iter().map(|lane| async move {
            let mut out = Vec::with_capacity(lane.len());
            for job in lane {
                out.push(self.execute(job, cancel).await);
            }
            out
        });
        futures::future::join_all(runs)
            .await
            .into_iter()
            .flatten()
            .collect()
    }

    async fn execute<'c>(&self, job: Job<'c>, cancel: &CancellationToken) -> Ran<'c> {
        let token = cancel.child_token();
        let started = Instant::now();
        let follows = self.observer.follows_calls();
        if follows {
            self.observer.event(Event::CallBegun {
                subject: subject(job.entry, &job.call_id, &job.args, job.provenance),
                source: CallSource::Model,
            });
        }
        let (progress_tx, mut progress) = PacedProgress::channel();
        let span = crate::otlp::call_span(job.entry, "model");
        let sink = follows.then_some(progress_tx);
        let call = self.gate.send(job.permit, token.clone(), sink);
        let mut task = tokio::spawn(call.instrument(span.clone()));
        let threshold = async {
            match self.config.background_after {
                Some(after) => tokio::time::sleep(after).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(threshold);
        let dispatched = loop {
            tokio::select! {
                joined = &mut task => {
                    let outcome = joined_outcome(joined);
                    let took = started.elapsed();
                    if follows {
                        self.observer.event(ended(&job.call_id, &job.entry.name, &outcome, took));
                    }
                    break Dispatched::Done { outcome, took };
                }
                Some(p) = progress.next() => self.observer.event(progress_event(&job.call_id, p)),
                // An interrupt cancels the token; the task then ends at once and is joined
                // above, so the threshold never moves a cancelled call to the background.
                () = &mut threshold, if !cancel.is_cancelled() => {
                    break Dispatched::Background { task, token, started };
                }
            }
        };
        Ran {
            index: job.index,
            entry: job.entry,
            args: job.args,
            record: job.record,
            dispatched,
            span,
        }
    }
}

/// The event of a call that came back.
pub(crate) fn ended(
    call_id: &str,
    name: &str,
    outcome: &Result<CallOutcome, CallFailure>,
    took: Duration,
) -> Event {
    Event::CallEnded {
        call_id: call_id.to_string(),
        name: name.to_string(),
        is_error: outcome.as_ref().map_or(true, |o| o.is_error),
        took_ms: millis(took),
        background_job: None,
        preview: match outcome {
            Ok(o) => crate::render::preview_text(o),
            Err(e) => e.to_string(),
        },
    }
}

/// What a call's server said of its progress, for the front end.
pub(crate) fn progress_event(call_id: &str, p: mcp_host_client::Progress) -> Event {
    Event::Progress {
        call_id: call_id.to_string(),
        progress: p.progress,
        total: p.total,
        message: p.message,
    }
}

/// A task's result: a panic or abort in the task is a failed call, not a host crash.
pub(crate) fn joined_outcome(
    joined: Result<Result<CallOutcome, CallFailure>, tokio::task::JoinError>,
) -> Result<CallOutcome, CallFailure> {
    joined.unwrap_or_else(|e| Err(CallFailure::Task(e.to_string())))
}
#[cfg(test)]
mod tests {
    use super::*;
    use mcp_host_core::ToolDescriptor;
    use mcp_host_registry::catalogue::{Catalogue, ServerTools};

    fn catalogue() -> Catalogue {
        let tools = |names: &[&str]| -> Vec<ToolDescriptor> {
            names
                .iter()
                .map(|n| ToolDescriptor {
                    name: n.to_string(),
                    title: None,
                    description: None,
                    input_schema: serde_json::json!({"type": "object"}),
                    output_schema: None,
                    annotations: None,
                })
                .collect()
        };
        Catalogue::build(vec![
            ServerTools::new(ServerId::new("a"), tools(&["w1", "r1", "w2", "r2"])),
            ServerTools::new(ServerId::new("b"), tools(&["w3"])),
        ])
    }

    #[test]
    fn one_server_is_serial_except_overlapping_calls_and_servers_are_separate_lanes() {
        let c = catalogue();
        let jobs: Vec<Job> = ["a__w1", "a__r1", "b__w3", "a__w2", "a__r2"]
            .iter()
            .enumerate()
            .map(|(index, name)| Job {
                index,
                call_id: format!("c{index}"),
                entry: c.get(name).unwrap(),
                args: Value::Null,
                permit: Permit::for_test(c.get(name).unwrap()),
                provenance: Vec::new(),
                record: CallRecord::new("c", CallSource::Model, name, String::new()),
            })
            .collect();
        let lanes = lanes(jobs, |e| e.key.tool.starts_with('r'));
        let shape: Vec<Vec<usize>> = lanes
            .iter()
            .map(|l| l.iter().map(|j| j.index).collect())
            .collect();
        assert_eq!(shape, [vec![1], vec![4], vec![0, 3], vec![2]]);
    }
}
