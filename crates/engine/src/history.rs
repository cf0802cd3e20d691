//! Persisting a conversation in the SQLite store: its messages (appended after each turn,
//! rewritten whole after a compaction), every tool call with its verdict and result handle,
//! and loading it back for `--continue` and `--resume`.

use crate::events::notice;
use crate::{CallRecord, Conversation, Engine};
use mcp_host_models::{Message, Provider, ToolCall};
use mcp_host_policy::Answers;
use mcp_host_store::{ConversationId, Store, StoreError, ToolCallRow};
use serde_json::Value;
use std::time::{Duration, SystemTime};

#[derive(Debug, thiserror::Error)]
pub enum HistoryError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("stored message {index} of conversation {id} cannot be read: {detail}")]
    Corrupt {
        id: String,
        index: usize,
        detail: String,
    },
}

#[derive(Debug)]
pub(crate) struct Saved {
    pub id: ConversationId,
    pub store: Store,
    /// Messages of `history` already in the store.
    pub persisted: usize,
    /// Calls recorded since the last save, written with the turn's messages.
    pub calls: Vec<ToolCallRow>,
}

impl Conversation {
    /// Starts a conversation that is saved in `store` after every turn.
    pub async fn create(
        store: &Store,
        model: &str,
        workdir: &str,
        context_window: usize,
        answers: Answers,
    ) -> Result<Self, HistoryError> {
        let id = store.create_conversation(model, workdir).await?;
        let mut conv = Self::new(context_window, answers);
        conv.saved = Some(Saved {
            id,
            store: store.clone(),
            persisted: 0,
            calls: Vec::new(),
        });
        Ok(conv)
    }

    /// Loads a stored conversation to go on with it.
    pub async fn resume(
        store: &Store,
        id: &ConversationId,
        context_window: usize,
        answers: Answers,
    ) -> Result<Self, HistoryError> {
        let stored = store.load_messages(id).await?;
        let mut conv = Self::new(context_window, answers);
        for (index, (turn, body)) in stored.into_iter().enumerate() {
            let message: Message =
                serde_json::from_value(body).map_err(|e| HistoryError::Corrupt {
                    id: id.to_string(),
                    index,
                    detail: e.to_string(),
                })?;
            if matches!(&message, Message::ToolResult { content, .. } if content.contains("read_result("))
            {
                conv.stored_results = true;
            }
            conv.history_mut().push(message);
            conv.turns.push(turn);
            conv.turn_no = conv.turn_no.max(turn);
        }
        conv.saved = Some(Saved {
            id: id.clone(),
            store: store.clone(),
            persisted: conv.history.len(),
            calls: Vec::new(),
        });
        Ok(conv)
    }
}

impl<P: Provider> Engine<'_, P> {
    /// Writes what the store does not have yet.
    pub(crate) async fn save(&self, conv: &mut Conversation) -> Result<(), HistoryError> {
        let Some(saved) = &conv.saved else {
            return Ok(());
        };
        // Messages are written as they are; the store serialises each once.
        if conv.rewritten {
            let all = conv.turns.iter().copied().zip(conv.history.iter());
            saved.store.replace_messages(&saved.id, all).await?;
        } else {
            // The store appends one turn at a time.
            let mut from = saved.persisted;
            while from < conv.history.len() {
                let turn = conv.turns[from];
                let n = conv.turns[from..]
                    .iter()
                    .take_while(|t| **t == turn)
                    .count();
                let messages = &conv.history[from..from + n];
                saved
                    .store
                    .append_messages(&saved.id, turn, messages)
                    .await?;
                from += n;
            }
        }
        let len = conv.history.len();
        if let Some(saved) = &mut conv.saved {
            saved.persisted = len;
        }
        conv.rewritten = false;
        self.save_calls(conv).await;
        Ok(())
    }

    /// Writes the calls recorded since the last save in one transaction. A failure is told,
    /// not fatal: the turn matters more than its record (the audit log has every call).
    async fn save_calls(&self, conv: &mut Conversation) {
        let Some(saved) = &mut conv.saved else {
            return;
        };
        let calls = std::mem::take(&mut saved.calls);
        if let Err(e) = saved.store.record_tool_calls(&calls).await {
            let n = calls.len();
            self.observer
                .event(notice(format!("{n} calls could not be recorded: {e}")));
        }
    }

    /// Records one call in the store's audit of calls, written at the next save (the end
    /// of the turn, with its messages; see docs/architecture.md, "Durability"). `turn` is
    /// the turn the model made the call in: a background call's final record, written when
    /// it is delivered in a later turn, replaces the row its own turn left.
    pub(crate) fn record_call(
        &self,
        conv: &mut Conversation,
        turn: u32,
        record: &CallRecord,
        call: &ToolCall,
    ) {
        let Some(saved) = &mut conv.saved else {
            return;
        };
        let took = Duration::from_millis(record.duration_ms.unwrap_or(0));
        let row = ToolCallRow {
            conversation_id: saved.id.clone(),
            turn,
            call_id: call.id.clone(),
            name: call.name.clone(),
            server: record.server.clone().unwrap_or_default(),
            tool: record.tool.clone().unwrap_or_default(),
            arguments: serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| Value::String(call.arguments.clone())),
            // Stored by its serde name, so renaming a variant cannot change rows on disk.
            verdict: record
                .verdict
                .and_then(|v| serde_json::to_value(v).ok())
                .and_then(|v| v.as_str().map(str::to_string))
                .unwrap_or_else(|| "none".to_string()),
            decided_by: record
                .decided_by
                .as_ref()
                .and_then(|d| serde_json::to_value(d).ok()),
            is_error: record.is_error,
            refused: record.refused.clone(),
            result_handle: record.result_handle.clone(),
            started_at: SystemTime::now()
                .checked_sub(took)
                .unwrap_or_else(SystemTime::now),
            took_ms: record.duration_ms,
            background: record.background_job.is_some(),
        };
        saved.calls.push(row);
    }
}
