//! A bounded newline-delimited JSON reader (Ollama streams one JSON object per line, not
//! SSE): splits a byte stream into lines. A line longer than the cap is an error, not an
//! allocation.

use crate::lines::FedLines;

pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct NdjsonParser {
    lines: FedLines,
}

impl NdjsonParser {
    /// Feeds bytes; returns every non-blank line completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        let mut lines = Vec::new();
        self.lines.feed(bytes, MAX_LINE_BYTES, |line| {
            push_line(&mut lines, line);
            Ok(())
        })?;
        Ok(lines)
    }

    /// The last line, when the stream ended without a newline after it.
    pub fn finish(&mut self) -> Option<String> {
        let mut lines = Vec::new();
        push_line(&mut lines, &self.lines.take_rest());
        lines.pop()
    }
}

fn push_line(lines: &mut Vec<String>, bytes: &[u8]) {
    let line = String::from_utf8_lossy(bytes);
    let line = line.trim();
    if !line.is_empty() {
        lines.push(line.to_string());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_chunks_are_joined_and_blank_ones_skipped() {
        let mut p = NdjsonParser::default();
        assert!(p.feed(b"{\"a\"").unwrap().is_empty());
        assert_eq!(
            p.feed(b":1}\n\n{\"b\":2}\r\n{\"c\"").unwrap(),
            ["{\"a\":1}", "{\"b\":2}"]
        );
        assert_eq!(p.feed(b":3}").unwrap(), Vec::<String>::new());
        assert_eq!(p.finish().as_deref(), Some("{\"c\":3}"));
        assert_eq!(p.finish(), None);
    }

    #[test]
    fn a_line_over_the_cap_is_an_error() {
        let mut p = NdjsonParser::default();
        let chunk = vec![b'x'; 1024 * 1024];
        let mut result = Ok(Vec::new());
        for _ in 0..5 {
            result = p.feed(&chunk);
            if result.is_err() {
                break;
            }
        }
        assert!(result.is_err());
    }
}
