//! A session's standalone event stream is open before the host's first request after the
//! handshake. rmcp asks for it in a task of its own and sent the next request at once, so a
//! server could see the request first: what it sent on a stream not yet there was lost, and
//! the conformance suite's `sse-retry` server, which answers a pending call on the next GET,
//! answered it where the host drops answers (a CI run failed on it).
//!
//! The server here is a raw local HTTP responder that holds the stream's GET until the tool
//! listing arrives (or a second passes), so a host that does not wait shows it every time.

use crate::common::*;
use crate::http_failures::http_setup;
use mcp_host_client::Manager;
use mcp_host_core::ServerState;
use mcp_host_testkit::raw_http::{read_request, respond};
use serde_json::{Value, json};
use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

/// What the server saw, in order.
#[derive(Default)]
struct Seen {
    order: Mutex<Vec<String>>,
    changed: Condvar,
}

impl Seen {
    fn note(&self, what: &str) {
        self.order.lock().unwrap().push(what.into());
        self.changed.notify_all();
    }
}

/// Every answer names the session, so the host opens the session's event stream.
const SESSION: &str = "mcp-session-id: s1\r\n";

fn serve(stream: TcpStream, seen: &Seen) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    if request.method == "GET" {
        seen.note("stream asked for");
        let order = seen.order.lock().unwrap();
        let unlisted = |o: &mut Vec<String>| !o.iter().any(|m| m == "tools/list");
        let held = seen
            .changed
            .wait_timeout_while(order, Duration::from_secs(1), unlisted);
        drop(held);
        seen.note("stream answered");
        let head =
            "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
        let mut s = &stream;
        let _ = s.write_all(head.as_bytes());
        let mut buf = [0u8; 1024];
        while s.read(&mut buf).unwrap_or(0) > 0 {}
        return;
    }
    if request.method != "POST" {
        return respond(stream, "200 OK", SESSION, &Value::Null);
    }
    let message: Value = serde_json::from_slice(&request.body).unwrap_or_default();
    let method = message["method"].as_str().unwrap_or("").to_string();
    seen.note(&method);
    let id = &message["id"];
    let result = match method.as_str() {
        _ if id.is_null() => return respond(stream, "202 Accepted", SESSION, &Value::Null),
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "held-stream", "version": "1"}
        }),
        "tools/list" => json!({"tools": [{"name": "echo", "inputSchema": {"type": "object"}}]}),
        _ => json!({}),
    };
    let answer = json!({"jsonrpc": "2.0", "id": id, "result": result});
    respond(stream, "200 OK", SESSION, &answer);
}

#[tokio::test]
async fn the_event_stream_is_answered_before_the_first_listing() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let seen = Arc::new(Seen::default());
    let server_seen = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = server_seen.clone();
            std::thread::spawn(move || serve(stream, &seen));
        }
    });
    let options = manager_options(Duration::from_millis(20), Duration::from_millis(50));
    let (m, _calls) = Manager::start(vec![http_setup("held", &url)], options);
    let ready = wait_status(&m, "held", |s| s.state == ServerState::Ready).await;
    assert_eq!(ready.restarts, 0, "{ready:?}");
    let order = seen.order.lock().unwrap().clone();
    let at = |what: &str| order.iter().position(|m| m == what);
    assert!(
        at("stream answered").is_some() && at("stream answered") < at("tools/list"),
        "{order:?}"
    );
    m.shutdown().await;
}
