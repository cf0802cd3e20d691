//! The input box (wrapped by character so the cursor position is exact, growing to a few
//! rows and then scrolling) and the one-line status line (model, servers, tokens, mode,
//! busy).

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Block, BorderType, Paragraph};
use unicode_width::UnicodeWidthChar;

use crate::App;
use crate::text::{fmt_count, truncate, width};

/// The input box grows to this many text rows, then scrolls.
const MAX_INPUT_ROWS: usize = 5;
/// What the status line says when no model is configured: the fix, not just the fact.
pub(crate) const NO_MODEL: &str = "no model — set -m provider:model or MCP_HOST_MODEL";
const PLACEHOLDER: &str = "Type a message · Enter sends · Alt-Enter new line · /help";

/// Splits the input into rows of at most `w` cells and finds the cursor's row and column.
fn layout_input(text: &str, cursor: usize, w: usize) -> (Vec<String>, (usize, usize)) {
    let w = w.max(1);
    let mut rows = Vec::new();
    let mut cur = String::new();
    let mut col = 0usize;
    let mut pos = (0, 0);
    for (i, c) in text.char_indices() {
        if c == '\n' {
            if i == cursor {
                pos = (rows.len(), col);
            }
            rows.push(std::mem::take(&mut cur));
            col = 0;
            continue;
        }
        let cw = UnicodeWidthChar::width(c).unwrap_or(0);
        if col + cw > w && col > 0 {
            rows.push(std::mem::take(&mut cur));
            col = 0;
        }
        if i == cursor {
            pos = (rows.len(), col);
        }
        cur.push(c);
        col += cw;
    }
    if cursor >= text.len() {
        if col >= w {
            rows.push(std::mem::take(&mut cur));
            col = 0;
        }
        pos = (rows.len(), col);
    }
    rows.push(cur);
    (rows, pos)
}

pub(super) fn input_height(app: &App, total_width: u16) -> u16 {
    let inner = total_width.saturating_sub(2) as usize;
    let (rows, _) = layout_input(app.input.text(), app.input.cursor(), inner);
    (rows.len().clamp(1, MAX_INPUT_ROWS) + 2) as u16
}

pub(super) fn render_input(app: &App, frame: &mut Frame, area: Rect, focused: bool) {
    let t = &app.theme;
    let block = Block::bordered()
        .border_type(BorderType::Rounded)
        .border_style(if focused { t.border } else { t.dim });
    let inner = block.inner(area);
    frame.render_widget(block, area);
    if inner.width == 0 || inner.height == 0 {
        return;
    }
    let text = app.input.text();
    if text.is_empty() {
        let hint = truncate(PLACEHOLDER, inner.width as usize);
        frame.render_widget(Paragraph::new(Span::styled(hint, t.dim)), inner);
        if focused {
            frame.set_cursor_position((inner.x, inner.y));
        }
        return;
    }
    let (rows, (crow, ccol)) = layout_input(text, app.input.cursor(), inner.width as usize);
    let h = inner.height as usize;
    let top = (crow + 1).saturating_sub(h);
    let visible: Vec<Line<'static>> = rows
        .iter()
        .skip(top)
        .take(h)
        .map(|r| Line::from(Span::styled(r.clone(), t.base)))
        .collect();
    frame.render_widget(Paragraph::new(visible), inner);
    if focused {
        frame.set_cursor_position((inner.x + ccol as u16, inner.y + (crow - top) as u16));
    }
}

/// The facts on the right of the status line, in a long and a short wording.
fn status_facts(app: &App, short: bool) -> String {
    let enabled: Vec<_> = app.servers.iter().filter(|s| s.enabled).collect();
    let ready = enabled
        .iter()
        .filter(|s| s.state.eq_ignore_ascii_case("ready"))
        .count();
    let mut facts = vec![format!("{ready}/{} servers", enabled.len())];
    let st = &app.status;
    if st.model.is_some() || st.input_tokens > 0 || st.output_tokens > 0 {
        let (i, o) = (fmt_count(st.input_tokens), fmt_count(st.output_tokens));
        facts.push(if short {
            format!("{i}/{o} tok")
        } else {
            format!("in {i} out {o}")
        });
    }
    if !st.mode.is_empty() {
        facts.push(if short {
            st.mode.clone()
        } else {
            format!("mode {}", st.mode)
        });
    }
    let jobs = app.transcript.background_jobs();
    if !jobs.is_empty() {
        facts.push(if short {
            format!("{} bg", jobs.len())
        } else {
            format!("background: {}", jobs.join(", "))
        });
    }
    if app.busy {
        facts.push("working…".to_string());
    }
    facts.join(" │ ")
}

pub(super) fn render_status(app: &App, frame: &mut Frame, area: Rect) {
    let t = &app.theme;
    let (left, left_style) = match (&app.flash, &app.status.model) {
        (Some(f), _) => (f.as_str(), t.status_warn),
        (None, Some(m)) => (m.as_str(), t.status),
        (None, None) => (NO_MODEL, t.status_warn),
    };
    let w = area.width as usize;
    // Padding and the separator between the two halves.
    let chrome = 4;
    let long = status_facts(app, false);
    let right = if width(left) + width(&long) + chrome <= w {
        long
    } else {
        status_facts(app, true)
    };
    // The facts are short and always shown; the model name gives way if it must.
    let room = w.saturating_sub(width(&right) + chrome);
    let left = truncate(left, room.max(1));
    let line = Line::from(vec![
        Span::raw(" "),
        Span::styled(left, left_style),
        Span::raw(" │ "),
        Span::raw(right),
    ]);
    frame.render_widget(Paragraph::new(line).style(t.status), area);
}

#[cfg(test)]
mod tests {
    use super::layout_input;

    #[test]
    fn input_wraps_by_character_and_tracks_the_cursor() {
        let (rows, pos) = layout_input("abcdef\ngh", 9, 4);
        assert_eq!(rows, vec!["abcd", "ef", "gh"]);
        assert_eq!(pos, (2, 2));
        let (rows, pos) = layout_input("abcd", 4, 4);
        assert_eq!(rows, vec!["abcd", ""]);
        assert_eq!(pos, (1, 0));
        let (_, pos) = layout_input("abcdef", 4, 4);
        assert_eq!(pos, (1, 0));
    }
}
