//! Fault modes against the connection manager with real supervised processes: a server that
//! crashes, hangs, floods, lies or sends an oversized line affects only itself, and the host
//! restarts what can be restarted. Waits are on published state changes with deadlines.

use crate::common::*;
use mcp_host_client::{CallError, Manager, ManagerOptions, RequestError, ServerSetup, ToolCaller};
use mcp_host_core::{ServerId, ServerState, ServerStatus};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

fn setup(name: &str, args: &[&str], startup_ms: u64, tool_ms: u64) -> ServerSetup {
    fake_setup(name, args, |r| {
        r.timeout = Some(startup_ms);
        r.tool_timeout = Some(tool_ms);
    })
}

fn options() -> ManagerOptions {
    manager_options(Duration::from_millis(50), Duration::from_millis(200))
}

async fn wait_until(m: &Manager, name: &str, what: impl Fn(&ServerStatus) -> bool) -> ServerStatus {
    wait_status(m, name, what).await
}

fn is(label: &'static str) -> impl Fn(&ServerStatus) -> bool {
    move |s| s.state.label() == label
}

async fn echo(calls: &ToolCaller, name: &str) -> Result<String, CallError> {
    let args = serde_json::json!({"message": "still here"})
        .as_object()
        .cloned();
    let out = calls
        .call(
            &ServerId::new(name),
            "echo",
            args,
            &CancellationToken::new(),
        )
        .await?;
    Ok(format!("{:?}", out.content))
}

#[tokio::test]
async fn faulty_servers_never_take_the_host_or_their_neighbours_down() {
    let (m, calls) = Manager::start(
        vec![
            setup("healthy", &[], 5000, 5000),
            setup("crash_at_start", &["--fault", "crash-at-start"], 5000, 5000),
            setup("hang", &["--fault", "hang"], 300, 5000),
            setup("slow_start", &["--start-delay-ms", "300"], 5000, 5000),
            setup("garbage", &["--fault", "garbage"], 5000, 5000),
            setup("flood", &["--fault", "stderr-flood"], 5000, 5000),
        ],
        options(),
    );
    let crashed = wait_until(&m, "crash_at_start", is("failed")).await;
    assert!(
        crashed
            .state
            .error()
            .unwrap()
            .contains("exited with status 1"),
        "{crashed:?}"
    );
    assert!(
        crashed
            .stderr_tail
            .iter()
            .any(|l| l.contains("configured to crash")),
        "{crashed:?}"
    );
    // It exited with an error before answering: that is its answer, reported at once with
    // its stderr instead of after retries that would fail the same way.
    assert_eq!(crashed.restarts, 0, "not retried: {crashed:?}");

    let hung = wait_until(&m, "hang", is("failed")).await;
    assert!(
        hung.state.error().unwrap().contains("no answer"),
        "{hung:?}"
    );

    for name in ["healthy", "slow_start", "garbage", "flood"] {
        wait_until(&m, name, is("ready")).await;
        assert!(
            echo(&calls, name).await.unwrap().contains("still here"),
            "{name}"
        );
    }
    m.shutdown().await;
}

#[tokio::test]
async fn a_server_that_crashes_mid_call_fails_that_call_and_is_restarted() {
    let (m, calls) = Manager::start(vec![setup("c", &[], 5000, 5000)], options());
    wait_until(&m, "c", is("ready")).await;
    let err = calls
        .call(
            &ServerId::new("c"),
            "crash",
            None,
            &CancellationToken::new(),
        )
        .await
        .unwrap_err();
    // How it ended is part of the error (wire_faults.rs checks the details).
    assert!(
        matches!(
            err,
            CallError::Request {
                source: RequestError::Exited { .. },
                ..
            }
        ),
        "{err:?}"
    );
    let back = wait_until(&m, "c", |s| {
        s.state == ServerState::Ready && s.restarts == 1
    })
    .await;
    assert!(
        back.stderr_tail
            .iter()
            .any(|l| l.contains("crashing mid-call")),
        "{back:?}"
    );
    assert!(echo(&calls, "c").await.unwrap().contains("still here"));
    m.shutdown().await;
}

// An over-long line is no timeout any more: wire_faults.rs checks it fails at once and the
// server is restarted.
#[tokio::test]
async fn a_hung_call_times_out_and_the_server_stays_usable() {
    let (m, calls) = Manager::start(vec![setup("big", &[], 5000, 1500)], options());
    wait_until(&m, "big", is("ready")).await;
    let id = ServerId::new("big");
    let err = calls
        .call(&id, "hang", None, &CancellationToken::new())
        .await
        .unwrap_err();
    let timed_out = matches!(
        err,
        CallError::Request {
            source: RequestError::Timeout(_),
            ..
        }
    );
    assert!(timed_out, "{err:?}");
    assert!(echo(&calls, "big").await.unwrap().contains("still here"));
    assert_eq!(m.status(&id).unwrap().restarts, 0);
    m.shutdown().await;
}

/// A server that stops reading its input: a call whose arguments fill the pipe to it ends
/// at its deadline (the write was outside every deadline, and waited forever), the line
/// given up half-written puts the stream out of step, so the server is stopped and started
/// again at once, and the next call works; the pings it sent meanwhile are answered or refused,
/// never gathered without bound.
#[tokio::test]
async fn a_call_to_a_server_that_stopped_reading_ends_at_its_deadline() {
    let args = &["--era", "legacy", "--fault", "deaf"];
    let (m, calls) = Manager::start(vec![setup("d", args, 5000, 600)], options());
    wait_until(&m, "d", is("ready")).await;
    let id = ServerId::new("d");
    let never = CancellationToken::new();
    let pings = serde_json::json!({"pings": 5000}).as_object().cloned();
    calls.call(&id, "deaf", pings, &never).await.unwrap();
    // Four times the pipe's 64 KiB: the write cannot finish while the server does not read.
    let big = serde_json::json!({"message": "x".repeat(256 * 1024)})
        .as_object()
        .cloned();
    let call = calls.call(&id, "echo", big, &never);
    let err = tokio::time::timeout(Duration::from_secs(30), call)
        .await
        .expect("the call ends at its deadline")
        .unwrap_err();
    // Said as what it is: the server, not the call, stopped.
    let not_reading = matches!(
        err,
        CallError::Request {
            source: RequestError::NotReading(_),
            ..
        }
    );
    assert!(not_reading, "{err:?}");
    assert!(
        err.to_string().contains("stopped reading its input"),
        "{err}"
    );
    // Ended at once, not at the next call: the stream cannot be used again.
    wait_until(&m, "d", |s| s.restarts == 1 && s.state.label() == "ready").await;
    assert!(echo(&calls, "d").await.unwrap().contains("still here"));
    m.shutdown().await;
}

#[tokio::test]
async fn cancelling_a_call_returns_at_once() {
    let (m, calls) = Manager::start(vec![setup("s", &[], 5000, 60_000)], options());
    wait_until(&m, "s", is("ready")).await;
    let cancel = CancellationToken::new();
    let args = serde_json::json!({"ms": 60_000}).as_object().cloned();
    let id = ServerId::new("s");
    let call = calls.call(&id, "slow", args, &cancel);
    let (r, ()) = tokio::join!(call, async { cancel.cancel() });
    assert!(
        matches!(
            r,
            Err(CallError::Request {
                source: RequestError::Cancelled,
                ..
            })
        ),
        "{r:?}"
    );
    assert!(echo(&calls, "s").await.is_ok());
    m.shutdown().await;
}

#[tokio::test]
async fn list_changed_refreshes_the_tool_list_in_both_eras() {
    // Legacy servers push the notification; modern ones only on the listen stream we open.
    let (m, calls) = Manager::start(
        vec![
            setup("old", &["--era", "legacy"], 5000, 5000),
            setup("new", &["--era", "modern"], 5000, 5000),
        ],
        options(),
    );
    for name in ["old", "new"] {
        wait_until(&m, name, is("ready")).await;
        let id = ServerId::new(name);
        assert_eq!(m.status(&id).unwrap().tool_count, 12);
        calls
            .call(&id, "grow", None, &CancellationToken::new())
            .await
            .unwrap();
        wait_until(&m, name, |s| s.tool_count == 13).await;
        assert!(
            m.tools(&id)
                .unwrap()
                .items
                .iter()
                .any(|t| t.name == "grown"),
            "{name}"
        );
    }
    m.shutdown().await;
}

/// A server that says its tools changed, a thousand times, without changing them costs no
/// new revision (nothing downstream rebuilds); a real change after it still shows.
#[tokio::test]
async fn announcing_changes_that_were_not_made_rebuilds_nothing() {
    let (m, calls) = Manager::start(
        vec![setup(
            "loud",
            &["--era", "legacy", "--fault", "announce"],
            5000,
            5000,
        )],
        options(),
    );
    let before = wait_until(&m, "loud", is("ready")).await;
    let id = ServerId::new("loud");
    let times = serde_json::json!({"times": 1000}).as_object().cloned();
    let cancel = CancellationToken::new();
    calls.call(&id, "announce", times, &cancel).await.unwrap();
    calls.call(&id, "grow", None, &cancel).await.unwrap();
    let after = wait_until(&m, "loud", |s| s.tool_count == before.tool_count + 1).await;
    assert_eq!(
        after.revision,
        before.revision + 1,
        "only the real change made a revision"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn shutdown_stops_everything_and_publishes_stopped() {
    let (m, _calls) = Manager::start(
        vec![
            setup("a", &[], 5000, 5000),
            setup("b", &["--era", "modern"], 5000, 5000),
        ],
        options(),
    );
    wait_until(&m, "a", is("ready")).await;
    wait_until(&m, "b", is("ready")).await;
    let mut rx = m.watch(&ServerId::new("a")).unwrap();
    m.shutdown().await;
    assert_eq!(rx.borrow_and_update().state, ServerState::Stopped);
}

/// Found by the simulation: the host's stop was not heard while a server's tool list was
/// awaited, so a server that answered the handshake and then never listed its tools held
/// the host's exit for its whole start-up timeout (30 s by default; two minutes here).
#[tokio::test]
async fn shutdown_does_not_wait_for_a_tool_list_that_never_comes() {
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("requests");
    let args = [
        "--fault",
        "hang-list",
        "--request-log",
        log.to_str().unwrap(),
    ];
    let (m, _calls) = Manager::start(vec![setup("a", &args, 120_000, 5000)], options());
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while !std::fs::read_to_string(&log).is_ok_and(|l| l.contains("tools/list")) {
        assert!(
            std::time::Instant::now() < deadline,
            "tools/list was never asked"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut rx = m.watch(&ServerId::new("a")).unwrap();
    tokio::time::timeout(Duration::from_secs(20), m.shutdown())
        .await
        .expect("shutdown waited for the tool list");
    assert_eq!(rx.borrow_and_update().state, ServerState::Stopped);
}

#[tokio::test]
async fn prompts_and_resources_are_listed_across_pages_with_bad_entries_reported() {
    let (m, _calls) = Manager::start(
        vec![setup("p", &["--page-size", "2"], 5000, 5000)],
        options(),
    );
    wait_until(&m, "p", is("ready")).await;
    let id = ServerId::new("p");
    let offers = m.offers(&id).unwrap();
    let prompts = &offers.prompts;
    let names: Vec<_> = prompts.items.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["greet", "plain"]);
    assert_eq!(prompts.issues.len(), 1, "{:?}", prompts.issues);
    let resources = &offers.resources;
    assert_eq!(resources.items.len(), 5, "three pages of two");
    assert!(resources.issues.is_empty());
    assert_eq!(offers.templates.items[0].uri_template, "mem://notes/{id}");
    m.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_extend_a_calls_idle_deadline() {
    // Idle deadline 1 s; the call takes 2.5 s. With progress every 100 ms it finishes; without
    // progress it times out and the server is told.
    let (m, calls) = Manager::start(vec![setup("s", &[], 5000, 1000)], options());
    wait_until(&m, "s", is("ready")).await;
    let id = ServerId::new("s");
    let never = CancellationToken::new();
    let with_progress = serde_json::json!({"ms": 2500, "progressEvery": 100})
        .as_object()
        .cloned();
    let out = calls
        .call(&id, "slow", with_progress, &never)
        .await
        .unwrap();
    assert!(format!("{:?}", out.content).contains("done"));
    let silent = serde_json::json!({"ms": 2500}).as_object().cloned();
    let r = calls.call(&id, "slow", silent, &never).await;
    assert!(
        matches!(
            r,
            Err(CallError::Request {
                source: RequestError::Timeout(_),
                ..
            })
        ),
        "{r:?}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn a_server_can_be_restarted_disabled_and_enabled_on_request() {
    // In a folder of its own: a confined server may write its data file's folder.
    let folder = tempfile::tempdir().unwrap();
    let pids = tempfile::NamedTempFile::new_in(folder.path()).unwrap();
    let log = pids.path().to_str().unwrap().to_string();
    let (m, calls) = Manager::start(
        vec![setup("s", &["--spawn-log", &log], 5000, 5000)],
        options(),
    );
    let first = wait_until(&m, "s", is("ready")).await;
    let id = ServerId::new("s");
    let spawned = || std::fs::read_to_string(&log).unwrap().lines().count();
    assert_eq!(spawned(), 1);
    // Restart: a new process, ready again, tools listed again.
    assert!(m.reconnect(&id));
    wait_until(&m, "s", |s| {
        s.state == ServerState::Ready && s.revision > first.revision
    })
    .await;
    assert_eq!(spawned(), 2);
    assert!(echo(&calls, "s").await.is_ok());
    // Disabled: stopped, calls refused; enabled: back.
    assert!(m.set_enabled(&id, false));
    wait_until(&m, "s", is("disabled")).await;
    assert!(matches!(
        echo(&calls, "s").await,
        Err(CallError::NotReady { .. })
    ));
    assert!(m.set_enabled(&id, true));
    wait_until(&m, "s", is("ready")).await;
    assert!(echo(&calls, "s").await.is_ok());
    assert_eq!(spawned(), 3);
    assert!(!m.reconnect(&ServerId::new("nope")));
    m.shutdown().await;
}

#[tokio::test]
async fn a_servers_question_reaches_the_person_and_their_answer_reaches_the_server() {
    let (asks_tx, mut asks) = tokio::sync::mpsc::unbounded_channel();
    let mut opts = options();
    opts.ask_person = Some(asks_tx);
    let (m, calls) = Manager::start(vec![setup("s", &["--era", "legacy"], 5000, 5000)], opts);
    wait_until(&m, "s", is("ready")).await;
    let id = ServerId::new("s");
    let never = CancellationToken::new();
    let call = calls.call(&id, "ask", None, &never);
    let person = async {
        let ask = asks.recv().await.unwrap();
        assert_eq!(ask.server, id);
        let mcp_host_client::ElicitationKind::Form { message, schema } = &ask.kind else {
            panic!("{:?}", ask.kind)
        };
        assert_eq!(message, "Who is asking?");
        assert_eq!(schema["required"], serde_json::json!(["name"]));
        ask.reply
            .send(mcp_host_client::ElicitationReply::Accept(
                serde_json::json!({"name": "Ada"}),
            ))
            .unwrap();
    };
    let (out, ()) = tokio::join!(call, person);
    let text = format!("{:?}", out.unwrap().content);
    assert!(text.contains("accept") && text.contains("Ada"), "{text}");
    m.shutdown().await;

    // Nobody to ask and no defaults allowed: declined, and the call still ends.
    let (m, calls) = Manager::start(
        vec![setup("s", &["--era", "legacy"], 5000, 5000)],
        options(),
    );
    wait_until(&m, "s", is("ready")).await;
    let out = calls.call(&id, "ask", None, &never).await.unwrap();
    assert!(format!("{:?}", out.content).contains("decline"));
    m.shutdown().await;
}

/// A question its server stopped waiting for is withdrawn from the person at once: when
/// the server cancels it (here 300 ms after asking), and when its connection ends. Before,
/// each stayed before the person for ten minutes.
#[tokio::test]
async fn a_question_its_server_stopped_waiting_for_is_withdrawn() {
    let (asks_tx, mut asks) = tokio::sync::mpsc::unbounded_channel();
    let mut opts = options();
    opts.ask_person = Some(asks_tx);
    let (m, calls) = Manager::start(vec![setup("s", &["--era", "legacy"], 5000, 5000)], opts);
    wait_until(&m, "s", is("ready")).await;
    let id = ServerId::new("s");
    let never = CancellationToken::new();
    let deadline = Duration::from_secs(20);
    let gives_up = serde_json::json!({"withdrawAfterMs": 300})
        .as_object()
        .cloned();
    let call = calls.call(&id, "ask", gives_up, &never);
    let person = async {
        let mut ask = tokio::time::timeout(deadline, asks.recv())
            .await
            .expect("the question reaches the person")
            .unwrap();
        tokio::time::timeout(deadline, ask.reply.closed())
            .await
            .expect("the cancelled question is withdrawn");
    };
    let (out, ()) = tokio::join!(call, person);
    assert!(format!("{:?}", out.unwrap().content).contains("withdrawn"));

    // Waiting when its server is stopped.
    let call = calls.call(&id, "ask", None, &never);
    let person = async {
        let mut ask = tokio::time::timeout(deadline, asks.recv())
            .await
            .expect("the question reaches the person")
            .unwrap();
        assert!(m.set_enabled(&id, false));
        tokio::time::timeout(deadline, ask.reply.closed())
            .await
            .expect("the question of a stopped server is withdrawn");
    };
    let (out, ()) = tokio::join!(call, person);
    assert!(out.is_err(), "{out:?}");
    m.shutdown().await;
}

/// A server that asks fifty questions at once gets four of them before the person; the
/// rest are declined at once, not queued behind them.
#[tokio::test]
async fn a_server_asking_without_end_is_declined_past_a_few_waiting_questions() {
    let (asks_tx, mut asks) = tokio::sync::mpsc::unbounded_channel();
    let mut opts = options();
    opts.ask_person = Some(asks_tx);
    let args = &["--era", "legacy", "--fault", "ask-storm"];
    let (m, calls) = Manager::start(vec![setup("s", args, 5000, 5000)], opts);
    wait_until(&m, "s", is("ready")).await;
    let id = ServerId::new("s");
    let never = CancellationToken::new();
    let times = serde_json::json!({"times": 50}).as_object().cloned();
    calls.call(&id, "ask_many", times, &never).await.unwrap();
    let limit = mcp_host_client::MAX_QUESTIONS_WAITING;
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let tally = loop {
        let out = calls.call(&id, "storm_tally", None, &never).await.unwrap();
        let tally = format!("{:?}", out.content);
        if tally.contains(&format!("declined {}", 50 - limit)) {
            break tally;
        }
        assert!(std::time::Instant::now() < deadline, "{tally}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(tally.contains("others 0"), "{tally}");
    let mut waiting = Vec::new();
    while let Ok(ask) = asks.try_recv() {
        waiting.push(ask);
    }
    assert_eq!(waiting.len(), limit);
    drop(waiting);
    m.shutdown().await;
}

/// A listing stops at its byte budget, across pages, and says so: 70 pages of a 1 MiB tool
/// each were held whole before (a hundred pages of 64 MiB could be).
#[tokio::test]
async fn a_listing_stops_at_its_byte_budget() {
    let args = &[
        "--era",
        "legacy",
        "--fault",
        "fat-list",
        "--tools",
        "70",
        "--page-size",
        "1",
    ];
    let (m, _calls) = Manager::start(vec![setup("fat", args, 60_000, 5000)], options());
    let ready = wait_until(&m, "fat", is("ready")).await;
    let budget = mcp_host_client::listing::MAX_LIST_BYTES >> 20;
    assert!(
        ready
            .warnings
            .iter()
            .any(|w| w.contains(&format!("stopped after {budget} MiB"))),
        "{:?}",
        ready.warnings
    );
    let tools = m.tools(&ServerId::new("fat")).unwrap();
    let fat = tools
        .items
        .iter()
        .filter(|t| t.name.starts_with("tool"))
        .count();
    assert!((budget - 2..budget).contains(&fat), "{fat} fat tools kept");
    m.shutdown().await;
}

/// A listing past its entry cap keeps the first entries left out one by one and counts the
/// rest in one issue, rather than an issue (and a log line, and a status line) for each.
#[tokio::test]
async fn entries_left_out_of_a_listing_are_counted_past_the_first_few() {
    let args = &["--era", "legacy", "--tools", "5200"];
    let (m, _calls) = Manager::start(vec![setup("wide", args, 20_000, 5000)], options());
    wait_until(&m, "wide", is("ready")).await;
    let tools = m.tools(&ServerId::new("wide")).unwrap();
    assert_eq!(
        tools.items.len(),
        mcp_host_client::listing::MAX_LIST_ENTRIES
    );
    let limit = mcp_host_client::listing::MAX_LIST_ISSUES;
    assert_eq!(tools.issues.len(), limit + 1, "{:?}", tools.issues.last());
    let last = tools.issues.last().unwrap();
    assert_eq!(last.item, "*");
    let total = 5200 + 12 - mcp_host_client::listing::MAX_LIST_ENTRIES;
    assert_eq!(
        last.reason,
        format!("{} more entries left out", total - limit)
    );
    m.shutdown().await;
}

#[tokio::test]
async fn prompts_are_filled_in_and_resources_read() {
    let (m, _calls) = Manager::start(vec![setup("s", &[], 5000, 5000)], options());
    wait_until(&m, "s", is("ready")).await;
    let id = ServerId::new("s");
    let mut args = serde_json::Map::new();
    args.insert("who".into(), serde_json::json!("Ada"));
    let messages = m.get_prompt(&id, "greet", args).await.unwrap();
    assert_eq!(messages.len(), 1);
    assert_eq!(
        (messages[0].role.as_str(), messages[0].text.as_str()),
        ("user", "Say hello to Ada.")
    );
    let contents = m.read_resource(&id, "mem://r1").await.unwrap();
    assert_eq!(contents[0].text, "contents of mem://r1");
    assert_eq!(contents[0].mime_type.as_deref(), Some("text/plain"));
    // The server's errors come back as errors.
    assert!(m.read_resource(&id, "file:///etc/passwd").await.is_err());
    assert!(
        m.get_prompt(&id, "nope", serde_json::Map::new())
            .await
            .is_err()
    );
    m.shutdown().await;
}

#[tokio::test]
async fn a_server_held_for_approval_starts_only_when_approved() {
    let folder = tempfile::tempdir().unwrap();
    let spawns = folder.path().join("spawns.log");
    let log = spawns.to_str().unwrap().to_string();
    let mut held = setup("p", &["--spawn-log", &log], 5000, 5000);
    held.initial = ServerState::PendingApproval;
    let (m, _calls) = Manager::start(vec![held], options());
    let id = ServerId::new("p");
    // Neither enabling nor a restart gets round the approval; the state still says why.
    assert!(
        !m.set_enabled(&id, true),
        "enabling started a server waiting for approval"
    );
    assert!(m.reconnect(&id));
    assert_eq!(m.status(&id).unwrap().state, ServerState::PendingApproval);
    assert!(m.approved(&id));
    wait_until(&m, "p", is("ready")).await;
    assert_eq!(std::fs::read_to_string(&spawns).unwrap().lines().count(), 1);
    m.shutdown().await;
}
