//! The fake server behaves like the real servers it stands in for (see the harness notes on
//! the TypeScript and Python SDK servers). Having an integration test here also makes
//! `cargo test --workspace` build the `mcp-fake-server` binary the host's tests use.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

use serde_json::{Value, json};
use std::io::Write;
use std::process::{Command, Stdio};

const FAKE: &str = env!("CARGO_BIN_EXE_mcp-fake-server");

fn meta() -> Value {
    json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}})
}

/// Sends the requests on one connection and returns every line the server wrote.
fn exchange(args: &[&str], requests: &[Value]) -> Vec<Value> {
    let mut child = Command::new(FAKE)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for r in requests {
        writeln!(stdin, "{r}").unwrap();
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

fn discover(id: u32) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "server/discover", "params": {"_meta": meta()}})
}

fn initialize(id: u32) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize",
           "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}})
}

#[test]
fn legacy_servers_refuse_discover_and_then_accept_initialize_like_the_typescript_sdk() {
    let out = exchange(&["--era", "legacy"], &[discover(1), initialize(2)]);
    assert_eq!(out[0]["error"]["code"], -32601);
    assert_eq!(out[1]["result"]["protocolVersion"], "2025-11-25");
}

#[test]
fn dual_era_servers_lock_the_connection_to_the_first_era_like_the_python_sdk() {
    let modern_first = exchange(&["--era", "dual"], &[discover(1), initialize(2)]);
    assert_eq!(
        modern_first[0]["result"]["supportedVersions"],
        json!(["2026-07-28"])
    );
    assert_eq!(modern_first[1]["error"]["code"], -32022);
    let legacy_first = exchange(&["--era", "dual"], &[initialize(1), discover(2)]);
    assert!(legacy_first[0]["result"].is_object());
    assert_eq!(legacy_first[1]["error"]["code"], -32600);
}

#[test]
fn modern_requests_need_the_meta_envelope() {
    let plain = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
    let out = exchange(&["--era", "modern"], &[discover(1), plain]);
    assert_eq!(out[1]["error"]["code"], -32602);
}

#[test]
fn pages_follow_numeric_cursors() {
    let list = |id: u32, cursor: Option<&str>| {
        let mut params = json!({});
        if let Some(c) = cursor {
            params["cursor"] = json!(c);
        }
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/list", "params": params})
    };
    let out = exchange(
        &["--page-size", "7"],
        &[initialize(1), list(2, None), list(3, Some("7"))],
    );
    assert_eq!(out[1]["result"]["tools"].as_array().unwrap().len(), 7);
    assert_eq!(out[1]["result"]["nextCursor"], "7");
    assert_eq!(out[2]["result"]["tools"].as_array().unwrap().len(), 5);
    assert!(out[2]["result"].get("nextCursor").is_none());
}
