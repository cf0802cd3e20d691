//! The interactive host's screen, as data and pure functions: [`App`] holds what is shown
//! (transcript, tool call cards, input, status line, overlays). It renders the session's
//! core events directly ([`App::on_event`] takes an [`mcp_host_core::event::Event`] as the
//! engine sent it, with no front-end copy of its types), takes [`Update`]s for what is the
//! runtime's own (the person's message, server and tool tables, status facts), turns keys
//! into [`Command`]s that answer by call or request id, and renders into any ratatui backend
//! (a terminal, or `TestBackend` in snapshot tests). It depends on `mcp-host-core` only and
//! knows nothing of the engine, the servers or the terminal, so every view is testable.
//!
//! Every piece of text that came from a server or a model is sanitised when it enters the
//! state (terminal escapes and control characters removed), so no render path can emit one.

mod approval;
mod args;
mod elicit;
mod events;
mod guard;
mod input;
mod keys;
mod markdown;
mod state;
mod text;
mod theme;
mod views;

use std::time::Instant;

use crossterm::event::KeyEvent;
use mcp_host_core::decision::AnswerScope;
use mcp_host_core::event::ElicitationAnswer;
use ratatui::Frame;

use crate::approval::Approvals;
use crate::elicit::Elicitations;
use crate::input::InputBox;
use crate::state::{Overlay, Transcript};
use crate::theme::Theme;

/// What the runtime tells the screen that is not a session event (those go to
/// [`App::on_event`]): the person's own message, the runtime's notices, the server and tool
/// tables, the status facts, and a cleared transcript.
#[derive(Clone, Debug, PartialEq)]
pub enum Update {
    /// The person's message, as sent (shown in the transcript).
    UserMessage(String),
    /// A card takes an end state the runtime decided itself. The session's events never
    /// end a card as [`CallState::Cancelled`]; this is the only way to show it.
    CallFinished {
        call_id: String,
        state: CallState,
        took_ms: u64,
        /// The start of the result (or error) text.
        preview: String,
    },
    /// Something to tell the person from the runtime itself (a command's answer, an error).
    Notice(String),
    /// The servers' current rows (for the status line and the `/mcp` panel).
    Servers(Vec<ServerRow>),
    /// The catalogue (for the `/tools` browser).
    Tools(Vec<ToolRow>),
    /// Status line facts, every field replaced, the token counters too (say, at start-up).
    /// After that a turn's end adds its tokens and a model change sets the model.
    Status(StatusInfo),
    /// Forget the transcript. A new or resumed conversation clears it by itself
    /// (`Event::ConversationStarted`).
    ClearTranscript,
}

#[derive(Clone, Debug, PartialEq)]
pub enum CallState {
    WaitingForApproval,
    Running,
    Done,
    Failed,
    Cancelled,
    Denied,
    /// Still running, moved to the background under this job id.
    Background(String),
}

/// A server's row and a tool's row are the session's views, shown as they come.
pub use mcp_host_core::event::{ServerView as ServerRow, ToolView as ToolRow};

/// The markdown renderer's output as plain text lines, `width` cells wide: the entry point
/// of the fuzz target in `fuzz/`, not an API.
#[doc(hidden)]
pub fn markdown_lines(markdown: &str, width: usize) -> Vec<String> {
    let mut out = Vec::new();
    let blocks = markdown::parse(markdown, &theme::Theme::new(true));
    markdown::layout(&blocks, width, &mut out);
    (out.iter())
        .map(|l| l.spans.iter().map(|s| s.content.as_ref()).collect())
        .collect()
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct StatusInfo {
    /// `provider:model`, or `None` when no model is configured.
    pub model: Option<String>,
    pub mode: String,
    /// The session's tokens so far: each turn's report adds its own.
    pub input_tokens: u64,
    pub output_tokens: u64,
}

/// What the person asked for.
#[derive(Clone, Debug, PartialEq)]
pub enum Command {
    /// Send a message to the model.
    Submit(String),
    /// A slash command other than those the screen handles itself (`/mcp`, `/tools`, `/help`
    /// open overlays): `name` without the slash, `args` the rest of the line.
    Slash {
        name: String,
        args: String,
    },
    Approve {
        call_id: String,
        scope: AnswerScope,
    },
    Deny {
        call_id: String,
        reason: Option<String>,
    },
    /// Ctrl-C while a turn runs.
    CancelTurn,
    /// Ctrl-C twice in a row, or `/quit`.
    Quit,
    Reconnect(String),
    SetEnabled {
        server: String,
        enabled: bool,
    },
    ApproveProjectServer(String),
    ElicitationAnswer {
        id: String,
        answer: ElicitationAnswer,
    },
}

/// Facts fixed for the session.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SessionInfo {
    /// `NO_COLOR` set: render without colours (bold/reverse still allowed).
    pub no_color: bool,
}

/// The screen's state.
#[derive(Debug)]
pub struct App {
    theme: Theme,
    transcript: Transcript,
    input: InputBox,
    approvals: Approvals,
    elicitations: Elicitations,
    overlay: Option<Overlay>,
    servers: Vec<ServerRow>,
    tools: Vec<ToolRow>,
    status: StatusInfo,
    busy: bool,
    /// A first Ctrl-C was pressed and no other key since: the next one quits.
    ctrl_c_armed: bool,
    /// A one-off hint on the status line, cleared by the next key.
    flash: Option<String>,
    /// A frozen clock (tests, replays); `None` reads the system clock.
    frozen_now: Option<Instant>,
}

impl App {
    pub fn new(info: SessionInfo) -> Self {
        Self {
            theme: Theme::new(info.no_color),
            transcript: Transcript::new(),
            input: InputBox::default(),
            approvals: Approvals::default(),
            elicitations: Elicitations::default(),
            overlay: None,
            servers: Vec::new(),
            tools: Vec::new(),
            status: StatusInfo::default(),
            busy: false,
            ctrl_c_armed: false,
            flash: None,
            frozen_now: None,
        }
    }

    /// Applies what the runtime says.
    pub fn apply(&mut self, update: Update) {
        match update {
            Update::UserMessage(text) => self.transcript.user(&text),
            Update::CallFinished {
                call_id,
                state,
                took_ms,
                preview,
            } => self.call_finished(&call_id, &state, took_ms, &preview),
            Update::Notice(text) => self.transcript.notice(&text),
            Update::Servers(rows) => {
                self.servers = rows.iter().map(state::clean_server).collect();
                if let Some(Overlay::Mcp { selected, .. }) = &mut self.overlay {
                    *selected = (*selected).min(self.servers.len().saturating_sub(1));
                }
            }
            Update::Tools(rows) => {
                self.tools = rows.iter().map(state::clean_tool).collect();
                if let Some(Overlay::Tools { selected, .. }) = &mut self.overlay {
                    *selected = 0;
                }
            }
            Update::Status(info) => self.status = state::clean_status(&info),
            Update::ClearTranscript => self.transcript.clear(),
        }
    }

    /// Handles one key; returns what the runtime must do.
    pub fn on_key(&mut self, key: KeyEvent) -> Vec<Command> {
        self.handle_key(key)
    }

    /// Text pasted into the input (bracketed paste).
    pub fn on_paste(&mut self, text: &str) {
        self.handle_paste(text);
    }

    /// Whether a turn is running: the runtime sets it when it starts one; the turn's end or
    /// failure (`Event::TurnEnded`, `Event::TurnFailed`) clears it.
    pub fn set_busy(&mut self, busy: bool) {
        self.busy = busy;
    }

    pub fn render(&self, frame: &mut Frame) {
        views::render(self, frame);
    }

    /// Freezes the screen's clock at `now`: call starts are stamped with it and running
    /// calls show their elapsed time against it, so snapshots do not depend on the real
    /// clock. Call again to move the clock. Without it the system clock is read.
    pub fn set_now_for_tests(&mut self, now: Instant) {
        self.frozen_now = Some(now);
    }

    /// Whether something on screen changes with time alone (a turn runs or a call's
    /// elapsed time counts up): the runtime should then redraw about once a second.
    pub fn animating(&self) -> bool {
        self.busy || self.transcript.has_running()
    }

    /// Whether a dialog (approval or elicitation) is waiting for the person.
    pub fn dialog_open(&self) -> bool {
        self.approvals.active().is_some() || self.elicitations.active().is_some()
    }

    /// A card takes its end state; its approval prompt, if one is still open, goes away.
    fn call_finished(&mut self, call_id: &str, state: &CallState, took_ms: u64, preview: &str) {
        self.transcript.finished(call_id, state, took_ms, preview);
        // Finished some other way (cancel, timeout): nobody needs to answer any more.
        if *state != CallState::WaitingForApproval {
            self.approvals.forget(call_id);
        }
    }

    fn now(&self) -> Instant {
        self.frozen_now.unwrap_or_else(Instant::now)
    }
}
