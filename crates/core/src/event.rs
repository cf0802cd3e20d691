//! What a session tells its front ends, as plain data: streamed text, calls begun, ended and
//! refused, approval prompts, servers' questions, notices, and each turn's report with one
//! record per call. No channel lives in these types: an answer goes back as an operation
//! naming the call (or question) it answers, so a terminal, a script and a web page can all
//! render and answer the same events, and an answer can only reach the call it names.

use crate::decision::{DecidedBy, Verdict};
use crate::json_line::JsonObject;
use crate::types::ServerId;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// Who made a call. The model's calls are decided by policy and may be asked about; a
/// person's direct call (`mcp-host call`, chat's `/call`) is its own approval, and only a
/// deny rule or a hook stops it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallSource {
    Model,
    Person,
}

/// Which call an event is about: its id, the model-visible name, and where it goes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallSubject {
    pub call_id: String,
    /// The model-visible name.
    pub name: String,
    pub server: ServerId,
    /// The server's own tool name.
    pub tool: String,
    pub args: Value,
    /// Servers whose output was in the context when the model made this call (empty for a
    /// person's call, and when only the user had spoken).
    pub provenance: Vec<String>,
}

/// A call that policy says needs a person's yes, as the person should see it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApprovalPrompt {
    pub subject: CallSubject,
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
}

/// A server's question for the person (MCP elicitation), by the id its answer must name.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "mode", rename_all = "lowercase")]
pub enum ElicitationRequest {
    /// Fields from the restricted schema (flat object of primitives).
    Form {
        id: String,
        server: String,
        message: String,
        /// The `requestedSchema` as sent.
        schema: Value,
    },
    Url {
        id: String,
        server: String,
        message: String,
        url: String,
    },
}

/// The person's answer to a server's question.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "answer", content = "content", rename_all = "snake_case")]
pub enum ElicitationAnswer {
    Accept(Value),
    Decline,
    Cancel,
    /// URL mode: the person agreed to open it.
    OpenUrl,
}

/// Tokens a request used, as the provider reported them (zero when it did not).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// Prompt tokens read from the provider's cache.
    pub cache_read_tokens: u64,
    /// Prompt tokens written to the provider's cache.
    pub cache_write_tokens: u64,
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Self) {
        self.input_tokens += o.input_tokens;
        self.output_tokens += o.output_tokens;
        self.cache_read_tokens += o.cache_read_tokens;
        self.cache_write_tokens += o.cache_write_tokens;
    }
}

/// How a call ended, for the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CallStatus {
    /// The server answered and the tool did not report an error.
    Ok,
    /// The server answered with `isError`.
    ToolError,
    /// Sent (or about to be), and no answer came: the server failed, timed out, went away,
    /// or the definition changed before sending.
    Failed,
    /// Never sent: denied, unanswered, or its arguments were refused.
    Refused,
    /// Still running when its step ended; a later record says how it ended.
    Background,
}

/// What happened to one tool call: the one record every path writes, whoever made the call.
/// The audit log's line and the store's tool-call row are both made from it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CallRecord {
    /// The call id (the provider's, made unique; `direct-N` for a person's call).
    pub id: String,
    pub source: CallSource,
    /// The model-visible name, or the name as asked when it did not resolve.
    pub name: String,
    /// The server and its own tool name, once resolved.
    pub server: Option<String>,
    pub tool: Option<String>,
    /// The arguments as a hash only, so secrets in them never reach a log.
    pub args_sha256: String,
    pub verdict: Option<Verdict>,
    pub decided_by: Option<DecidedBy>,
    /// Why it was decided so, in one sentence.
    pub reason: Option<String>,
    pub status: CallStatus,
    pub is_error: bool,
    /// Why it was not run, when it was not.
    pub refused: Option<String>,
    /// Why it failed, when it was sent and no answer came.
    pub error: Option<String>,
    /// The size of the server's answer as JSON.
    pub result_bytes: Option<usize>,
    /// The model was given less than the whole result (a preview or a cut).
    pub truncated: bool,
    /// The handle of the whole result, when it was too large to show.
    pub result_handle: Option<String>,
    pub duration_ms: Option<u64>,
    /// The background job it became, when it ran too long.
    pub background_job: Option<String>,
    /// Each round of input the server asked for before it answered (2026-07-28's
    /// `input_required`), under the one approval the call had.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub input_rounds: Vec<InputRound>,
    /// The server's id of the task it ran the call as (the Tasks extension), when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_id: Option<String>,
}

/// One round of a multi-round-trip call: what the server asked and how it was answered.
/// The answers' contents are not kept (a form may hold personal data); their actions are.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputRound {
    pub requests: Vec<InputAnswer>,
    /// Whether the server sent state to echo on the retry.
    pub request_state: bool,
}

/// One input request of a round.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct InputAnswer {
    /// The server's key for it.
    pub key: String,
    /// `form` or `url`.
    pub kind: String,
    /// `accept`, `decline` or `cancel`.
    pub action: String,
}

impl CallRecord {
    /// A record of a call not yet decided.
    pub fn new(id: &str, source: CallSource, name: &str, args_sha256: String) -> Self {
        Self {
            id: id.to_string(),
            source,
            name: name.to_string(),
            server: None,
            tool: None,
            args_sha256,
            verdict: None,
            decided_by: None,
            reason: None,
            status: CallStatus::Refused,
            is_error: false,
            refused: None,
            error: None,
            result_bytes: None,
            truncated: false,
            result_handle: None,
            duration_ms: None,
            background_job: None,
            input_rounds: Vec::new(),
            task_id: None,
        }
    }

    /// Appends the record as one JSON object, exactly as
    /// [`crate::sanitize::append_json`] writes it through serde (a test holds the two
    /// equal), at a fifth of the cost: the audit log writes one per call.
    pub fn append_json(&self, out: &mut Vec<u8>) -> serde_json::Result<()> {
        // Destructured whole, so a field added to the record cannot be left out here.
        let Self {
            id,
            source,
            name,
            server,
            tool,
            args_sha256,
            verdict,
            decided_by,
            reason,
            status,
            is_error,
            refused,
            error,
            result_bytes,
            truncated,
            result_handle,
            duration_ms,
            background_job,
            input_rounds,
            task_id,
        } = self;
        let mut o = JsonObject::begin(out);
        o.str("id", id)?;
        o.value("source", source)?;
        o.str("name", name)?;
        o.opt_str("server", server.as_deref())?;
        o.opt_str("tool", tool.as_deref())?;
        o.str("args_sha256", args_sha256)?;
        o.value("verdict", verdict)?;
        o.value("decided_by", decided_by)?;
        o.opt_str("reason", reason.as_deref())?;
        o.value("status", status)?;
        o.bool("is_error", *is_error);
        o.opt_str("refused", refused.as_deref())?;
        o.opt_str("error", error.as_deref())?;
        o.opt_u64("result_bytes", result_bytes.map(|n| n as u64));
        o.bool("truncated", *truncated);
        o.opt_str("result_handle", result_handle.as_deref())?;
        o.opt_u64("duration_ms", *duration_ms);
        o.opt_str("background_job", background_job.as_deref())?;
        if !input_rounds.is_empty() {
            o.value("input_rounds", input_rounds)?;
        }
        if let Some(task_id) = task_id {
            o.str("task_id", task_id)?;
        }
        o.end();
        Ok(())
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TurnEnd {
    /// The model answered without asking for more tools.
    Finished,
    /// The step cap was reached.
    StepLimit,
    /// The user interrupted; in-flight calls were cancelled and the history kept.
    Cancelled,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TurnReport {
    pub text: String,
    pub steps: usize,
    pub end: TurnEnd,
    pub calls: Vec<CallRecord>,
    pub usage: Usage,
    /// The stored conversation, when it is persisted.
    pub conversation_id: Option<String>,
}

/// A message of a resumed conversation, for a front end to show again.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum Replayed {
    User { text: String },
    Assistant { text: String },
}

/// One server as a front end lists it (status line, `/mcp` panel, a web page).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ServerView {
    pub name: String,
    /// ready, starting, failed, needs auth, disabled, pending approval, ...
    pub state: String,
    pub era: Option<String>,
    pub transport: String,
    pub tools: usize,
    pub last_error: Option<String>,
    pub stderr_tail: Vec<String>,
    /// What its lists left out, and why it is in an older era: shown, never only logged.
    pub notes: Vec<String>,
    /// A project server waiting for the person's approval.
    pub needs_approval: bool,
    /// For a server waiting for approval: what approving lets it run and send, as written
    /// in its file, one line each.
    pub definition: Vec<String>,
    pub enabled: bool,
    /// A local server's confinement as lines to read (`ConfinementView::lines`): level and
    /// mechanisms, what it may read, write and reach, what it was denied.
    pub sandbox: Vec<String>,
}

/// One tool of the catalogue as a front end lists it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolView {
    pub name: String,
    pub server: String,
    pub description: String,
    /// Lint flags and pin state, as short labels.
    pub flags: Vec<String>,
}

/// Something that happened in a session.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Event {
    /// A piece of the model's text as it streams.
    TextDelta {
        text: String,
    },
    /// A call was decided (by policy, a hook, a remembered answer, or a person).
    Decided {
        call_id: String,
        name: String,
        verdict: Verdict,
        decided_by: DecidedBy,
        reason: String,
    },
    /// A call was allowed and is being sent to its server.
    CallBegun {
        subject: CallSubject,
        source: CallSource,
    },
    /// A call's result is back (or it failed, or was moved to the background).
    CallEnded {
        call_id: String,
        name: String,
        is_error: bool,
        took_ms: u64,
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
        /// What was asked to be sent; the raw text as a string when it was not JSON.
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
    /// A call waits for a person's yes or no, answered by its call id.
    ApprovalRequested(ApprovalPrompt),
    /// A server asks the person something, answered by the request's id.
    ElicitationRequested(ElicitationRequest),
    /// A server stopped waiting for its question (its request ended: a deadline, a closed
    /// connection): the question goes away unanswered.
    ElicitationWithdrawn {
        id: String,
    },
    /// Something the user should know: a large result, a compaction, a background job done.
    Notice {
        text: String,
    },
    /// A turn started with this message (as sent to the model, attachments included).
    TurnStarted {
        text: String,
    },
    /// A turn ended (its report), or failed (why).
    TurnEnded {
        report: Box<TurnReport>,
    },
    TurnFailed {
        error: String,
    },
    /// A new or resumed conversation replaced the current one.
    ConversationStarted {
        id: Option<String>,
        replay: Vec<Replayed>,
    },
    /// The model the next turn uses (`provider:model`), or none.
    ModelChanged {
        spec: Option<String>,
    },
    /// The servers moved (a state, a list, a count).
    Servers {
        servers: Vec<ServerView>,
    },
    /// The catalogue changed.
    Tools {
        tools: Vec<ToolView>,
    },
    /// The session ended; nothing follows.
    Ended,
}

#[cfg(test)]
mod audit_line_tests {
    use super::*;
    use crate::decision::DecidedBy;
    use crate::sanitize::append_json;
    use proptest::prelude::*;

    fn by_serde(record: &CallRecord) -> Vec<u8> {
        let mut out = Vec::new();
        append_json(record, &mut out).unwrap();
        out
    }

    fn by_fields(record: &CallRecord) -> Vec<u8> {
        let mut out = Vec::new();
        record.append_json(&mut out).unwrap();
        out
    }

    /// Text a server or a model could send: quotes, backslashes, control characters, DEL,
    /// bidi overrides, zero-width and other non-ASCII characters, and plain ASCII.
    fn text() -> impl Strategy<Value = String> {
        prop_oneof![
            "[ -~]{0,12}",
            proptest::collection::vec(
                prop_oneof![
                    Just('"'),
                    Just('\\'),
                    Just('\n'),
                    Just('\u{1b}'),
                    Just('\u{7f}'),
                    Just('\u{9b}'),
                    Just('\u{202e}'),
                    Just('\u{200b}'),
                    Just('é'),
                    Just('😀'),
                    proptest::char::range(' ', '~'),
                ],
                0..12
            )
            .prop_map(|chars| chars.into_iter().collect()),
        ]
    }

    fn decided_by() -> impl Strategy<Value = Option<DecidedBy>> {
        prop_oneof![
            Just(None),
            Just(Some(DecidedBy::Drift)),
            Just(Some(DecidedBy::Remembered)),
            text().prop_map(|rule| Some(DecidedBy::AllowRule { rule })),
            text().prop_map(|from| Some(DecidedBy::Taint { from })),
        ]
    }

    fn record() -> impl Strategy<Value = CallRecord> {
        let names = (
            text(),
            text(),
            proptest::option::of(text()),
            proptest::option::of(text()),
        );
        let decision = (
            proptest::option::of(prop_oneof![
                Just(Verdict::Allow),
                Just(Verdict::Ask),
                Just(Verdict::Deny)
            ]),
            decided_by(),
            proptest::option::of(text()),
            prop_oneof![
                Just(CallStatus::Ok),
                Just(CallStatus::Failed),
                Just(CallStatus::Background)
            ],
        );
        let outcome = (
            any::<bool>(),
            proptest::option::of(text()),
            proptest::option::of(text()),
            proptest::option::of(any::<usize>()),
            any::<bool>(),
            proptest::option::of(text()),
            proptest::option::of(any::<u64>()),
            proptest::option::of(text()),
        );
        let rounds = (
            proptest::collection::vec((text(), any::<bool>()), 0..2),
            proptest::option::of(text()),
            any::<bool>(),
        );
        (names, decision, outcome, rounds).prop_map(
            |((id, name, server, tool), (verdict, decided_by, reason, status), o, r)| {
                let source = if r.2 {
                    CallSource::Model
                } else {
                    CallSource::Person
                };
                let mut record = CallRecord::new(&id, source, &name, "ab12".into());
                record.server = server;
                record.tool = tool;
                record.verdict = verdict;
                record.decided_by = decided_by;
                record.reason = reason;
                record.status = status;
                (record.is_error, record.refused, record.error) = (o.0, o.1, o.2);
                (record.result_bytes, record.truncated) = (o.3, o.4);
                (record.result_handle, record.duration_ms) = (o.5, o.6);
                record.background_job = o.7;
                record.input_rounds = (r.0.into_iter())
                    .map(|(key, request_state)| InputRound {
                        requests: vec![InputAnswer {
                            key,
                            kind: "form".into(),
                            action: "accept".into(),
                        }],
                        request_state,
                    })
                    .collect();
                record.task_id = r.1;
                record
            },
        )
    }

    proptest! {
        #[test]
        fn a_record_written_field_by_field_is_the_serde_line(record in record()) {
            prop_assert_eq!(
                String::from_utf8(by_fields(&record)).unwrap(),
                String::from_utf8(by_serde(&record)).unwrap()
            );
        }
    }

    #[test]
    fn hidden_characters_in_a_field_are_escaped_as_in_every_other_output() {
        let mut record = CallRecord::new("c1", CallSource::Model, "a\u{202e}b", String::new());
        record.reason = Some("say \"hi\"\u{1b}[2J\u{7f}".into());
        let line = String::from_utf8(by_fields(&record)).unwrap();
        assert!(line.contains(r#""name":"a\u202eb""#), "{line}");
        assert!(
            line.contains(r#""reason":"say \"hi\"\u001b[2J\u007f""#),
            "{line}"
        );
        assert_eq!(line.as_bytes(), by_serde(&record));
    }
}
