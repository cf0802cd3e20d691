//! The engine's session through its queue pair alone, as any front end drives it: a turn
//! whose call waits for an approval answered by call id, a person's direct call beside it,
//! a compaction asked for between turns, and a shutdown that ends with `Ended`. Waits are on
//! the events themselves, each with a deadline.

use crate::common::*;
use mcp_host_client::Manager;
use mcp_host_core::ServerState;
use mcp_host_core::decision::{AnswerScope, Mode};
use mcp_host_core::event::{CallSource, Event, TurnEnd};
use mcp_host_engine::host::{Connected, Servers};
use mcp_host_engine::session::{ModelChoice, Op, Session, SessionHandle, SessionSetup, Settings};
use mcp_host_engine::{Approval, Conversation, Gate, Hooks, ToolSource};
use mcp_host_policy::{Answers, Policy};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::mpsc::UnboundedReceiver;

/// The next event that `want` accepts, skipping others; fails after 20 seconds.
async fn next_where(events: &mut UnboundedReceiver<Event>, want: impl Fn(&Event) -> bool) -> Event {
    let found = tokio::time::timeout(Duration::from_secs(20), async {
        while let Some(e) = events.recv().await {
            if want(&e) {
                return Some(e);
            }
        }
        None
    });
    found
        .await
        .expect("no such event within 20 s")
        .expect("the session ended first")
}

/// A session over these servers (the first waited for until ready) and the model at `url`,
/// with its stores in `dir`.
async fn session_over(
    dir: &std::path::Path,
    setups: Vec<mcp_host_client::ServerSetup>,
    url: &str,
) -> (
    Session,
    SessionHandle,
    UnboundedReceiver<Op>,
    UnboundedReceiver<Event>,
) {
    let first = setups[0].id.to_string();
    let (servers, caller) = Manager::start(
        setups,
        manager_options(Duration::from_millis(50), Duration::from_millis(200)),
    );
    wait_status(&servers, &first, |s| s.state == ServerState::Ready).await;
    let store = mcp_host_store::Store::open(&dir.join("store.sqlite"))
        .await
        .unwrap();
    let pins = mcp_host_store::pins::PinStore::open(&dir.join("pins.sqlite"))
        .await
        .unwrap();
    let conversation = Conversation::create(&store, "m", "/", 0, Answers::default())
        .await
        .unwrap();
    let env = Arc::new(BTreeMap::new());
    let http = mcp_host_engine::host::model_client();
    let chosen =
        mcp_host_models::choose(Some("openai-compatible:m"), Some(url), &env, http).unwrap();
    let setup = SessionSetup {
        connected: Connected {
            servers: Servers::new(servers, Default::default()),
            gate: Gate::new(caller, Policy::default(), Hooks::default(), None),
        },
        tools: ToolSource::live(pins),
        store,
        conversation,
        model: Some(ModelChoice::from(chosen)),
        settings: Settings {
            mode: Mode::Ask,
            max_steps: 5,
            background_after: None,
            context_window: Some(100_000),
            workdir: "/".into(),
            env,
            waiting_servers: Vec::new(),
            approve_server: Box::new(|_| Err("no project servers here".into())),
            interactive: true,
        },
        questions: None,
    };
    Session::new(setup)
}

#[tokio::test]
async fn a_front_end_drives_turns_approvals_direct_calls_and_compaction_by_operations() {
    let (url, _seen) = fake_model(vec![
        tool_calls_stream(&[("call_a", "f__echo", r#"{"message": "from the model"}"#)]),
        text_stream("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let (session, handle, ops, mut events) =
        session_over(dir.path(), vec![fake_setup("f", &[], |_| {})], &url).await;
    let front = async {
        handle.submit(Op::UserTurn("go".into()));
        let Event::ApprovalRequested(prompt) =
            next_where(&mut events, |e| matches!(e, Event::ApprovalRequested(_))).await
        else {
            unreachable!()
        };
        assert_eq!(prompt.subject.name, "f__echo");
        // An answer naming another call reaches nothing; the right one lets the call run.
        handle.submit(Op::Answer {
            call_id: "not-this-one".into(),
            approval: Approval::Deny {
                scope: AnswerScope::Once,
                reason: None,
            },
        });
        handle.submit(Op::Answer {
            call_id: prompt.subject.call_id.clone(),
            approval: Approval::Allow {
                scope: AnswerScope::Once,
            },
        });
        let Event::TurnEnded { report } =
            next_where(&mut events, |e| matches!(e, Event::TurnEnded { .. })).await
        else {
            unreachable!()
        };
        assert_eq!(report.end, TurnEnd::Finished);
        assert_eq!(report.text, "done");
        assert_eq!(report.calls.len(), 1);
        assert!(!report.calls[0].is_error, "{:?}", report.calls[0]);

        // A person's call, through the same gate, marked as theirs.
        handle.submit(Op::DirectCall {
            server: "f".into(),
            tool: "echo".into(),
            args: serde_json::json!({"message": "from a person"}),
        });
        let begun = next_where(&mut events, |e| matches!(e, Event::CallBegun { .. })).await;
        assert!(
            matches!(&begun, Event::CallBegun { source: CallSource::Person, subject } if subject.tool == "echo"),
            "{begun:?}"
        );
        let ended = next_where(&mut events, |e| matches!(e, Event::CallEnded { .. })).await;
        assert!(
            matches!(&ended, Event::CallEnded { is_error: false, preview, .. } if preview.contains("from a person")),
            "{ended:?}"
        );

        // Compaction between turns: a short conversation has nothing to give up.
        handle.submit(Op::Compact);
        let said = next_where(&mut events, |e| matches!(e, Event::Notice { .. })).await;
        assert!(
            matches!(&said, Event::Notice { text } if text.contains("nothing to compact")),
            "{said:?}"
        );
        next_where(&mut events, |e| matches!(e, Event::TurnEnded { .. })).await;

        handle.submit(Op::Shutdown);
        next_where(&mut events, |e| *e == Event::Ended).await;
    };
    tokio::join!(session.run(ops), front);
}

/// A turn can wait on a person for minutes: a server that comes up meanwhile is in the
/// tool list every front end shows (the hosted search, the TUI's) at once, not after the
/// turn. The late server waits for a file the test makes only once the approval is asked.
#[tokio::test]
async fn a_server_that_comes_up_while_a_turn_waits_is_published_before_the_turn_ends() {
    let (url, _seen) = fake_model(vec![
        tool_calls_stream(&[("call_a", "f__echo", r#"{"message": "hi"}"#)]),
        text_stream("done"),
    ]);
    let dir = tempfile::tempdir().unwrap();
    let go = dir.path().join("go");
    let fake_dir = std::path::Path::new(&fake()).parent().unwrap().to_owned();
    let late = fake_setup("late", &[], |raw| {
        // A command under `sh` is confined without the fake's own folder: name it, and
        // the folder the file appears in.
        raw.sandbox = Some(serde_json::json!({
            "filesystem": {"read": [fake_dir, dir.path()]}
        }));
        raw.command = Some("sh".into());
        raw.args = vec![
            "-c".into(),
            format!(
                "while [ ! -e '{}' ]; do sleep 0.02; done; exec '{}'",
                go.display(),
                fake()
            ),
        ];
    });
    let (session, handle, ops, mut events) =
        session_over(dir.path(), vec![fake_setup("f", &[], |_| {}), late], &url).await;
    let has_late = |e: &Event| matches!(e, Event::Tools { tools } if tools.iter().any(|t| t.name == "late__echo"));
    let front = async {
        handle.submit(Op::UserTurn("go".into()));
        let Event::ApprovalRequested(prompt) = next_where(&mut events, |e| {
            assert!(
                !has_late(e),
                "the late server is held back until the approval is asked"
            );
            matches!(e, Event::ApprovalRequested(_))
        })
        .await
        else {
            unreachable!()
        };
        std::fs::write(&go, "").unwrap();
        next_where(&mut events, |e| {
            assert!(
                !matches!(e, Event::TurnEnded { .. }),
                "the turn waits on its approval and cannot end first"
            );
            has_late(e)
        })
        .await;
        handle.submit(Op::Answer {
            call_id: prompt.subject.call_id.clone(),
            approval: Approval::Allow {
                scope: AnswerScope::Once,
            },
        });
        next_where(&mut events, |e| matches!(e, Event::TurnEnded { .. })).await;
        handle.submit(Op::Shutdown);
        next_where(&mut events, |e| *e == Event::Ended).await;
    };
    tokio::join!(session.run(ops), front);
}
