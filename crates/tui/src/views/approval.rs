//! The approval modal: what is being asked (server, tool, why, the arguments, description,
//! annotations and whether they are believed, the drift diff) in a scrolling body, and the
//! options row with a hint line fixed at the bottom so they are always visible, even at
//! 80×24. The arguments come right after the reason, short fields first, so what a call
//! touches (a path, a URL) is on the first screen whatever else it carries.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::App;
use crate::approval::{ApprovalModal, CHOICES, Choice};
use crate::text::{LogicalLine, text_lines, truncate, wrap_all};
use crate::theme::Theme;
use crate::views::{bottom_panel, draw_rows, frame_box};

pub(super) fn render(app: &App, m: &ApprovalModal, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let w = area.width.saturating_sub(2) as usize;
    if area.height < 5 || w < 10 {
        return;
    }
    let mut cache = m.body_rows.borrow_mut();
    if !matches!(&*cache, Some((cw, ce, _)) if *cw == w && *ce == m.expanded) {
        *cache = Some((w, m.expanded, wrap_all(&body_lines(m, t), w)));
    }
    let Some((_, _, rows)) = &*cache else {
        return;
    };
    let footer = footer_rows(m, t, w);

    // As tall as the content needs, up to the whole area: the card it is about stays in
    // view above it whenever there is room.
    let needed = rows.len() + footer.len() + 3;
    let outer = bottom_panel(area, needed.min(u16::MAX as usize) as u16);
    let waiting = app.approvals.waiting();
    let note = (waiting > 0).then(|| format!("{waiting} more waiting"));
    let title = format!("Approve tool call: {}", m.view.name);
    let inner = frame_box(
        frame,
        outer,
        t,
        &truncate(&title, 60),
        note.as_deref(),
        None,
    );

    let footer_h = (footer.len() as u16).min(inner.height.saturating_sub(1));
    let body_h = inner.height.saturating_sub(footer_h + 1);
    let body = Rect {
        height: body_h,
        ..inner
    };
    let rule = Rect {
        y: inner.y + body_h,
        height: 1,
        ..inner
    };
    let foot = Rect {
        y: rule.y + 1,
        height: footer_h,
        ..inner
    };

    let h = body_h as usize;
    let max_scroll = rows.len().saturating_sub(h);
    m.max_scroll.set(max_scroll);
    m.page.set(h.saturating_sub(1).max(1));
    let top = m.scroll.min(max_scroll);
    draw_rows(frame, body, rows, top);

    let mut rule_spans = vec![Span::styled("─".repeat(w), t.dim)];
    let expand = match (m.collapsible(), m.expanded) {
        (false, _) => "",
        (true, false) => " e show all ·",
        (true, true) => " e collapse ·",
    };
    if max_scroll > 0 || !expand.is_empty() {
        let pos = if max_scroll > 0 {
            format!(
                "{expand} ↑↓ PgUp PgDn scroll · {}/{} ",
                top + h.min(rows.len()),
                rows.len()
            )
        } else {
            format!("{} ", expand.trim_end_matches(" ·"))
        };
        let fill = w.saturating_sub(crate::text::width(&pos));
        rule_spans = vec![
            Span::styled("─".repeat(fill), t.dim),
            Span::styled(pos, t.dim),
        ];
    }
    frame.render_widget(Paragraph::new(Line::from(rule_spans)), rule);
    draw_rows(frame, foot, &footer, 0);

    if let Some(reason) = &m.reason {
        let x = foot.x + (crate::text::width(REASON_LABEL) + crate::text::width(reason)) as u16;
        let y = foot.y + footer_h.saturating_sub(2);
        if x < foot.right() {
            frame.set_cursor_position((x, y));
        }
    }
}

const REASON_LABEL: &str = "Reason (optional): ";

/// The options and the line under them that says what Enter will do.
fn footer_rows(m: &ApprovalModal, t: &Theme, w: usize) -> Vec<Line<'static>> {
    let mut opts = Vec::new();
    for (i, c) in CHOICES.iter().enumerate() {
        if i > 0 {
            opts.push(Span::raw("  "));
        }
        let text = format!("[{}] {}", c.key(), c.label());
        let style = if m.selected == Some(*c) {
            t.selected
        } else if *c == Choice::Deny {
            t.error
        } else {
            t.key
        };
        opts.push(Span::styled(text, style));
    }
    let mut lines = vec![LogicalLine::plain(opts)];
    if let Some(reason) = &m.reason {
        lines.push(LogicalLine::plain(vec![
            Span::styled(REASON_LABEL, t.bold),
            Span::styled(reason.clone(), t.field),
        ]));
        lines.push(LogicalLine::styled(
            "Enter denies with this reason · Esc denies without one",
            t.dim,
        ));
    } else {
        let hint = match m.selected {
            _ if m.guard.locked() => {
                "Typing detected, letters are off: choose with ←/→, then Enter · Esc denies"
                    .to_string()
            }
            None => {
                "Nothing selected: choose with o s a d or ←/→, then Enter · Esc denies".to_string()
            }
            Some(Choice::Deny) => "Enter: deny (you may give a reason) · Esc denies".to_string(),
            Some(c) => format!("Enter: {} · Esc denies", c.label().to_lowercase()),
        };
        let style = if m.guard.locked() { t.warn } else { t.dim };
        lines.push(LogicalLine::styled(hint, style));
    }
    wrap_all(&lines, w)
}

/// The arguments, field by field: each value whole when expanded (or short), else its start
/// and a line saying how much is left out and which key shows it.
fn argument_lines(m: &ApprovalModal, t: &Theme) -> Vec<LogicalLine> {
    let mut out = vec![LogicalLine::styled("Arguments", t.bold)];
    if m.view.args.is_empty() {
        out.push(LogicalLine::styled("  (none)", t.dim));
    }
    let cont = vec![Span::raw("    ")];
    for f in &m.view.args {
        let (lines, more) = if m.expanded || !f.collapses() {
            (f.lines.clone(), 0)
        } else {
            f.collapsed()
        };
        for (i, l) in lines.into_iter().enumerate() {
            let prefix = match (&f.key, i) {
                (Some(k), 0) => vec![Span::raw("  "), Span::styled(format!("{k}: "), t.key)],
                (None, 0) => vec![Span::raw("  ")],
                _ => cont.clone(),
            };
            out.push(LogicalLine {
                prefix,
                cont: cont.clone(),
                spans: vec![Span::styled(l, t.base)],
            });
        }
        if more > 0 {
            out.push(LogicalLine {
                prefix: cont.clone(),
                cont: cont.clone(),
                spans: vec![Span::styled(
                    format!("… {more} more characters (e shows all)"),
                    t.warn,
                )],
            });
        }
    }
    out
}

/// The body: everything the person needs to decide.
fn body_lines(m: &ApprovalModal, t: &Theme) -> Vec<LogicalLine> {
    let v = &m.view;
    let indent = [Span::raw("  ")];
    let mut out = vec![
        LogicalLine::plain(vec![
            Span::styled(format!("{} · {}", v.server, v.tool), t.bold),
            Span::styled(format!("  (model calls it {})", v.name), t.dim),
        ]),
        LogicalLine::blank(),
    ];
    out.extend(text_lines(
        &v.reason,
        t.base,
        &[Span::styled("Why: ", t.bold)],
        &[Span::raw("     ")],
    ));

    out.push(LogicalLine::blank());
    out.extend(argument_lines(m, t));

    out.push(LogicalLine::blank());
    out.push(LogicalLine::styled("Description", t.bold));
    let desc = if v.description.trim().is_empty() {
        "(none)"
    } else {
        v.description.as_str()
    };
    out.extend(text_lines(desc, t.base, &indent, &indent));

    out.push(LogicalLine::blank());
    match &v.annotations {
        Some(lines) => {
            let (label, style) = if v.believed {
                ("(believed: trusted server)", t.ok)
            } else {
                ("(not believed: untrusted server)", t.warn)
            };
            out.push(LogicalLine::plain(vec![
                Span::styled("Annotations ", t.bold),
                Span::styled(label, style),
            ]));
            for l in lines {
                out.extend(text_lines(l, t.base, &indent, &indent));
            }
        }
        None => out.push(LogicalLine::plain(vec![
            Span::styled("Annotations ", t.bold),
            Span::styled("(none sent)", t.dim),
        ])),
    }

    if let Some(diff) = &v.diff {
        out.push(LogicalLine::blank());
        out.push(LogicalLine::styled(
            "Definition changed since it was pinned",
            t.warn.patch(t.bold),
        ));
        for l in diff {
            let style = if l.starts_with("+++") || l.starts_with("---") {
                t.bold
            } else if l.starts_with('+') {
                t.diff_add
            } else if l.starts_with('-') {
                t.diff_del
            } else if l.starts_with("@@") {
                t.diff_hunk
            } else {
                t.base
            };
            out.extend(text_lines(l, style, &indent, &indent));
        }
    }
    out
}
