//! A JSON object written field by field, byte for byte as [`crate::sanitize::append_json`]
//! writes the same fields through serde: the audit log writes one per tool call, and
//! serde's per-field machinery and escaping of every key was most of that line's cost. Keys
//! are this crate's constants and are written as they are; a string value of plain ASCII is
//! copied, and any other value goes through `append_json` itself, so nothing a server or a
//! model sent is written by a second escaper.

use crate::sanitize::append_json;
use serde::Serialize;

/// One object being appended to a line: `{`, then each field, then [`JsonObject::end`].
pub struct JsonObject<'a> {
    out: &'a mut Vec<u8>,
    first: bool,
}

impl<'a> JsonObject<'a> {
    pub fn begin(out: &'a mut Vec<u8>) -> Self {
        out.push(b'{');
        Self { out, first: true }
    }

    /// `key` must need no escaping: a constant of the caller's, as a field name is.
    fn key(&mut self, key: &'static str) {
        debug_assert!(plain(key), "{key} is not a plain key");
        if !self.first {
            self.out.push(b',');
        }
        self.first = false;
        self.out.push(b'"');
        self.out.extend_from_slice(key.as_bytes());
        self.out.extend_from_slice(b"\":");
    }

    pub fn str(&mut self, key: &'static str, value: &str) -> serde_json::Result<()> {
        self.key(key);
        if plain(value) {
            self.out.push(b'"');
            self.out.extend_from_slice(value.as_bytes());
            self.out.push(b'"');
            Ok(())
        } else {
            append_json(&value, self.out)
        }
    }

    pub fn opt_str(&mut self, key: &'static str, value: Option<&str>) -> serde_json::Result<()> {
        match value {
            Some(value) => self.str(key, value),
            None => {
                self.key(key);
                self.out.extend_from_slice(b"null");
                Ok(())
            }
        }
    }

    pub fn bool(&mut self, key: &'static str, value: bool) {
        self.key(key);
        self.out
            .extend_from_slice(if value { b"true" } else { b"false" });
    }

    pub fn opt_u64(&mut self, key: &'static str, value: Option<u64>) {
        self.key(key);
        match value {
            Some(n) => self
                .out
                .extend_from_slice(itoa::Buffer::new().format(n).as_bytes()),
            None => self.out.extend_from_slice(b"null"),
        }
    }

    /// Any other value, through serde as `append_json` writes it.
    pub fn value(&mut self, key: &'static str, value: &impl Serialize) -> serde_json::Result<()> {
        self.key(key);
        append_json(value, self.out)
    }

    pub fn end(self) {
        self.out.push(b'}');
    }
}

/// Printable ASCII with nothing JSON escapes: written between quotes as it is. Sixteen
/// bytes at a time without a branch each, as `sanitize`'s own plain check reads.
fn plain(s: &str) -> bool {
    let ok = |b: u8| (0x20..0x7f).contains(&b) & (b != b'"') & (b != b'\\');
    let (blocks, rest) = s.as_bytes().as_chunks::<16>();
    blocks
        .iter()
        .all(|block| block.iter().fold(true, |all, &b| all & ok(b)))
        && rest.iter().all(|&b| ok(b))
}

#[cfg(test)]
mod tests {
    #[test]
    fn plain_is_printable_ascii_without_a_quote_or_backslash_wherever_it_falls() {
        for len in [1, 15, 16, 17, 33] {
            for at in 0..len {
                for b in 0u8..=0xff {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    let Ok(text) = std::str::from_utf8(&bytes) else {
                        continue;
                    };
                    let expected = (0x20..0x7f).contains(&b) && b != b'"' && b != b'\\';
                    assert_eq!(super::plain(text), expected, "{len} {at} {b}");
                }
            }
        }
    }
}
