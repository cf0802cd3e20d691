//! The line splitting both model stream readers (SSE and NDJSON) stand on: bytes arrive in
//! pieces of any size, and each line they complete is handed out once. Every byte is looked
//! at once and the unfinished rest moved once a feed, so a stream of many short lines, or a
//! long line trickled in small pieces, costs its length (a hostile endpoint's 4 MB of blank
//! lines took hours when each line moved the whole buffer). The rest is bounded.

#[derive(Debug, Default)]
pub(crate) struct FedLines {
    buffer: Vec<u8>,
    /// How much of `buffer` is known to hold no newline.
    scanned: usize,
}

impl FedLines {
    /// Appends `bytes` and hands `each` every line they complete, without its `\n`; an error
    /// from `each` ends the feed. An unfinished rest longer than `max` bytes is an error.
    pub(crate) fn feed(
        &mut self,
        bytes: &[u8],
        max: usize,
        mut each: impl FnMut(&[u8]) -> Result<(), String>,
    ) -> Result<(), String> {
        self.buffer.extend_from_slice(bytes);
        let mut start = 0;
        let mut from = self.scanned;
        let mut outcome = Ok(());
        while let Some(offset) = self.buffer[from..].iter().position(|b| *b == b'\n') {
            let end = from + offset;
            outcome = each(&self.buffer[start..end]);
            start = end + 1;
            from = start;
            if outcome.is_err() {
                break;
            }
        }
        self.buffer.drain(..start);
        self.scanned = self.buffer.len();
        outcome?;
        if self.buffer.len() > max {
            return Err(format!("a line is longer than {max} bytes"));
        }
        Ok(())
    }

    /// What is left after the last newline, taken.
    pub(crate) fn take_rest(&mut self) -> Vec<u8> {
        self.scanned = 0;
        std::mem::take(&mut self.buffer)
    }
}
