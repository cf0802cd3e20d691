//! Calls a server runs as a task (the 2026-07-28 Tasks extension), through the real CLI
//! against the fake server's `research` tool: followed to the end with `tasks/get`, its
//! question answered with `tasks/update` once, its end in the call's one audit record; a
//! failed task is the call's error; a status about another task, or a task that never
//! ends, is given up on and cancelled at the server, and so is an interrupted one.

use crate::common::*;
use serde_json::{Value, json};
use std::time::{Duration, Instant};

fn call_records(sb: &Sandbox) -> Vec<Value> {
    let log = sb.path().join("data/mcp-host/audit.jsonl");
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|l| l["event"] == "call")
        .collect()
}

fn researcher(
    sb: &Sandbox,
    faults: &[&str],
    tool_timeout_ms: u64,
) -> (std::path::PathBuf, std::path::PathBuf) {
    let log = sb.work_file("requests.log");
    let mut args = vec!["--era", "modern", "--fault", "tasks"];
    for f in faults {
        args.extend(["--fault", f]);
    }
    args.extend(["--request-log", log.to_str().unwrap()]);
    let mut server = fake_server(&args);
    server["elicitationDefaults"] = json!(true);
    server["toolTimeout"] = json!(tool_timeout_ms);
    (sb.config("c.json", json!({"m": server})), log)
}

fn count(log: &str, method: &str) -> usize {
    log.lines().filter(|l| *l == method).count()
}

#[test]
fn a_task_is_followed_to_its_result_and_its_question_answered_once() {
    for faults in [&[][..], &["task-repeat-ask"]] {
        let sb = Sandbox::new();
        let (cfg, log) = researcher(&sb, faults, 10_000);
        let args = r#"{"topic": "python", "ask": true, "polls": 2}"#;
        let out = sb.run_with(&["call", "m", "research", "--args", args], &cfg);
        assert!(out.status.success(), "{faults:?}: {}", stderr(&out));
        assert!(
            stdout(&out).starts_with("report on python (technical) after"),
            "the defaults answered the task's question: {}",
            stdout(&out)
        );
        let seen = std::fs::read_to_string(&log).unwrap();
        assert_eq!(
            count(&seen, "tasks/update"),
            1,
            "{faults:?}: asked once: {seen}"
        );
        assert!(count(&seen, "tasks/get") >= 3, "{seen}");
        assert_eq!(count(&seen, "tasks/cancel"), 0, "{seen}");
        let calls = call_records(&sb);
        assert_eq!(calls.len(), 1, "one record for the call and its task");
        assert_eq!(calls[0]["task_id"], "task-1");
        assert_eq!(calls[0]["status"], "ok");
        let rounds = calls[0]["input_rounds"].as_array().unwrap();
        assert_eq!(rounds.len(), 1, "{rounds:?}");
        assert_eq!(rounds[0]["requests"][0]["key"], "clarify");
        assert_eq!(rounds[0]["requests"][0]["action"], "accept");
    }
}

#[test]
fn a_failed_task_is_the_calls_error_and_its_record_keeps_what_it_asked() {
    let sb = Sandbox::new();
    let (cfg, _) = researcher(&sb, &["task-fail"], 10_000);
    let args = r#"{"topic": "python", "ask": true}"#;
    let out = sb.run_with(&["call", "m", "research", "--args", args], &cfg);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("server error -32603: the research failed"),
        "{}",
        stderr(&out)
    );
    let record = &call_records(&sb)[0];
    assert_eq!(record["status"], "failed");
    assert_eq!(record["task_id"], "task-1", "{record}");
    assert_eq!(
        record["input_rounds"][0]["requests"][0]["key"], "clarify",
        "{record}"
    );
}

#[test]
fn a_task_that_never_ends_or_answers_for_another_is_given_up_and_cancelled() {
    for (fault, why) in [
        // Its TTL is 0, so the deadline is the tool timeout (2 s).
        ("task-forever", "no response within 2s"),
        ("task-wrong-id", "was answered about task \"task-other\""),
    ] {
        let sb = Sandbox::new();
        let (cfg, log) = researcher(&sb, &[fault], 2_000);
        let out = sb.run_with(&["call", "m", "research"], &cfg);
        assert!(!out.status.success(), "{fault}");
        assert!(stderr(&out).contains(why), "{fault}: {}", stderr(&out));
        let seen = std::fs::read_to_string(&log).unwrap();
        assert_eq!(count(&seen, "tasks/cancel"), 1, "{fault}: {seen}");
    }
}

#[test]
fn an_interrupted_task_is_cancelled_at_the_server() {
    let sb = Sandbox::new();
    let (cfg, log) = researcher(&sb, &["task-forever"], 600_000);
    let mut host = sb
        .command(sb.path())
        .args([
            "call",
            "m",
            "research",
            "--strict-mcp-config",
            "--mcp-config",
        ])
        .arg(&cfg)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = Instant::now();
    while count(
        &std::fs::read_to_string(&log).unwrap_or_default(),
        "tasks/get",
    ) < 2
    {
        assert!(
            started.elapsed() < Duration::from_secs(15),
            "the task was never polled"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(host.id(), nix::sys::signal::Signal::SIGINT);
    assert_eq!(host.wait().unwrap().code(), Some(130));
    let seen = std::fs::read_to_string(&log).unwrap();
    assert_eq!(
        count(&seen, "tasks/cancel"),
        1,
        "the server was not told: {seen}"
    );
}
