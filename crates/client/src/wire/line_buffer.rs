//! The bytes read from a server's stdout and not yet taken as lines. A line is handed out
//! as a slice of this buffer where it lies, not copied out first; the buffer reads into
//! memory it has not zeroed (a 64 KiB pipe's worth that a small message touches one page
//! of), grows only for a longer line, and lets go of what large answers made it grow to
//! once small lines follow them.
//!
//! Its state is all in the struct, so a read cancelled half-way (rmcp polls `receive`
//! inside `select!`) loses nothing: bytes already read stay, and a line is taken only by
//! [`LineBuffer::consume`].

use tokio::io::{AsyncRead, AsyncReadExt};

/// How much is read at once: what a pipe holds.
const READ_SIZE: usize = 64 * 1024;
/// Above this, a buffer left empty is given back and a fresh one of [`READ_SIZE`] taken,
/// once [`SMALL_LINES_BEFORE_SHRINKING`] lines in a row have been no longer than it: a server
/// answering large results one after another keeps the room it needs (growing it again
/// costs a copy of each size on the way, and fresh pages), one that answered one large
/// result does not keep its size.
const KEEP_AT_MOST: usize = 1024 * 1024;
const SMALL_LINES_BEFORE_SHRINKING: u32 = 8;

/// What [`LineBuffer::next_line`] found.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum LineRead {
    /// A whole line is at [`LineBuffer::line`] (without its newline).
    Line,
    /// The line under way is longer than the cap.
    Overlong,
    /// The stream ended (or failed) before another newline.
    Eof,
}

pub(crate) struct LineBuffer {
    buf: Vec<u8>,
    /// Where the line under way begins; everything before it has been taken.
    start: usize,
    /// How far past `start` no newline has been found, so no byte is looked at twice.
    scanned: usize,
    /// The end of the line found, once one is (until it is consumed).
    found: Option<usize>,
    /// Lines in a row no longer than [`KEEP_AT_MOST`].
    small_lines: u32,
    cap: usize,
}

impl LineBuffer {
    /// A buffer taking lines of at most `cap` bytes (not counting the newline).
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            buf: Vec::with_capacity(READ_SIZE),
            start: 0,
            scanned: 0,
            found: None,
            small_lines: 0,
            cap,
        }
    }

    /// Reads until a whole line is buffered, the line under way passes the cap, or the
    /// stream ends. A line found and not yet consumed is found again.
    pub(crate) async fn next_line<R: AsyncRead + Unpin>(&mut self, read: &mut R) -> LineRead {
        loop {
            if self.found.is_some() {
                return LineRead::Line;
            }
            let from = self.start + self.scanned;
            if let Some(i) = memchr::memchr(b'\n', self.buf.get(from..).unwrap_or_default()) {
                let end = from + i;
                if end - self.start > self.cap {
                    return LineRead::Overlong;
                }
                self.found = Some(end);
                return LineRead::Line;
            }
            self.scanned = self.buf.len() - self.start;
            if self.scanned > self.cap {
                return LineRead::Overlong;
            }
            self.make_room();
            match read.read_buf(&mut self.buf).await {
                Ok(0) | Err(_) => return LineRead::Eof,
                Ok(_) => {}
            }
        }
    }

    /// The longest line taken.
    pub(crate) fn cap(&self) -> usize {
        self.cap
    }

    /// The line [`next_line`](Self::next_line) found; empty when none is.
    pub(crate) fn line(&self) -> &[u8] {
        match self.found {
            Some(end) => self.buf.get(self.start..end).unwrap_or_default(),
            None => &[],
        }
    }

    /// Takes the line found, newline and all.
    pub(crate) fn consume(&mut self) {
        if let Some(end) = self.found.take() {
            self.small_lines = if end - self.start > KEEP_AT_MOST {
                0
            } else {
                self.small_lines.saturating_add(1)
            };
            self.start = end + 1;
            self.scanned = 0;
        }
    }

    /// Makes space to read into: a buffer with nothing left in it starts over (and one a
    /// large answer grew is given back); the unread part of a line moves to the front
    /// when that frees a read's worth; failing that, the buffer grows.
    fn make_room(&mut self) {
        if self.start == self.buf.len() {
            self.start = 0;
            if self.buf.capacity() > KEEP_AT_MOST
                && self.small_lines >= SMALL_LINES_BEFORE_SHRINKING
            {
                self.buf = Vec::with_capacity(READ_SIZE);
            } else {
                self.buf.clear();
            }
        }
        let spare = self.buf.capacity() - self.buf.len();
        if spare >= READ_SIZE / 2 {
            return;
        }
        if self.start >= READ_SIZE / 2 {
            self.buf.drain(..self.start);
            self.start = 0;
        }
        if self.buf.capacity() - self.buf.len() < READ_SIZE / 2 {
            // Doubling: a line of n bytes costs O(n) in copies.
            self.buf.reserve(self.buf.len().max(READ_SIZE));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    async fn lines_of(chunks: &[&[u8]], cap: usize) -> Vec<Result<Vec<u8>, LineRead>> {
        let (mut tx, mut rx) = tokio::io::duplex(7);
        let owned: Vec<Vec<u8>> = chunks.iter().map(|c| c.to_vec()).collect();
        let writer = tokio::spawn(async move {
            for c in owned {
                if tx.write_all(&c).await.is_err() {
                    return;
                }
            }
        });
        let mut lines = LineBuffer::new(cap);
        let mut out = Vec::new();
        loop {
            match lines.next_line(&mut rx).await {
                LineRead::Line => {
                    out.push(Ok(lines.line().to_vec()));
                    lines.consume();
                }
                other => {
                    out.push(Err(other));
                    break;
                }
            }
        }
        drop(rx);
        let _ = writer.await;
        out
    }

    #[tokio::test]
    async fn lines_come_whole_however_the_bytes_arrive() {
        let got = lines_of(&[b"ab", b"c\nde", b"f\n\ng", b"h\n"], 10).await;
        let want: Vec<Result<Vec<u8>, LineRead>> = vec![
            Ok(b"abc".to_vec()),
            Ok(b"def".to_vec()),
            Ok(b"".to_vec()),
            Ok(b"gh".to_vec()),
            Err(LineRead::Eof),
        ];
        assert_eq!(got, want);
    }

    #[tokio::test]
    async fn a_line_at_the_cap_is_taken_and_one_past_it_is_not() {
        let got = lines_of(&[b"12345\n123456\n"], 5).await;
        assert_eq!(got, vec![Ok(b"12345".to_vec()), Err(LineRead::Overlong)]);
        // Past the cap before any newline arrives: said without waiting for one.
        let got = lines_of(&[b"1234567"], 5).await;
        assert_eq!(got, vec![Err(LineRead::Overlong)]);
    }

    #[tokio::test]
    async fn a_line_longer_than_a_read_grows_the_buffer_and_is_let_go_after() {
        let long = vec![b'x'; 3 * READ_SIZE + 17];
        let mut input = long.clone();
        input.extend_from_slice(b"\nshort\n");
        let (mut tx, mut rx) = tokio::io::duplex(4096);
        let writer = tokio::spawn(async move { tx.write_all(&input).await });
        let mut lines = LineBuffer::new(usize::MAX);
        assert_eq!(lines.next_line(&mut rx).await, LineRead::Line);
        assert_eq!(lines.line(), &long[..]);
        lines.consume();
        assert_eq!(lines.next_line(&mut rx).await, LineRead::Line);
        assert_eq!(lines.line(), b"short");
        lines.consume();
        writer.await.unwrap().unwrap();
        assert_eq!(lines.next_line(&mut rx).await, LineRead::Eof);
        assert!(lines.buf.capacity() >= long.len());
    }

    #[tokio::test]
    async fn the_room_a_large_line_took_is_kept_while_large_lines_come_and_then_given_back() {
        let large = vec![b'x'; KEEP_AT_MOST + 1];
        let mut input = Vec::new();
        for _ in 0..2 {
            input.extend_from_slice(&large);
            input.push(b'\n');
        }
        for _ in 0..SMALL_LINES_BEFORE_SHRINKING {
            input.extend_from_slice(b"small\n");
        }
        let (mut tx, mut rx) = tokio::io::duplex(1 << 16);
        let writer = tokio::spawn(async move { tx.write_all(&input).await });
        let mut lines = LineBuffer::new(usize::MAX);
        let mut capacities = Vec::new();
        while lines.next_line(&mut rx).await == LineRead::Line {
            lines.consume();
            lines.make_room();
            capacities.push(lines.buf.capacity());
        }
        writer.await.unwrap().unwrap();
        let kept = capacities.iter().filter(|c| **c > KEEP_AT_MOST).count();
        // Both large lines and the seven small ones after them: the room is kept; after the
        // eighth it is given back.
        assert_eq!(
            kept,
            2 + SMALL_LINES_BEFORE_SHRINKING as usize - 1,
            "{capacities:?}"
        );
        assert!(capacities.last().is_some_and(|c| *c <= KEEP_AT_MOST));
    }

    #[tokio::test]
    async fn a_cancelled_read_loses_nothing() {
        let (mut tx, mut rx) = tokio::io::duplex(64);
        let mut lines = LineBuffer::new(100);
        tx.write_all(b"hal").await.unwrap();
        // Polled once and dropped while it waits for the rest of the line.
        assert!(
            futures::FutureExt::now_or_never(lines.next_line(&mut rx)).is_none(),
            "no line yet"
        );
        tx.write_all(b"f\n").await.unwrap();
        assert_eq!(lines.next_line(&mut rx).await, LineRead::Line);
        assert_eq!(lines.line(), b"half");
    }
}
