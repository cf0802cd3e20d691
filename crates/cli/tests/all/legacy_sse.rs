//! The legacy HTTP+SSE transport (2024-11-05) through the real CLI, against the fake
//! server's `--sse` mode: configured as `sse`, reached by fallback from `http`, and refused
//! when the stream names another origin or is not an HTTP+SSE stream at all.

use crate::common::*;
use serde_json::json;

#[test]
fn an_sse_server_of_2024_11_05_is_ready_and_answers_calls() {
    let (_server, port) = fake_sse(&["--answer-version", "2024-11-05"]);
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{port}/sse");
    let cfg = sb.config("c.json", json!({"old": {"type": "sse", "url": url}}));
    let rows = sb.servers_json(&cfg);
    let r = row(&rows, "old");
    assert_eq!(r["state"], "ready", "{r}");
    assert_eq!(r["transport"], "sse");
    assert_eq!(r["era"], "2024-11-05");
    assert_eq!(r["tools"], 12);
    let out = sb.run_with(
        &["call", "old", "echo", "--args", r#"{"message":"over sse"}"#],
        &cfg,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("over sse"), "{}", stdout(&out));
}

#[test]
fn an_http_server_that_refuses_streamable_http_falls_back_to_sse_and_says_so() {
    let (_server, port) = fake_sse(&[]);
    let sb = Sandbox::new();
    let url = format!("http://127.0.0.1:{port}/sse");
    let cfg = sb.config("c.json", json!({"old": {"type": "http", "url": url}}));
    let out = sb.run_with(&["servers"], &cfg);
    let table = stdout(&out);
    assert!(out.status.success(), "{}", stderr(&out));
    let line = table.lines().find(|l| l.starts_with("old ")).unwrap();
    assert!(line.contains(" sse ") && line.contains("ready"), "{table}");
    assert!(
        table.contains("old: sse: the server refused Streamable HTTP"),
        "{table}"
    );
    let out = sb.run_with(
        &[
            "call",
            "old",
            "echo",
            "--args",
            r#"{"message":"fell back"}"#,
        ],
        &cfg,
    );
    assert!(stdout(&out).contains("fell back"), "{}", stderr(&out));
}

#[test]
fn a_stream_that_names_another_origin_or_no_endpoint_is_refused() {
    for (fault, why) in [
        ("sse-foreign-endpoint", "message endpoint on another origin"),
        ("sse-no-endpoint", "not an HTTP+SSE server"),
    ] {
        for kind in ["sse", "http"] {
            let (_server, port) = fake_sse(&["--fault", fault]);
            let sb = Sandbox::new();
            let url = format!("http://127.0.0.1:{port}/sse");
            let cfg = sb.config("c.json", json!({"s": {"type": kind, "url": url}}));
            let rows = sb.servers_json(&cfg);
            let r = row(&rows, "s");
            assert_eq!(r["state"], "failed", "{fault} as {kind}: {r}");
            let error = r["error"].as_str().unwrap();
            assert!(error.contains(why), "{fault} as {kind}: {error}");
        }
    }
}
