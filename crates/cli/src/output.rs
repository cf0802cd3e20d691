//! Rendering for the terminal: tables and tool results. Every server-supplied string passes
//! through the escape-sequence stripper before it is printed.

use mcp_host_core::Content;
use mcp_host_core::sanitize::strip_terminal_escapes as clean;

/// A plain left-aligned table; the last column is not padded.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
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
}

/// First line of untrusted text, cleaned and cut to `max` characters.
pub fn one_line(text: &str, max: usize) -> String {
    let first = clean(text).lines().next().unwrap_or_default().to_string();
    if first.chars().count() > max {
        first
            .chars()
            .take(max.saturating_sub(1))
            .collect::<String>()
            + "…"
    } else {
        first
    }
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

    #[test]
    fn table_aligns_columns() {
        let t = table(&["a", "bb"], &[vec!["long".into(), "x".into()]]);
        assert_eq!(t, "a     bb\nlong  x\n");
    }

    #[test]
    fn server_text_is_cleaned_before_display() {
        let block = Content::Text {
            text: "ok\x1b]0;title\x07\x1b[2J!".into(),
        };
        assert_eq!(render_content(&block), "ok!");
        assert_eq!(one_line("a\x1b[31mb\nsecond", 10), "ab");
    }
}
