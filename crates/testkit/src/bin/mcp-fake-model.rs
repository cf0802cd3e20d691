//! A scripted model for end-to-end tests, load runs and demos: an HTTP server on loopback
//! that speaks OpenAI's streaming Chat Completions wire format and decides from the last
//! message alone (so any number of users and turns can share it):
//!
//! - a user message `call TOOL {json}` (one per line; several lines, several calls) → those
//!   tool calls;
//! - a tool result → "Result: " and the start of what the tool returned;
//! - `repeat N TOOL {json}` → that call, again after each result until the turn holds N
//!   results, then "Done: N calls" (a long turn of one call per step);
//! - `recall` → "Earlier: " and every earlier user message, joined by " | " (what the host
//!   sent as the conversation's history);
//! - anything else → "You said: " and the message.
//!
//! `mcp-fake-model [--port P] [--delay-ms N]` prints `listening on http://127.0.0.1:P` on
//! its first line; `--delay-ms` waits between streamed chunks (a slow model).

#![allow(clippy::print_stdout, clippy::print_stderr)]

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

static CALLS: AtomicU64 = AtomicU64::new(0);

fn main() {
    let mut port = 0u16;
    let mut delay = 0u64;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--port" => port = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            "--delay-ms" => delay = args.next().and_then(|v| v.parse().ok()).unwrap_or(0),
            other => {
                eprintln!("mcp-fake-model: unknown argument {other}");
                std::process::exit(2);
            }
        }
    }
    let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) else {
        eprintln!("mcp-fake-model: cannot listen on 127.0.0.1:{port}");
        std::process::exit(1);
    };
    let addr = listener
        .local_addr()
        .map(|a| a.to_string())
        .unwrap_or_default();
    println!("listening on http://{addr}");
    let _ = std::io::stdout().flush();
    for stream in listener.incoming().flatten() {
        std::thread::spawn(move || serve(stream, Duration::from_millis(delay)));
    }
}

fn serve(stream: TcpStream, delay: Duration) {
    // The reply goes out in many small writes; with Nagle's algorithm each waited for the
    // host's delayed ACK (40 ms a step), as no real provider's streaming server does.
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut writer = stream;
    // Keep-alive: one request after another on the same connection.
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let mut length = 0usize;
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            if let Some((k, v)) = h.split_once(':')
                && k.eq_ignore_ascii_case("content-length")
            {
                length = v.trim().parse().unwrap_or(0);
            }
        }
        let mut body = vec![0u8; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
        let chunks = answer(&request);
        if respond(&mut writer, &chunks, delay).is_err() {
            return;
        }
    }
}

fn respond(w: &mut TcpStream, chunks: &[Value], delay: Duration) -> std::io::Result<()> {
    write!(
        w,
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    )?;
    let mut send = |text: String| -> std::io::Result<()> {
        write!(w, "{:x}\r\n{text}\r\n", text.len())?;
        w.flush()
    };
    for c in chunks {
        if !delay.is_zero() {
            std::thread::sleep(delay);
        }
        send(format!("data: {c}\n\n"))?;
    }
    send("data: [DONE]\n\n".into())?;
    write!(w, "0\r\n\r\n")?;
    w.flush()
}

fn text_of(message: &Value) -> String {
    match &message["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts
            .iter()
            .filter_map(|p| p["text"].as_str())
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

/// The chunks answering `request`, from its last message.
fn answer(request: &Value) -> Vec<Value> {
    let last = request["messages"]
        .as_array()
        .and_then(|m| m.last())
        .cloned()
        .unwrap_or(Value::Null);
    let text = text_of(&last);
    if let Some(chunks) = repeat(request) {
        return chunks;
    }
    if last["role"] == "tool" {
        let start: String = text.chars().take(200).collect();
        return text_chunks(&format!("Result: {start}"));
    }
    let calls: Vec<(String, String)> = text
        .lines()
        .filter_map(|l| l.trim().strip_prefix("call "))
        .map(|rest| match rest.split_once(' ') {
            Some((name, args)) => (name.to_string(), args.trim().to_string()),
            None => (rest.to_string(), "{}".to_string()),
        })
        .collect();
    if text.trim() == "recall" {
        let messages = request["messages"]
            .as_array()
            .map_or(&[][..], Vec::as_slice);
        let earlier: Vec<String> = messages[..messages.len().saturating_sub(1)]
            .iter()
            .filter(|m| m["role"] == "user")
            .map(text_of)
            .collect();
        return text_chunks(&format!("Earlier: {}", earlier.join(" | ")));
    }
    if calls.is_empty() {
        return text_chunks(&format!("You said: {text}"));
    }
    let mut out = Vec::new();
    for (i, (name, args)) in calls.iter().enumerate() {
        let id = format!("call_{}", CALLS.fetch_add(1, Ordering::Relaxed));
        out.push(json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": args}}]}, "finish_reason": null}]}));
    }
    out.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}));
    out
}

/// `repeat N TOOL {json}`: one call per step until the turn holds N results, then "Done".
/// How a long agent turn is measured (scripts/bench-floor.sh).
fn repeat(request: &Value) -> Option<Vec<Value>> {
    let messages = request["messages"].as_array()?;
    let asked = messages.iter().rposition(|m| m["role"] == "user")?;
    let text = text_of(&messages[asked]);
    let (n, rest) = text.trim().strip_prefix("repeat ")?.split_once(' ')?;
    let n: usize = n.parse().ok()?;
    let (name, args) = rest.split_once(' ').unwrap_or((rest, "{}"));
    let done = messages[asked..]
        .iter()
        .filter(|m| m["role"] == "tool")
        .count();
    if done >= n {
        return Some(text_chunks(&format!("Done: {done} calls")));
    }
    let id = format!("call_{}", CALLS.fetch_add(1, Ordering::Relaxed));
    Some(vec![
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "type": "function", "function": {"name": name, "arguments": args.trim()}}]}, "finish_reason": null}]}),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
    ])
}

/// `text` in a few pieces, as a model streams it.
fn text_chunks(text: &str) -> Vec<Value> {
    let words: Vec<&str> = text.split_inclusive(' ').collect();
    let mut out: Vec<Value> = words
        .chunks(4)
        .map(|w| json!({"choices": [{"index": 0, "delta": {"content": w.concat()}, "finish_reason": null}]}))
        .collect();
    out.push(json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}));
    out
}
