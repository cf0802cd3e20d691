//! Every call passes the one gate, whatever the front end: a `PreToolUse` hook that denies
//! stops a model's call in `run` as it stops a person's in `call`; a definition that changed
//! mid-turn is not called under the old approval; a turn starts without waiting for a
//! server that never answers, and the model is told which servers it cannot use and why.
//! (Chat's part is driven through tmux in `scripts/tui-e2e.sh`.)

use crate::common::*;
use serde_json::{Value, json};
use std::path::Path;
use std::time::{Duration, Instant};

/// The calls the fake server received, one `tools/call NAME` line each.
fn calls_received(log: &Path) -> Vec<String> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with("tools/call"))
        .map(str::to_string)
        .collect()
}

/// A config with the fake server `f` (logging requests to `log`) and a PreToolUse hook that
/// blocks `f__echo`.
fn blocking_hook_config(sb: &Sandbox, log: &Path) -> std::path::PathBuf {
    let text = json!({
        "mcpServers": {"f": fake_server(&["--request-log", log.to_str().unwrap()])},
        "hooks": {"PreToolUse": [{"matcher": "f__echo", "hooks": [
            {"type": "command", "command": "cat >/dev/null; echo 'echo is not allowed here' >&2; exit 2"}
        ]}]}
    });
    sb.write("c.json", &text.to_string())
}

/// The tool message the model got back for `call_id` in request `n`.
fn tool_message(requests: &[Value], n: usize, call_id: &str) -> String {
    requests[n]["messages"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["tool_call_id"] == call_id)
        .unwrap_or_else(|| panic!("no tool message {call_id} in {}", requests[n]))["content"]
        .as_str()
        .unwrap()
        .to_string()
}

fn run_args<'a>(url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut args = vec![
        "run",
        "-p",
        "go",
        "-m",
        "openai-compatible:test-model",
        "--base-url",
        url,
        "--output-format",
        "json",
    ];
    args.extend_from_slice(extra);
    args
}

#[test]
fn a_denying_pre_tool_use_hook_stops_the_models_call_in_run() {
    let (url, seen) = fake_model(vec![
        tool_calls_stream(&[
            ("call_a", "f__echo", r#"{"message": "hi"}"#),
            ("call_b", "f__add", r#"{"a": 1, "b": 2}"#),
        ]),
        text_stream("done"),
    ]);
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let cfg = blocking_hook_config(&sb, &log);
    // An allow rule does not outrank the hook: the rule would allow, the hook denies.
    let out = sb.run_with(&run_args(&url, &["--allowed-tools", "f__*"]), &cfg);
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    let calls = report["tool_calls"].as_array().unwrap();
    assert_eq!(calls[0]["verdict"], "deny", "{}", calls[0]);
    assert_eq!(calls[0]["decided_by"]["by"], "hook", "{}", calls[0]);
    assert_eq!(calls[1]["verdict"], "allow");
    assert_eq!(
        calls_received(&log),
        ["tools/call add"],
        "only add reached the server"
    );
    let requests = seen.lock().unwrap();
    let echo = tool_message(&requests, 1, "call_a");
    assert!(echo.contains("echo is not allowed here"), "{echo}");
}

#[test]
fn a_denying_pre_tool_use_hook_stops_a_persons_call() {
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let cfg = blocking_hook_config(&sb, &log);
    let out = sb.run_with(
        &["call", "f", "echo", "--args", r#"{"message": "hi"}"#],
        &cfg,
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("echo is not allowed here"),
        "{}",
        stderr(&out)
    );
    assert!(calls_received(&log).is_empty());
}

/// The fields of every audit record, whatever made the call and whichever front end ran it
/// (`scripts/tui-e2e.sh` checks chat's records against the same list).
const AUDIT_FIELDS: &[&str] = &[
    "args_sha256",
    "background_job",
    "decided_by",
    "duration_ms",
    "error",
    "event",
    "id",
    "is_error",
    "name",
    "reason",
    "refused",
    "result_bytes",
    "result_handle",
    "server",
    "source",
    "status",
    "tool",
    "truncated",
    "ts",
    "verdict",
];

#[test]
fn run_and_call_write_one_audit_record_per_call_with_the_same_fields() {
    let (url, _seen) = fake_model(vec![
        tool_calls_stream(&[
            ("call_a", "f__echo", r#"{"message": "hi"}"#),
            ("call_b", "f__add", r#"{"a": 1, "b": 2}"#),
        ]),
        text_stream("done"),
    ]);
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let cfg = blocking_hook_config(&sb, &log);
    let out = sb.run_with(&run_args(&url, &["--allowed-tools", "f__*"]), &cfg);
    assert!(out.status.success(), "{}", stderr(&out));
    let denied = sb.run_with(
        &["call", "f", "echo", "--args", r#"{"message": "hi"}"#],
        &cfg,
    );
    assert_eq!(denied.status.code(), Some(1));
    let sent = sb.run_with(&["call", "f", "add", "--args", r#"{"a": 1, "b": 2}"#], &cfg);
    assert!(sent.status.success(), "{}", stderr(&sent));

    let audit = std::fs::read_to_string(sb.path().join("data/mcp-host/audit.jsonl")).unwrap();
    let records: Vec<Value> = audit
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let summary: Vec<(&str, &str, &str, &str)> = records
        .iter()
        .map(|r| {
            let mut keys: Vec<&str> = r.as_object().unwrap().keys().map(String::as_str).collect();
            keys.sort_unstable();
            assert_eq!(keys, AUDIT_FIELDS, "{r}");
            (
                r["source"].as_str().unwrap(),
                r["tool"].as_str().unwrap(),
                r["decided_by"]["by"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("model", "echo", "hook", "refused"),
            ("model", "add", "allow_rule", "ok"),
            ("person", "echo", "hook", "refused"),
            ("person", "add", "mode", "ok"),
        ],
        "{audit}"
    );
}

#[test]
fn a_hook_matcher_that_is_not_a_regex_stops_the_command_before_any_server_starts() {
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let text = json!({
        "mcpServers": {"f": fake_server(&["--request-log", log.to_str().unwrap()])},
        "hooks": {"PreToolUse": [{"matcher": "f__(echo", "hooks": [{"command": "exit 2"}]}]}
    });
    let cfg = sb.write("c.json", &text.to_string());
    let out = sb.run_with(
        &["call", "f", "echo", "--args", r#"{"message": "hi"}"#],
        &cfg,
    );
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("hooks.PreToolUse[0].matcher"),
        "{}",
        stderr(&out)
    );
    assert!(!log.exists(), "the server was never started");
}

#[test]
fn post_tool_use_objections_reach_the_model() {
    let (url, seen) = fake_model(vec![
        tool_calls_stream(&[("call_a", "f__echo", r#"{"message": "hi"}"#)]),
        text_stream("done"),
    ]);
    let sb = Sandbox::new();
    let text = json!({
        "mcpServers": {"f": fake_server(&[])},
        "hooks": {"PostToolUse": [{"matcher": "f__echo", "hooks": [
            {"command": "cat >/dev/null; echo '{\"decision\": \"block\", \"reason\": \"result looked odd\"}'"}
        ]}]}
    });
    let cfg = sb.write("c.json", &text.to_string());
    let out = sb.run_with(&run_args(&url, &["--allowed-tools", "f__echo"]), &cfg);
    assert!(out.status.success(), "{}", stderr(&out));
    let requests = seen.lock().unwrap();
    let echo = tool_message(&requests, 1, "call_a");
    assert!(
        echo.starts_with("hi") && echo.contains("result looked odd"),
        "{echo}"
    );
}

#[test]
fn a_definition_changed_mid_turn_is_not_called_under_the_old_approval() {
    let (url, seen) = fake_model(vec![
        tool_calls_stream(&[("call_a", "f__echo", r#"{"message": "one"}"#)]),
        // The rug pull: echo's description changes and the server says so.
        tool_calls_stream(&[("call_b", "f__mutate", "{}")]),
        tool_calls_stream(&[("call_c", "f__echo", r#"{"message": "two"}"#)]),
        text_stream("done"),
    ]);
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--request-log", log.to_str().unwrap()])}),
    );
    let out = sb.run_with(
        &run_args(&url, &["--allowed-tools", "f__echo,f__mutate"]),
        &cfg,
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert_eq!(
        calls_received(&log),
        ["tools/call echo", "tools/call mutate"],
        "the changed echo was never called"
    );
    let requests = seen.lock().unwrap();
    let refused = tool_message(&requests, 3, "call_c");
    assert!(
        refused.contains("changed") || refused.contains("approval"),
        "{refused}"
    );
    // The model's last request offers the new definition, not the old one.
    let tools = requests[3]["tools"].as_array().unwrap();
    let echo = tools
        .iter()
        .find(|t| t["function"]["name"] == "f__echo")
        .unwrap();
    assert!(
        echo["function"]["description"]
            .as_str()
            .unwrap()
            .contains("Before answering"),
        "{echo}"
    );
}

#[test]
fn a_turn_does_not_wait_for_a_server_that_never_answers_and_the_model_is_told() {
    let (url, seen) = fake_model(vec![
        tool_calls_stream(&[("call_a", "f__echo", r#"{"message": "hi"}"#)]),
        text_stream("done"),
    ]);
    let sb = Sandbox::new();
    let mut hung = fake_server(&["--fault", "hang"]);
    hung["timeout"] = json!(60_000);
    let cfg = sb.config(
        "c.json",
        json!({
            "f": fake_server(&[]),
            "hung": hung,
            "broken": {"command": "/nonexistent/mcp-server"},
        }),
    );
    let started = Instant::now();
    let out = sb.run_with(
        &run_args(&url, &["--allowed-tools", "f__echo", "--server-wait", "2"]),
        &cfg,
    );
    let took = started.elapsed();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    // Far below the hung server's 60 s start-up timeout (the bound is loose on purpose).
    assert!(took < Duration::from_secs(30), "took {took:?}");
    let requests = seen.lock().unwrap();
    let first = requests[0]["messages"].as_array().unwrap();
    let user = first.iter().rev().find(|m| m["role"] == "user").unwrap()["content"]
        .as_str()
        .unwrap();
    assert!(user.contains("`hung`: still starting"), "{user}");
    assert!(user.contains("`broken`: failed"), "{user}");
    assert!(user.ends_with("go"), "{user}");
    assert_eq!(tool_message(&requests, 1, "call_a"), "hi");
}

#[test]
fn a_run_whose_servers_all_failed_exits_non_zero_before_asking_the_model() {
    let (url, seen) = fake_model(vec![text_stream("should not be asked")]);
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({"broken": {"command": "/nonexistent/mcp-server"}}),
    );
    let out = sb.run_with(&run_args(&url, &[]), &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("every configured server failed"),
        "{}",
        stderr(&out)
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn a_server_that_becomes_ready_mid_turn_joins_at_the_next_step() {
    let sb = Sandbox::new();
    let late_log = sb.work_file("late.log");
    let watched = late_log.clone();
    let (url, seen) = fake_model_fn(move |body| {
        let messages = body["messages"].as_array().unwrap();
        let last = messages.last().unwrap();
        if last["tool_call_id"] == "late" {
            return text_stream("done");
        }
        // No server may be ready at the first step (`tools` is then left out).
        let offers_late = (body["tools"].as_array().into_iter().flatten())
            .any(|t| t["function"]["name"] == "late__echo");
        if offers_late {
            return tool_calls_stream(&[("late", "late__echo", r#"{"message": "joined"}"#)]);
        }
        // Not there yet: wait (bounded) until the late server has listed its tools, then
        // make a call, so the next step comes after it is ready.
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline
            && !std::fs::read_to_string(&watched)
                .unwrap_or_default()
                .contains("tools/list")
        {
            std::thread::sleep(Duration::from_millis(20));
        }
        let id = format!("wait{}", messages.len());
        tool_calls_stream(&[(&id, "f__echo", r#"{"message": "waiting"}"#)])
    });
    let text = json!({
        "mcpServers": {
            "f": fake_server(&[]),
            "late": fake_server(&["--start-delay-ms", "1500", "--request-log", late_log.to_str().unwrap()]),
        },
        // f's output is in the context when late is called: not what this test is about.
        "permissions": {"taintExempt": [{"from": "f", "to": "late"}]},
    });
    let cfg = sb.write("c.json", &text.to_string());
    let out = sb.run_with(
        &run_args(
            &url,
            &[
                "--allowed-tools",
                "f__echo,late__echo",
                "--server-wait",
                "0",
                "--max-steps",
                "10",
            ],
        ),
        &cfg,
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["result"], "done");
    let calls = report["tool_calls"].as_array().unwrap();
    let late = calls
        .iter()
        .find(|c| c["id"] == "late")
        .unwrap_or_else(|| panic!("no call to late in {report:#}"));
    assert_eq!(late["is_error"], false, "{late}");
    let requests = seen.lock().unwrap();
    // No server may be ready at the first step (`tools` is then left out).
    let mut first_tools = requests[0]["tools"].as_array().into_iter().flatten();
    assert!(
        !first_tools.any(|t| t["function"]["name"] == "late__echo"),
        "the first step did not wait for the late server"
    );
}
