//! A one-thread HTTP/1.1 responder on 127.0.0.1:0: answers the n-th connection with the
//! n-th reply, written as one HTTP chunk per piece so events and lines arrive split, and
//! hands every request it read to the test.

use serde_json::Value;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::mpsc::{Receiver, channel};

pub const SSE: &str = "text/event-stream";
pub const NDJSON: &str = "application/x-ndjson";

/// A request as the server read it.
#[derive(Debug)]
pub struct Recorded {
    /// `POST /path?query HTTP/1.1`
    pub line: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
    pub body: Value,
}

impl Recorded {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }

    pub fn path(&self) -> &str {
        self.line.split(' ').nth(1).unwrap()
    }
}

/// Serves `replies` in order (each a list of body pieces), then stops listening.
pub fn serve(
    content_type: &'static str,
    replies: Vec<Vec<String>>,
) -> (String, Receiver<Recorded>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for pieces in replies {
            let (mut s, _) = listener.accept().unwrap();
            let recorded = read_request(&mut s);
            // The test may already have its answer and hung up; that is not a failure here.
            let _ = tx.send(recorded);
            let _ = respond(&mut s, content_type, &pieces);
        }
    });
    (url, rx)
}

fn read_request(s: &mut TcpStream) -> Recorded {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 8192];
    let head_end = loop {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the client closed before sending a request");
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap().to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers["content-length"].parse().unwrap();
    while buf.len() < head_end + length {
        let n = s.read(&mut chunk).unwrap();
        assert!(n > 0, "the client closed mid-body");
        buf.extend_from_slice(&chunk[..n]);
    }
    let body = serde_json::from_slice(&buf[head_end..head_end + length]).unwrap();
    Recorded {
        line,
        headers,
        body,
    }
}

fn respond(s: &mut TcpStream, content_type: &str, pieces: &[String]) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )?;
    for p in pieces {
        write!(s, "{:x}\r\n{p}\r\n", p.len())?;
        s.flush()?;
    }
    write!(s, "0\r\n\r\n")?;
    s.flush()
}

/// One SSE event with a name (Anthropic, Responses).
pub fn event(name: &str, data: &Value) -> String {
    format!("event: {name}\ndata: {data}\n\n")
}

/// One SSE event with data only (Chat Completions, Gemini).
pub fn data(data: &Value) -> String {
    format!("data: {data}\n\n")
}

/// A piece cut in two, so the client must join it.
pub fn halves(piece: &str) -> [String; 2] {
    let (a, b) = piece.split_at(piece.len() / 2);
    [a.to_string(), b.to_string()]
}
