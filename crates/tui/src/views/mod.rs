//! Drawing. `render` lays the screen out (transcript, input box, status line) and draws any
//! overlay, elicitation and approval modal on top, in that order, so the modal always wins.
//! Views only read the state; the few numbers paging needs (rows, page size) are left in
//! `Cell`s for the key handlers.

mod approval;
mod chrome;
mod elicit;
mod panels;
mod transcript;

use ratatui::Frame;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Clear, Paragraph};

use crate::App;
use crate::theme::Theme;

pub(crate) fn render(app: &App, frame: &mut Frame) {
    let area = frame.area();
    if area.width == 0 || area.height == 0 {
        return;
    }
    let input_h = chrome::input_height(app, area.width);
    let [main, input, status] = Layout::vertical([
        Constraint::Min(1),
        Constraint::Length(input_h),
        Constraint::Length(1),
    ])
    .areas(area);

    transcript::render(app, frame, main);
    let input_focused = app.overlay.is_none() && !app.dialog_open();
    chrome::render_input(app, frame, input, input_focused);
    chrome::render_status(app, frame, status);

    // Overlays cover the transcript and the input box but leave the status line visible.
    let above_status = main.union(input);
    if let Some(o) = &app.overlay {
        panels::render(app, o, frame, above_status);
    }
    if app.approvals.active().is_none()
        && let Some(e) = app.elicitations.active()
    {
        elicit::render(app, e, frame, above_status);
    }
    if let Some(m) = app.approvals.active() {
        approval::render(app, m, frame, above_status);
    }
}

/// A full-width panel of (at most) `h` rows at the bottom of `area`. Dialogs sit there, over
/// the input box (idle while a dialog is open), so the transcript above stays in view and no
/// half-covered box shows around them.
pub(crate) fn bottom_panel(area: Rect, h: u16) -> Rect {
    let h = h.min(area.height);
    Rect {
        y: area.bottom() - h,
        height: h,
        ..area
    }
}

/// Clears `area` and draws a bordered box with a title (and an optional right-hand note);
/// returns the inside.
pub(crate) fn frame_box(
    frame: &mut Frame,
    area: Rect,
    theme: &Theme,
    title: &str,
    note: Option<&str>,
    hint: Option<&str>,
) -> Rect {
    frame.render_widget(Clear, area);
    let mut block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(theme.border)
        .title(Line::from(Span::styled(format!(" {title} "), theme.title)));
    if let Some(n) = note {
        block =
            block.title_top(Line::from(Span::styled(format!(" {n} "), theme.warn)).right_aligned());
    }
    if let Some(h) = hint {
        block = block.title_bottom(Line::from(Span::styled(format!(" {h} "), theme.dim)));
    }
    let inner = block.inner(area);
    frame.render_widget(block, area);
    inner
}

/// Draws rows into `area`, starting at row `top`.
pub(crate) fn draw_rows(frame: &mut Frame, area: Rect, rows: &[Line<'static>], top: usize) {
    let end = (top + area.height as usize).min(rows.len());
    let visible: Vec<Line<'static>> = rows.get(top..end).unwrap_or_default().to_vec();
    frame.render_widget(Paragraph::new(visible), area);
}
