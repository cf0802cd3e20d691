//! Text plumbing shared by every view: the sanitisers that all outside text passes through
//! when it enters the state, the word-wrapper that turns styled logical lines into screen rows
//! (so views know their height before drawing, which scrolling needs), and small formatters
//! for durations, counts and truncation.

use std::time::Duration;

use mcp_host_core::sanitize::strip_terminal_escapes;
use ratatui::style::Style;
use ratatui::text::{Line, Span};
use unicode_width::{UnicodeWidthChar, UnicodeWidthStr};

/// How many spaces a tab becomes: cells must never hold a tab, whose width the terminal
/// decides, or the layout drifts.
const TAB: &str = "    ";

/// Sanitises multi-line text from outside: terminal escapes and control characters go,
/// tabs become spaces, `\n` stays.
pub(crate) fn clean_text(s: &str) -> String {
    let stripped = strip_terminal_escapes(s);
    let mut out = String::with_capacity(stripped.len());
    for c in stripped.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str(TAB),
            // `strip_terminal_escapes` already drops these; this is the belt to its braces,
            // because a control byte in a cell would reach the terminal verbatim.
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out
}

/// Sanitises text shown on one row (names, states, labels): like [`clean_text`], with line
/// breaks folded into spaces.
pub(crate) fn clean_line(s: &str) -> String {
    clean_text(s).replace('\n', " ")
}

/// Sanitises pasted text: a paste keeps its line structure, including old `\r` line ends,
/// which the escape stripper would otherwise delete (gluing two lines together).
pub(crate) fn clean_paste(s: &str) -> String {
    clean_text(&s.replace("\r\n", "\n").replace('\r', "\n"))
}

/// Display width of a string in terminal cells.
pub(crate) fn width(s: &str) -> usize {
    UnicodeWidthStr::width(s)
}

fn char_width(c: char) -> usize {
    UnicodeWidthChar::width(c).unwrap_or(0)
}

/// Cuts `s` to at most `max` cells, ending with `…` when something was cut.
pub(crate) fn truncate(s: &str, max: usize) -> String {
    if width(s) <= max {
        return s.to_string();
    }
    if max == 0 {
        return String::new();
    }
    let mut out = String::new();
    let mut used = 0;
    for c in s.chars() {
        let w = char_width(c);
        if used + w + 1 > max {
            break;
        }
        used += w;
        out.push(c);
    }
    out.push('…');
    out
}

/// Pads `s` with spaces (or truncates it) to exactly `w` cells, for table columns.
pub(crate) fn pad(s: &str, w: usize) -> String {
    let t = truncate(s, w);
    let fill = w.saturating_sub(width(&t));
    format!("{t}{}", " ".repeat(fill))
}

/// `1234` → `1.2k`, `2_500_000` → `2.5M`: token counts stay short on the status line.
pub(crate) fn fmt_count(n: u64) -> String {
    if n < 1000 {
        n.to_string()
    } else if n < 1_000_000 {
        format!("{:.1}k", n as f64 / 1000.0)
    } else {
        format!("{:.1}M", n as f64 / 1_000_000.0)
    }
}

/// A running call's elapsed time: whole seconds, then minutes, then hours.
pub(crate) fn fmt_elapsed(d: Duration) -> String {
    let s = d.as_secs();
    if s < 60 {
        format!("{s}s")
    } else if s < 3600 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{}h{:02}m", s / 3600, (s % 3600) / 60)
    }
}

/// A finished call's duration, with sub-second precision where it matters.
pub(crate) fn fmt_took(ms: u64) -> String {
    if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        format!("{:.1}s", ms as f64 / 1000.0)
    } else {
        fmt_elapsed(Duration::from_millis(ms))
    }
}

/// A number without a pointless `.0`.
pub(crate) fn fmt_num(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x:.2}")
    }
}

/// One logical line before wrapping: the spans, plus what goes in front of the first row and
/// of every continuation row (list bullets, quote bars, card gutters).
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct LogicalLine {
    pub prefix: Vec<Span<'static>>,
    pub cont: Vec<Span<'static>>,
    pub spans: Vec<Span<'static>>,
}

impl LogicalLine {
    /// A line with no prefix.
    pub(crate) fn plain(spans: Vec<Span<'static>>) -> Self {
        Self {
            prefix: Vec::new(),
            cont: Vec::new(),
            spans,
        }
    }

    /// One styled string, no prefix.
    pub(crate) fn styled(text: impl Into<String>, style: Style) -> Self {
        Self::plain(vec![Span::styled(text.into(), style)])
    }

    /// A line whose continuation rows are indented by the prefix's width.
    pub(crate) fn with_prefix(prefix: Vec<Span<'static>>, spans: Vec<Span<'static>>) -> Self {
        let w: usize = prefix.iter().map(|s| s.width()).sum();
        Self {
            prefix,
            cont: vec![Span::raw(" ".repeat(w))],
            spans,
        }
    }

    /// An empty row.
    pub(crate) fn blank() -> Self {
        Self::default()
    }
}

/// A character with its style, the unit the wrapper works on.
type Cell = (char, Style);

/// Splits text with `\n` into logical lines, each with the same style and prefixes.
pub(crate) fn text_lines(
    text: &str,
    style: Style,
    prefix: &[Span<'static>],
    cont: &[Span<'static>],
) -> Vec<LogicalLine> {
    text.split('\n')
        .enumerate()
        .map(|(i, l)| LogicalLine {
            prefix: if i == 0 {
                prefix.to_vec()
            } else {
                cont.to_vec()
            },
            cont: cont.to_vec(),
            spans: vec![Span::styled(l.to_string(), style)],
        })
        .collect()
}

/// Wraps every line to `width` cells.
pub(crate) fn wrap_all(lines: &[LogicalLine], width: usize) -> Vec<Line<'static>> {
    let mut out = Vec::new();
    for l in lines {
        wrap(l, width, &mut out);
    }
    out
}

/// Word-wraps one logical line into rows of at most `width` cells. Words longer than a row
/// are split; spaces at a wrap point are dropped.
pub(crate) fn wrap(line: &LogicalLine, width: usize, out: &mut Vec<Line<'static>>) {
    let prefix_w: usize = line.prefix.iter().map(|s| s.width()).sum();
    let cont_w: usize = line.cont.iter().map(|s| s.width()).sum();
    let first_avail = width.saturating_sub(prefix_w).max(1);
    let cont_avail = width.saturating_sub(cont_w).max(1);

    let cells: Vec<Cell> = line
        .spans
        .iter()
        .flat_map(|s| s.content.chars().map(move |c| (c, s.style)))
        .collect();

    let mut rows: Vec<Vec<Cell>> = Vec::new();
    let mut cur: Vec<Cell> = Vec::new();
    let mut cur_w = 0usize;
    let avail = |rows: &Vec<Vec<Cell>>| {
        if rows.is_empty() {
            first_avail
        } else {
            cont_avail
        }
    };

    for token in tokens(&cells) {
        let tw: usize = token.iter().map(|(c, _)| char_width(*c)).sum();
        let is_space = token.first().is_some_and(|(c, _)| *c == ' ');
        if is_space {
            if cur.is_empty() && !rows.is_empty() {
                continue;
            }
            if cur_w + tw <= avail(&rows) {
                cur.extend_from_slice(token);
                cur_w += tw;
            } else {
                rows.push(std::mem::take(&mut cur));
                cur_w = 0;
            }
            continue;
        }
        if cur_w + tw <= avail(&rows) {
            cur.extend_from_slice(token);
            cur_w += tw;
            continue;
        }
        if tw <= cont_avail && !cur.is_empty() {
            rows.push(std::mem::take(&mut cur));
            cur.extend_from_slice(token);
            cur_w = tw;
            continue;
        }
        // Longer than a row: start it on a fresh row, then split it where rows fill.
        if !cur.is_empty() {
            rows.push(std::mem::take(&mut cur));
            cur_w = 0;
        }
        for &(c, st) in token {
            let w = char_width(c);
            if cur_w + w > avail(&rows) && !cur.is_empty() {
                rows.push(std::mem::take(&mut cur));
                cur_w = 0;
            }
            cur.push((c, st));
            cur_w += w;
        }
    }
    if !cur.is_empty() || rows.is_empty() {
        rows.push(cur);
    }

    for (i, mut row) in rows.into_iter().enumerate() {
        while row.last().is_some_and(|(c, _)| *c == ' ') {
            row.pop();
        }
        let mut spans = if i == 0 {
            line.prefix.clone()
        } else {
            line.cont.clone()
        };
        spans.extend(merge(&row));
        out.push(Line::from(spans));
    }
}

/// Splits cells into runs of spaces and runs of non-spaces.
fn tokens(cells: &[Cell]) -> Vec<&[Cell]> {
    let mut out = Vec::new();
    let mut start = 0;
    for i in 1..=cells.len() {
        let boundary = i == cells.len() || ((cells[i].0 == ' ') != (cells[i - 1].0 == ' '));
        if boundary && start < i {
            out.push(&cells[start..i]);
            start = i;
        }
    }
    out
}

/// Joins neighbouring cells of the same style back into spans.
fn merge(cells: &[Cell]) -> Vec<Span<'static>> {
    let mut out: Vec<Span<'static>> = Vec::new();
    let mut buf = String::new();
    let mut style: Option<Style> = None;
    for &(c, st) in cells {
        if style != Some(st) {
            if let Some(s) = style {
                out.push(Span::styled(std::mem::take(&mut buf), s));
            }
            style = Some(st);
        }
        buf.push(c);
    }
    if let Some(s) = style {
        out.push(Span::styled(buf, s));
    }
    out
}

/// The plain text of a row, for tests and width checks.
#[cfg(test)]
pub(crate) fn line_text(line: &Line<'_>) -> String {
    line.spans.iter().map(|s| s.content.as_ref()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cleaning_removes_escapes_controls_and_tabs() {
        let s = clean_text("a\x1b[2Jb\tc\r\nd\u{9b}31me\u{85}f");
        assert_eq!(s, "ab    c\ndef");
        assert_eq!(clean_line("x\ny"), "x y");
        assert_eq!(clean_paste("a\r\nb\rc"), "a\nb\nc");
    }

    #[test]
    fn wraps_words_and_splits_long_ones() {
        let l = LogicalLine::with_prefix(
            vec![Span::raw("> ")],
            vec![Span::raw("hello wide world abcdefghijkl")],
        );
        let rows: Vec<String> = wrap_all(&[l], 10).iter().map(line_text).collect();
        assert_eq!(
            rows,
            vec!["> hello", "  wide", "  world", "  abcdefgh", "  ijkl"]
        );
    }

    #[test]
    fn empty_line_is_one_row() {
        let rows = wrap_all(&[LogicalLine::blank()], 10);
        assert_eq!(rows.len(), 1);
    }

    #[test]
    fn formats() {
        assert_eq!(fmt_count(999), "999");
        assert_eq!(fmt_count(1234), "1.2k");
        assert_eq!(fmt_elapsed(Duration::from_secs(65)), "1m05s");
        assert_eq!(fmt_took(340), "340ms");
        assert_eq!(fmt_took(1260), "1.3s");
        assert_eq!(truncate("abcdef", 4), "abc…");
        assert_eq!(pad("ab", 4), "ab  ");
        assert_eq!(fmt_num(3.0), "3");
    }
}
