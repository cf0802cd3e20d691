//! The end of an HTTP/1.1 head (its blank line, `\r\n\r\n`) in a buffer that grows read by
//! read. Each search looks only at the bytes the last one had not seen (and the three before
//! them, where a blank line split across reads starts), so a peer that trickles its head a
//! byte at a time costs its length, not its length squared. Used wherever the host reads a
//! head from a peer it does not trust: the egress proxy (a confined server is its client)
//! and the OAuth redirect listener (any local process can connect to it).

/// Where the search of one growing buffer has got to.
#[derive(Debug, Default)]
pub struct HeadEnd {
    searched: usize,
}

impl HeadEnd {
    /// The head's length, through its blank line, once `buf` holds it. `buf` is the same
    /// buffer at every call, only ever grown; a buffer that shrank is searched from its start.
    pub fn find(&mut self, buf: &[u8]) -> Option<usize> {
        let from = if self.searched > buf.len() {
            0
        } else {
            self.searched.saturating_sub(3)
        };
        self.searched = buf.len();
        buf[from..]
            .windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| from + at + 4)
    }
}

#[cfg(test)]
mod tests {
    use super::HeadEnd;
    use proptest::prelude::*;

    fn whole(buf: &[u8]) -> Option<usize> {
        buf.windows(4)
            .position(|w| w == b"\r\n\r\n")
            .map(|at| at + 4)
    }

    proptest! {
        /// However the reads cut the bytes, the end is found at the first read that completes
        /// the blank line, at the same place a search of the whole buffer finds it.
        #[test]
        fn any_cut_finds_the_first_blank_line(
            bytes in proptest::collection::vec(prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'a')], 0..64),
            cuts in proptest::collection::vec(1usize..8, 0..64),
        ) {
            let mut head = HeadEnd::default();
            let mut buf = Vec::new();
            let mut rest = &bytes[..];
            let mut cuts = cuts.into_iter();
            while !rest.is_empty() {
                let n = cuts.next().unwrap_or(rest.len()).min(rest.len());
                buf.extend_from_slice(&rest[..n]);
                rest = &rest[n..];
                let found = head.find(&buf);
                prop_assert_eq!(found, whole(&buf));
                if found.is_some() {
                    break;
                }
            }
        }
    }

    #[test]
    fn a_head_trickled_a_byte_at_a_time_costs_its_length() {
        // Four MiB a byte at a time: a search from the start at every read would compare
        // 8 * 10^12 windows, hours of CPU; each byte is looked at a few times here.
        let size = 4 << 20;
        let mut buf = Vec::with_capacity(size + 4);
        let mut head = HeadEnd::default();
        let started = std::time::Instant::now();
        for _ in 0..size {
            buf.push(b'a');
            assert_eq!(head.find(&buf), None);
        }
        buf.extend_from_slice(b"\r\n\r");
        assert_eq!(head.find(&buf), None);
        buf.push(b'\n');
        assert_eq!(head.find(&buf), Some(size + 4));
        assert!(started.elapsed() < std::time::Duration::from_secs(60));
    }

    #[test]
    fn a_buffer_that_shrank_is_searched_again() {
        let mut head = HeadEnd::default();
        assert_eq!(head.find(b"GET / HTTP/1.1\r\nHost: a\r\n"), None);
        assert_eq!(head.find(b"\r\n\r\n"), Some(4));
    }
}
