//! Hostile text from servers and the model must never put a control character into a cell:
//! clear-screen, window titles, OSC 52 clipboard writes, OSC 8 hyperlinks and C1 controls
//! are fed through every path (tool description, result preview, server error and stderr,
//! model text, notices, prompts, elicitation, paste) and every screen is checked.

use crate::common::{
    app, approval, backgrounded, begun, card, delta, elicitation, ended, key, notice, progress,
    prompt, render, server, text, tool, turn_ended, type_str,
};
use crossterm::event::KeyCode;
use mcp_host_core::ServerId;
use mcp_host_core::event::{ApprovalPrompt, ElicitationRequest, Event, Replayed, TurnEnd, Usage};
use mcp_host_tui::{App, StatusInfo, Update};
use ratatui::buffer::Buffer;
use serde_json::json;

/// Every attack in one string, around visible words that must survive.
const EVIL: &str = "safe\x1b[2J \x1b]0;pwned\x07\x1b]52;c;ZXZpbA==\x07\
\x1b]8;;http://evil\x1b\\click\x1b]8;;\x1b\\ c1\u{9b}31m\u{9d}0;c1osc\u{9c}\u{85}\u{90}dcs\u{9c} \
end\r\tok";

fn assert_clean(buf: &Buffer, what: &str) {
    for (i, cell) in buf.content.iter().enumerate() {
        for c in cell.symbol().chars() {
            let code = c as u32;
            assert!(
                !(code < 0x20 || (0x7f..=0x9f).contains(&code)),
                "{what}: control char {code:#x} in cell {i} ({:?})",
                cell.symbol()
            );
        }
    }
    let s = text(buf);
    for leaked in ["pwned", "ZXZpbA", "http://evil", "c1osc", "dcs"] {
        assert!(!s.contains(leaked), "{what}: {leaked:?} leaked into\n{s}");
    }
}

fn evil_app() -> App {
    let (mut app, _) = app();
    app.apply(Update::Status(StatusInfo {
        model: Some(format!("m{EVIL}")),
        mode: EVIL.into(),
        input_tokens: 1,
        output_tokens: 2,
    }));
    app.apply(Update::UserMessage(EVIL.into()));
    // Model text, split across deltas in the middle of escape sequences, plus entities the
    // markdown parser would decode into controls.
    let md = format!(
        "# {EVIL}\n\n- {EVIL}\n\n```\n{EVIL}\n```\n\n| a |\n|---|\n| {EVIL} |\n\n&#x1b;]0;pwned&#x07; &#155;31m"
    );
    let chars: Vec<char> = md.chars().collect();
    for chunk in chars.chunks(5) {
        app.on_event(&delta(&chunk.iter().collect::<String>()));
    }
    // A step cap's note is the report's text.
    app.on_event(&turn_ended(TurnEnd::StepLimit, EVIL, Usage::default()));
    let mut c = card("c1", &[EVIL]);
    c.server = ServerId::new(EVIL);
    c.tool = EVIL.into();
    // Arguments are JSON: escapes show as JSON escapes (tested below), not stripped.
    c.args = json!({"x": "plain"});
    app.on_event(&begun(c));
    app.on_event(&progress("c1", 1.0, Some(2.0), Some(EVIL)));
    app.on_event(&begun(card("c2", &[])));
    app.on_event(&ended("c2", false, 5, &format!("{EVIL}\n{EVIL}")));
    app.on_event(&begun(card("c3", &[])));
    app.on_event(&backgrounded("c3", EVIL, 5));
    app.on_event(&Event::CallRefused {
        call_id: "c4".into(),
        name: EVIL.into(),
        server: Some(ServerId::new(EVIL)),
        tool: None,
        arguments: json!({"x": "plain"}),
        reason: EVIL.into(),
    });
    app.on_event(&notice(EVIL));
    app.apply(Update::Notice(EVIL.into()));
    app.on_event(&Event::TurnFailed { error: EVIL.into() });
    app.on_event(&Event::ModelChanged {
        spec: Some(format!("m{EVIL}")),
    });
    let mut s = server(EVIL, EVIL);
    s.last_error = Some(format!("{EVIL}\n{EVIL}"));
    s.stderr_tail = vec![EVIL.into(), EVIL.into()];
    s.era = Some(EVIL.into());
    s.transport = EVIL.into();
    app.apply(Update::Servers(vec![s]));
    let mut t = tool(EVIL, EVIL, &format!("{EVIL}\n{EVIL}"));
    t.flags = vec![EVIL.into()];
    app.apply(Update::Tools(vec![t]));
    app
}

fn evil_prompt() -> ApprovalPrompt {
    let mut p = prompt("p1");
    p.subject.name = EVIL.into();
    p.subject.server = ServerId::new(EVIL);
    p.subject.tool = EVIL.into();
    p.subject.args = json!({"a": format!("c1\u{9b}31m\u{85}x")});
    p.reason = EVIL.into();
    p.description = EVIL.into();
    p.annotations = Some(json!({"readOnlyHint": true}));
    p.drift_diff = Some(format!("-{EVIL}\n+{EVIL}"));
    p
}

#[test]
fn no_control_character_reaches_a_cell() {
    for (w, h) in [(80, 24), (120, 40), (30, 10)] {
        let mut app = evil_app();
        let buf = render(&app, w, h);
        assert_clean(&buf, "transcript");
        let tall = render(&app, 200, 120);
        let s = text(&tall);
        assert!(
            s.contains("click") && s.contains("safe") && s.contains("end"),
            "{s}"
        );

        type_str(&mut app, "/mcp\n");
        let buf = render(&app, w, h);
        assert_clean(&buf, "/mcp");
        if h > 20 {
            assert!(text(&buf).contains("click"), "{}", text(&buf));
        }
        app.on_key(key(KeyCode::Esc));

        type_str(&mut app, "/tools\n");
        app.on_paste(EVIL);
        assert_clean(&render(&app, w, h), "/tools");
        app.on_key(key(KeyCode::Esc));

        app.on_event(&approval(evil_prompt()));
        let buf = render(&app, w, h);
        assert_clean(&buf, "approval");
        app.on_key(key(KeyCode::Char('d')));
        app.on_key(key(KeyCode::Enter));
        app.on_paste(EVIL);
        assert_clean(&render(&app, w, h), "deny reason");
        app.on_key(key(KeyCode::Esc));

        app.on_event(&elicitation(ElicitationRequest::Form {
            id: "e".into(),
            server: EVIL.into(),
            message: EVIL.into(),
            schema: json!({"properties": {
                "a": {"type": "string", "title": EVIL, "description": EVIL, "default": EVIL},
                "b": {"enum": [EVIL], "enumNames": [EVIL]}
            }}),
        }));
        app.on_paste(EVIL);
        assert_clean(&render(&app, w, h), "form");
        app.on_key(key(KeyCode::Esc));

        app.on_event(&elicitation(ElicitationRequest::Url {
            id: "u".into(),
            server: EVIL.into(),
            message: EVIL.into(),
            url: format!("https://ok.example/{EVIL}"),
        }));
        let buf = render(&app, w, h);
        assert_clean(&buf, "url");
        app.on_key(key(KeyCode::Esc));

        // Pasted into the input box.
        app.on_paste(EVIL);
        let buf = render(&app, w, h);
        assert_clean(&buf, "input paste");
        assert!(text(&buf).contains("click"));
    }
}

#[test]
fn a_replayed_conversation_is_cleaned_too() {
    let (mut app, _) = app();
    app.on_event(&Event::ConversationStarted {
        id: Some(EVIL.into()),
        replay: vec![
            Replayed::User { text: EVIL.into() },
            Replayed::Assistant {
                text: format!("# {EVIL}\n\n{EVIL}"),
            },
        ],
    });
    for (w, h) in [(80, 24), (30, 10)] {
        assert_clean(&render(&app, w, h), "replay");
    }
    let s = text(&render(&app, 200, 60));
    assert!(s.contains("› safe click c1 end    ok"), "{s}");
}

#[test]
fn visible_text_survives_in_each_place() {
    let app = evil_app();
    let s = text(&render(&app, 200, 120));
    // The user line, the answer's heading and table, the card, the preview, the notice.
    assert!(s.contains("› safe click c1 end    ok"), "{s}");
    assert!(s.contains("# safe click c1 end    ok"), "{s}");
    assert!(s.contains("↳ safe click c1 end    ok"), "{s}");
    assert!(s.contains("· safe click c1 end    ok"), "{s}");
}

#[test]
fn json_arguments_show_control_characters_as_code_points() {
    // The person sees exactly what the tool would get, each control as its code point, never
    // the bytes (and a C1 CSI does not swallow the text after it).
    let (mut app, _) = app();
    let mut p = prompt("c1");
    p.subject.args = json!({"x": "\x1b]0;pwned\x07 c1\u{9b}31m"});
    app.on_event(&approval(p));
    let buf = render(&app, 120, 40);
    let s = text(&buf);
    assert!(
        s.contains(r#""x": "⟨U+001B⟩]0;pwned⟨U+0007⟩ c1⟨U+009B⟩31m""#),
        "{s}"
    );
    for cell in buf.content.iter() {
        assert!(!cell.symbol().chars().any(char::is_control));
    }
}

#[test]
fn every_screen_renders_at_tiny_sizes_without_panicking() {
    let sizes = [(1, 1), (2, 2), (5, 3), (10, 5), (12, 8), (20, 6), (40, 12)];
    let mut app = evil_app();
    app.set_busy(true);
    let check = |app: &App| {
        for (w, h) in sizes {
            assert_clean(&render(app, w, h), "tiny");
        }
    };
    check(&app);
    for _ in 0..3 {
        app.on_key(key(KeyCode::PageUp));
        check(&app);
    }
    for line in ["/mcp\n", "/tools\n", "/help\n"] {
        type_str(&mut app, line);
        check(&app);
        app.on_key(key(KeyCode::Esc));
    }
    app.on_event(&approval(evil_prompt()));
    check(&app);
    app.on_key(key(KeyCode::End));
    check(&app);
    app.on_key(key(KeyCode::Char('d')));
    app.on_key(key(KeyCode::Enter));
    check(&app);
    app.on_key(key(KeyCode::Esc));
    app.on_event(&elicitation(ElicitationRequest::Form {
        id: "e".into(),
        server: "s".into(),
        message: "m".into(),
        schema: json!({"properties": {"a": {"type": "string"}, "b": {"type": "boolean"}}}),
    }));
    check(&app);
    app.on_key(key(KeyCode::Esc));
    app.on_event(&elicitation(ElicitationRequest::Url {
        id: "u".into(),
        server: "s".into(),
        message: "m".into(),
        url: "https://x.example/a/very/long/path/that/wraps".into(),
    }));
    check(&app);
}
