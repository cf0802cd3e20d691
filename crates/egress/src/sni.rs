//! Reading the server name (SNI) from the first TLS record a client sends through a tunnel,
//! so the proxy can check that the name the TLS session is for is the host it was allowed
//! to reach (no domain fronting past the allow-list). Bounded by the record it is given;
//! anything it cannot read is an error, never a pass.

/// What the first bytes of a tunnel said.
#[derive(Debug, PartialEq, Eq)]
pub enum Hello {
    /// A ClientHello naming this server (lower case).
    Named(String),
    /// A ClientHello without a server name.
    Unnamed,
    /// More bytes are needed to read the first record (`usize`: its full length).
    Incomplete(usize),
    /// Not TLS, or a ClientHello that cannot be read.
    Unreadable(&'static str),
}

/// The largest TLS record (2^14 bytes of plaintext plus its 5-byte header, with slack for
/// a record that is not yet encrypted).
pub const MAX_RECORD: usize = 5 + (1 << 14) + 256;

struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        if self.bytes.len() < n {
            return None;
        }
        let (head, rest) = self.bytes.split_at(n);
        self.bytes = rest;
        Some(head)
    }

    fn u8(&mut self) -> Option<usize> {
        self.take(1).map(|b| usize::from(b[0]))
    }

    fn u16(&mut self) -> Option<usize> {
        self.take(2)
            .map(|b| usize::from(b[0]) << 8 | usize::from(b[1]))
    }

    fn u24(&mut self) -> Option<usize> {
        self.take(3)
            .map(|b| usize::from(b[0]) << 16 | usize::from(b[1]) << 8 | usize::from(b[2]))
    }

    /// A length-prefixed block of `width` bytes of length.
    fn block(&mut self, width: usize) -> Option<Reader<'a>> {
        let n = match width {
            1 => self.u8()?,
            2 => self.u16()?,
            _ => self.u24()?,
        };
        self.take(n).map(|bytes| Reader { bytes })
    }
}

/// Reads the server name from `bytes`, the start of what a client sent into a tunnel.
pub fn client_hello(bytes: &[u8]) -> Hello {
    const HANDSHAKE: u8 = 0x16;
    const CLIENT_HELLO: usize = 1;
    const SERVER_NAME: usize = 0;
    if bytes.len() < 5 {
        return if bytes.first().is_some_and(|b| *b != HANDSHAKE) {
            Hello::Unreadable("not TLS")
        } else {
            Hello::Incomplete(5)
        };
    }
    if bytes[0] != HANDSHAKE || bytes[1] != 3 {
        return Hello::Unreadable("not TLS");
    }
    let record_len = usize::from(bytes[3]) << 8 | usize::from(bytes[4]);
    if 5 + record_len > MAX_RECORD {
        return Hello::Unreadable("oversized TLS record");
    }
    if bytes.len() < 5 + record_len {
        return Hello::Incomplete(5 + record_len);
    }
    let mut record = Reader {
        bytes: &bytes[5..5 + record_len],
    };
    let parse = |record: &mut Reader<'_>| -> Option<Hello> {
        if record.u8()? != CLIENT_HELLO {
            return Some(Hello::Unreadable(
                "first handshake message is not a ClientHello",
            ));
        }
        // A ClientHello split over records is legal but not sent by real clients; it
        // cannot be checked here, so it is refused.
        let mut hello = record.block(3)?;
        hello.take(2 + 32)?; // version, random
        hello.block(1)?; // session id
        hello.block(2)?; // cipher suites
        hello.block(1)?; // compression methods
        if hello.bytes.is_empty() {
            return Some(Hello::Unnamed);
        }
        let mut extensions = hello.block(2)?;
        while !extensions.bytes.is_empty() {
            let kind = extensions.u16()?;
            let mut body = extensions.block(2)?;
            if kind != SERVER_NAME {
                continue;
            }
            let mut names = body.block(2)?;
            while !names.bytes.is_empty() {
                let name_type = names.u8()?;
                let name = names.block(2)?.bytes;
                if name_type == 0 {
                    let name = std::str::from_utf8(name).ok()?;
                    return Some(Hello::Named(name.to_ascii_lowercase()));
                }
            }
            return Some(Hello::Unnamed);
        }
        Some(Hello::Unnamed)
    };
    parse(&mut record).unwrap_or(Hello::Unreadable("malformed ClientHello"))
}

/// A minimal ClientHello record naming `name` (or none): what tests and benchmarks send
/// into a tunnel.
pub fn hello_for(name: Option<&str>) -> Vec<u8> {
    let mut ext = Vec::new();
    if let Some(name) = name {
        let n = name.len();
        let list_len = n + 3;
        ext.extend_from_slice(&[0, 0]);
        ext.extend_from_slice(&((list_len + 2) as u16).to_be_bytes());
        ext.extend_from_slice(&(list_len as u16).to_be_bytes());
        ext.push(0);
        ext.extend_from_slice(&(n as u16).to_be_bytes());
        ext.extend_from_slice(name.as_bytes());
    }
    // Another extension before and after, as real hellos have.
    let mut exts = vec![0x00, 0x0b, 0x00, 0x02, 0x01, 0x00];
    exts.extend_from_slice(&ext);
    exts.extend_from_slice(&[0x00, 0x17, 0x00, 0x00]);
    let mut body = vec![3, 3];
    body.extend_from_slice(&[7u8; 32]);
    body.push(0); // session id
    body.extend_from_slice(&[0, 2, 0x13, 0x01]); // one cipher suite
    body.extend_from_slice(&[1, 0]); // null compression
    body.extend_from_slice(&(exts.len() as u16).to_be_bytes());
    body.extend_from_slice(&exts);
    let mut handshake = vec![1];
    handshake.extend_from_slice(&(body.len() as u32).to_be_bytes()[1..]);
    handshake.extend_from_slice(&body);
    let mut record = vec![0x16, 3, 1];
    record.extend_from_slice(&(handshake.len() as u16).to_be_bytes());
    record.extend_from_slice(&handshake);
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_name_or_says_why_not() {
        let named = hello_for(Some("API.example.com"));
        assert_eq!(client_hello(&named), Hello::Named("api.example.com".into()));
        assert_eq!(client_hello(&hello_for(None)), Hello::Unnamed);
        assert_eq!(client_hello(&named[..3]), Hello::Incomplete(5));
        assert_eq!(client_hello(&named[..20]), Hello::Incomplete(named.len()));
        assert_eq!(
            client_hello(b"GET / HTTP/1.1\r\n"),
            Hello::Unreadable("not TLS")
        );
        let mut broken = named.clone();
        broken[6] = 0xff; // a ClientHello longer than its record
        assert!(matches!(client_hello(&broken), Hello::Unreadable(_)));
        // Every truncation of the body inside a complete-looking record is refused, never read.
        for cut in 6..named.len() {
            let mut short = named[..cut].to_vec();
            let len = (cut - 5) as u16;
            short[3..5].copy_from_slice(&len.to_be_bytes());
            assert!(
                !matches!(client_hello(&short), Hello::Named(ref n) if n != "api.example.com"),
                "{cut}"
            );
        }
    }
}
