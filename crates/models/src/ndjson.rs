//! A bounded newline-delimited JSON reader (Ollama streams one JSON object per line, not
//! SSE): splits a byte stream into lines. A line longer than the cap is an error, not an
//! allocation.

pub const MAX_LINE_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct NdjsonParser {
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no newline, so a long line is scanned once.
    scanned: usize,
}

impl NdjsonParser {
    /// Feeds bytes; returns every non-blank line completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        self.buffer.extend_from_slice(bytes);
        let mut lines = Vec::new();
        let mut start = 0;
        let mut from = self.scanned;
        while let Some(offset) = self.buffer[from..].iter().position(|b| *b == b'\n') {
            let end = from + offset;
            push_line(&mut lines, &self.buffer[start..end]);
            start = end + 1;
            from = start;
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        if self.buffer.len() > MAX_LINE_BYTES {
            return Err(format!("a line is longer than {MAX_LINE_BYTES} bytes"));
        }
        Ok(lines)
    }

    /// The last line, when the stream ended without a newline after it.
    pub fn finish(&mut self) -> Option<String> {
        let mut lines = Vec::new();
        push_line(&mut lines, &std::mem::take(&mut self.buffer));
        self.scanned = 0;
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
