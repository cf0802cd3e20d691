//! Helpers shared by the integration tests: render an [`App`] into a `TestBackend`, turn the
//! buffer into readable text, build key events, and build the fixtures and the session's
//! core events the tests feed to `App::on_event`.

use std::time::Instant;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use mcp_host_tui::{App, Command, SessionInfo};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use unicode_width::UnicodeWidthStr;

/// A fresh app with a frozen clock, so elapsed times in snapshots never depend on the real one.
pub fn app() -> (App, Instant) {
    let mut app = App::new(SessionInfo::default());
    let t0 = Instant::now();
    app.set_now_for_tests(t0);
    (app, t0)
}

pub fn app_no_color() -> App {
    let mut app = App::new(SessionInfo { no_color: true });
    app.set_now_for_tests(Instant::now());
    app
}

pub fn render(app: &App, w: u16, h: u16) -> Buffer {
    let mut term = Terminal::new(TestBackend::new(w, h)).unwrap();
    term.draw(|f| app.render(f)).unwrap();
    term.backend().buffer().clone()
}

/// The buffer as lines of text, trailing spaces trimmed; the cells hidden behind a wide
/// character are skipped so the text reads as it looks.
pub fn text(buf: &Buffer) -> String {
    let area = buf.area;
    let mut out = Vec::new();
    for y in area.top()..area.bottom() {
        let mut line = String::new();
        let mut skip = 0usize;
        for x in area.left()..area.right() {
            if skip > 0 {
                skip -= 1;
                continue;
            }
            let sym = buf[(x, y)].symbol();
            line.push_str(sym);
            skip = sym.width().saturating_sub(1);
        }
        out.push(line.trim_end().to_string());
    }
    out.join("\n")
}

pub fn screen(app: &App, w: u16, h: u16) -> String {
    text(&render(app, w, h))
}

pub fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

pub fn ctrl(c: char) -> KeyEvent {
    KeyEvent::new(KeyCode::Char(c), KeyModifiers::CONTROL)
}

pub fn alt(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::ALT)
}

/// Types `s` key by key (`\n` is Enter) and collects every command.
pub fn type_str(app: &mut App, s: &str) -> Vec<Command> {
    let mut out = Vec::new();
    for c in s.chars() {
        let k = if c == '\n' {
            key(KeyCode::Enter)
        } else {
            key(KeyCode::Char(c))
        };
        out.extend(app.on_key(k));
    }
    out
}

// Fixtures. JSON objects list their keys in alphabetical order so that the pretty-printed
// text is the same whether or not serde_json keeps insertion order.

use mcp_host_core::ServerId;
use mcp_host_core::event::{ApprovalPrompt, CallSubject};
use mcp_host_tui::{ServerRow, ToolRow};
use serde_json::json;

pub fn card(id: &str, provenance: &[&str]) -> CallSubject {
    CallSubject {
        call_id: id.into(),
        name: "fs__read_file".into(),
        server: ServerId::new("fs"),
        tool: "read_file".into(),
        args: json!({"path": "/work/notes.md", "tail": 20}),
        provenance: provenance.iter().map(|s| s.to_string()).collect(),
    }
}

pub fn prompt(id: &str) -> ApprovalPrompt {
    ApprovalPrompt {
        subject: CallSubject {
            call_id: id.into(),
            name: "fs__write_file".into(),
            server: ServerId::new("fs"),
            tool: "write_file".into(),
            args: json!({"content": "hello\nworld", "path": "/work/out.txt"}),
            provenance: vec!["fetch".into()],
        },
        reason: "rule `ask fs/write_*` in ~/.config/mcp-host/policy.toml; context tainted by fetch"
            .into(),
        description: "Create or overwrite a file with the given content.".into(),
        annotations: Some(json!({"destructiveHint": false, "readOnlyHint": true})),
        annotations_believed: false,
        drift_diff: Some(
            "--- pinned\n+++ current\n@@ description @@\n-Create or overwrite a file.\n+Create or overwrite a file with the given content.\n".into(),
        ),
    }
}

pub fn server(name: &str, state: &str) -> ServerRow {
    ServerRow {
        name: name.into(),
        state: state.into(),
        era: Some("2025-11-25".into()),
        transport: "stdio".into(),
        tools: 3,
        last_error: None,
        stderr_tail: Vec::new(),
        notes: Vec::new(),
        needs_approval: false,
        definition: Vec::new(),
        enabled: true,
        sandbox: Vec::new(),
    }
}

pub fn tool(name: &str, server: &str, description: &str) -> ToolRow {
    ToolRow {
        name: name.into(),
        server: server.into(),
        description: description.into(),
        flags: Vec::new(),
    }
}

// Core events, as the session sends them.

use mcp_host_core::event::{CallSource, Event, TurnEnd, TurnReport, Usage};

pub fn delta(text: &str) -> Event {
    Event::TextDelta { text: text.into() }
}

pub fn notice(text: &str) -> Event {
    Event::Notice { text: text.into() }
}

/// The model's call, allowed and sent.
pub fn begun(subject: CallSubject) -> Event {
    Event::CallBegun {
        subject,
        source: CallSource::Model,
    }
}

/// A call's answer came back: an error when `is_error`.
pub fn ended(id: &str, is_error: bool, took_ms: u64, preview: &str) -> Event {
    Event::CallEnded {
        call_id: id.into(),
        name: "fs__read_file".into(),
        is_error,
        took_ms,
        background_job: None,
        preview: preview.into(),
    }
}

/// A call moved to the background as `job`.
pub fn backgrounded(id: &str, job: &str, took_ms: u64) -> Event {
    Event::CallEnded {
        call_id: id.into(),
        name: "fs__read_file".into(),
        is_error: false,
        took_ms,
        background_job: Some(job.into()),
        preview: String::new(),
    }
}

pub fn progress(id: &str, progress: f64, total: Option<f64>, message: Option<&str>) -> Event {
    Event::Progress {
        call_id: id.into(),
        progress,
        total,
        message: message.map(str::to_string),
    }
}

/// A turn's end, with its report's text and usage.
pub fn turn_ended(end: TurnEnd, text: &str, usage: Usage) -> Event {
    Event::TurnEnded {
        report: Box::new(TurnReport {
            text: text.into(),
            steps: 1,
            end,
            calls: Vec::new(),
            usage,
            conversation_id: None,
        }),
    }
}

/// A plain finish that used no tokens.
pub fn finished() -> Event {
    turn_ended(TurnEnd::Finished, "", Usage::default())
}

/// The call was not sent (denied, unanswered, its arguments refused), for `reason`.
pub fn refused(subject: &CallSubject, reason: &str) -> Event {
    Event::CallRefused {
        call_id: subject.call_id.clone(),
        name: subject.name.clone(),
        server: Some(subject.server.clone()),
        tool: Some(subject.tool.clone()),
        arguments: subject.args.clone(),
        reason: reason.into(),
    }
}

pub fn approval(prompt: ApprovalPrompt) -> Event {
    Event::ApprovalRequested(prompt)
}

pub fn elicitation(request: mcp_host_core::event::ElicitationRequest) -> Event {
    Event::ElicitationRequested(request)
}
