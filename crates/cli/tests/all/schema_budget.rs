//! No schema can hang the host (issue 12, item 6), through the real binary: an expansion
//! schema withholds its tool with a reason, a validation that would run for ever is refused
//! in bounded time, and SIGTERM ends the host within 2 s whatever it is doing.

use crate::common::*;
use serde_json::{Value, json};
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Waits for `child` to exit until `deadline`; kills it (and reports `None`) past it.
fn exit_within(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn spawn(sb: &Sandbox, args: &[&str], cfg: &std::path::Path) -> Child {
    sb.command(sb.path())
        .args(args)
        .args(["--strict-mcp-config", "--mcp-config"])
        .arg(cfg)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn output_of(child: Child) -> (String, String) {
    let out = child.wait_with_output().unwrap();
    (stdout(&out), stderr(&out))
}

#[test]
fn an_expansion_schema_withholds_its_tool_with_a_reason() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--fault", "expansion-schema"])}),
    );
    let started = Instant::now();
    let mut child = spawn(&sb, &["tools", "--json"], &cfg);
    // Generous: start-up included. The compile refusal itself is microseconds (see
    // docs/benchmarks.md); the point is "not minutes".
    let status = exit_within(&mut child, Duration::from_secs(20))
        .expect("`tools` finished instead of spinning on the schema");
    let (out, err) = output_of(child);
    assert!(status.success(), "{err}");
    assert!(started.elapsed() < Duration::from_secs(20));
    let rows: Vec<Value> = serde_json::from_str(&out).unwrap();
    let expand = rows.iter().find(|r| r["name"] == "f__expand").unwrap();
    assert_eq!(expand["callable"], false, "{expand}");
    let reason = expand["flags"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["kind"] == "schema_unavailable")
        .unwrap_or_else(|| panic!("{expand}"))["reason"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        reason.contains("budget") && reason.contains("expansion"),
        "{reason}"
    );
    // The table says so too, on stderr.
    let table = sb.run_with(&["tools"], &cfg);
    assert!(
        stderr(&table).contains("`f__expand`: not callable: schema over the host's budget"),
        "{}",
        stderr(&table)
    );
    let call = sb.run_with(&["call", "f__expand", "--args", r#"{"q": "x"}"#], &cfg);
    assert_eq!(call.status.code(), Some(1));
    assert!(stderr(&call).contains("unavailable"), "{}", stderr(&call));
}

/// Arguments that make the `deep` tool's schema try `8^depth` branches.
fn deep_args(depth: usize) -> String {
    let mut v = json!("leaf");
    for _ in 0..depth {
        v = json!([v]);
    }
    json!({"x": v}).to_string()
}

#[test]
fn a_validation_that_would_run_for_ever_is_refused_and_nothing_is_sent() {
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--fault", "slow-schema", "--request-log", log.to_str().unwrap()])}),
    );
    let args = deep_args(14);
    let mut child = spawn(&sb, &["call", "f__deep", "--args", &args], &cfg);
    let status = exit_within(&mut child, Duration::from_secs(20))
        .expect("the call was refused instead of validating for ever");
    let (_, err) = output_of(child);
    assert_eq!(status.code(), Some(1), "{err}");
    assert!(err.contains("steps and was stopped"), "{err}");
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(!seen.contains("tools/call"), "{seen}");
    // A shallow call of the same tool validates and goes through.
    let ok = sb.run_with(&["call", "f__deep", "--args", r#"{"x": [[]]}"#], &cfg);
    assert!(ok.status.success(), "{}", stderr(&ok));
}

#[test]
fn sigterm_or_sigint_ends_the_host_within_two_seconds_while_a_hook_blocks() {
    for sig in [
        nix::sys::signal::Signal::SIGTERM,
        nix::sys::signal::Signal::SIGINT,
    ] {
        let sb = Sandbox::new();
        let marker = sb.path().join("hook-started");
        let hook = format!("touch {}; sleep 30", marker.display());
        let text = json!({
            "mcpServers": {"f": {"command": fake()}},
            "hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": hook, "timeout": 60}]}]}
        });
        let cfg = sb.write("c.json", &text.to_string());
        let mut child = spawn(
            &sb,
            &["call", "f__echo", "--args", r#"{"message": "hi"}"#],
            &cfg,
        );
        let deadline = Instant::now() + Duration::from_secs(20);
        while !marker.exists() {
            assert!(Instant::now() < deadline, "the hook never started");
            std::thread::sleep(Duration::from_millis(10));
        }
        let sent = Instant::now();
        signal(child.id(), sig);
        let status = exit_within(&mut child, Duration::from_secs(2));
        let took = sent.elapsed();
        let (_, err) = output_of(child);
        let status =
            status.unwrap_or_else(|| panic!("{sig}: still running 2 s after the signal: {err}"));
        assert_eq!(status.code(), Some(130), "{sig}: {err}");
        assert!(took < Duration::from_secs(2), "{sig}: {took:?}");
    }
}
