//! Traces through the real CLI: with `OTEL_EXPORTER_OTLP_ENDPOINT` set, one turn with two
//! tool calls arrives at a local OTLP receiver as a `turn` span with its model requests,
//! gate decisions and calls as children, and the server was given each call's span as its
//! `traceparent`; without the variable nothing is sent.

use crate::common::*;
use mcp_host_testkit::otlp_receiver::OtlpReceiver;
use serde_json::{Value, json};
use std::time::Duration;

fn attr<'a>(span: &'a Value, key: &str) -> Option<&'a Value> {
    span["attributes"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

fn run_turn(sb: &Sandbox, env: &[(&str, &str)], log: &std::path::Path) -> std::process::Output {
    let (url, _) = fake_model(vec![
        tool_calls_stream(&[
            ("c1", "f__echo", r#"{"message": "one"}"#),
            ("c2", "f__echo", r#"{"message": "two"}"#),
        ]),
        text_stream("done"),
    ]);
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--era", "modern", "--request-log", log.to_str().unwrap()])}),
    );
    let base = format!("{url}/v1");
    let args = [
        "run",
        "-p",
        "echo twice",
        "-m",
        "openai-compatible:m",
        "--base-url",
        &base,
        "--allowed-tools",
        "f__echo",
    ];
    sb.run_with_env(&args, &cfg, env)
}

#[test]
fn a_turn_with_two_calls_is_one_trace_and_each_server_call_carries_its_span() {
    let receiver = OtlpReceiver::start().unwrap();
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "mcp-host-test"),
    ];
    let out = run_turn(&sb, &env, &log);
    assert!(out.status.success(), "{}", stderr(&out));
    // The exporter is flushed before the process exits: everything is there already.
    let spans = receiver.wait_for(Duration::from_secs(5), |s| {
        s.iter().any(|s| s["name"] == "turn")
    });
    let named =
        |name: &str| -> Vec<&Value> { spans.iter().filter(|s| s["name"] == name).collect() };
    let turns = named("turn");
    assert_eq!(turns.len(), 1, "{spans:#?}");
    let turn = turns[0];
    let trace = turn["traceId"].as_str().unwrap();
    assert_eq!(trace.len(), 32);
    assert!(turn.get("parentSpanId").is_none(), "the turn is the root");
    assert!(spans.iter().all(|s| s["traceId"] == trace), "one trace");
    let children_of_turn = |name: &str| {
        named(name)
            .into_iter()
            .filter(|s| s["parentSpanId"] == turn["spanId"])
            .count()
    };
    assert_eq!(children_of_turn("model.request"), 2, "a request per step");
    assert_eq!(children_of_turn("gate.decide"), 2);
    let calls = named("tools/call");
    assert_eq!(calls.len(), 2);
    let requests = std::fs::read_to_string(&log).unwrap();
    for call in &calls {
        assert_eq!(call["parentSpanId"], turn["spanId"], "{call}");
        assert_eq!(attr(call, "server").unwrap()["stringValue"], "f");
        assert_eq!(attr(call, "server_tool").unwrap()["stringValue"], "echo");
        assert_eq!(attr(call, "era").unwrap()["stringValue"], "2026-07-28");
        assert_eq!(attr(call, "truncated").unwrap()["boolValue"], false);
        assert_eq!(attr(call, "is_error").unwrap()["boolValue"], false);
        assert!(attr(call, "result_bytes").is_some() && attr(call, "duration_ms").is_some());
        let traceparent = format!("00-{trace}-{}-01", call["spanId"].as_str().unwrap());
        assert!(
            requests.contains(&format!("tools/call echo traceparent={traceparent}")),
            "the server got the call's own span: {requests}"
        );
    }
    let resource = &receiver.resources()[0];
    assert!(resource.to_string().contains("mcp-host-test"), "{resource}");
}

#[test]
fn without_an_endpoint_nothing_is_traced_and_servers_get_no_traceparent() {
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let out = run_turn(&sb, &[], &log);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = std::fs::read_to_string(&log).unwrap();
    assert!(requests.contains("tools/call echo"), "{requests}");
    assert!(!requests.contains("traceparent"), "{requests}");
}

#[test]
fn a_persons_call_is_traced_like_a_models_decision_and_call() {
    let receiver = OtlpReceiver::start().unwrap();
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--request-log", log.to_str().unwrap()])}),
    );
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint.as_str())];
    let out = sb.run_with_env(
        &["call", "f", "echo", "--args", r#"{"message":"x"}"#],
        &cfg,
        &env,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let spans = receiver.wait_for(Duration::from_secs(5), |s| {
        s.iter().any(|s| s["name"] == "tools/call")
    });
    let decide = spans
        .iter()
        .find(|s| s["name"] == "gate.decide")
        .expect("decided");
    assert_eq!(attr(decide, "source").unwrap()["stringValue"], "Person");
    let call = spans.iter().find(|s| s["name"] == "tools/call").unwrap();
    assert_eq!(attr(call, "era").unwrap()["stringValue"], "2025-11-25");
    let traceparent = format!(
        "00-{}-{}-01",
        call["traceId"].as_str().unwrap(),
        call["spanId"].as_str().unwrap()
    );
    let requests = std::fs::read_to_string(&log).unwrap();
    assert!(requests.contains(&traceparent), "{requests}");
}
