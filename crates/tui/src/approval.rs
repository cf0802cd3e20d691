//! The approval modal's state and keys. Nothing is approved by a stray key: the modal opens
//! with no option selected, letters and arrows only select (behind the typing guard), Enter
//! confirms a selection, and Enter with nothing selected does nothing. Deny asks for an
//! optional reason; Esc denies without one. Further prompts wait in a queue. Long argument
//! values start collapsed; `e` (or Ctrl+E, which the typing guard never blocks) shows them
//! whole, and the body scrolls, so every character of the arguments is reachable.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use ratatui::text::Line;

use crate::args::{ArgField, arg_fields, reveal_lines};
use crate::guard::{Letter, TypingGuard};
use crate::state::pretty_lines;
use crate::text::{clean_line, clean_text};
use mcp_host_core::decision::AnswerScope;
use mcp_host_core::event::ApprovalPrompt;

/// Annotations are the server's hints, not what runs: a huge block of them is cut here.
const MODAL_ARG_LINES: usize = 400;
const MODAL_DIFF_LINES: usize = 400;
/// A reason longer than this is not a reason.
const REASON_MAX_CHARS: usize = 500;

/// A sanitised approval prompt.
#[derive(Debug, Clone)]
pub(crate) struct ApprovalView {
    pub call_id: String,
    pub name: String,
    pub server: String,
    pub tool: String,
    /// Every argument, complete and revealed.
    pub args: Vec<ArgField>,
    pub reason: String,
    pub description: String,
    pub annotations: Option<Vec<String>>,
    pub believed: bool,
    pub diff: Option<Vec<String>>,
}

impl ApprovalView {
    fn new(p: &ApprovalPrompt) -> Self {
        Self {
            call_id: p.subject.call_id.clone(),
            name: clean_line(&p.subject.name),
            server: clean_line(p.subject.server.as_str()),
            tool: clean_line(&p.subject.tool),
            args: arg_fields(&p.subject.args),
            reason: clean_text(&p.reason),
            // Escape sequences go as everywhere else; what survives them and could still
            // hide text (zero-width, TAG characters, long padding) is shown.
            description: reveal_lines(&clean_text(&p.description)),
            annotations: p
                .annotations
                .as_ref()
                .map(|a| pretty_lines(a, MODAL_ARG_LINES)),
            believed: p.annotations_believed,
            diff: p.drift_diff.as_deref().map(|d| {
                let text = clean_text(d);
                let mut lines: Vec<String> = text
                    .trim_end_matches('\n')
                    .split('\n')
                    .map(str::to_string)
                    .collect();
                if lines.len() > MODAL_DIFF_LINES {
                    let more = lines.len() - MODAL_DIFF_LINES;
                    lines.truncate(MODAL_DIFF_LINES);
                    lines.push(format!("… ({more} more lines)"));
                }
                lines
            }),
        }
    }
}

/// The options, in the order shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Choice {
    Once,
    Session,
    Always,
    Deny,
}

pub(crate) const CHOICES: [Choice; 4] =
    [Choice::Once, Choice::Session, Choice::Always, Choice::Deny];

impl Choice {
    pub(crate) fn key(self) -> char {
        match self {
            Choice::Once => 'o',
            Choice::Session => 's',
            Choice::Always => 'a',
            Choice::Deny => 'd',
        }
    }

    pub(crate) fn label(self) -> &'static str {
        match self {
            Choice::Once => "Allow once",
            Choice::Session => "Allow for this session",
            Choice::Always => "Always allow",
            Choice::Deny => "Deny",
        }
    }

    fn from_key(c: char) -> Option<Self> {
        CHOICES
            .into_iter()
            .find(|ch| ch.key() == c.to_ascii_lowercase())
    }

    fn index(self) -> usize {
        CHOICES.iter().position(|c| *c == self).unwrap_or(0)
    }
}

/// What a key did to the modal.
#[derive(Debug, PartialEq)]
pub(crate) enum Outcome {
    Nothing,
    Approve(AnswerScope),
    Deny(Option<String>),
}

#[derive(Debug)]
pub(crate) struct ApprovalModal {
    pub view: ApprovalView,
    pub selected: Option<Choice>,
    /// `Some` once Deny was confirmed: the optional reason being typed.
    pub reason: Option<String>,
    pub scroll: usize,
    /// Long argument values shown whole instead of collapsed.
    pub expanded: bool,
    pub guard: TypingGuard,
    /// The largest useful scroll and the page size, from the last render.
    pub max_scroll: Cell<usize>,
    pub page: Cell<usize>,
    /// The body's wrapped rows for (width, expanded): a megabyte of arguments is wrapped
    /// once, not on every key press.
    pub body_rows: RefCell<Option<(usize, bool, Vec<Line<'static>>)>>,
}

impl ApprovalModal {
    pub(crate) fn new(p: &ApprovalPrompt) -> Self {
        Self {
            view: ApprovalView::new(p),
            selected: None,
            reason: None,
            scroll: 0,
            expanded: false,
            guard: TypingGuard::default(),
            max_scroll: Cell::new(usize::MAX),
            body_rows: RefCell::new(None),
            page: Cell::new(10),
        }
    }

    /// Whether some argument is long enough to be collapsed (so `e` does something).
    pub(crate) fn collapsible(&self) -> bool {
        self.view.args.iter().any(ArgField::collapses)
    }

    fn toggle_expanded(&mut self) {
        self.expanded = !self.expanded;
        // The body's height changed: the next render clamps the scroll again.
        self.max_scroll.set(usize::MAX);
    }

    fn scroll_by(&mut self, delta: isize) {
        let max = self.max_scroll.get();
        self.scroll = self.scroll.saturating_add_signed(delta).min(max);
    }

    /// Pasted text only ever goes into the reason field; anywhere else it is typing.
    pub(crate) fn on_paste(&mut self, text: &str) {
        if let Some(r) = &mut self.reason {
            push_capped(r, &clean_line(text));
        } else {
            self.guard.lock();
            self.selected = None;
        }
    }

    pub(crate) fn on_key(&mut self, key: KeyEvent) -> Outcome {
        if self.reason.is_some() {
            return self.reason_key(key);
        }
        let page = self.page.get().max(1) as isize;
        match key.code {
            KeyCode::Esc => return Outcome::Deny(None),
            KeyCode::Enter => {
                self.guard.other();
                match self.selected {
                    None => {}
                    Some(Choice::Deny) => self.reason = Some(String::new()),
                    Some(Choice::Once) => return Outcome::Approve(AnswerScope::Once),
                    Some(Choice::Session) => return Outcome::Approve(AnswerScope::Session),
                    Some(Choice::Always) => return Outcome::Approve(AnswerScope::Always),
                }
            }
            KeyCode::Right | KeyCode::Tab => {
                self.guard.navigate();
                self.selected = Some(match self.selected {
                    None => CHOICES[0],
                    Some(c) => CHOICES[(c.index() + 1) % CHOICES.len()],
                });
            }
            KeyCode::Left | KeyCode::BackTab => {
                self.guard.navigate();
                self.selected = Some(match self.selected {
                    None => CHOICES[CHOICES.len() - 1],
                    Some(c) => CHOICES[(c.index() + CHOICES.len() - 1) % CHOICES.len()],
                });
            }
            KeyCode::Up => {
                self.guard.other();
                self.scroll_by(-1);
            }
            KeyCode::Down => {
                self.guard.other();
                self.scroll_by(1);
            }
            KeyCode::PageUp => {
                self.guard.other();
                self.scroll_by(-page);
            }
            KeyCode::PageDown => {
                self.guard.other();
                self.scroll_by(page);
            }
            KeyCode::Home => {
                self.guard.other();
                self.scroll = 0;
            }
            KeyCode::End => {
                self.guard.other();
                self.scroll = self.max_scroll.get();
            }
            // Not a letter the guard weighs: showing more can never approve anything.
            KeyCode::Char('e') if key.modifiers == KeyModifiers::CONTROL => {
                self.guard.other();
                self.toggle_expanded();
            }
            KeyCode::Char(c) if !has_command_modifier(key) => match self.guard.printable(c) {
                Letter::Key('e' | 'E') => self.toggle_expanded(),
                Letter::Key(k) => match Choice::from_key(k) {
                    Some(choice) => self.selected = Some(choice),
                    None => {
                        self.guard.lock();
                        self.selected = None;
                    }
                },
                Letter::Stray => self.selected = None,
            },
            // Editing keys mean the person thinks they are in the input box.
            KeyCode::Backspace | KeyCode::Delete => {
                self.guard.lock();
                self.selected = None;
            }
            _ => self.guard.other(),
        }
        Outcome::Nothing
    }

    fn reason_key(&mut self, key: KeyEvent) -> Outcome {
        let Some(reason) = &mut self.reason else {
            return Outcome::Nothing;
        };
        match key.code {
            KeyCode::Esc => return Outcome::Deny(None),
            KeyCode::Enter => {
                let r = reason.trim().to_string();
                return Outcome::Deny(if r.is_empty() { None } else { Some(r) });
            }
            KeyCode::Backspace => {
                reason.pop();
            }
            KeyCode::Char('u') if key.modifiers.contains(KeyModifiers::CONTROL) => reason.clear(),
            KeyCode::Char(c) if !has_command_modifier(key) && !c.is_control() => {
                push_capped(reason, &c.to_string());
            }
            _ => {}
        }
        Outcome::Nothing
    }
}

fn push_capped(s: &mut String, add: &str) {
    let room = REASON_MAX_CHARS.saturating_sub(s.chars().count());
    s.extend(add.chars().take(room));
}

/// Ctrl or Alt make a letter a command, not text.
pub(crate) fn has_command_modifier(key: KeyEvent) -> bool {
    key.modifiers
        .intersects(KeyModifiers::CONTROL | KeyModifiers::ALT | KeyModifiers::SUPER)
}

/// The approval prompts: the first is on screen, the rest wait their turn.
#[derive(Debug, Default)]
pub(crate) struct Approvals {
    queue: VecDeque<ApprovalModal>,
}

impl Approvals {
    pub(crate) fn push(&mut self, p: &ApprovalPrompt) {
        // The same call asked twice (a runtime retry) must not need two answers.
        if self
            .queue
            .iter()
            .any(|m| m.view.call_id == p.subject.call_id)
        {
            return;
        }
        self.queue.push_back(ApprovalModal::new(p));
    }

    pub(crate) fn active(&self) -> Option<&ApprovalModal> {
        self.queue.front()
    }

    pub(crate) fn active_mut(&mut self) -> Option<&mut ApprovalModal> {
        self.queue.front_mut()
    }

    /// Closes the shown prompt; the next one (if any) appears with nothing selected.
    pub(crate) fn pop(&mut self) -> Option<ApprovalModal> {
        self.queue.pop_front()
    }

    pub(crate) fn waiting(&self) -> usize {
        self.queue.len().saturating_sub(1)
    }

    /// The call ended some other way (turn cancelled, timeout): its prompt goes away.
    pub(crate) fn forget(&mut self, call_id: &str) {
        self.queue.retain(|m| m.view.call_id != call_id);
    }
}
