//! A bounded Server-Sent Events reader: splits a byte stream into events' `data` payloads.
//! A single event larger than the cap is an error, not an allocation.

pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct SseParser {
    buffer: Vec<u8>,
    data: String,
}

impl SseParser {
    /// Feeds bytes; returns the `data` payloads of every event completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        self.buffer.extend_from_slice(bytes);
        let mut events = Vec::new();
        while let Some(end) = self.buffer.iter().position(|b| *b == b'\n') {
            let line: Vec<u8> = self.buffer.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end_matches(['\n', '\r']);
            if line.is_empty() {
                if !self.data.is_empty() {
                    events.push(std::mem::take(&mut self.data));
                }
            } else if let Some(rest) = line.strip_prefix("data:") {
                if !self.data.is_empty() {
                    self.data.push('\n');
                }
                self.data.push_str(rest.strip_prefix(' ').unwrap_or(rest));
            }
            // Comments (":") and other fields (event, id, retry) are not needed here.
            if self.data.len() > MAX_EVENT_BYTES {
                return Err(format!("an event is larger than {MAX_EVENT_BYTES} bytes"));
            }
        }
        if self.buffer.len() > MAX_EVENT_BYTES {
            return Err(format!("a line is longer than {MAX_EVENT_BYTES} bytes"));
        }
        Ok(events)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_across_chunks_are_joined() {
        let mut p = SseParser::default();
        assert!(p.feed(b"data: {\"a\"").unwrap().is_empty());
        assert_eq!(
            p.feed(b":1}\n\n: keep-alive\n\ndata: [DONE]\n\n").unwrap(),
            ["{\"a\":1}", "[DONE]"]
        );
        assert_eq!(p.feed(b"data: x\r\ndata: y\r\n\r\n").unwrap(), ["x\ny"]);
    }
}
