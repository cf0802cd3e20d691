//! Elicitation dialogs. The form: message and fields in a body that scrolls to keep the
//! focused field in view, with the buttons and key hints fixed below. The URL prompt: the
//! server's message, the full URL as plain text (never a clickable link) and its host on a
//! line of its own, then the question.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};

use crate::App;
use crate::elicit::{BUTTONS, Button, Elicit, Field, FieldKind, Form, UrlPrompt};
use crate::text::{LogicalLine, fmt_num, text_lines, width, wrap_all};
use crate::theme::Theme;
use crate::views::{bottom_panel, draw_rows, frame_box};

/// Text fields show at least this many cells, so an empty one still looks like a field.
const FIELD_MIN_WIDTH: usize = 24;

pub(super) fn render(app: &App, e: &Elicit, frame: &mut Frame, area: Rect) {
    let waiting = app.elicitations.waiting();
    let note = (waiting > 0).then(|| format!("{waiting} more waiting"));
    match e {
        Elicit::Form(f) => form(app, f, note.as_deref(), frame, area),
        Elicit::Url(u) => url(app, u, note.as_deref(), frame, area),
    }
}

/// A field's type and limits, shown next to its title.
fn hint(f: &Field) -> String {
    let range = |min: Option<f64>, max: Option<f64>| match (min, max) {
        (Some(a), Some(b)) => format!(", {}–{}", fmt_num(a), fmt_num(b)),
        (Some(a), None) => format!(", ≥ {}", fmt_num(a)),
        (None, Some(b)) => format!(", ≤ {}", fmt_num(b)),
        (None, None) => String::new(),
    };
    match &f.kind {
        FieldKind::Text {
            format,
            min_len,
            max_len,
        } => {
            let mut parts = Vec::new();
            if let Some(fm) = format {
                parts.push(fm.clone());
            }
            match (min_len, max_len) {
                (Some(a), Some(b)) => parts.push(format!("{a}–{b} chars")),
                (Some(a), None) => parts.push(format!("≥ {a} chars")),
                (None, Some(b)) => parts.push(format!("≤ {b} chars")),
                (None, None) => {}
            }
            if parts.is_empty() {
                String::new()
            } else {
                format!("({})", parts.join(", "))
            }
        }
        FieldKind::Number { min, max } => format!("(number{})", range(*min, *max)),
        FieldKind::Integer { min, max } => format!("(whole number{})", range(*min, *max)),
        FieldKind::Bool => "(Space toggles)".into(),
        FieldKind::Enum { .. } => "(←/→ choose)".into(),
    }
}

/// The lines of one field, and whether it is focused.
fn field_lines(f: &Field, focused: bool, t: &Theme) -> Vec<LogicalLine> {
    let marker = if focused { "› " } else { "  " };
    let mut title = vec![
        Span::styled(marker, t.key),
        Span::styled(f.title.clone(), t.bold),
    ];
    if f.required {
        title.push(Span::styled(" *", t.error));
    }
    let h = hint(f);
    if !h.is_empty() {
        title.push(Span::styled(format!("  {h}"), t.dim));
    }
    let value_style = if focused { t.field_focus } else { t.field };
    let value = match &f.kind {
        FieldKind::Bool => {
            if f.checked {
                "[x] yes".to_string()
            } else {
                "[ ] no".to_string()
            }
        }
        FieldKind::Enum { labels, .. } => {
            let label = f
                .choice
                .and_then(|i| labels.get(i))
                .cloned()
                .unwrap_or_else(|| "(choose)".into());
            format!("◀ {label} ▶")
        }
        _ => {
            let fill = FIELD_MIN_WIDTH.saturating_sub(width(&f.text));
            format!("{}{}", f.text, " ".repeat(fill))
        }
    };
    let indent = [Span::raw("    ")];
    let mut out = vec![
        LogicalLine::with_prefix(Vec::new(), title),
        LogicalLine {
            prefix: indent.to_vec(),
            cont: indent.to_vec(),
            spans: vec![Span::styled(value, value_style)],
        },
    ];
    if let Some(d) = &f.description {
        out.extend(text_lines(d, t.dim, &indent, &indent));
    }
    if let Some(e) = &f.error {
        out.push(LogicalLine {
            prefix: indent.to_vec(),
            cont: indent.to_vec(),
            spans: vec![Span::styled(format!("! {e}"), t.error)],
        });
    }
    out
}

fn form(app: &App, f: &Form, note: Option<&str>, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let w = area.width.saturating_sub(2) as usize;
    if area.height < 6 || w < 10 {
        return;
    }

    // Body rows, remembering where the focused field's rows are.
    let mut rows = wrap_all(&text_lines(&f.message, t.base, &[], &[]), w);
    rows.push(Line::default());
    let mut focus_range = (0, 0);
    for (i, field) in f.fields.iter().enumerate() {
        let start = rows.len();
        rows.extend(wrap_all(&field_lines(field, f.focus == i, t), w));
        if f.focus == i {
            focus_range = (start, rows.len());
        }
        rows.push(Line::default());
    }

    let mut buttons = Vec::new();
    for (i, b) in BUTTONS.iter().enumerate() {
        if i > 0 {
            buttons.push(Span::raw("  "));
        }
        let label = match b {
            Button::Submit => "[ Submit ]",
            Button::Decline => "[ Decline ]",
            Button::Cancel => "[ Cancel ]",
        };
        let style = if f.button() == Some(*b) {
            t.selected
        } else {
            t.key
        };
        buttons.push(Span::styled(label, style));
    }
    if f.invalid {
        buttons.push(Span::styled("  fix the marked fields", t.error));
    }
    let key_hint = if f.button().is_some() {
        "←/→ button · Enter activates · d declines · Tab/↑ fields · Esc cancels"
    } else {
        "Tab/↑↓ move · Space/←→ change · Enter on Submit sends · Esc cancels"
    };
    let footer = wrap_all(
        &[
            LogicalLine::plain(buttons),
            LogicalLine::styled(key_hint, t.dim),
        ],
        w,
    );

    let needed = rows.len() + footer.len() + 2;
    let outer = bottom_panel(area, needed.min(u16::MAX as usize) as u16);
    let title = format!("{} asks for input", f.server);
    let inner = frame_box(frame, outer, t, &title, note, None);
    let footer_h = (footer.len() as u16).min(inner.height.saturating_sub(1));
    let body = Rect {
        height: inner.height - footer_h,
        ..inner
    };
    let foot = Rect {
        y: body.bottom(),
        height: footer_h,
        ..inner
    };
    let h = body.height as usize;
    // Scroll just enough to show the whole focused field (its top when it is taller).
    let top = focus_range.1.saturating_sub(h).min(focus_range.0);
    draw_rows(frame, body, &rows, top);
    draw_rows(frame, foot, &footer, 0);

    // The cursor sits at the end of the focused text field.
    if let Some(field) = f.fields.get(f.focus)
        && field.is_textual()
    {
        // The value row comes right after the title's rows.
        let title_rows = wrap_all(&field_lines(field, true, t)[..1], w).len();
        let value_row = focus_range.0 + title_rows;
        let x = inner.x as usize + 4 + width(&field.text);
        if value_row >= top && value_row < top + h && x < inner.right() as usize {
            frame.set_cursor_position((x as u16, body.y + (value_row - top) as u16));
        }
    }
}

fn url(app: &App, u: &UrlPrompt, note: Option<&str>, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let w = area.width.saturating_sub(2) as usize;
    let mut lines = text_lines(&u.message, t.base, &[], &[]);
    lines.push(LogicalLine::blank());
    lines.push(LogicalLine::styled("URL:", t.bold));
    lines.push(LogicalLine::with_prefix(
        vec![Span::raw("  ")],
        vec![Span::styled(u.url.clone(), t.base)],
    ));
    if let Some(host) = &u.host {
        lines.push(LogicalLine::plain(vec![
            Span::styled("Host: ", t.bold),
            Span::styled(host.clone(), t.warn),
        ]));
    }
    lines.push(LogicalLine::blank());
    lines.push(LogicalLine::plain(vec![
        Span::styled("Open this URL? ", t.bold),
        Span::styled("[y] open", t.key),
        Span::raw(" / "),
        Span::styled("[n] decline", t.key),
    ]));
    if u.guard.locked() {
        lines.push(LogicalLine::styled(
            "Typing detected, letters are off: press Tab, then y or n · Esc declines",
            t.warn,
        ));
    } else {
        lines.push(LogicalLine::styled(
            "The host opens it in your browser only if you press y · Esc declines",
            t.dim,
        ));
    }
    let rows = wrap_all(&lines, w.max(1));
    let outer = bottom_panel(area, (rows.len() + 2).min(u16::MAX as usize) as u16);
    let title = format!("{} asks you to open a link", u.server);
    let inner = frame_box(frame, outer, t, &title, note, None);
    // On a screen too short for all of it the top stays: the person must see what they are
    // asked to open before the question about it.
    draw_rows(frame, inner, &rows, 0);
}
