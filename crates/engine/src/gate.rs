//! The one gate between a tool call and its server, whoever made the call (the model in a
//! turn, or a person with `mcp-host call` or chat's `/call`) and whichever front end asks.
//! The gate alone holds the [`Caller`] (in the host, the manager's one `ToolCaller`, the
//! capability that sends `tools/call`), so no other code can reach a server's tools. In order, every call gets: the pure policy
//! decision; the `PreToolUse` hooks (unless a rule denied); for the model's `Ask`, the
//! person's answer (asked by the engine, turned into a permit here); right before sending, a
//! check that the server still offers the definition that was decided on; the call; the
//! `PostToolUse` hooks; and one audit record. Only [`Permit`]s are sent, and only the gate
//! makes them.

use crate::audit::Audit;
use crate::connections::Caller;
use crate::events::Observer;
use crate::hooks::Hooks;
use crate::tool_facts;
use mcp_host_client::{CallError, Expect, ProgressSink};
use mcp_host_core::decision::{DecidedBy, Decision, Mode, Verdict};
use mcp_host_core::event::{CallRecord, CallSource};
use mcp_host_core::{CallOutcome, Content, ServerId, ToolDescriptor};
use mcp_host_policy::{Call, Context, Policy, Remembered, decide};
use mcp_host_registry::catalogue::Entry;
use serde_json::Value;
use std::collections::BTreeSet;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

/// How long a call waits for a tool list the server announced as changed before it is
/// refused (the refresh is one `tools/list`; this is generous).
pub const LIST_REFRESH_WAIT: Duration = Duration::from_secs(10);

/// The rules, the hooks, the audit log, and the capability to call.
pub struct Gate {
    caller: Box<dyn Caller>,
    pub policy: Policy,
    pub hooks: Hooks,
    audit: Option<Audit>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate").finish_non_exhaustive()
    }
}

/// What the decision needs besides the rules and the entry (which carries its server's
/// trust): the mode, what is in the context, and the answers remembered.
pub struct CallFacts<'a> {
    pub mode: Mode,
    pub provenance: &'a BTreeSet<ServerId>,
    pub remembered: &'a Remembered,
}

/// A call the gate allowed: the only thing [`Gate::send`] takes. Made only here.
#[derive(Debug)]
pub struct Permit {
    server: ServerId,
    tool: String,
    name: String,
    args: Value,
    /// The definition the decision was made on.
    decided_on: Arc<ToolDescriptor>,
}

#[cfg(test)]
impl Permit {
    pub(crate) fn for_test(entry: &Entry) -> Self {
        Self {
            server: entry.key.server.clone(),
            tool: entry.key.tool.clone(),
            name: entry.name.clone(),
            args: Value::Null,
            decided_on: entry.tool.clone(),
        }
    }
}

/// A call waiting for a person's answer; [`Gate::approved`] turns a yes into a permit.
#[derive(Debug)]
pub struct Asked(Permit);

/// The decision on a call, with what it lets the caller do next.
#[derive(Debug)]
pub enum Gated {
    Allowed(Permit, Decision),
    Ask(Asked, Decision),
    Denied(Decision),
}

impl Gated {
    pub fn decision(&self) -> &Decision {
        match self {
            Self::Allowed(_, d) | Self::Ask(_, d) | Self::Denied(d) => d,
        }
    }
}

/// Why an allowed call brought back no result.
#[derive(Debug, thiserror::Error)]
pub enum CallFailure {
    /// Not sent: the definition changed, the tool is gone, or the list did not arrive.
    #[error("not sent: {0}")]
    NotSent(String),
    #[error("not sent: the turn was interrupted")]
    Interrupted,
    #[error(transparent)]
    Call(#[from] CallError),
    /// The call's task panicked or was aborted: a failed call, not a host crash.
    #[error("the call's task ended abnormally: {0}")]
    Task(String),
}

impl Gate {
    /// The gate over the manager's calls. `audit`: where each call's record goes (`None`
    /// for tests that read the records from the report instead).
    pub fn new(
        caller: impl Caller + 'static,
        policy: Policy,
        hooks: Hooks,
        audit: Option<Audit>,
    ) -> Self {
        Self {
            caller: Box::new(caller),
            policy,
            hooks,
            audit,
        }
    }

    /// The rules' decision alone, without running any hook (for `policy explain`).
    pub fn rules(&self, entry: &Entry, args: &Value, facts: CallFacts<'_>) -> Decision {
        decide(
            Call {
                server: &entry.key.server,
                tool: &entry.key.tool,
                name: &entry.name,
                args,
            },
            Context {
                mode: facts.mode,
                policy: &self.policy,
                server_trusted: entry.trusted(),
                server_sealed: entry.sealed(),
                tool: tool_facts(entry),
                provenance: facts.provenance,
                remembered: facts.remembered,
            },
        )
    }

    /// The rules' decision, then the hooks' answer (unless a rule denied: a hook may allow
    /// what a rule asks about, never what a rule forbids). A person's own call is its own
    /// approval: for them an `Ask` is a yes, and only a deny stops it.
    pub async fn decide(
        &self,
        entry: &Entry,
        args: &Value,
        facts: CallFacts<'_>,
        source: CallSource,
    ) -> Gated {
        // Every decision is a span of the trace, whoever's call it is.
        let span = crate::trace_span!(
            "gate.decide",
            tool = %entry.name,
            server = %entry.key.server,
            source = ?source,
            verdict = tracing::field::Empty,
            decided_by = tracing::field::Empty,
        );
        let mut decision = self.rules(entry, args, facts);
        if decision.verdict != Verdict::Deny
            && let Some(hooked) = (self.hooks.pre_tool_use(&entry.name, args))
                .instrument(span.clone())
                .await
        {
            decision = hooked;
        }
        span.record("verdict", tracing::field::debug(decision.verdict));
        span.record("decided_by", tracing::field::debug(&decision.decided_by));
        let permit = Permit {
            server: entry.key.server.clone(),
            tool: entry.key.tool.clone(),
            name: entry.name.clone(),
            args: args.clone(),
            decided_on: entry.tool.clone(),
        };
        match (decision.verdict, source) {
            (Verdict::Deny, _) => Gated::Denied(decision),
            (Verdict::Allow, _) | (Verdict::Ask, CallSource::Person) => {
                Gated::Allowed(permit, decision)
            }
            (Verdict::Ask, CallSource::Model) => Gated::Ask(Asked(permit), decision),
        }
    }

    /// A person said yes to an asked call.
    pub fn approved(&self, asked: Asked) -> Permit {
        asked.0
    }

    /// Sends an allowed call. The future borrows nothing, so it can outlive its step (a
    /// call moved to the background keeps running on its own task). Right before sending,
    /// the server's current definition of the tool must be the one decided on: a change the
    /// server announced is waited for, and a definition that differs, a tool that is gone,
    /// or a list that did not arrive refuses the call. The caller's next look at the
    /// catalogue sees the new definition as drift, which is asked about again.
    pub fn send(
        &self,
        permit: Permit,
        cancel: CancellationToken,
        progress: Option<ProgressSink>,
    ) -> impl Future<Output = Result<CallOutcome, CallFailure>> + Send + use<> {
        let Permit {
            server,
            tool,
            name,
            args,
            decided_on,
        } = permit;
        let expect = Expect {
            definition: decided_on,
            wait: LIST_REFRESH_WAIT,
        };
        let call = self.caller.send(
            &server,
            &tool,
            match args {
                Value::Object(map) => Some(map),
                _ => None,
            },
            Some(expect),
            cancel,
            progress,
        );
        async move {
            call.await.map_err(|e| match e {
                CallError::Interrupted { .. } => CallFailure::Interrupted,
                CallError::DefinitionChanged { .. } => CallFailure::NotSent(format!(
                    "the definition of `{name}` changed after it was decided on; it must be checked (and approved) again"
                )),
                e @ (CallError::NoLongerOffered { .. }
                | CallError::ListStale { .. }
                | CallError::NotReady { .. }
                | CallError::UnknownServer(_)) => {
                    CallFailure::NotSent(e.to_string())
                }
                e => CallFailure::Call(e),
            })
        }
    }

    /// Runs the `PostToolUse` hooks on a result; the reasons of those that objected.
    pub async fn after(&self, entry: &Entry, args: &Value, outcome: &CallOutcome) -> Vec<String> {
        self.hooks.post_tool_use(&entry.name, args, outcome).await
    }

    /// Writes a finished call's one audit record.
    pub fn record(&self, record: &CallRecord, observer: &dyn Observer) {
        if let Some(audit) = &self.audit {
            audit.write(record, observer);
        }
    }
}

/// Fills a record with a decision.
pub fn note_decision(record: &mut CallRecord, decision: &Decision) {
    record.verdict = Some(decision.verdict);
    record.decided_by = Some(decision.decided_by.clone());
    record.reason = Some(decision.reason.clone());
}

/// Fills a record with how a sent call ended.
pub fn note_outcome(
    record: &mut CallRecord,
    outcome: &Result<CallOutcome, CallFailure>,
    took: Duration,
) {
    use mcp_host_core::event::CallStatus;
    record.duration_ms = Some(crate::events::millis(took));
    match outcome {
        Ok(o) => {
            record.status = if o.is_error {
                CallStatus::ToolError
            } else {
                CallStatus::Ok
            };
            record.is_error = o.is_error;
            record.input_rounds = o.input_rounds.clone();
            record.task_id = o.task_id.clone();
            record.result_bytes = Some(outcome_json_len(o));
        }
        Err(e) => {
            record.status = CallStatus::Failed;
            record.is_error = true;
            record.error = Some(e.to_string());
            // What was asked before it failed is part of what happened.
            if let CallFailure::Call(CallError::Request { partial, .. }) = e {
                record.input_rounds = partial.input_rounds.clone();
                record.task_id = partial.task_id.clone();
            }
        }
    }
}

/// How many bytes `outcome` is as JSON. Text blocks are counted from their bytes: writing a
/// result of megabytes through the serialiser only to count it cost nine instructions a
/// byte. The rest is counted as written; a test holds the sum equal to the whole.
fn outcome_json_len(outcome: &CallOutcome) -> usize {
    const TEXT_BLOCK: usize = r#"{"type":"text","text":}"#.len();
    let blocks: usize = (outcome.content.iter())
        .map(|block| match block {
            Content::Text { text } => TEXT_BLOCK + json_string_len(text),
            other => json_len(other),
        })
        .sum();
    let commas = outcome.content.len().saturating_sub(1);
    let structured =
        (outcome.structured.as_ref()).map_or(0, |v| r#","structuredContent":"#.len() + json_len(v));
    let is_error = if outcome.is_error { "true" } else { "false" };
    r#"{"content":[],"isError":}"#.len() + blocks + commas + structured + is_error.len()
}

/// How many bytes `text` is as a JSON string written by serde_json: quoted, with `"` and
/// `\` escaped, the five short control escapes, and `\u00XX` for the other controls.
fn json_string_len(text: &str) -> usize {
    // What escaping adds to one byte, without a branch, so the compiler can sum a block's
    // bytes side by side: a block of 32 adds at most 160, which a byte holds.
    let extra = |b: u8| {
        let control = u8::from(b < 0x20) * 5;
        let short = u8::from(matches!(b, 0x08 | 0x09 | 0x0a | 0x0c | 0x0d)) * 4;
        let quote = u8::from(b == b'"' || b == b'\\');
        control - short + quote
    };
    let (blocks, rest) = text.as_bytes().as_chunks::<32>();
    let in_blocks: usize = (blocks.iter())
        .map(|block| usize::from(block.iter().fold(0u8, |sum, &b| sum.wrapping_add(extra(b)))))
        .sum();
    let in_rest: usize = rest.iter().map(|&b| usize::from(extra(b))).sum();
    2 + text.len() + in_blocks + in_rest
}

/// How many bytes `value` is as JSON, counted as it is written rather than kept.
fn json_len(value: &impl serde::Serialize) -> usize {
    struct Count(usize);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing to a counter cannot fail, and a value that cannot be written has no size.
    match serde_json::to_writer(&mut count, value) {
        Ok(()) => count.0,
        Err(_) => 0,
    }
}

/// Whether a decision came from a hook (for front ends that name who refused).
pub fn by_hook(decision: &Decision) -> bool {
    matches!(decision.decided_by, DecidedBy::Hook { .. })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A result's recorded size is its JSON's, as it was when the JSON was kept to measure.
    #[test]
    fn a_results_size_is_the_length_of_its_json() {
        let outcome = CallOutcome {
            content: vec![mcp_host_core::Content::Text {
                text: "ü \"quoted\" \u{1b}[31m".into(),
            }],
            structured: Some(serde_json::json!({"n": [1, 2.5, null], "s": "✓"})),
            is_error: true,
            input_rounds: Vec::new(),
            task_id: Some("t-1".into()),
        };
        assert_eq!(
            json_len(&outcome),
            serde_json::to_vec(&outcome).unwrap().len()
        );
        assert_eq!(
            outcome_json_len(&outcome),
            serde_json::to_vec(&outcome).unwrap().len()
        );
    }

    /// Counting a text block from its bytes gives what serde_json writes, for every ASCII
    /// byte (each escape kind) wherever it falls against the counter's blocks, for text
    /// beyond ASCII, and for results with no block, other blocks and structured content.
    #[test]
    fn a_text_blocks_size_is_counted_as_serde_json_writes_it() {
        let outcome =
            |content: Vec<Content>, structured: Option<Value>, is_error: bool| CallOutcome {
                content,
                structured,
                is_error,
                input_rounds: Vec::new(),
                task_id: None,
            };
        let text = |t: String| Content::Text { text: t };
        let mut cases = vec![
            outcome(Vec::new(), None, false),
            outcome(vec![text(String::new())], None, true),
            outcome(
                vec![
                    text("ü ✓ \u{2028} \u{7f}".into()),
                    Content::Image {
                        mime_type: Some("image/png".into()),
                        data: "AAAA".into(),
                    },
                    text("a\"b\\c".into()),
                ],
                Some(serde_json::json!({"k": "\n"})),
                false,
            ),
        ];
        for len in [1, 31, 32, 33, 65] {
            for at in 0..len {
                for b in 0u8..0x80 {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let t = String::from_utf8(bytes).unwrap();
                    cases.push(outcome(vec![text(t)], None, false));
                }
            }
        }
        for case in &cases {
            assert_eq!(
                outcome_json_len(case),
                serde_json::to_vec(case).unwrap().len(),
                "{case:?}"
            );
        }
    }
}
