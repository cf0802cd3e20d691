//! What a server puts on its stdout that no decoder should accept, and what the host owes
//! the person for it: the request it answers fails at once with the reason (not at its
//! deadline), stray answers are dropped without breaking anything, a desynchronised stream
//! is stopped and restarted, a slow `server/discover` is waited for, a partial listing is
//! reported, and a call to a server that died says how it died. Real supervised processes
//! (the fake server's fault modes); waits are on published states with deadlines.

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.

use crate::common::*;
use mcp_host_client::{CallError, Manager, RequestError, ToolCaller};
use mcp_host_core::{ServerId, ServerState, ServerStatus};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn setup(name: &str, args: &[&str], startup_ms: u64, tool_ms: u64) -> mcp_host_client::ServerSetup {
    fake_setup(name, args, |r| {
        r.timeout = Some(startup_ms);
        r.tool_timeout = Some(tool_ms);
    })
}

fn start(servers: Vec<mcp_host_client::ServerSetup>) -> (Manager, ToolCaller) {
    Manager::start(
        servers,
        manager_options(Duration::from_millis(50), Duration::from_millis(200)),
    )
}

fn is(label: &'static str) -> impl Fn(&ServerStatus) -> bool {
    move |s| s.state.label() == label
}

async fn call(calls: &ToolCaller, name: &str, tool: &str) -> Result<String, CallError> {
    let args = serde_json::json!({"message": "still here", "a": 1, "b": 2})
        .as_object()
        .cloned();
    let out = calls
        .call(&ServerId::new(name), tool, args, &CancellationToken::new())
        .await?;
    Ok(format!("{:?}", out.content))
}

#[tokio::test]
async fn an_undecodable_handshake_answer_fails_the_server_at_once_with_the_reason() {
    // Startup timeout 60 s: today the line is dropped and the server sits in `starting`.
    let began = Instant::now();
    let (m, _calls) = start(vec![
        setup("legacy", &["--fault", "bad-utf16-handshake"], 60_000, 5000),
        setup(
            "modern",
            &["--era", "modern", "--fault", "bad-utf16-handshake"],
            60_000,
            5000,
        ),
    ]);
    for name in ["legacy", "modern"] {
        let st = wait_status(&m, name, |s| s.state.error().is_some()).await;
        let why = st.state.error().unwrap();
        assert!(
            why.contains("invalid answer") && why.contains("escape"),
            "{name}: {st:?}"
        );
    }
    assert!(
        began.elapsed() < Duration::from_secs(15),
        "{:?}",
        began.elapsed()
    );
    m.shutdown().await;
}

/// Found by the simulation: a 2026-07-28 server whose `server/discover` answer lacks
/// required fields was reported only by its refusal of the legacy fallback ("unsupported
/// protocol version"), which names nothing the server's author could fix.
#[tokio::test]
async fn a_modern_server_that_fails_both_eras_is_reported_with_the_probes_reason() {
    let (m, _calls) = start(vec![setup(
        "modern",
        &["--era", "modern", "--fault", "discover-missing-fields"],
        10_000,
        5000,
    )]);
    let st = wait_status(&m, "modern", |s| s.state.error().is_some()).await;
    let why = st.state.error().unwrap();
    assert!(why.contains("server/discover"), "{st:?}");
    assert!(
        why.contains("initialize on a fresh connection failed too"),
        "{st:?}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn answers_the_decoder_refuses_fail_that_call_at_once_and_the_server_stays_usable() {
    let cases = [
        ("bad-utf16", "escape"),
        ("bad-envelope", "not \"2.0\""),
        ("result-and-error", "both `result` and `error`"),
        ("deep-result", "nested deeper than 127"),
    ];
    let (m, calls) = start(
        cases
            .iter()
            .map(|(fault, _)| setup(fault, &["--fault", fault], 5000, 60_000))
            .collect(),
    );
    for (fault, reason) in cases {
        wait_status(&m, fault, is("ready")).await;
        let began = Instant::now();
        let err = call(&calls, fault, "add").await.unwrap_err();
        let CallError::Request {
            source: RequestError::Protocol(why),
            ..
        } = &err
        else {
            panic!("{fault}: {err:?}")
        };
        assert!(why.contains(reason), "{fault}: {why}");
        // The tool deadline is a minute: this was the decoder, not the clock.
        assert!(began.elapsed() < Duration::from_secs(10), "{fault}");
        assert!(
            call(&calls, fault, "echo")
                .await
                .unwrap()
                .contains("still here")
        );
    }
    m.shutdown().await;
}

#[tokio::test]
async fn stray_and_mistyped_answers_are_dropped_and_never_break_the_handshake() {
    // Before every answer the server sends one to the next id (not sent yet) and one with
    // the id as a string: neither may be taken for the real one, in either era.
    let (m, calls) = start(vec![
        setup("legacy", &["--fault", "early-responses"], 5000, 5000),
        setup(
            "modern",
            &["--era", "modern", "--fault", "early-responses"],
            5000,
            5000,
        ),
    ]);
    for name in ["legacy", "modern"] {
        let st = wait_status(&m, name, |s| s.state.is_settled()).await;
        assert_eq!(st.state, ServerState::Ready, "{name}: {st:?}");
        assert_eq!(st.tool_count, 12, "{name}");
        assert!(
            call(&calls, name, "echo")
                .await
                .unwrap()
                .contains("still here")
        );
        assert!(
            call(&calls, name, "add").await.unwrap().contains('3'),
            "{name}"
        );
    }
    m.shutdown().await;
}

#[tokio::test]
async fn a_server_request_with_an_invalid_id_is_answered_with_a_null_id() {
    // In a folder of its own: a confined server may write its data file's folder.
    let folder = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new_in(folder.path()).unwrap();
    let path = log.path().to_str().unwrap().to_string();
    let (m, calls) = start(vec![setup(
        "s",
        &["--fault", "invalid-id-request", "--request-log", &path],
        5000,
        5000,
    )]);
    wait_status(&m, "s", is("ready")).await;
    assert!(call(&calls, "s", "add").await.unwrap().contains("asked"));
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let seen = std::fs::read_to_string(&path).unwrap();
        if seen.lines().any(|l| l == "response id=null -32600") {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no null-id answer logged: {seen}"
        );
        tokio::task::yield_now().await;
        std::thread::sleep(Duration::from_millis(20));
    }
    m.shutdown().await;
}

#[tokio::test]
async fn an_over_long_line_fails_the_call_at_once_and_the_server_is_restarted() {
    let (m, calls) = start(vec![setup("big", &[], 5000, 60_000)]);
    wait_status(&m, "big", is("ready")).await;
    let began = Instant::now();
    let err = call(&calls, "big", "huge").await.unwrap_err();
    let CallError::Request {
        source: RequestError::Protocol(why),
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(why.contains("longer than"), "{why}");
    assert!(
        began.elapsed() < Duration::from_secs(20),
        "{:?}",
        began.elapsed()
    );
    let back = wait_status(&m, "big", |s| {
        s.state == ServerState::Ready && s.restarts == 1
    })
    .await;
    assert_eq!(back.tool_count, 12);
    assert!(
        call(&calls, "big", "echo")
            .await
            .unwrap()
            .contains("still here")
    );
    m.shutdown().await;
}

#[tokio::test]
async fn roots_list_is_answered_method_not_found() {
    let (m, calls) = start(vec![setup("s", &["--fault", "ask-roots"], 5000, 5000)]);
    wait_status(&m, "s", is("ready")).await;
    let answer = call(&calls, "s", "roots").await.unwrap();
    assert!(answer.contains("-32601"), "{answer}");
    m.shutdown().await;
}

#[tokio::test]
async fn a_call_to_a_server_that_exited_names_its_exit_status_and_stderr() {
    let (m, calls) = start(vec![setup("c", &[], 5000, 5000)]);
    wait_status(&m, "c", is("ready")).await;
    let err = call(&calls, "c", "crash").await.unwrap_err();
    let CallError::Request {
        source: RequestError::Exited { how, stderr_tail },
        ..
    } = &err
    else {
        panic!("{err:?}")
    };
    assert!(how.contains("exited with status 3"), "{how}");
    assert!(
        stderr_tail.iter().any(|l| l.contains("crashing mid-call")),
        "{stderr_tail:?}"
    );
    assert!(err.to_string().contains("crashing mid-call"), "{err}");
    m.shutdown().await;
}

#[tokio::test]
async fn a_slow_discover_answer_is_waited_for_and_a_fallback_says_why() {
    // rmcp gives up on server/discover after a fixed 10 s and silently falls back; a server
    // still starting must end in the newer era (the probe may take the start-up timeout).
    let (m, _calls) = start(vec![
        setup(
            "slow",
            &["--era", "dual", "--discover-delay-ms", "10500"],
            30_000,
            5000,
        ),
        setup("legacy", &["--era", "legacy"], 30_000, 5000),
    ]);
    let slow = wait_status(&m, "slow", |s| s.state.is_settled()).await;
    assert_eq!(slow.state, ServerState::Ready, "{slow:?}");
    assert_eq!(slow.era.unwrap().version, "2026-07-28");
    assert_eq!(slow.era_note, None);
    let legacy = wait_status(&m, "legacy", is("ready")).await;
    assert_eq!(legacy.era.unwrap().version, "2025-11-25");
    let note = legacy.era_note.unwrap();
    assert!(
        note.contains("server/discover") && note.contains("-32601"),
        "{note}"
    );
    m.shutdown().await;
}

#[test]
fn a_cut_listing_leaves_the_server_ready_with_a_warning_in_servers() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        serde_json::json!({
            "looping": fake_server(&["--page-size", "2", "--cursor-loop"]),
            "fine": fake_server(&[]),
        }),
    );
    let rows = sb.servers_json(&cfg);
    let looping = row(&rows, "looping");
    assert_eq!(looping["state"], "ready", "{looping}");
    let warnings = looping["warnings"].as_array().unwrap();
    assert!(
        warnings.iter().any(|w| w
            .as_str()
            .unwrap()
            .contains("tools/list: cursor \"0\" repeated")),
        "{looping}"
    );
    // The fake server always lists one prompt without a name: that is reported too.
    let fine = row(&rows, "fine")["warnings"].as_array().unwrap().clone();
    assert!(
        fine.iter()
            .all(|w| !w.as_str().unwrap().starts_with("tools/list")),
        "{fine:?}"
    );
    assert!(
        fine.iter()
            .any(|w| w.as_str().unwrap().contains("prompts/list: `#2` left out")),
        "{fine:?}"
    );
    // The table says it too.
    let out = sb.run_with(&["servers"], &cfg);
    let text = stdout(&out);
    assert!(
        text.contains("looping: tools/list: cursor \"0\" repeated"),
        "{text}"
    );
    // The legacy fake server's fallback is reported with its reason.
    assert!(text.contains("-32601"), "{text}");
}

/// Where scripts/install-test-deps.sh put the real servers.
fn deps_dir() -> std::path::PathBuf {
    std::env::var_os("MCP_HOST_DEPS").map_or_else(
        || {
            std::path::PathBuf::from(std::env::var("HOME").unwrap_or_default())
                .join(".cache/mcp-host-deps")
        },
        std::path::PathBuf::from,
    )
}

#[test]
fn twelve_python_servers_started_together_all_end_in_the_modern_era() {
    let time = deps_dir().join("venv/bin/mcp-server-time");
    if !time.exists() {
        eprintln!(
            "SKIPPED: {} is not installed (run scripts/install-test-deps.sh)",
            time.display()
        );
        return;
    }
    let sb = Sandbox::new();
    let servers: serde_json::Map<String, serde_json::Value> = (0..12)
        .map(|i| {
            let def = serde_json::json!({"command": time, "args": ["--local-timezone", "UTC"]});
            (format!("time{i}"), def)
        })
        .collect();
    let cfg = sb.config("c.json", serde_json::Value::Object(servers));
    let rows = sb.servers_json(&cfg);
    for i in 0..12 {
        let r = row(&rows, &format!("time{i}"));
        assert_eq!(r["state"], "ready", "{r}");
        assert_eq!(r["era"], "2026-07-28", "{r}");
        assert_eq!(r["era_note"], serde_json::Value::Null, "{r}");
    }
}

#[tokio::test]
async fn over_http_an_answer_with_a_string_id_never_answers_an_integer_request() {
    let (mut child, port) = fake_http_with(0, &["--fault", "string-id"]);
    let raw = mcp_host_config::RawServer {
        kind: Some("http".into()),
        url: Some(format!("http://127.0.0.1:{port}/mcp")),
        timeout: Some(5000),
        tool_timeout: Some(1000),
        ..mcp_host_config::RawServer::default()
    };
    let (m, calls) = start(vec![mcp_host_client::ServerSetup {
        id: ServerId::new("h"),
        transport: mcp_host_core::TransportKind::Http,
        spec: Some(
            raw.to_spec("h", mcp_host_config::Scope::Flag, &|_| None)
                .unwrap(),
        ),
        initial: ServerState::Starting,
    }]);
    wait_status(&m, "h", is("ready")).await;
    // The answer comes back as {"id": "2", ...} for request 2: it is not the answer, and
    // since it is the body of that request's own POST, the call fails at once with the
    // reason (not at its deadline), and the session goes on.
    for _ in 0..2 {
        let err = call(&calls, "h", "echo").await.unwrap_err();
        assert!(
            matches!(
                &err,
                CallError::Request {
                    source: RequestError::Server { message, .. },
                    ..
                } if message.contains("is for request \"")
            ),
            "{err:?}"
        );
    }
    assert!(is("ready")(&m.status(&ServerId::new("h")).unwrap()));
    m.shutdown().await;
    let _ = child.kill();
    let _ = child.wait();
}

#[tokio::test]
async fn a_server_silent_to_discover_falls_back_after_the_startup_timeout_and_says_so() {
    // The probe waits the whole start-up timeout (here 1 s), then `initialize` goes out on
    // the same process.
    // In a folder of its own: a confined server may write its data file's folder.
    let folder = tempfile::tempdir().unwrap();
    let log = tempfile::NamedTempFile::new_in(folder.path()).unwrap();
    let spawns = log.path().to_str().unwrap().to_string();
    let (m, calls) = start(vec![setup(
        "quiet",
        &["--fault", "silent-discover", "--spawn-log", &spawns],
        1000,
        5000,
    )]);
    let st = wait_status(&m, "quiet", |s| s.state.is_settled()).await;
    assert_eq!(st.state, ServerState::Ready, "{st:?}");
    assert_eq!(st.era.unwrap().version, "2025-11-25");
    let note = st.era_note.unwrap();
    assert!(note.contains("no answer within 1s"), "{note}");
    assert_eq!(std::fs::read_to_string(&spawns).unwrap().lines().count(), 1);
    assert!(
        call(&calls, "quiet", "echo")
            .await
            .unwrap()
            .contains("still here")
    );
    m.shutdown().await;
}
