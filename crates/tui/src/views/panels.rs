//! The overlays opened by slash commands: the `/mcp` server panel (table, then the selected
//! server's error and stderr tail, or for a project server waiting for approval what it
//! would run and send, and the question once `a` is pressed), the `/tools` browser (search
//! box, list, description of the selected tool) and `/help`.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::state::{Overlay, filter_tools};
use crate::text::{LogicalLine, pad, text_lines, truncate, wrap_all};
use crate::theme::Theme;
use crate::views::{draw_rows, frame_box};
use crate::{App, ServerRow};

pub(super) fn render(app: &App, overlay: &Overlay, frame: &mut Frame, area: Rect) {
    match overlay {
        Overlay::Mcp {
            selected,
            confirming,
            scroll,
        } => mcp(app, *selected, *confirming, *scroll, frame, area),
        Overlay::Tools { query, selected } => tools(app, query, *selected, frame, area),
        Overlay::Help { scroll } => help(app, *scroll, frame, area),
    }
}

/// The first row to show so that `selected` is visible in a window of `h` rows.
fn window_top(selected: usize, h: usize) -> usize {
    (selected + 1).saturating_sub(h)
}

fn state_style(t: &Theme, state: &str) -> ratatui::style::Style {
    match state.to_ascii_lowercase().as_str() {
        "ready" => t.ok,
        "failed" | "needs_auth" | "needs auth" => t.error,
        "starting" | "connecting" | "reconnecting" | "pending approval" => t.warn,
        _ => t.dim,
    }
}

fn mcp(app: &App, selected: usize, confirming: bool, scroll: usize, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let inner = frame_box(
        frame,
        area,
        t,
        "MCP servers",
        None,
        Some("↑↓ select · PgDn details · r reconnect · e on/off · a approve · Esc close"),
    );
    if inner.height == 0 {
        return;
    }
    let w = inner.width as usize;
    if app.servers.is_empty() {
        let rows = wrap_all(&[LogicalLine::styled("No servers configured.", t.dim)], w);
        draw_rows(frame, inner, &rows, 0);
        return;
    }

    // Columns: the name takes what the fixed ones leave.
    let (state_w, era_w, tr_w, tools_w) = (16, 10, 10, 5);
    let name_w = w
        .saturating_sub(state_w + era_w + tr_w + tools_w + 4)
        .max(8);
    let header = format!(
        "{} {} {} {} {}",
        pad("NAME", name_w),
        pad("STATE", state_w),
        pad("ERA", era_w),
        pad("TRANSPORT", tr_w),
        pad("TOOLS", tools_w)
    );
    let list_h = (app.servers.len() + 1).min((inner.height as usize / 2).max(3));
    let top = window_top(selected, list_h.saturating_sub(1));
    let mut rows = vec![Line::from(Span::styled(header, t.bold))];
    for (i, s) in app
        .servers
        .iter()
        .enumerate()
        .skip(top)
        .take(list_h.saturating_sub(1))
    {
        let name = if s.needs_approval {
            format!("{} !", s.name)
        } else {
            s.name.clone()
        };
        let state = if s.enabled {
            s.state.clone()
        } else {
            format!("{} (off)", s.state)
        };
        let cells = vec![
            Span::raw(format!("{} ", pad(&name, name_w))),
            Span::styled(
                format!("{} ", pad(&state, state_w)),
                state_style(t, &s.state),
            ),
            Span::raw(format!(
                "{} {} {}",
                pad(s.era.as_deref().unwrap_or("—"), era_w),
                pad(&s.transport, tr_w),
                pad(&s.tools.to_string(), tools_w)
            )),
        ];
        let line = if i == selected {
            Line::from(cells).style(t.selected)
        } else {
            Line::from(cells)
        };
        rows.push(line);
    }
    let list_area = Rect {
        height: (list_h as u16).min(inner.height),
        ..inner
    };
    draw_rows(frame, list_area, &rows, 0);

    let detail_area = Rect {
        y: list_area.bottom() + 1,
        height: inner.height.saturating_sub(list_area.height + 1),
        ..inner
    };
    if let Some(s) = app.servers.get(selected) {
        let h = detail_area.height as usize;
        let mut detail = server_detail(s, confirming, t, w, h);
        let top = scroll.min(detail.len().saturating_sub(h));
        // What does not fit is announced, never silently cut.
        if detail.len() > top + h && h > 0 {
            let below = detail.len() - (top + h - 1);
            detail.truncate(top + h - 1);
            detail.push(Line::from(Span::styled(
                format!("… {below} more lines: PgDn"),
                t.warn,
            )));
        }
        draw_rows(frame, detail_area, &detail, top);
    }
}

/// The selected server's facts, then as much of its stderr tail as fits (the newest lines).
fn server_detail(
    s: &ServerRow,
    confirming: bool,
    t: &Theme,
    w: usize,
    h: usize,
) -> Vec<Line<'static>> {
    let mut head = vec![LogicalLine::plain(vec![
        Span::styled(s.name.clone(), t.bold),
        Span::raw(" — "),
        Span::styled(s.state.clone(), state_style(t, &s.state)),
        Span::styled(format!(" · {}", s.transport), t.dim),
    ])];
    if !s.enabled {
        head.push(LogicalLine::styled("disabled: press e to enable", t.dim));
    }
    if s.needs_approval {
        // The question comes first so that it stays on screen however long the definition.
        if confirming {
            head.push(LogicalLine::styled(
                format!(
                    "Approve `{}` to run and send exactly what is shown below? y approves · any other key does not",
                    s.name
                ),
                t.warn,
            ));
        } else {
            head.push(LogicalLine::styled(
                "project server waiting for your approval: press a to approve what is shown below",
                t.warn,
            ));
        }
        head.extend(
            s.definition
                .iter()
                .map(|l| LogicalLine::styled(l.clone(), t.base)),
        );
    }
    if let Some(e) = &s.last_error {
        head.extend(text_lines(
            e,
            t.error,
            &[Span::styled("last error: ", t.bold)],
            &[Span::raw("  ")],
        ));
    }
    for note in &s.notes {
        head.extend(text_lines(
            note,
            t.warn,
            &[Span::styled("note: ", t.bold)],
            &[Span::raw("  ")],
        ));
    }
    for line in &s.sandbox {
        head.extend(text_lines(line, t.base, &[], &[Span::raw("  ")]));
    }
    let mut rows = wrap_all(&head, w);
    if s.stderr_tail.is_empty() {
        return rows;
    }
    rows.push(Line::from(Span::styled(
        format!("stderr (last {} lines):", s.stderr_tail.len()),
        t.bold,
    )));
    let gutter = vec![Span::raw("  ")];
    let tail: Vec<LogicalLine> = s
        .stderr_tail
        .iter()
        .map(|l| LogicalLine {
            prefix: gutter.clone(),
            cont: gutter.clone(),
            spans: vec![Span::styled(l.clone(), t.base)],
        })
        .collect();
    let tail_rows = wrap_all(&tail, w);
    let room = h.saturating_sub(rows.len());
    let skip = tail_rows.len().saturating_sub(room);
    rows.extend(tail_rows.into_iter().skip(skip));
    rows
}

fn tools(app: &App, query: &str, selected: usize, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let shown = filter_tools(&app.tools, query);
    let note = format!("{} of {}", shown.len(), app.tools.len());
    let inner = frame_box(
        frame,
        area,
        t,
        "Tools",
        Some(&note),
        Some("type to search · ↑↓ select · Esc close"),
    );
    if inner.height < 3 {
        return;
    }
    let w = inner.width as usize;
    let search = Line::from(vec![
        Span::styled("Search: ", t.bold),
        Span::styled(query.to_string(), t.field),
    ]);
    draw_rows(frame, Rect { height: 1, ..inner }, &[search], 0);
    let cx = inner.x + (crate::text::width("Search: ") + crate::text::width(query)) as u16;
    if cx < inner.right() {
        frame.set_cursor_position((cx, inner.y));
    }

    let rest_h = inner.height as usize - 2;
    let list_h = if shown.is_empty() {
        1
    } else {
        (rest_h * 3 / 5).max(1).min(shown.len())
    };
    let list_area = Rect {
        y: inner.y + 2,
        height: list_h as u16,
        ..inner
    };
    if shown.is_empty() {
        let msg = Line::from(Span::styled("No tool matches.", t.dim));
        draw_rows(frame, list_area, &[msg], 0);
        return;
    }
    let selected = selected.min(shown.len() - 1);
    let top = window_top(selected, list_h);
    let mut rows = Vec::new();
    for (i, tool) in shown.iter().enumerate().skip(top).take(list_h) {
        let mut spans = vec![
            Span::styled(tool.name.clone(), t.bold),
            Span::styled(format!(" [{}]", tool.server), t.dim),
        ];
        for f in &tool.flags {
            spans.push(Span::styled(format!(" {f}"), t.warn));
        }
        let used: usize = spans.iter().map(|s| s.width()).sum();
        let first = tool.description.lines().next().unwrap_or_default();
        spans.push(Span::styled(
            format!("  {}", truncate(first, w.saturating_sub(used + 2))),
            t.dim,
        ));
        let mut line = Line::from(spans);
        if i == selected {
            line = line.style(t.selected);
        }
        rows.push(line);
    }
    draw_rows(frame, list_area, &rows, 0);

    let detail_area = Rect {
        y: list_area.bottom() + 1,
        height: inner.bottom().saturating_sub(list_area.bottom() + 1),
        ..inner
    };
    if let Some(tool) = shown.get(selected) {
        let mut lines = vec![LogicalLine::plain(vec![
            Span::styled(format!("{} ", tool.name), t.title),
            Span::styled(format!("from {}", tool.server), t.dim),
        ])];
        lines.extend(text_lines(&tool.description, t.base, &[], &[]));
        draw_rows(frame, detail_area, &wrap_all(&lines, w), 0);
    }
}

const HELP: &[(&str, &str)] = &[
    ("", "Input"),
    ("Enter", "send the message (or run the /command)"),
    ("Alt-Enter", "new line (also Shift-Enter, Ctrl-J)"),
    (
        "Up / Down",
        "history when the input is one line; else move between lines",
    ),
    ("Ctrl-U", "clear the input"),
    ("Ctrl-W", "delete the word before the cursor"),
    ("PageUp / PageDown", "scroll the transcript"),
    ("Ctrl-C", "cancel the running turn; twice in a row quits"),
    ("", "Approval dialog"),
    (
        "o s a d  ← →",
        "select Allow once / for this session / always / Deny",
    ),
    (
        "Enter",
        "confirm the selection (with none selected, nothing happens)",
    ),
    ("Esc", "deny without a reason"),
    ("↑ ↓ PgUp PgDn", "scroll what is being asked"),
    (
        "e  Ctrl-E",
        "show long argument values whole; again: shorter",
    ),
    ("", "Commands"),
    ("/help", "this help"),
    (
        "/mcp",
        "servers: state, errors, stderr; r reconnect, e enable, a approve (then y), PgUp/PgDn details",
    ),
    ("/tools [text]", "browse and search the tools"),
    ("/model /clear /resume", "handled by the host"),
    ("/compact", "shorten the conversation now"),
    ("/call /quit", "call a tool directly; quit"),
    ("/server:prompt", "run a server's prompt"),
    ("//text", "send a message that starts with /"),
    ("@server:uri", "attach a server's resource to a message"),
];

fn help(app: &App, scroll: usize, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let inner = frame_box(frame, area, t, "Help", None, Some("↑↓ scroll · Esc close"));
    let key_w = HELP
        .iter()
        .map(|(k, _)| crate::text::width(k))
        .max()
        .unwrap_or(0)
        + 2;
    let mut lines = Vec::new();
    for (k, v) in HELP {
        if k.is_empty() {
            if !lines.is_empty() {
                lines.push(LogicalLine::blank());
            }
            lines.push(LogicalLine::styled(*v, t.title));
        } else {
            lines.push(LogicalLine::with_prefix(
                vec![Span::styled(format!("  {}", pad(k, key_w)), t.key)],
                vec![Span::styled(*v, t.base)],
            ));
        }
    }
    let rows = wrap_all(&lines, inner.width as usize);
    let top = scroll.min(rows.len().saturating_sub(inner.height as usize));
    draw_rows(frame, inner, &rows, top);
}
