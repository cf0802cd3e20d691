//! Keeping a conversation inside the model's context window. Runs only at a turn boundary
//! (before the user's new message), and only when the history's estimated size passes
//! [`COMPACT_AT`] of the window. In order, stopping as soon as it fits:
//! 1. clear old tool results (oldest first), storing each whole so `read_result` still has it;
//! 2. truncate long old messages;
//! 3. summarise everything before the last turn with the model, or, if that fails, drop it.
//!
//! A summary keeps the last turn whole, and every cut is stated to the model where it was
//! made.

use crate::budget::estimate_tokens;
use crate::render::cap;
use crate::{Conversation, Engine};
use mcp_host_models::{Message, ModelRequest, Provider};

/// The share of the window the history may fill before it is compacted.
pub const COMPACT_AT: f64 = 0.8;
/// An old tool result shorter than this is kept: clearing it would save little.
const CLEAR_MIN_BYTES: usize = 500;
/// Old user and assistant text is cut to this many characters in step 2.
const TRUNCATE_CHARS: usize = 2_000;

pub fn message_tokens(m: &Message) -> u64 {
    match m {
        Message::System { text } | Message::User { text } => estimate_tokens(text),
        Message::Assistant { text, tool_calls } => {
            estimate_tokens(text)
                + tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments))
                    .sum::<u64>()
        }
        Message::ToolResult { content, .. } => estimate_tokens(content),
    }
}

pub fn history_tokens(history: &[Message]) -> u64 {
    history.iter().map(message_tokens).sum()
}

impl<P: Provider> Engine<'_, P> {
    /// Compacts when needed; returns whether anything changed.
    pub(crate) async fn compact(&self, conv: &mut Conversation) -> bool {
        let limit = (self.config.context_window as f64 * COMPACT_AT) as u64;
        self.compact_to(conv, limit).await
    }

    /// Compacts now, because a person asked (`/compact`): down to half the point where a
    /// turn would compact by itself, so the next turns have room. Saved like a turn.
    pub async fn compact_now(&self, conv: &mut Conversation) -> Result<bool, crate::HistoryError> {
        let limit = (self.config.context_window as f64 * COMPACT_AT / 2.0) as u64;
        let changed = self.compact_to(conv, limit).await;
        if !changed {
            self.observer.event(crate::events::notice(format!(
                "nothing to compact: the conversation is about {} tokens",
                history_tokens(&conv.history)
            )));
        }
        self.save(conv).await?;
        Ok(changed)
    }

    async fn compact_to(&self, conv: &mut Conversation, limit: u64) -> bool {
        let before = history_tokens(&conv.history);
        if before <= limit {
            return false;
        }
        // Clearing and truncating may touch every earlier turn; a summary keeps the last one.
        let old_end = conv.history.len();
        let last_turn = conv
            .history
            .iter()
            .rposition(|m| matches!(m, Message::User { .. }))
            .unwrap_or(old_end);
        let mut total = before;
        let mut cleared = 0;
        for i in 0..old_end {
            if total <= limit {
                break;
            }
            let Message::ToolResult { content, .. } = &conv.history[i] else {
                continue;
            };
            if content.len() < CLEAR_MIN_BYTES {
                continue;
            }
            let stored = match self.results() {
                Some(store) => store.put(content).await.ok(),
                None => None,
            };
            let note = match &stored {
                Some(handle) => format!(
                    "[result cleared to save context: {} bytes, stored as handle {handle}; read_result can read it]",
                    content.len()
                ),
                None => format!("[result cleared to save context: {} bytes]", content.len()),
            };
            conv.stored_results |= stored.is_some();
            total -= message_tokens(&conv.history[i]);
            if let Message::ToolResult { content, .. } = &mut conv.history_mut()[i] {
                *content = note;
            }
            total += message_tokens(&conv.history[i]);
            cleared += 1;
        }
        let mut truncated = 0;
        for m in &mut conv.history_mut()[..old_end] {
            if total <= limit {
                break;
            }
            let before = message_tokens(m);
            if truncate(m) {
                total = total - before + message_tokens(m);
                truncated += 1;
            }
        }
        let mut how = Vec::new();
        if cleared > 0 {
            how.push(format!("cleared {cleared} old tool results"));
        }
        if truncated > 0 {
            how.push(format!("truncated {truncated} old messages"));
        }
        if total > limit {
            how.push(self.summarise(conv, last_turn).await);
        }
        self.observer.event(crate::events::notice(format!(
            "context compacted from about {before} to {} tokens: {}",
            history_tokens(&conv.history),
            how.join(", ")
        )));
        conv.rewritten = true;
        true
    }

    /// Replaces everything between the system prompt and the last turn with a summary the
    /// model writes, or with a note that it was dropped. Returns what was done.
    async fn summarise(&self, conv: &mut Conversation, last_turn: usize) -> String {
        let first = usize::from(matches!(conv.history.first(), Some(Message::System { .. })));
        if last_turn <= first {
            return "nothing old enough to summarise".into();
        }
        let old = &conv.history[first..last_turn];
        // Half the window for the transcript, the rest for instructions and the answer.
        let transcript = cap(&transcript(old), self.config.context_window * 2);
        let request = ModelRequest::new(
            self.config.model.clone(),
            vec![
                Message::System {
                    text: "You summarise conversations between a user and an assistant that uses tools. Keep facts, decisions, open questions, file names, identifiers and results the conversation may need later. Write plain text, no preamble.".into(),
                },
                Message::User {
                    text: format!("Summarise this conversation so far:\n\n{transcript}"),
                },
            ],
            Vec::new(),
        );
        let (note, done) = match self.provider.complete(&request).await {
            Ok(r) if !r.text.trim().is_empty() => (
                format!(
                    "[The earlier conversation ({} messages) was summarised by the host to fit the context window:]\n{}\n[End of summary.]\n\n",
                    old.len(),
                    r.text.trim()
                ),
                format!("summarised {} old messages", old.len()),
            ),
            _ => (
                format!(
                    "[The earlier conversation ({} messages) was dropped by the host to fit the context window.]\n\n",
                    old.len()
                ),
                format!(
                    "dropped {} old messages (no summary could be made)",
                    old.len()
                ),
            ),
        };
        conv.history_mut().drain(first..last_turn);
        conv.turns.drain(first..last_turn);
        if let Some(Message::User { text }) = conv.history_mut().get_mut(first) {
            text.insert_str(0, &note);
        }
        done
    }
}

/// Cuts a long old message: its text, and tool-call arguments (replaced by a JSON object
/// that says what was cut, so every provider can still parse them). Returns whether it cut.
fn truncate(m: &mut Message) -> bool {
    let mut cut = false;
    match m {
        Message::User { text } | Message::Assistant { text, .. }
            if text.chars().count() > TRUNCATE_CHARS =>
        {
            *text = cap(text, TRUNCATE_CHARS);
            cut = true;
        }
        _ => {}
    }
    if let Message::Assistant { tool_calls, .. } = m {
        for c in tool_calls
            .iter_mut()
            .filter(|c| c.arguments.len() > TRUNCATE_CHARS)
        {
            c.arguments = serde_json::json!({
                "_cut": format!("{} bytes of arguments were cut to save context", c.arguments.len())
            })
            .to_string();
            cut = true;
        }
    }
    cut
}

/// The old part of the history as text for the summariser.
fn transcript(messages: &[Message]) -> String {
    let mut out = String::new();
    for m in messages {
        let line = match m {
            Message::System { text } => format!("System: {text}"),
            Message::User { text } => format!("User: {text}"),
            Message::Assistant { text, tool_calls } => {
                let calls: Vec<String> = tool_calls
                    .iter()
                    .map(|c| format!("{}({})", c.name, cap(&c.arguments, 500)))
                    .collect();
                format!("Assistant: {text} {}", calls.join(" "))
            }
            Message::ToolResult {
                name,
                content,
                is_error,
                ..
            } => format!(
                "Tool {name}{}: {}",
                if *is_error { " (error)" } else { "" },
                cap(content, 1_000)
            ),
        };
        out.push_str(&line);
        out.push('\n');
    }
    out
}
