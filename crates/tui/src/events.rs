//! The session's core events on screen. Each [`Event`] the engine sends a front end becomes
//! what the person sees: the answer streaming, a call's card and how it ended, the approval
//! and elicitation dialogs, notices, a turn's end (with its tokens added to the status
//! line), a new or resumed conversation's messages, and the model in use. This is the only
//! translation from the engine's events to the screen, so a runtime just forwards them.

use mcp_host_core::event::{Event, Replayed, TurnEnd};

use crate::state::{CardFacts, ProgressView};
use crate::text::clean_line;
use crate::{App, CallState};

impl App {
    /// Shows what happened in the session.
    pub fn on_event(&mut self, event: &Event) {
        let now = self.now();
        match event {
            Event::TextDelta { text } => self.transcript.delta(text),
            // The card shows the outcome (waiting, running, denied); the decision itself is
            // the audit log's, not the screen's.
            Event::Decided { .. } => {}
            Event::CallBegun { subject, .. } => {
                self.transcript.call_started(CardFacts::of(subject), now);
            }
            Event::CallEnded {
                call_id,
                is_error,
                took_ms,
                background_job,
                preview,
                ..
            } => {
                let state = match background_job {
                    Some(job) => CallState::Background(job.clone()),
                    None if *is_error => CallState::Failed,
                    None => CallState::Done,
                };
                self.call_finished(call_id, &state, *took_ms, preview);
            }
            Event::CallRefused {
                call_id,
                name,
                server,
                tool,
                arguments,
                reason,
            } => {
                // A call that was never sent still gets a card, so the person sees what was
                // asked and why it was not run. An unresolved name is shown as the tool.
                let card = CardFacts {
                    call_id,
                    server: server.as_ref().map_or("", |s| s.as_str()),
                    tool: tool.as_deref().unwrap_or(name),
                    args: arguments,
                    provenance: &[],
                };
                self.transcript.call_started(card, now);
                self.call_finished(call_id, &CallState::Denied, 0, reason);
            }
            Event::Progress {
                call_id,
                progress,
                total,
                message,
            } => self.transcript.progress(
                call_id,
                ProgressView {
                    progress: *progress,
                    total: *total,
                    message: message.clone(),
                },
            ),
            Event::ApprovalRequested(prompt) => {
                // The card first (with the call's provenance), then it waits for the modal.
                self.transcript
                    .call_started(CardFacts::of(&prompt.subject), now);
                self.transcript.waiting(&prompt.subject.call_id);
                self.approvals.push(prompt);
            }
            Event::ElicitationRequested(request) => self.elicitations.push(request),
            Event::ElicitationWithdrawn { id } => {
                if let Some(gone) = self.elicitations.withdraw(id) {
                    self.transcript.notice(&format!(
                        "{} stopped waiting for an answer: {}",
                        gone.server(),
                        mcp_host_core::sanitize::one_line(gone.message(), 120)
                    ));
                }
            }
            Event::Notice { text } => self.transcript.notice(text),
            Event::TurnEnded { report } => {
                self.busy = false;
                // The status line counts the whole session's tokens, turn by turn.
                self.status.input_tokens = self
                    .status
                    .input_tokens
                    .saturating_add(report.usage.input_tokens);
                self.status.output_tokens = self
                    .status
                    .output_tokens
                    .saturating_add(report.usage.output_tokens);
                let note = match report.end {
                    TurnEnd::Finished => None,
                    // The report's text says which cap was reached.
                    TurnEnd::StepLimit => Some(report.text.as_str()),
                    TurnEnd::Cancelled => Some("cancelled"),
                };
                self.transcript.end_turn(note);
            }
            Event::TurnFailed { error } => {
                self.busy = false;
                self.transcript
                    .end_turn(Some(&format!("the turn failed: {error}")));
            }
            Event::ConversationStarted { replay, .. } => {
                self.transcript.clear();
                for message in replay {
                    match message {
                        Replayed::User { text } => self.transcript.user(text),
                        // An assistant message with no text only asked for tools: nothing
                        // to show again.
                        Replayed::Assistant { text } if !text.is_empty() => {
                            self.transcript.delta(text);
                            self.transcript.end_turn(None);
                        }
                        Replayed::Assistant { .. } => {}
                    }
                }
            }
            Event::ModelChanged { spec } => self.status.model = spec.as_deref().map(clean_line),
            Event::TurnStarted { text } => {
                self.apply(crate::Update::UserMessage(text.clone()));
                self.busy = true;
            }
            Event::Servers { servers } => self.apply(crate::Update::Servers(servers.clone())),
            Event::Tools { tools } => self.apply(crate::Update::Tools(tools.clone())),
            Event::Ended => {}
        }
    }
}
