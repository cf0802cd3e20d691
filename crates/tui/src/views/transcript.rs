//! The transcript and its scrollback: user messages, the model's answers (markdown), dim
//! notices, and tool call cards (state, elapsed or duration, arguments, progress, result
//! preview, provenance badge). Everything is wrapped here into rows so scrolling is by row.

use std::time::Instant;

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Clear, Paragraph};

use crate::state::{CallView, Entry, ProgressView, Scroll};
use crate::text::{LogicalLine, fmt_elapsed, fmt_num, fmt_took, text_lines, width, wrap, wrap_all};
use crate::theme::Theme;
use crate::views::draw_rows;
use crate::{App, CallState, markdown};

/// Width of a progress bar, in cells.
const BAR_WIDTH: usize = 20;

pub(super) fn render(app: &App, frame: &mut Frame, area: Rect) {
    let w = area.width as usize;
    let h = area.height as usize;
    let rows = rows(app, w);
    let bottom_top = rows.len().saturating_sub(h);
    let top = match app.transcript.scroll {
        Scroll::Follow => bottom_top,
        Scroll::At(t) => t.min(bottom_top),
    };
    app.transcript.last_rows.set(rows.len());
    app.transcript.last_height.set(h);
    draw_rows(frame, area, &rows, top);

    // When the person scrolled up, say so, and how to get back.
    let below = rows.len().saturating_sub(top + h);
    if below > 0 && h > 1 {
        let note = format!(" ↓ {below} more lines · PageDown ");
        let nw = (width(&note) as u16).min(area.width);
        let r = Rect {
            x: area.right() - nw,
            y: area.bottom() - 1,
            width: nw,
            height: 1,
        };
        frame.render_widget(Clear, r);
        frame.render_widget(
            Paragraph::new(Line::from(Span::styled(note, app.theme.selected))),
            r,
        );
    }
}

/// Every transcript row at `width`.
fn rows(app: &App, width: usize) -> Vec<Line<'static>> {
    let t = &app.theme;
    let mut out = Vec::new();
    if app.transcript.entries.is_empty() {
        let hello = LogicalLine::styled(
            "mcp-host · type a message and press Enter · /help lists keys and commands",
            t.dim,
        );
        wrap(&hello, width, &mut out);
        return out;
    }
    let now = app.now();
    for (i, e) in app.transcript.entries.iter().enumerate() {
        if i > 0 {
            out.push(Line::default());
        }
        match e {
            Entry::User(text) => {
                let lines = text_lines(
                    text,
                    t.base,
                    &[Span::styled("› ", t.user)],
                    &[Span::raw("  ")],
                );
                out.extend(wrap_all(&lines, width));
            }
            Entry::Answer(a) => markdown::layout(a.blocks(t), width, &mut out),
            Entry::Notice(text) => {
                let lines = text_lines(
                    text,
                    t.notice,
                    &[Span::styled("· ", t.notice)],
                    &[Span::raw("  ")],
                );
                out.extend(wrap_all(&lines, width));
            }
            Entry::Call(c) => out.extend(wrap_all(&card_lines(c, t, now), width)),
        }
    }
    out
}

/// The state label of a card, with its icon and style.
fn state_label(c: &CallView, t: &Theme, now: Instant) -> Span<'static> {
    let took = c.took_ms.map(fmt_took);
    let elapsed = fmt_elapsed(now.saturating_duration_since(c.started));
    let (text, style) = match &c.state {
        CallState::WaitingForApproval => ("◆ waiting for approval".to_string(), t.warn),
        CallState::Running => (format!("● running {elapsed}"), t.running),
        CallState::Done => (format!("✓ done in {}", took.unwrap_or_default()), t.ok),
        CallState::Failed => (
            format!("✗ failed after {}", took.unwrap_or_default()),
            t.error,
        ),
        CallState::Cancelled => (
            format!("⊘ cancelled after {}", took.unwrap_or_default()),
            t.dim,
        ),
        CallState::Denied => ("⊘ denied".to_string(), t.error),
        CallState::Background(job) => (
            format!("↻ moved to the background ({job})"),
            t.background_job,
        ),
    };
    Span::styled(text, style)
}

/// A card as logical lines: header, arguments, progress, preview.
pub(super) fn card_lines(c: &CallView, t: &Theme, now: Instant) -> Vec<LogicalLine> {
    let mut out = Vec::new();
    let mut header = vec![
        Span::styled(format!("{} · {}", c.server, c.tool), t.bold),
        Span::raw("  "),
        state_label(c, t, now),
    ];
    header.push(Span::raw("  "));
    header.push(if c.provenance.is_empty() {
        Span::styled("user only", t.dim)
    } else {
        Span::styled(format!("after: {}", c.provenance.join(", ")), t.tainted)
    });
    out.push(LogicalLine::with_prefix(
        vec![Span::styled("▸ ", t.dim)],
        header,
    ));

    let gutter = || vec![Span::styled("  │ ", t.dim)];
    for a in &c.args {
        out.push(LogicalLine {
            prefix: gutter(),
            cont: gutter(),
            spans: vec![Span::styled(a.clone(), t.base)],
        });
    }
    let live = matches!(c.state, CallState::Running | CallState::Background(_));
    if let (Some(p), true) = (&c.progress, live) {
        out.push(LogicalLine {
            prefix: gutter(),
            cont: gutter(),
            spans: progress_spans(p, t),
        });
    }
    let preview_style = if c.state == CallState::Failed {
        t.error
    } else {
        t.dim
    };
    for (i, p) in c.preview.iter().enumerate() {
        let lead = if i == 0 { "  ↳ " } else { "    " };
        out.push(LogicalLine {
            prefix: vec![Span::styled(lead, t.dim)],
            cont: vec![Span::raw("    ")],
            spans: vec![Span::styled(p.clone(), preview_style)],
        });
    }
    out
}

/// `[██████░░░░] 45% (45/100) message`, or a count when the total is unknown.
fn progress_spans(p: &ProgressView, t: &Theme) -> Vec<Span<'static>> {
    let mut spans = Vec::new();
    match p.total {
        Some(total) if total > 0.0 => {
            let ratio = (p.progress / total).clamp(0.0, 1.0);
            let filled = (ratio * BAR_WIDTH as f64).round() as usize;
            spans.push(Span::styled(
                format!("[{}{}]", "█".repeat(filled), "░".repeat(BAR_WIDTH - filled)),
                t.progress,
            ));
            spans.push(Span::raw(format!(
                " {:.0}% ({}/{})",
                ratio * 100.0,
                fmt_num(p.progress),
                fmt_num(total)
            )));
        }
        _ => spans.push(Span::styled(
            format!("progress {}", fmt_num(p.progress)),
            t.progress,
        )),
    }
    if let Some(m) = &p.message
        && !m.is_empty()
    {
        spans.push(Span::styled(format!("  {m}"), t.dim));
    }
    spans
}
