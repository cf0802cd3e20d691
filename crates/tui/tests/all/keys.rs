//! Key handling through the public API: the approval modal's stray-key safety, selection and
//! deny reasons, Ctrl-C, input history and editing, slash routing, overlays, elicitation.

use crate::common::{
    alt, app, approval, ctrl, elicitation, key, prompt, refused, screen, server, tool, type_str,
};
use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers};
use mcp_host_core::decision::AnswerScope;
use mcp_host_core::event::{ElicitationAnswer, ElicitationRequest, Event};
use mcp_host_tui::{Command, Update};
use serde_json::json;

fn with_modal() -> mcp_host_tui::App {
    let (mut app, _) = app();
    app.on_event(&approval(prompt("c1")));
    app
}

fn approve(scope: AnswerScope) -> Vec<Command> {
    vec![Command::Approve {
        call_id: "c1".into(),
        scope,
    }]
}

fn deny(reason: Option<&str>) -> Vec<Command> {
    vec![Command::Deny {
        call_id: "c1".into(),
        reason: reason.map(str::to_string),
    }]
}

#[test]
fn modal_approves_nothing_when_someone_types_into_it() {
    for typed in [
        "yes\n",
        "y\n",
        "so\n",
        "do it\n",
        "add\n",
        "ok sure\n",
        "let's go\n",
        "\n",
        "\n\n\n",
    ] {
        let mut app = with_modal();
        let cmds = type_str(&mut app, typed);
        assert!(cmds.is_empty(), "{typed:?} emitted {cmds:?}");
        assert!(app.dialog_open(), "{typed:?} closed the modal");
    }
}

#[test]
fn modal_enter_with_nothing_selected_does_nothing() {
    let mut app = with_modal();
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert!(app.dialog_open());
    assert!(screen(&app, 80, 24).contains("Nothing selected"));
}

#[test]
fn modal_shortcut_selects_and_enter_confirms() {
    for (c, scope) in [
        ('o', AnswerScope::Once),
        ('s', AnswerScope::Session),
        ('a', AnswerScope::Always),
    ] {
        let mut app = with_modal();
        assert!(
            app.on_key(key(KeyCode::Char(c))).is_empty(),
            "{c} alone acted"
        );
        assert_eq!(app.on_key(key(KeyCode::Enter)), approve(scope));
        assert!(!app.dialog_open());
    }
}

#[test]
fn modal_arrows_select_and_unlock_after_typing() {
    let mut app = with_modal();
    type_str(&mut app, "yes");
    assert!(screen(&app, 80, 24).contains("Typing detected"));
    // Letters stay off until an arrow is used.
    app.on_key(key(KeyCode::Char('o')));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    app.on_key(key(KeyCode::Right));
    app.on_key(key(KeyCode::Right));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        approve(AnswerScope::Session)
    );

    let mut app = with_modal();
    app.on_key(key(KeyCode::Right));
    app.on_key(key(KeyCode::Char('a')));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        approve(AnswerScope::Always)
    );
}

#[test]
fn modal_a_stray_letter_after_a_selection_clears_it() {
    let mut app = with_modal();
    app.on_key(key(KeyCode::Char('o')));
    app.on_key(key(KeyCode::Char('k')));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    let mut app = with_modal();
    app.on_key(key(KeyCode::Right));
    app.on_key(key(KeyCode::Char('x')));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
}

#[test]
fn modal_deny_asks_for_an_optional_reason() {
    let mut app = with_modal();
    app.on_key(key(KeyCode::Char('d')));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert!(screen(&app, 80, 24).contains("Reason (optional):"));
    type_str(&mut app, "  not on main ");
    assert_eq!(app.on_key(key(KeyCode::Enter)), deny(Some("not on main")));
    assert!(!app.dialog_open());

    let mut app = with_modal();
    app.on_key(key(KeyCode::Left));
    app.on_key(key(KeyCode::Enter));
    assert_eq!(app.on_key(key(KeyCode::Enter)), deny(None));

    let mut app = with_modal();
    app.on_key(key(KeyCode::Char('d')));
    app.on_key(key(KeyCode::Enter));
    type_str(&mut app, "x");
    assert_eq!(app.on_key(key(KeyCode::Esc)), deny(None));
}

#[test]
fn modal_esc_denies_without_reason_and_marks_the_card() {
    let mut app = with_modal();
    assert_eq!(app.on_key(key(KeyCode::Esc)), deny(None));
    assert!(screen(&app, 80, 24).contains("⊘ denied"));
}

#[test]
fn modal_keys_and_pastes_never_reach_the_input() {
    let mut app = with_modal();
    type_str(&mut app, "hello there");
    app.on_paste("pasted text");
    app.on_key(key(KeyCode::Backspace));
    app.on_key(key(KeyCode::Esc));
    let s = screen(&app, 80, 24);
    assert!(s.contains("Type a message"), "{s}");
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
}

#[test]
fn modal_paste_selects_nothing() {
    let mut app = with_modal();
    app.on_paste("s");
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
}

#[test]
fn modal_queue_shows_one_prompt_at_a_time() {
    let mut app = with_modal();
    let mut second = prompt("c2");
    second.subject.name = "git__push".into();
    app.on_event(&approval(second));
    app.on_event(&approval(prompt("c1")));
    assert!(screen(&app, 80, 24).contains("1 more waiting"));
    app.on_key(key(KeyCode::Char('o')));
    assert_eq!(app.on_key(key(KeyCode::Enter)), approve(AnswerScope::Once));
    // The next one opens with nothing selected.
    assert!(app.dialog_open());
    assert!(screen(&app, 80, 24).contains("git__push"));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    assert_eq!(
        app.on_key(key(KeyCode::Esc)),
        vec![Command::Deny {
            call_id: "c2".into(),
            reason: None
        }]
    );
    assert!(!app.dialog_open());
}

#[test]
fn modal_closes_when_its_call_finishes_elsewhere() {
    let mut app = with_modal();
    // The turn was interrupted while the prompt was open: the engine refuses the call.
    app.on_event(&refused(
        &prompt("c1").subject,
        "needs approval, and nobody could approve it: mode: ask",
    ));
    assert!(!app.dialog_open());
}

#[test]
fn approving_starts_the_cards_clock() {
    let mut app = with_modal();
    app.on_key(key(KeyCode::Char('o')));
    app.on_key(key(KeyCode::Enter));
    assert!(screen(&app, 80, 24).contains("● running 0s"));
    assert!(app.animating());
}

#[test]
fn ctrl_c_while_busy_cancels_then_quits() {
    let (mut app, _) = app();
    app.set_busy(true);
    assert_eq!(app.on_key(ctrl('c')), vec![Command::CancelTurn]);
    assert!(screen(&app, 80, 24).contains("cancelling… (Ctrl-C again to quit)"));
    assert_eq!(app.on_key(ctrl('c')), vec![Command::Quit]);
}

#[test]
fn ctrl_c_while_idle_warns_then_quits() {
    let (mut app, _) = app();
    assert!(app.on_key(ctrl('c')).is_empty());
    assert!(screen(&app, 80, 24).contains("press Ctrl-C again to quit"));
    assert_eq!(app.on_key(ctrl('c')), vec![Command::Quit]);
}

#[test]
fn ctrl_c_needs_two_in_a_row() {
    let (mut app, _) = app();
    app.on_key(ctrl('c'));
    app.on_key(key(KeyCode::Char('x')));
    assert!(!screen(&app, 80, 24).contains("press Ctrl-C again"));
    assert!(app.on_key(ctrl('c')).is_empty());
    assert_eq!(app.on_key(ctrl('c')), vec![Command::Quit]);

    let (mut app, _) = crate::common::app();
    app.set_busy(true);
    app.on_key(ctrl('c'));
    app.on_paste("x");
    assert_eq!(app.on_key(ctrl('c')), vec![Command::CancelTurn]);
}

#[test]
fn ctrl_c_works_inside_the_modal() {
    let mut app = with_modal();
    app.set_busy(true);
    assert_eq!(app.on_key(ctrl('c')), vec![Command::CancelTurn]);
    assert_eq!(app.on_key(ctrl('c')), vec![Command::Quit]);
}

#[test]
fn key_releases_are_ignored() {
    let (mut app, _) = app();
    let mut k = key(KeyCode::Char('a'));
    k.kind = KeyEventKind::Release;
    app.on_key(k);
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
}

#[test]
fn enter_submits_and_empty_lines_do_nothing() {
    let (mut app, _) = app();
    assert!(type_str(&mut app, "\n").is_empty());
    assert!(type_str(&mut app, "   \n").is_empty());
    let mut app2 = crate::common::app().0;
    assert_eq!(
        type_str(&mut app2, "hello @fs:file:///x\n"),
        vec![Command::Submit("hello @fs:file:///x".into())]
    );
}

#[test]
fn alt_or_shift_enter_insert_a_newline() {
    let (mut app, _) = app();
    type_str(&mut app, "a");
    app.on_key(alt(KeyCode::Enter));
    type_str(&mut app, "b");
    app.on_key(KeyEvent::new(KeyCode::Enter, KeyModifiers::SHIFT));
    type_str(&mut app, "c");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Command::Submit("a\nb\nc".into())]
    );
}

#[test]
fn ctrl_u_clears_the_input() {
    let (mut app, _) = app();
    type_str(&mut app, "draft");
    app.on_key(ctrl('u'));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
}

#[test]
fn history_recalls_submitted_lines() {
    let (mut app, _) = app();
    type_str(&mut app, "one\n");
    type_str(&mut app, "two\n");
    type_str(&mut app, "dra");
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Up));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Command::Submit("one".into())]
    );
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Down));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Command::Submit("one".into())]
    );
    // Down past the newest returns to the draft (empty here).
    app.on_key(key(KeyCode::Up));
    app.on_key(key(KeyCode::Down));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
}

#[test]
fn up_moves_between_lines_in_a_multiline_input() {
    let (mut app, _) = app();
    type_str(&mut app, "old\n");
    type_str(&mut app, "ab");
    app.on_key(alt(KeyCode::Enter));
    type_str(&mut app, "cd");
    app.on_key(key(KeyCode::Up));
    type_str(&mut app, "X");
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Command::Submit("abX\ncd".into())]
    );
}

#[test]
fn slash_lines_route_to_overlays_or_the_runtime() {
    let (mut app, _) = app();
    assert_eq!(
        type_str(&mut app, "/model openai:gpt-5\n"),
        vec![Command::Slash {
            name: "model".into(),
            args: "openai:gpt-5".into()
        }]
    );
    assert_eq!(
        type_str(&mut app, "/clear\n"),
        vec![Command::Slash {
            name: "clear".into(),
            args: String::new()
        }]
    );
    assert_eq!(
        type_str(&mut app, "/git:summarise HEAD~3\n"),
        vec![Command::Slash {
            name: "git:summarise".into(),
            args: "HEAD~3".into()
        }]
    );
    assert_eq!(type_str(&mut app, "/quit\n"), vec![Command::Quit]);

    for (line, title) in [
        ("/mcp\n", "MCP servers"),
        ("/tools\n", "Tools"),
        ("/help\n", "Help"),
    ] {
        assert!(type_str(&mut app, line).is_empty());
        assert!(screen(&app, 80, 24).contains(title), "{line:?}");
        // Keys go to the overlay, not the input.
        assert!(type_str(&mut app, "\n").is_empty() || line == "/help\n");
        app.on_key(key(KeyCode::Esc));
        assert!(screen(&app, 80, 24).contains("Type a message"));
    }
}

#[test]
fn mcp_panel_keys_emit_server_commands() {
    let (mut app, _) = app();
    let mut pending = server("proj", "pending approval");
    pending.needs_approval = true;
    pending.enabled = true;
    pending.definition = vec!["  run:      npx -y proj-server '--token=${TOKEN}'".into()];
    app.apply(Update::Servers(vec![server("fs", "ready"), pending]));
    type_str(&mut app, "/mcp\n");
    assert_eq!(
        app.on_key(key(KeyCode::Char('r'))),
        vec![Command::Reconnect("fs".into())]
    );
    assert_eq!(
        app.on_key(key(KeyCode::Char('e'))),
        vec![Command::SetEnabled {
            server: "fs".into(),
            enabled: false
        }]
    );
    // `a` only approves a server that waits for approval.
    assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
    app.on_key(key(KeyCode::Down));
    // What approving lets it run is on screen before anything is asked.
    let s = screen(&app, 80, 24);
    assert!(s.contains("npx -y proj-server '--token=${TOKEN}'"), "{s}");
    // `a` asks; only `y` then approves, any other key withdraws the question.
    assert!(app.on_key(key(KeyCode::Char('a'))).is_empty());
    let s = screen(&app, 80, 24);
    assert!(
        s.contains("Approve `proj`") && s.contains("y approves"),
        "{s}"
    );
    assert!(
        s.contains("npx -y proj-server"),
        "the definition stays beside the question: {s}"
    );
    assert!(app.on_key(key(KeyCode::Char('n'))).is_empty());
    assert!(
        app.on_key(key(KeyCode::Char('y'))).is_empty(),
        "no question open"
    );
    app.on_key(key(KeyCode::Char('a')));
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        vec![Command::ApproveProjectServer("proj".into())]
    );
}

#[test]
fn a_long_definition_in_the_mcp_panel_scrolls_and_is_never_cut_silently() {
    let (mut app, _) = app();
    let mut pending = server("proj", "pending approval");
    pending.needs_approval = true;
    pending.definition = (0..40)
        .map(|i| format!("  env:      VAR_{i}=${{V{i}}}"))
        .collect();
    app.apply(Update::Servers(vec![pending]));
    type_str(&mut app, "/mcp\n");
    let s = screen(&app, 80, 24);
    assert!(s.contains("VAR_0=") && !s.contains("VAR_39="), "{s}");
    assert!(s.contains("more lines: PgDn"), "{s}");
    app.on_key(key(KeyCode::Char('a')));
    for _ in 0..10 {
        assert!(app.on_key(key(KeyCode::PageDown)).is_empty());
    }
    let s = screen(&app, 80, 24);
    assert!(s.contains("VAR_39=") && !s.contains("more lines"), "{s}");
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        vec![Command::ApproveProjectServer("proj".into())],
        "scrolling kept the question open"
    );
}

#[test]
fn tools_browser_filters_by_name_or_description() {
    let (mut app, _) = app();
    app.apply(Update::Tools(vec![
        tool("read_file", "fs", "Read a file"),
        tool("fetch", "fetch", "Get a web page"),
        tool("git_log", "git", "Show history"),
    ]));
    type_str(&mut app, "/tools\n");
    assert!(screen(&app, 80, 24).contains("3 of 3"));
    type_str(&mut app, "web");
    let s = screen(&app, 80, 24);
    assert!(s.contains("1 of 3") && s.contains("fetch"), "{s}");
    app.on_key(key(KeyCode::Backspace));
    app.on_key(key(KeyCode::Backspace));
    app.on_key(key(KeyCode::Backspace));
    assert!(screen(&app, 80, 24).contains("3 of 3"));
}

fn form() -> ElicitationRequest {
    ElicitationRequest::Form {
        id: "e1".into(),
        server: "s".into(),
        message: "m".into(),
        schema: json!({
            "type": "object",
            "properties": {
                "count": {"type": "integer"},
                "name": {"type": "string"}
            },
            "required": ["name"]
        }),
    }
}

#[test]
fn elicitation_form_validates_then_accepts() {
    let (mut app, _) = app();
    app.on_event(&elicitation(form()));
    // A stray Enter on a field moves on; it never submits.
    type_str(&mut app, "x\n");
    assert!(app.dialog_open());
    // Now on `name`; leave it empty and go to Submit.
    app.on_key(key(KeyCode::Tab));
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
    let s = screen(&app, 80, 24);
    assert!(
        s.contains("! required") && s.contains("! must be a whole number"),
        "{s}"
    );
    // Focus went to the first bad field: fix both.
    app.on_key(ctrl('u'));
    type_str(&mut app, "7");
    app.on_key(key(KeyCode::Tab));
    type_str(&mut app, "ann");
    app.on_key(key(KeyCode::Tab));
    assert_eq!(
        app.on_key(key(KeyCode::Enter)),
        vec![Command::ElicitationAnswer {
            id: "e1".into(),
            answer: ElicitationAnswer::Accept(json!({"count": 7, "name": "ann"}))
        }]
    );
    assert!(!app.dialog_open());
}

#[test]
fn elicitation_decline_and_cancel() {
    let (mut app, _) = app();
    app.on_event(&elicitation(form()));
    // `d` in a text field is text; on the buttons row it declines.
    type_str(&mut app, "d");
    assert!(app.dialog_open());
    app.on_key(key(KeyCode::BackTab));
    app.on_key(key(KeyCode::BackTab));
    assert_eq!(
        app.on_key(key(KeyCode::Char('d'))),
        vec![Command::ElicitationAnswer {
            id: "e1".into(),
            answer: ElicitationAnswer::Decline
        }]
    );
    app.on_event(&elicitation(form()));
    assert_eq!(
        app.on_key(key(KeyCode::Esc)),
        vec![Command::ElicitationAnswer {
            id: "e1".into(),
            answer: ElicitationAnswer::Cancel
        }]
    );
}

/// A question its server stopped waiting for goes away, the one showing or one in line,
/// and the person is told; the next in line shows.
#[test]
fn a_withdrawn_question_goes_away_and_says_so() {
    let (mut app, _) = app();
    app.on_event(&elicitation(form()));
    app.on_event(&elicitation(url_request()));
    assert!(app.dialog_open());
    app.on_event(&Event::ElicitationWithdrawn { id: "e1".into() });
    assert!(app.dialog_open(), "the URL request is next");
    let s = screen(&app, 80, 24);
    assert!(s.contains("Log in"), "{s}");
    app.on_event(&Event::ElicitationWithdrawn { id: "u1".into() });
    assert!(!app.dialog_open());
    let s = screen(&app, 80, 24);
    assert!(s.contains("stopped waiting for an answer"), "{s}");
    // One nobody shows any more changes nothing.
    app.on_event(&Event::ElicitationWithdrawn { id: "u1".into() });
    assert!(!app.dialog_open());
}

fn url_request() -> ElicitationRequest {
    ElicitationRequest::Url {
        id: "u1".into(),
        server: "gh".into(),
        message: "Log in".into(),
        url: "https://example.com/auth".into(),
    }
}

#[test]
fn elicitation_url_answers() {
    let answer = |a| {
        vec![Command::ElicitationAnswer {
            id: "u1".into(),
            answer: a,
        }]
    };
    let (mut app, _) = app();
    app.on_event(&elicitation(url_request()));
    assert_eq!(
        app.on_key(key(KeyCode::Char('y'))),
        answer(ElicitationAnswer::OpenUrl)
    );
    app.on_event(&elicitation(url_request()));
    assert_eq!(
        app.on_key(key(KeyCode::Char('n'))),
        answer(ElicitationAnswer::Decline)
    );
    app.on_event(&elicitation(url_request()));
    assert_eq!(
        app.on_key(key(KeyCode::Esc)),
        answer(ElicitationAnswer::Decline)
    );
    // Typing that happens to contain a `y` opens nothing.
    app.on_event(&elicitation(url_request()));
    assert!(type_str(&mut app, "hey you\n").is_empty());
    assert!(app.dialog_open());
}

#[test]
fn page_up_stops_following_and_page_down_resumes() {
    let (mut app, _) = app();
    for i in 0..60 {
        app.apply(Update::Notice(format!("line {i}")));
    }
    screen(&app, 80, 24);
    app.on_key(key(KeyCode::PageUp));
    app.apply(Update::Notice("newest".into()));
    let s = screen(&app, 80, 24);
    assert!(!s.contains("newest") && s.contains("more lines"), "{s}");
    app.on_key(key(KeyCode::PageDown));
    app.on_key(key(KeyCode::PageDown));
    let s = screen(&app, 80, 24);
    assert!(s.contains("newest") && !s.contains("more lines"), "{s}");
}

fn modal_with_args(args: serde_json::Value) -> mcp_host_tui::App {
    let (mut app, _) = app();
    let mut p = prompt("c1");
    p.subject.args = args;
    p.drift_diff = None;
    app.on_event(&approval(p));
    app
}

#[test]
fn modal_a_secret_after_250_spaces_is_on_screen() {
    let app = modal_with_args(json!({"message": format!("hello{}SECRET", " ".repeat(250))}));
    let s = screen(&app, 80, 24);
    assert!(s.contains("SECRET"), "{s}");
}

#[test]
fn modal_a_secret_at_the_end_of_a_long_value_is_reached_with_e_and_end() {
    let content = format!("{}SECRET", "a".repeat(5000));
    let mut app = modal_with_args(json!({"content": content, "path": "/tmp/x"}));
    let collapsed = screen(&app, 80, 24);
    assert!(!collapsed.contains("SECRET"), "collapsed: {collapsed}");
    assert!(
        collapsed.contains("e show all"),
        "the key line names the key: {collapsed}"
    );
    assert!(app.on_key(key(KeyCode::Char('e'))).is_empty());
    screen(&app, 80, 24);
    app.on_key(key(KeyCode::End));
    let end = screen(&app, 80, 24);
    assert!(end.contains("SECRET"), "expanded, at the end: {end}");
    // Every character of the value is on some page of the expanded body.
    let mut seen = String::new();
    app.on_key(key(KeyCode::Home));
    for _ in 0..200 {
        seen.push_str(&screen(&app, 80, 24));
        app.on_key(key(KeyCode::PageDown));
    }
    let a_count: usize = seen
        .lines()
        .filter(|l| l.starts_with("│    a") || l.starts_with("│  content: \"a"))
        .map(|l| l.chars().filter(|c| *c == 'a').count())
        .sum();
    assert!(
        a_count >= 5000,
        "only {a_count} of 5000 characters were shown"
    );
    // Ctrl+E works even after typing locked the letters, and collapses again.
    type_str(&mut app, "xy");
    app.on_key(ctrl('e'));
    app.on_key(key(KeyCode::Home));
    assert!(!screen(&app, 80, 24).contains("SECRET"));
    // Showing more never approves or denies anything.
    assert!(app.on_key(key(KeyCode::Enter)).is_empty());
}
