//! A person's direct call (`mcp-host call`, chat's `/call`), through the same gate as the
//! model's: validated against the catalogue entry, decided (the person typing it is the
//! approval, so only a deny rule or a hook stops it), checked against the definition right
//! before sending, sent, looked at by the `PostToolUse` hooks, and recorded once in the
//! audit log with the same fields as a model's call. The result is the person's to read
//! whole: it is not fitted to a model's budget.

use crate::audit::args_hash;
use crate::dispatch::{ended, progress_event};
use crate::events::{Observer, subject};
use crate::gate::{CallFacts, CallFailure, Gate, Gated, note_decision, note_outcome};
use crate::progress::PacedProgress;
use mcp_host_core::CallOutcome;
use mcp_host_core::decision::{Decision, Mode};
use mcp_host_core::event::{CallRecord, CallSource, Event};
use mcp_host_policy::Remembered;
use mcp_host_registry::catalogue::{Catalogue, Entry};
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How a person's call ended.
#[derive(Debug)]
pub enum DirectOutcome {
    /// The arguments do not fit the tool's schema; nothing was sent.
    Invalid(String),
    /// A rule or a hook denied it; nothing was sent.
    Denied(Decision),
    /// Sent, and the server answered; `objections`: what `PostToolUse` hooks said of it.
    Done {
        outcome: CallOutcome,
        objections: Vec<String>,
    },
    /// Allowed, and no answer came (or it was not sent after all).
    Failed(CallFailure),
}

/// What a person's call needs besides the gate.
pub struct DirectCall<'a> {
    pub catalogue: &'a Catalogue,
    pub entry: &'a Entry,
    pub call_id: String,
    pub args: Value,
    pub remembered: &'a Remembered,
    pub observer: &'a dyn Observer,
}

impl Gate {
    /// Runs a person's call to its end.
    pub async fn direct(&self, call: DirectCall<'_>, cancel: CancellationToken) -> DirectOutcome {
        let DirectCall {
            catalogue,
            entry,
            call_id,
            args,
            remembered,
            observer,
        } = call;
        let mut record =
            CallRecord::new(&call_id, CallSource::Person, &entry.name, args_hash(&args));
        record.server = Some(entry.key.server.to_string());
        record.tool = Some(entry.key.tool.clone());
        if let Err(refusal) = catalogue.prepare_call(entry, &args) {
            let why = refusal.to_string();
            record.refused = Some(why.clone());
            record.is_error = true;
            self.record(&record, observer);
            return DirectOutcome::Invalid(why);
        }
        let provenance = BTreeSet::new();
        let facts = CallFacts {
            mode: Mode::Ask,
            provenance: &provenance,
            remembered,
        };
        let gated = self.decide(entry, &args, facts, CallSource::Person).await;
        note_decision(&mut record, gated.decision());
        let permit = match gated {
            Gated::Allowed(permit, _) => permit,
            // A person's `Ask` is allowed by `decide`; only a deny is left.
            Gated::Denied(decision) | Gated::Ask(_, decision) => {
                record.refused = Some(format!("denied: {}", decision.reason));
                record.is_error = true;
                self.record(&record, observer);
                return DirectOutcome::Denied(decision);
            }
        };
        let follows = observer.follows_calls();
        if follows {
            observer.event(Event::CallBegun {
                subject: subject(entry, &call_id, &args, Vec::new()),
                source: CallSource::Person,
            });
        }
        let started = Instant::now();
        let span = crate::otlp::call_span(entry, "person");
        let outcome = if follows {
            // A person's call shows its progress (a task's status among it) like a model's.
            let (progress_tx, mut progress) = PacedProgress::channel();
            // The call gets a clone: its end does not close the feed under the loop below,
            // which would wake this task once more for nothing.
            let call = self
                .send(permit, cancel, Some(progress_tx.clone()))
                .instrument(span.clone());
            tokio::pin!(call);
            let outcome = loop {
                tokio::select! {
                    // Progress told before the answer comes first; one held back by the
                    // pace is not worth the wait (the call's end says more).
                    biased;
                    Some(p) = progress.next() => observer.event(progress_event(&call_id, p)),
                    outcome = &mut call => break outcome,
                }
            };
            drop(progress_tx);
            outcome
        } else {
            self.send(permit, cancel, None)
                .instrument(span.clone())
                .await
        };
        let took = started.elapsed();
        note_outcome(&mut record, &outcome, took);
        crate::otlp::record_call(&span, &record);
        let ended = follows.then(|| ended(&call_id, &entry.name, &outcome, took));
        let result = match outcome {
            Ok(outcome) => {
                let objections = self.after(entry, &args, &outcome).await;
                DirectOutcome::Done {
                    outcome,
                    objections,
                }
            }
            Err(e) => DirectOutcome::Failed(e),
        };
        self.record(&record, observer);
        if let Some(ended) = ended {
            observer.event(ended);
        }
        result
    }
}
