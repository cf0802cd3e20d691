//! Everything the binary writes to a terminal (outside the full-screen UI) goes through this
//! module: [`outln!`], [`out!`] and [`errln!`] instead of `println!`, `print!` and
//! `eprintln!` (the whole formatted text passes the one sanitiser, so no argument can carry a
//! server's or a model's escape sequence), [`print_json`] and [`print_json_line`] for JSON
//! (C1 controls, DEL, bidi and invisible characters escaped, which serde_json leaves raw),
//! and the table and tool-result renderers.

use mcp_host_core::Content;
use mcp_host_core::sanitize::{strip_terminal_escapes as clean, terminal_safe};
use serde::Serialize;
use std::io::Write;

/// `println!` for the binary's output, sanitised.
macro_rules! outln {
    ($($arg:tt)*) => { $crate::output::write_out(&format!($($arg)*), true) };
}
/// `print!` for the binary's output, sanitised.
macro_rules! out {
    ($($arg:tt)*) => { $crate::output::write_out(&format!($($arg)*), false) };
}
/// `eprintln!` for errors, warnings and notes, sanitised.
macro_rules! errln {
    ($($arg:tt)*) => { $crate::output::write_err(&format!($($arg)*)) };
}
pub(crate) use {errln, out, outln};

/// Writes sanitised text to stdout. A closed pipe (`mcp-host tools | head`) is not an error
/// of the host, so write failures are ignored instead of panicking like `println!`.
pub fn write_out(text: &str, newline: bool) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(terminal_safe(text).as_bytes());
    if newline {
        let _ = o.write_all(b"\n");
    }
    let _ = o.flush();
}

/// Writes text the binary made itself (a completion script, the manual page) as it is.
pub fn write_raw(bytes: &[u8]) {
    let mut o = std::io::stdout().lock();
    let _ = o.write_all(bytes);
    let _ = o.flush();
}

/// Replaces the status line on stderr (a terminal) with `text`, cut to the terminal's width.
pub fn status_line(text: &str) {
    let width = crossterm::terminal::size().map_or(80, |(w, _)| usize::from(w));
    let mut e = std::io::stderr().lock();
    // Our own fixed sequence (return, erase the line); the text itself is sanitised.
    let _ = e.write_all(b"\r\x1b[2K");
    let _ = e.write_all(one_line(&clean(text), width.saturating_sub(1)).as_bytes());
    let _ = e.flush();
}

/// Erases the status line [`status_line`] drew.
pub fn clear_status_line() {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(b"\r\x1b[2K");
    let _ = e.flush();
}

/// Writes sanitised text to stderr without a line end (a prompt the answer follows).
pub fn write_err_inline(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = e.write_all(terminal_safe(text).as_bytes());
    let _ = e.flush();
}

/// Writes one sanitised line to stderr.
pub fn write_err(text: &str) {
    let mut e = std::io::stderr().lock();
    let _ = writeln!(e, "{}", terminal_safe(text));
}

/// Prints indented JSON that is safe on a terminal.
pub fn print_json(v: &impl Serialize) -> Result<(), serde_json::Error> {
    let text = mcp_host_core::sanitize::to_json_pretty(v)?;
    write_json(&text);
    Ok(())
}

/// Prints one line of JSON that is safe on a terminal (JSON Lines, `stream-json`).
pub fn print_json_line(v: &impl Serialize) -> Result<(), serde_json::Error> {
    let text = mcp_host_core::sanitize::to_json(v)?;
    write_json(&text);
    Ok(())
}

/// The JSON writer escaped everything; passing it through [`clean`] again would be a no-op.
fn write_json(text: &str) {
    let mut o = std::io::stdout().lock();
    let _ = writeln!(o, "{text}");
    let _ = o.flush();
}

/// A plain left-aligned table; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
    for r in rows {
        for (w, c) in widths.iter_mut().zip(r) {
            *w = (*w).max(c.chars().count());
        }
    }
    // Each line is written where it goes, cells padded to their column's width (in
    // characters) and two spaces apart, the line's trailing blanks trimmed: a string made
    // for each cell and each line was most of the cost of listing many tools.
    let mut out = String::new();
    let mut line = |cells: &[&str]| {
        let start = out.len();
        for (i, c) in cells.iter().enumerate() {
            out.push_str(c);
            if i + 1 < cells.len() {
                let width = widths.get(i).copied().unwrap_or(0);
                let pad = width.saturating_sub(c.chars().count()) + 2;
                out.extend(std::iter::repeat_n(' ', pad));
            }
        }
        let kept = out[start..].trim_end().len();
        out.truncate(start + kept);
        out.push('\n');
    };
    line(header);
    let mut cells: Vec<&str> = Vec::new();
    for r in rows {
        cells.clear();
        cells.extend(r.iter().map(String::as_str));
        line(&cells);
    }
    out
}

pub use mcp_host_core::sanitize::one_line;

/// [`table`] whose last column is cut to fit `width` characters (never below 24 of it);
/// without a width (not a terminal) nothing is cut.
pub fn table_within(header: &[&str], rows: &[Vec<String>], width: Option<usize>) -> String {
    let Some(width) = width else {
        return table(header, rows);
    };
    let last = header.len().saturating_sub(1);
    let before: usize = (0..last)
        .map(|i| {
            let cells = rows
                .iter()
                .filter_map(|r| r.get(i))
                .map(|c| c.chars().count());
            cells.chain([header[i].chars().count()]).max().unwrap_or(0) + 2
        })
        .sum();
    let room = width.saturating_sub(before).max(24);
    let cut: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let mut r = r.clone();
            if let Some(c) = r.get_mut(last) {
                *c = one_line(c, room);
            }
            r
        })
        .collect();
    table(header, &cut)
}

/// The width of the terminal on standard output, if it is one.
pub fn terminal_width() -> Option<usize> {
    use std::io::IsTerminal;
    if !std::io::stdout().is_terminal() {
        return None;
    }
    crossterm::terminal::size()
        .ok()
        .map(|(w, _)| usize::from(w))
}

/// How a content block is shown to a person.
pub fn render_content(block: &Content) -> String {
    match block {
        Content::Text { text } => clean(text),
        Content::Image { mime_type, data } => {
            format!(
                "[image {} ({} base64 bytes)]",
                mime_type.as_deref().unwrap_or("?"),
                data.len()
            )
        }
        Content::Audio { mime_type, data } => {
            format!(
                "[audio {} ({} base64 bytes)]",
                mime_type.as_deref().unwrap_or("?"),
                data.len()
            )
        }
        Content::ResourceLink { uri, name } => {
            format!(
                "[resource link {}{}]",
                clean(uri),
                name.as_deref()
                    .map(|n| format!(" {}", clean(n)))
                    .unwrap_or_default()
            )
        }
        Content::Resource { uri, text, .. } => match text {
            Some(t) => clean(t),
            None => format!("[resource {}]", clean(uri)),
        },
        Content::Unknown { raw } => clean(&raw.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines as the table wrote them when each cell was formatted on its own: padded by
    /// characters, the last cell not padded, trailing blanks trimmed (the last cell's own
    /// too), rows shorter than the header.
    #[test]
    fn table_writes_what_formatting_each_cell_wrote() {
        let header = ["NAME", "STATE", "NOTE"];
        let reference = |rows: &[Vec<String>]| {
            let mut widths: Vec<usize> = header.iter().map(|h| h.chars().count()).collect();
            for r in rows {
                for (w, c) in widths.iter_mut().zip(r) {
                    *w = (*w).max(c.chars().count());
                }
            }
            let line = |cells: Vec<&str>| {
                let mut s = String::new();
                for (i, c) in cells.iter().enumerate() {
                    if i + 1 == cells.len() {
                        s.push_str(c);
                    } else {
                        s.push_str(&format!("{c:<w$}  ", w = widths[i]));
                    }
                }
                s.trim_end().to_string() + "\n"
            };
            let mut out = line(header.to_vec());
            for r in rows {
                out.push_str(&line(r.iter().map(String::as_str).collect()));
            }
            out
        };
        let row = |cells: &[&str]| cells.iter().map(|c| c.to_string()).collect::<Vec<_>>();
        let rows = vec![
            row(&["a", "ready", "fine"]),
            row(&["ünïcødé✓", "", ""]),
            row(&["é", "✓", "padded by characters, not bytes"]),
            row(&["b", "failed", "ends in blanks \t "]),
            row(&["only"]),
            row(&["c", "x"]),
            row(&[]),
        ];
        assert_eq!(super::table(&header, &rows), reference(&rows));
        assert_eq!(super::table(&header, &[]), reference(&[]));
    }

    #[test]
    fn table_aligns_columns() {
        let t = table(&["a", "bb"], &[vec!["long".into(), "x".into()]]);
        assert_eq!(t, "a     bb\nlong  x\n");
    }

    #[test]
    fn the_last_column_is_cut_to_the_width_only_when_there_is_one() {
        let rows = [vec!["name".into(), "x".repeat(100)]];
        let t = table_within(&["N", "ERROR"], &rows, Some(40));
        assert!(t.lines().all(|l| l.chars().count() <= 40), "{t}");
        assert_eq!(
            table_within(&["N", "ERROR"], &rows, None),
            table(&["N", "ERROR"], &rows)
        );
    }

    #[test]
    fn server_text_is_cleaned_before_display() {
        let block = Content::Text {
            text: "ok\x1b]0;title\x07\x1b[2J!".into(),
        };
        assert_eq!(render_content(&block), "ok!");
        assert_eq!(one_line("a\x1b[31mb\nsecond", 10), "ab");
    }

    #[test]
    fn json_output_escapes_c1_and_bidi() {
        let v = serde_json::json!({"t": "a\u{9b}2J\u{202e}b"});
        let text = mcp_host_core::sanitize::to_json(&v).unwrap();
        assert_eq!(text, r#"{"t":"a\u009b2J\u202eb"}"#);
    }
}
