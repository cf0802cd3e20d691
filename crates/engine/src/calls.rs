//! Deciding one tool call, before anything is sent: parse its arguments, answer the host's
//! own tools (search, load, read_result) locally, resolve and validate it in the catalogue,
//! decide through the gate (policy and hooks), and for an `Ask` put the question to the
//! front end and wait for the answer matched to this call. Whatever is refused comes back as
//! text the model reads.

use crate::events::{Approval, ApprovalRequest, Event};
use crate::gate::{CallFacts, trusted};
use crate::results::READ_RESULT;
use crate::{CallRecord, Conversation, Engine};
use mcp_host_core::ServerId;
use mcp_host_models::{Provider, ToolCall};
use mcp_host_policy::{AnswerScope, DecidedBy, Decision, MemoryKey, Verdict};
use mcp_host_registry::catalogue::{Catalogue, Entry};
use mcp_host_registry::exposure::{LOAD_TOOLS, SEARCH_TOOLS};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// A call after the decision stage.
pub(crate) enum Prepared<'c> {
    /// Answered without a server: a host tool's answer, or a refusal.
    Answered { content: String, record: CallRecord },
    /// Allowed: to be sent to its server.
    Allowed {
        entry: &'c Entry,
        args: Value,
        record: CallRecord,
    },
}

impl<P: Provider> Engine<'_, P> {
    pub(crate) async fn prepare<'c>(
        &self,
        catalogue: &'c Catalogue,
        conv: &mut Conversation,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Prepared<'c> {
        let mut record = CallRecord::new(call);
        let answered = |content: String, mut record: CallRecord, is_error: bool| {
            record.is_error = is_error;
            Prepared::Answered { content, record }
        };
        let refuse = |why: String, mut record: CallRecord| {
            // The card of a refused call shows whose tool it was and what it would have
            // sent, like any other card; text that is not JSON is shown as that text.
            let arguments = match call.arguments.trim() {
                "" => Value::Object(Default::default()),
                text => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
            };
            self.observer.event(Event::CallRefused {
                call_id: call.id.clone(),
                name: call.name.clone(),
                server: record.server.as_deref().map(ServerId::new),
                tool: record.tool.clone(),
                arguments,
                reason: why.clone(),
            });
            record.refused = Some(why.clone());
            answered(why, record, true)
        };
        // Named even when refused (arguments that are not JSON, or invalid), so the record
        // and the refused call's card say whose tool it was.
        if let Some(known) = catalogue.get(&call.name) {
            record.server = Some(known.key.server.to_string());
            record.tool = Some(known.key.tool.clone());
        }
        let args: Value = match call.arguments.trim() {
            "" => Value::Object(Default::default()),
            text => match serde_json::from_str(text) {
                Ok(v) => v,
                Err(e) => {
                    let why = format!("the arguments are not valid JSON ({e}); nothing was sent");
                    return refuse(why, record);
                }
            },
        };
        if call.name == SEARCH_TOOLS {
            let found = conv.exposure.search_tools(catalogue, &args);
            return answered(found.to_string(), record, false);
        }
        if call.name == LOAD_TOOLS {
            let loaded = conv.exposure.load_tools(catalogue, &args);
            return answered(loaded.to_string(), record, false);
        }
        if call.name == READ_RESULT
            && let Some(store) = self.results()
        {
            let handle = args
                .get("handle")
                .and_then(Value::as_str)
                .unwrap_or_default();
            let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
            let length = args.get("length").and_then(Value::as_u64).unwrap_or(20_000) as usize;
            return match store.read(handle, offset, length).await {
                Ok(page) => answered(page.to_string(), record, false),
                Err(e) => answered(e, record, true),
            };
        }
        let entry = match catalogue.prepare_named_call(&call.name, &args) {
            Ok(e) => e,
            Err(refusal) => return refuse(refusal.to_string(), record),
        };
        let mut decision = self.decide(conv, entry, &args).await;
        self.observer.decided(entry, &args, &decision);
        if decision.verdict == Verdict::Ask {
            decision = self.ask(conv, entry, call, &args, &decision, cancel).await;
            self.observer.decided(entry, &args, &decision);
        }
        record.verdict = Some(decision.verdict);
        record.decided_by = Some(decision.decided_by.clone());
        match decision.verdict {
            Verdict::Allow => Prepared::Allowed {
                entry,
                args,
                record,
            },
            Verdict::Deny => refuse(format!("denied: {}", decision.reason), record),
            Verdict::Ask => refuse(decision.reason, record),
        }
    }

    /// Puts the question to the front end and waits for its answer to this call. No answer
    /// (nobody to ask, or the turn was interrupted) leaves the verdict at `Ask`, which is
    /// refused.
    async fn ask(
        &self,
        conv: &mut Conversation,
        entry: &Entry,
        call: &ToolCall,
        args: &Value,
        asked: &Decision,
        cancel: &CancellationToken,
    ) -> Decision {
        let (request, answer) = ApprovalRequest::new(
            entry,
            &call.id,
            args,
            &asked.reason,
            trusted(self.manager, &entry.key.server),
            conv.provenance_names(),
        );
        self.observer.event(Event::ApprovalRequested(request));
        let approval = tokio::select! {
            a = answer => a.ok(),
            () = cancel.cancelled() => None,
        };
        let mut declined_because = None;
        let (verdict, scope) = match approval {
            Some(Approval::Allow { scope }) => (Verdict::Allow, scope),
            Some(Approval::Deny { scope, reason }) => {
                declined_because = reason.filter(|r| !r.trim().is_empty());
                (Verdict::Deny, scope)
            }
            None => {
                return Decision {
                    verdict: Verdict::Ask,
                    decided_by: asked.decided_by.clone(),
                    reason: format!(
                        "needs approval, and nobody could approve it: {}",
                        asked.reason
                    ),
                };
            }
        };
        if scope != AnswerScope::Once {
            let key = MemoryKey {
                server: entry.key.server.to_string(),
                tool: entry.key.tool.clone(),
                definition_hash: entry.hash.clone(),
            };
            if let Some((key, verdict)) = conv.answers.record(key, verdict, scope)
                && let Some(store) = &self.config.store
                && let Err(e) = store.remember(&key, verdict).await
            {
                self.observer.event(Event::Notice(format!(
                    "the answer holds for this session but could not be saved: {e}"
                )));
            }
        }
        let said = if verdict == Verdict::Allow {
            "allowed"
        } else {
            "declined"
        };
        let because = declined_because
            .map(|r| format!("; their reason: {}", r.trim()))
            .unwrap_or_default();
        Decision {
            verdict,
            decided_by: DecidedBy::User { scope },
            reason: format!("the user {said} it ({}){because}", scope_label(scope)),
        }
    }

    async fn decide(&self, conv: &Conversation, entry: &Entry, args: &Value) -> Decision {
        let remembered = conv.answers.current();
        let facts = CallFacts {
            mode: self.config.mode,
            trusted: trusted(self.manager, &entry.key.server),
            provenance: conv.turn.provenance(),
            remembered: &remembered,
        };
        self.gate.decide(entry, args, facts).await
    }
}

fn scope_label(scope: AnswerScope) -> &'static str {
    match scope {
        AnswerScope::Once => "this once",
        AnswerScope::Session => "for this session",
        AnswerScope::Always => "always",
    }
}
