//! What the screen remembers, already sanitised: the transcript (messages, answers, notices,
//! tool call cards), the server and tool tables, the status facts, the overlays' own state,
//! and the scroll positions. An [`Update`] or a session event becomes this state through the
//! methods and cleaning functions here, the only door outside text comes through.

use std::cell::Cell;
use std::time::Instant;

use serde_json::Value;

use crate::markdown::{self, MdBlock};
use crate::text::{clean_line, clean_text, truncate};
use crate::theme::Theme;
use mcp_host_core::event::CallSubject;

use crate::{CallState, ServerRow, StatusInfo, ToolRow};

/// Arguments on a card show this many pretty-printed lines; the approval modal shows all.
pub(crate) const CARD_ARG_LINES: usize = 6;
/// A result preview on a card shows this many lines.
pub(crate) const CARD_PREVIEW_LINES: usize = 4;
/// Very long single lines (a base64 blob in an argument) are cut, not wrapped over a screen.
pub(crate) const MAX_LINE_CHARS: usize = 240;

/// What a card shows of a call, borrowed: from a [`CallSubject`], or from a refused call's
/// event, which has no subject (and whose arguments may be large, so they are not copied).
#[derive(Debug, Clone, Copy)]
pub(crate) struct CardFacts<'a> {
    pub call_id: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
    pub args: &'a Value,
    pub provenance: &'a [String],
}

impl<'a> CardFacts<'a> {
    pub(crate) fn of(subject: &'a CallSubject) -> Self {
        Self {
            call_id: &subject.call_id,
            server: subject.server.as_str(),
            tool: &subject.tool,
            args: &subject.args,
            provenance: &subject.provenance,
        }
    }
}

/// One thing in the transcript.
#[derive(Debug)]
pub(crate) enum Entry {
    User(String),
    Answer(Answer),
    Notice(String),
    Call(Box<CallView>),
}

/// The model's answer as it streams.
#[derive(Debug)]
pub(crate) struct Answer {
    /// The deltas as received, kept only so an escape sequence split across two deltas is
    /// still recognised and removed; never shown.
    raw: String,
    /// Parsed from the sanitised text when it is drawn, and again only after a delta: a
    /// parse at every delta cost an answer's length squared, and a model endpoint may send
    /// one character per delta (a 200 KB answer was minutes of CPU).
    blocks: std::sync::OnceLock<Vec<MdBlock>>,
}

impl Answer {
    /// The answer's blocks, parsed now if a delta came since they last were.
    pub(crate) fn blocks(&self, theme: &Theme) -> &[MdBlock] {
        self.blocks
            .get_or_init(|| markdown::parse(&clean_text(&self.raw), theme))
    }
}

/// A tool call card.
#[derive(Debug)]
pub(crate) struct CallView {
    pub call_id: String,
    pub server: String,
    pub tool: String,
    /// Pretty-printed, sanitised, cut to [`CARD_ARG_LINES`] (plus a "more" line).
    pub args: Vec<String>,
    /// Servers whose output was in context when the model made the call (empty: only the
    /// user had spoken, or the person made it).
    pub provenance: Vec<String>,
    pub state: CallState,
    /// When it started running (reset when an approval lets it run).
    pub started: Instant,
    pub took_ms: Option<u64>,
    pub preview: Vec<String>,
    pub progress: Option<ProgressView>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ProgressView {
    pub progress: f64,
    pub total: Option<f64>,
    pub message: Option<String>,
}

/// Where the transcript is scrolled to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scroll {
    /// Follows the bottom as text arrives.
    Follow,
    /// Pinned with this row at the top, because the person scrolled up.
    At(usize),
}

#[derive(Debug)]
pub(crate) struct Transcript {
    pub entries: Vec<Entry>,
    /// Whether the last answer is still receiving deltas.
    answer_open: bool,
    pub scroll: Scroll,
    /// Rows and viewport height of the last render; paging needs them and render is `&self`.
    pub last_rows: Cell<usize>,
    pub last_height: Cell<usize>,
}

impl Transcript {
    pub(crate) fn new() -> Self {
        Self {
            entries: Vec::new(),
            answer_open: false,
            scroll: Scroll::Follow,
            last_rows: Cell::new(0),
            last_height: Cell::new(0),
        }
    }

    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.answer_open = false;
        self.scroll = Scroll::Follow;
    }

    pub(crate) fn user(&mut self, text: &str) {
        self.answer_open = false;
        self.entries.push(Entry::User(clean_text(text)));
        self.scroll = Scroll::Follow;
    }

    pub(crate) fn notice(&mut self, text: &str) {
        self.entries.push(Entry::Notice(clean_text(text)));
    }

    pub(crate) fn end_turn(&mut self, note: Option<&str>) {
        self.answer_open = false;
        if let Some(n) = note {
            self.notice(&format!("turn ended: {n}"));
        }
    }

    /// Appends a delta to the open answer (or starts one); it is parsed when next drawn.
    pub(crate) fn delta(&mut self, delta: &str) {
        let open = self.answer_open && matches!(self.entries.last(), Some(Entry::Answer(_)));
        if !open {
            self.entries.push(Entry::Answer(Answer {
                raw: String::new(),
                blocks: std::sync::OnceLock::new(),
            }));
            self.answer_open = true;
        }
        if let Some(Entry::Answer(a)) = self.entries.last_mut() {
            a.raw.push_str(delta);
            a.blocks = std::sync::OnceLock::new();
        }
    }

    pub(crate) fn call_mut(&mut self, call_id: &str) -> Option<&mut CallView> {
        self.entries.iter_mut().rev().find_map(|e| match e {
            Entry::Call(c) if c.call_id == call_id => Some(c.as_mut()),
            _ => None,
        })
    }

    /// A card appears, or an existing one (same call id) is refreshed in place.
    pub(crate) fn call_started(&mut self, card: CardFacts<'_>, now: Instant) {
        let state = CallState::Running;
        let provenance = || card.provenance.iter().map(|p| clean_line(p)).collect();
        if let Some(c) = self.call_mut(card.call_id) {
            c.server = clean_line(card.server);
            c.tool = clean_line(card.tool);
            c.args = pretty_lines(card.args, CARD_ARG_LINES);
            c.provenance = provenance();
            if c.state != CallState::WaitingForApproval {
                c.state = state;
                c.started = now;
            }
            return;
        }
        self.answer_open = false;
        self.entries.push(Entry::Call(Box::new(CallView {
            call_id: card.call_id.to_string(),
            server: clean_line(card.server),
            tool: clean_line(card.tool),
            args: pretty_lines(card.args, CARD_ARG_LINES),
            provenance: provenance(),
            state,
            started: now,
            took_ms: None,
            preview: Vec::new(),
            progress: None,
        })));
    }

    /// The card of a call that needs approval shows that (the card is made first, from the
    /// prompt's call).
    pub(crate) fn waiting(&mut self, call_id: &str) {
        if let Some(c) = self.call_mut(call_id) {
            c.state = CallState::WaitingForApproval;
        }
    }

    pub(crate) fn finished(
        &mut self,
        call_id: &str,
        state: &CallState,
        took_ms: u64,
        preview: &str,
    ) {
        if let Some(c) = self.call_mut(call_id) {
            c.state = clean_state(state);
            c.took_ms = Some(took_ms);
            c.preview = preview_lines(preview, CARD_PREVIEW_LINES);
        }
    }

    pub(crate) fn progress(&mut self, call_id: &str, p: ProgressView) {
        if let Some(c) = self.call_mut(call_id) {
            c.progress = Some(ProgressView {
                message: p.message.as_deref().map(clean_line),
                ..p
            });
        }
    }

    /// The person answered the modal: the card moves on without waiting for the runtime, so
    /// the approval wait does not count as running time.
    pub(crate) fn answered(&mut self, call_id: &str, approved: bool, now: Instant) {
        if let Some(c) = self.call_mut(call_id)
            && c.state == CallState::WaitingForApproval
        {
            if approved {
                c.state = CallState::Running;
                c.started = now;
            } else {
                c.state = CallState::Denied;
            }
        }
    }

    /// Whether any card is counting seconds (the runtime then redraws on a timer).
    pub(crate) fn has_running(&self) -> bool {
        self.entries.iter().any(|e| {
            matches!(e, Entry::Call(c) if matches!(c.state, CallState::Running | CallState::Background(_)))
        })
    }

    /// The background jobs still running, by job id (the status line lists them).
    pub(crate) fn background_jobs(&self) -> Vec<&str> {
        self.entries
            .iter()
            .filter_map(|e| match e {
                Entry::Call(c) => match &c.state {
                    CallState::Background(job) => Some(job.as_str()),
                    _ => None,
                },
                _ => None,
            })
            .collect()
    }

    pub(crate) fn page_up(&mut self) {
        let rows = self.last_rows.get();
        let h = self.last_height.get().max(1);
        let bottom_top = rows.saturating_sub(h);
        let top = match self.scroll {
            Scroll::Follow => bottom_top,
            Scroll::At(t) => t.min(bottom_top),
        };
        // Keep a row of overlap so the reader does not lose their place.
        self.scroll = Scroll::At(top.saturating_sub(h.saturating_sub(1).max(1)));
    }

    pub(crate) fn page_down(&mut self) {
        let rows = self.last_rows.get();
        let h = self.last_height.get().max(1);
        let bottom_top = rows.saturating_sub(h);
        if let Scroll::At(t) = self.scroll {
            let next = t + h.saturating_sub(1).max(1);
            self.scroll = if next >= bottom_top {
                Scroll::Follow
            } else {
                Scroll::At(next)
            };
        }
    }
}

fn clean_state(state: &CallState) -> CallState {
    match state {
        CallState::Background(job) => CallState::Background(clean_line(job)),
        other => other.clone(),
    }
}

/// Pretty JSON with every string revealed (controls, bidi and invisible characters as
/// `⟨U+XXXX⟩`, long space runs counted, see [`crate::args`]), cut to `max` lines with a line
/// saying how many more there were.
pub(crate) fn pretty_lines(v: &Value, max: usize) -> Vec<String> {
    cap_lines(&crate::args::value_lines(v).join("\n"), max)
}

/// The first `max` lines of a result, each cut to a sane length.
pub(crate) fn preview_lines(s: &str, max: usize) -> Vec<String> {
    let cleaned = clean_text(s);
    let trimmed = cleaned.trim_end_matches('\n');
    if trimmed.trim().is_empty() {
        return Vec::new();
    }
    cap_lines(trimmed, max)
}

fn cap_lines(s: &str, max: usize) -> Vec<String> {
    let all: Vec<&str> = s.split('\n').collect();
    let mut out: Vec<String> = all
        .iter()
        .take(max)
        .map(|l| truncate(l, MAX_LINE_CHARS))
        .collect();
    if all.len() > max {
        out.push(format!("… ({} more lines)", all.len() - max));
    }
    out
}

/// Sanitised copies of the runtime's tables.
pub(crate) fn clean_server(r: &ServerRow) -> ServerRow {
    ServerRow {
        name: clean_line(&r.name),
        state: clean_line(&r.state),
        era: r.era.as_deref().map(clean_line),
        transport: clean_line(&r.transport),
        tools: r.tools,
        last_error: r.last_error.as_deref().map(clean_text),
        stderr_tail: r.stderr_tail.iter().map(|l| clean_line(l)).collect(),
        notes: r.notes.iter().map(|l| clean_line(l)).collect(),
        needs_approval: r.needs_approval,
        definition: r.definition.iter().map(|l| clean_line(l)).collect(),
        enabled: r.enabled,
        sandbox: r.sandbox.iter().map(|l| clean_line(l)).collect(),
    }
}

pub(crate) fn clean_tool(t: &ToolRow) -> ToolRow {
    ToolRow {
        name: clean_line(&t.name),
        server: clean_line(&t.server),
        description: clean_text(&t.description),
        flags: t.flags.iter().map(|f| clean_line(f)).collect(),
    }
}

pub(crate) fn clean_status(s: &StatusInfo) -> StatusInfo {
    StatusInfo {
        model: s.model.as_deref().map(clean_line),
        mode: clean_line(&s.mode),
        input_tokens: s.input_tokens,
        output_tokens: s.output_tokens,
    }
}

/// The full-screen panels opened by slash commands.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Overlay {
    /// `confirming`: `a` was pressed on a server waiting for approval; `y` approves it.
    /// `scroll`: first row of the selected server's details (PgUp/PgDn), so that a long
    /// definition is never cut off.
    Mcp {
        selected: usize,
        confirming: bool,
        scroll: usize,
    },
    Tools {
        query: String,
        selected: usize,
    },
    Help {
        scroll: usize,
    },
}

/// The `/tools` browser's filter: a case-insensitive substring of the name or description.
pub(crate) fn filter_tools<'a>(tools: &'a [ToolRow], query: &str) -> Vec<&'a ToolRow> {
    let q = query.trim().to_lowercase();
    tools
        .iter()
        .filter(|t| {
            q.is_empty()
                || t.name.to_lowercase().contains(&q)
                || t.description.to_lowercase().contains(&q)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// An answer streamed a character at a time costs its length: it is parsed when drawn,
    /// not at every delta (which was its length squared, minutes for 200 KB).
    #[test]
    fn an_answer_of_many_small_deltas_is_parsed_when_drawn() {
        let theme = Theme::new(true);
        let mut t = Transcript::new();
        let started = std::time::Instant::now();
        for i in 0..200_000 {
            t.delta(if i % 80 == 79 { "\n" } else { "x" });
        }
        let Some(Entry::Answer(a)) = t.entries.last() else {
            panic!("no answer");
        };
        let mut out = Vec::new();
        markdown::layout(a.blocks(&theme), 100, &mut out);
        let xs: usize = (out.iter().flat_map(|l| l.spans.iter()))
            .map(|s| s.content.matches('x').count())
            .sum();
        assert_eq!(xs, 200_000 - 200_000 / 80);
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }

    #[test]
    fn deltas_join_escape_sequences_split_across_them() {
        let theme = Theme::new(true);
        let mut t = Transcript::new();
        t.delta("safe \x1b]0;pw");
        t.delta("ned\x07text");
        let Some(Entry::Answer(a)) = t.entries.last() else {
            panic!("no answer");
        };
        let mut out = Vec::new();
        markdown::layout(a.blocks(&theme), 80, &mut out);
        let text: String = out
            .iter()
            .flat_map(|l| l.spans.iter())
            .map(|s| s.content.to_string())
            .collect();
        assert_eq!(text, "safe text");
    }

    #[test]
    fn arguments_are_capped() {
        let v = json!({"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6});
        let lines = pretty_lines(&v, 3);
        assert_eq!(lines.len(), 4);
        assert_eq!(lines[3], "… (5 more lines)");
    }

    #[test]
    fn tool_filter_matches_name_or_description() {
        let mk = |n: &str, d: &str| ToolRow {
            name: n.into(),
            server: "s".into(),
            description: d.into(),
            flags: vec![],
        };
        let tools = vec![
            mk("read_file", "Reads"),
            mk("fetch", "Get a URL"),
            mk("x", "FILE ops"),
        ];
        let names: Vec<&str> = filter_tools(&tools, "file")
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        assert_eq!(names, vec!["read_file", "x"]);
    }
}
