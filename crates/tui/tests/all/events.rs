//! How each of the session's core events shows on screen, through `App::on_event`: the cards
//! of refused calls, the end states of calls, a turn's end (its note, its tokens, the busy
//! flag), a failed turn, a resumed conversation's replay, the model, and decisions (nothing).

use crate::common::{app, backgrounded, begun, card, delta, ended, prompt, screen, turn_ended};
use mcp_host_core::ServerId;
use mcp_host_core::decision::{DecidedBy, Mode, Verdict};
use mcp_host_core::event::{Event, Replayed, TurnEnd, Usage};
use mcp_host_tui::{StatusInfo, Update};
use serde_json::json;

fn refused(server: Option<&str>, tool: Option<&str>) -> Event {
    Event::CallRefused {
        call_id: "c1".into(),
        name: "f__write".into(),
        server: server.map(ServerId::new),
        tool: tool.map(str::to_string),
        arguments: json!({"path": "/etc/passwd"}),
        reason: "denied: rule `deny f/*`".into(),
    }
}

#[test]
fn a_refused_call_gets_a_denied_card_with_its_server_tool_arguments_and_reason() {
    let (mut app, _) = app();
    app.on_event(&refused(Some("f"), Some("write")));
    let s = screen(&app, 80, 24);
    assert!(s.contains("▸ f · write  ⊘ denied  user only"), "{s}");
    assert!(s.contains(r#""path": "/etc/passwd""#), "{s}");
    assert!(s.contains("denied: rule `deny f/*`"), "{s}");
}

#[test]
fn a_refused_call_whose_name_did_not_resolve_shows_the_name_as_its_tool() {
    let (mut app, _) = app();
    app.on_event(&refused(None, None));
    let s = screen(&app, 80, 24);
    assert!(s.contains("▸  · f__write  ⊘ denied"), "{s}");
}

#[test]
fn a_refused_call_closes_its_approval_prompt() {
    let (mut app, _) = app();
    app.on_event(&Event::ApprovalRequested(prompt("c1")));
    assert!(app.dialog_open());
    app.on_event(&refused(Some("fs"), Some("write_file")));
    assert!(!app.dialog_open());
}

#[test]
fn an_approval_request_shows_the_card_waiting_with_its_provenance_and_the_modal() {
    let (mut app, _) = app();
    app.on_event(&Event::ApprovalRequested(prompt("c1")));
    let s = screen(&app, 120, 40);
    assert!(
        s.contains("▸ fs · write_file  ◆ waiting for approval  after: fetch"),
        "{s}"
    );
    assert!(s.contains("Approve tool call: fs__write_file"), "{s}");
    assert!(app.dialog_open());
}

#[test]
fn call_ends_show_done_failed_or_background() {
    let (mut app, _) = app();
    for id in ["a", "b", "c"] {
        app.on_event(&begun(card(id, &[])));
    }
    assert!(app.animating());
    app.on_event(&ended("a", false, 1_200, "fine"));
    app.on_event(&ended("b", true, 30, "boom"));
    app.on_event(&backgrounded("c", "job-3", 30_000));
    let s = screen(&app, 120, 40);
    assert!(s.contains("✓ done in 1.2s"), "{s}");
    assert!(s.contains("✗ failed after 30ms"), "{s}");
    assert!(s.contains("↻ moved to the background (job-3)"), "{s}");
    assert!(s.contains("background: job-3"), "{s}");
}

#[test]
fn a_turn_end_stops_the_busy_state_and_adds_its_tokens() {
    let (mut app, _) = app();
    app.apply(Update::Status(StatusInfo {
        model: Some("p:m".into()),
        mode: "ask".into(),
        input_tokens: 1_000,
        output_tokens: 10,
    }));
    app.set_busy(true);
    assert!(screen(&app, 80, 24).contains("working…"));
    let usage = Usage {
        input_tokens: 500,
        output_tokens: 5,
        ..Usage::default()
    };
    app.on_event(&turn_ended(TurnEnd::Finished, "done", usage));
    let s = screen(&app, 80, 24);
    assert!(s.contains("in 1.5k out 15"), "{s}");
    assert!(!s.contains("working…"), "{s}");
    assert!(!s.contains("turn ended"), "a plain finish has no note: {s}");
    app.on_event(&turn_ended(TurnEnd::Finished, "", usage));
    assert!(screen(&app, 80, 24).contains("in 2.0k out 20"));
}

#[test]
fn a_turn_end_says_why_when_it_is_not_a_plain_finish() {
    let (mut app, _) = app();
    app.on_event(&turn_ended(
        TurnEnd::StepLimit,
        "stopped after 50 steps",
        Usage::default(),
    ));
    app.on_event(&turn_ended(
        TurnEnd::Cancelled,
        "Interrupted; the turn was cancelled.",
        Usage::default(),
    ));
    let s = screen(&app, 80, 24);
    assert!(s.contains("turn ended: stopped after 50 steps"), "{s}");
    assert!(s.contains("turn ended: cancelled"), "{s}");
    assert!(!s.contains("Interrupted"), "{s}");
}

#[test]
fn a_failed_turn_says_so_and_is_no_longer_busy() {
    let (mut app, _) = app();
    app.set_busy(true);
    app.on_event(&Event::TurnFailed {
        error: "provider: 529 overloaded".into(),
    });
    let s = screen(&app, 80, 24);
    assert!(
        s.contains("turn ended: the turn failed: provider: 529 overloaded"),
        "{s}"
    );
    assert!(!s.contains("working…"), "{s}");
    assert!(!app.animating());
}

#[test]
fn a_started_conversation_replaces_the_transcript_with_its_replay() {
    let (mut app, _) = app();
    app.apply(Update::UserMessage("old question".into()));
    app.on_event(&delta("old answer"));
    app.on_event(&Event::ConversationStarted {
        id: Some("conv-1".into()),
        replay: vec![
            Replayed::User {
                text: "first".into(),
            },
            Replayed::Assistant {
                text: String::new(),
            },
            Replayed::Assistant {
                text: "**one**".into(),
            },
            Replayed::User {
                text: "second".into(),
            },
            Replayed::Assistant { text: "two".into() },
        ],
    });
    let s = screen(&app, 80, 24);
    assert!(!s.contains("old"), "{s}");
    let lines: Vec<&str> = s.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(&lines[..4], &["› first", "one", "› second", "two"], "{s}");
    // Each replayed answer was closed: the next delta starts a new answer.
    app.on_event(&delta("three"));
    assert!(screen(&app, 80, 24).contains("two\n\nthree"));
}

#[test]
fn an_empty_conversation_clears_the_transcript() {
    let (mut app, _) = app();
    app.apply(Update::UserMessage("hello".into()));
    app.on_event(&Event::ConversationStarted {
        id: None,
        replay: Vec::new(),
    });
    assert!(!screen(&app, 80, 24).contains("hello"));
}

#[test]
fn the_model_change_shows_on_the_status_line_cleaned() {
    let (mut app, _) = app();
    app.on_event(&Event::ModelChanged {
        spec: Some("openai:gpt-5\x1b]0;x\x07".into()),
    });
    let s = screen(&app, 80, 24);
    assert!(s.lines().last().unwrap().contains("openai:gpt-5"), "{s}");
    assert!(!s.contains("0;x"), "{s}");
    app.on_event(&Event::ModelChanged { spec: None });
    assert!(screen(&app, 80, 24).contains("no model"));
}

#[test]
fn a_decision_changes_nothing_on_screen() {
    let (mut app, _) = app();
    app.on_event(&begun(card("c1", &[])));
    let before = screen(&app, 80, 24);
    app.on_event(&Event::Decided {
        call_id: "c1".into(),
        name: "fs__read_file".into(),
        verdict: Verdict::Allow,
        decided_by: DecidedBy::Mode { mode: Mode::Auto },
        reason: "mode: auto".into(),
    });
    assert_eq!(screen(&app, 80, 24), before);
}
