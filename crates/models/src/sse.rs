//! A bounded Server-Sent Events reader: splits a byte stream into events' `data` payloads.
//! A single event larger than the cap is an error, not an allocation.

use crate::lines::FedLines;

pub const MAX_EVENT_BYTES: usize = 4 * 1024 * 1024;

#[derive(Debug, Default)]
pub struct SseParser {
    lines: FedLines,
    data: String,
}

impl SseParser {
    /// Feeds bytes; returns the `data` payloads of every event completed by them.
    pub fn feed(&mut self, bytes: &[u8]) -> Result<Vec<String>, String> {
        let mut events = Vec::new();
        let data = &mut self.data;
        self.lines.feed(bytes, MAX_EVENT_BYTES, |mut line| {
            while let [rest @ .., b'\r'] = line {
                line = rest;
            }
            if line.is_empty() {
                if !data.is_empty() {
                    events.push(std::mem::take(data));
                }
            } else if let Some(rest) = line.strip_prefix(b"data:") {
                if !data.is_empty() {
                    data.push('\n');
                }
                let rest = rest.strip_prefix(b" ").unwrap_or(rest);
                data.push_str(&String::from_utf8_lossy(rest));
            }
            // Comments (":") and other fields (event, id, retry) are not needed here.
            if data.len() > MAX_EVENT_BYTES {
                return Err(format!("an event is larger than {MAX_EVENT_BYTES} bytes"));
            }
            Ok(())
        })?;
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
        // A line whose bytes come over several feeds, and text that is not UTF-8.
        assert!(p.feed(b"data: l").unwrap().is_empty());
        assert!(p.feed(b"on").unwrap().is_empty());
        assert_eq!(p.feed(b"g\xff\r\r\n\n").unwrap(), ["long\u{fffd}"]);
    }

    /// A run of blank lines from a hostile endpoint, in one feed and in many: each line used
    /// to move the whole rest of the buffer, and each feed to scan an unfinished line from its
    /// start, so 4 MB of them took hours. A deadline, not a timing: linear work is well under
    /// a second, the old code not within the hour.
    #[test]
    fn many_short_lines_and_long_trickled_lines_cost_their_length() {
        let (done, finished) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut p = SseParser::default();
            let blank = vec![b'\n'; MAX_EVENT_BYTES];
            assert!(p.feed(&blank).unwrap().is_empty());
            let mut line = b"data: ".to_vec();
            line.resize(MAX_EVENT_BYTES - 16, b'x');
            for piece in line.chunks(1024) {
                assert!(p.feed(piece).unwrap().is_empty());
            }
            let events = p.feed(b"\n\n").unwrap();
            done.send(events.first().map(String::len)).unwrap();
        });
        let len = finished
            .recv_timeout(std::time::Duration::from_secs(60))
            .expect("4 MB of lines parsed within a minute");
        assert_eq!(len, Some(MAX_EVENT_BYTES - 16 - 6));
    }
}
