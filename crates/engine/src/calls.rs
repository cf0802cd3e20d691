//! Deciding one of the model's tool calls, before anything is sent: parse its arguments,
//! answer the host's own tools (search, load, read_result) locally, resolve and validate it
//! in the catalogue, decide through the gate (policy and hooks), and for an `Ask` put the
//! question to the front end and wait for the answer matched to this call. Whatever is
//! refused comes back as text the model reads.

use crate::audit::args_hash;
use crate::dispatch::Job;
use crate::events::{Approval, approval_prompt, subject};
use crate::gate::{CallFacts, Gated, note_decision};
use crate::step::Prepared;
use crate::{Conversation, Engine};
use mcp_host_core::ServerId;
use mcp_host_core::decision::{AnswerScope, DecidedBy, Decision, MemoryKey, Verdict};
use mcp_host_core::event::{CallRecord, CallSource, Event};
use mcp_host_models::{Provider, ToolCall};
use mcp_host_registry::catalogue::{Catalogue, Entry};
use mcp_host_registry::exposure::HostTool;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// The arguments a model sent, as the card of a refused call shows them: text that is not
/// JSON is shown as that text.
fn shown_arguments(raw: &str) -> Value {
    match raw.trim() {
        "" => Value::Object(Default::default()),
        text => serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.into())),
    }
}

impl<P: Provider> Engine<'_, P> {
    /// Refuses a call: its card says why, and so does the text the model reads.
    fn refuse<'c>(&self, call: &ToolCall, why: String, mut record: CallRecord) -> Prepared<'c> {
        self.observer.event(Event::CallRefused {
            call_id: call.id.clone(),
            name: call.name.clone(),
            server: record.server.as_deref().map(ServerId::new),
            tool: record.tool.clone(),
            arguments: shown_arguments(&call.arguments),
            reason: why.clone(),
        });
        record.refused = Some(why.clone());
        record.is_error = true;
        Prepared::Answered {
            content: why,
            record,
        }
    }

    pub(crate) async fn prepare<'c>(
        &self,
        catalogue: &'c Catalogue,
        conv: &mut Conversation,
        index: usize,
        call: &ToolCall,
        cancel: &CancellationToken,
    ) -> Prepared<'c> {
        // Parsed once: the record's hash is of what the card of a refused call shows.
        let parsed = match call.arguments.trim() {
            "" => Ok(Value::Object(Default::default())),
            text => serde_json::from_str::<Value>(text).map_err(|e| (e, text)),
        };
        let hash = match &parsed {
            Ok(args) => args_hash(args),
            Err((_, text)) => args_hash(&Value::String((*text).into())),
        };
        let mut record = CallRecord::new(&call.id, CallSource::Model, &call.name, hash);
        let answered = |content: String, mut record: CallRecord, is_error: bool| {
            record.is_error = is_error;
            record.status = if is_error {
                mcp_host_core::event::CallStatus::ToolError
            } else {
                mcp_host_core::event::CallStatus::Ok
            };
            Prepared::Answered { content, record }
        };
        // Named even when refused (arguments that are not JSON, or invalid), so the record
        // and the refused call's card say whose tool it was.
        if let Some(known) = catalogue.get(&call.name) {
            record.server = Some(known.key.server.to_string());
            record.tool = Some(known.key.tool.clone());
        }
        let args = match parsed {
            Ok(args) => args,
            Err((e, _)) => {
                let why = format!("the arguments are not valid JSON ({e}); nothing was sent");
                return self.refuse(call, why, record);
            }
        };
        if let Some(tool) = HostTool::from_name(&call.name)
            && let Some((content, is_error)) = self.host_tool(tool, catalogue, conv, &args).await
        {
            return answered(content, record, is_error);
        }
        let entry = match catalogue.prepare_named_call(&call.name, &args) {
            Ok(e) => e,
            Err(refusal) => return self.refuse(call, refusal.to_string(), record),
        };
        let gated = self.decide(conv, entry, &args).await;
        self.decided(call, gated.decision());
        let (permit, decision) = match gated {
            Gated::Allowed(permit, decision) => (permit, decision),
            Gated::Denied(decision) => {
                note_decision(&mut record, &decision);
                return self.refuse(call, format!("denied: {}", decision.reason), record);
            }
            Gated::Ask(asked, asked_decision) => {
                let decision = self
                    .ask(conv, entry, call, &args, &asked_decision, cancel)
                    .await;
                self.decided(call, &decision);
                note_decision(&mut record, &decision);
                match decision.verdict {
                    Verdict::Allow => (self.gate.approved(asked), decision),
                    Verdict::Deny => {
                        return self.refuse(call, format!("denied: {}", decision.reason), record);
                    }
                    Verdict::Ask => return self.refuse(call, decision.reason, record),
                }
            }
        };
        note_decision(&mut record, &decision);
        Prepared::Allowed(Box::new(Job {
            index,
            call_id: call.id.clone(),
            entry,
            args,
            permit,
            provenance: conv.provenance_names(),
            record,
        }))
    }

    /// Answers a call to one of the host's own tools: what the model reads, and whether it
    /// is an error. `None` for `read_result` without a store, which no tool list offered:
    /// the call is then refused as an unknown tool, like any other name.
    async fn host_tool(
        &self,
        tool: HostTool,
        catalogue: &Catalogue,
        conv: &mut Conversation,
        args: &Value,
    ) -> Option<(String, bool)> {
        match tool {
            HostTool::SearchTools => {
                let found = conv.exposure.search_tools(catalogue, args);
                Some((found.to_string(), false))
            }
            HostTool::LoadTools => {
                let loaded = conv.exposure.load_tools(catalogue, args);
                Some((loaded.to_string(), false))
            }
            HostTool::ReadResult => {
                let store = self.results()?;
                let handle = args
                    .get("handle")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let offset = args.get("offset").and_then(Value::as_u64).unwrap_or(0) as usize;
                let length = args
                    .get("length")
                    .and_then(Value::as_u64)
                    .map_or(crate::results::DEFAULT_READ, |l| l as usize);
                Some(match store.read(handle, offset, length).await {
                    Ok(page) => (page.to_string(), false),
                    Err(e) => (e.to_string(), true),
                })
            }
        }
    }

    fn decided(&self, call: &ToolCall, decision: &Decision) {
        self.observer.event(Event::Decided {
            call_id: call.id.clone(),
            name: call.name.clone(),
            verdict: decision.verdict,
            decided_by: decision.decided_by.clone(),
            reason: decision.reason.clone(),
        });
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
        let prompt = approval_prompt(
            subject(entry, &call.id, args, conv.provenance_names()),
            entry,
            &asked.reason,
        );
        let (reply, answer) = tokio::sync::oneshot::channel();
        self.observer.approval(prompt, reply);
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
                self.observer.event(crate::events::notice(format!(
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

    async fn decide(&self, conv: &Conversation, entry: &Entry, args: &Value) -> Gated {
        let remembered = conv.answers.current();
        let facts = CallFacts {
            mode: self.config.mode,
            provenance: conv.turn.provenance(),
            remembered: &remembered,
        };
        self.gate
            .decide(entry, args, facts, CallSource::Model)
            .await
    }
}

fn scope_label(scope: AnswerScope) -> &'static str {
    match scope {
        AnswerScope::Once => "this once",
        AnswerScope::Session => "for this session",
        AnswerScope::Always => "always",
    }
}
