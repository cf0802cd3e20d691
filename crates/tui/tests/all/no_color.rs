//! `NO_COLOR`: no cell anywhere gets a foreground or background colour, while modifiers
//! (bold, reversed) still mark headings and selections. Checked on cell styles, not text.

use crate::common::{
    app_no_color, approval, backgrounded, begun, card, delta, elicitation, ended, key, notice,
    progress, prompt, refused, render, server, type_str,
};
use crossterm::event::KeyCode;
use mcp_host_core::event::ElicitationRequest;
use mcp_host_tui::{App, CallState, StatusInfo, Update};
use ratatui::buffer::Buffer;
use ratatui::style::{Color, Modifier};
use serde_json::json;

fn assert_colourless(buf: &Buffer, what: &str) {
    for (i, cell) in buf.content.iter().enumerate() {
        assert!(
            cell.fg == Color::Reset && cell.bg == Color::Reset,
            "{what}: cell {i} {:?} has fg {:?} bg {:?}",
            cell.symbol(),
            cell.fg,
            cell.bg
        );
    }
}

fn busy_app(mut app: App) -> App {
    app.apply(Update::Status(StatusInfo {
        model: None,
        mode: "default".into(),
        input_tokens: 0,
        output_tokens: 0,
    }));
    let mut failed = server("fetch", "failed");
    failed.last_error = Some("boom".into());
    failed.stderr_tail = vec!["trace".into()];
    app.apply(Update::Servers(vec![server("fs", "ready"), failed]));
    app.apply(Update::UserMessage("hi".into()));
    app.on_event(&delta(
        "# H\n\n**b** *i* `c` [l](https://x)\n\n> q\n\n```\ncode\n```\n\n| a |\n|---|\n| 1 |\n",
    ));
    // Every end state a card can show: done, failed, cancelled, denied, background.
    for id in ["a", "b", "c", "d", "e"] {
        app.on_event(&begun(card(id, &["git"])));
    }
    app.on_event(&ended("a", false, 10, "out"));
    app.on_event(&ended("b", true, 10, "out"));
    // No session event ends a card as cancelled: the runtime says so itself.
    app.apply(Update::CallFinished {
        call_id: "c".into(),
        state: CallState::Cancelled,
        took_ms: 10,
        preview: "out".into(),
    });
    app.on_event(&refused(&card("d", &["git"]), "out"));
    app.on_event(&backgrounded("e", "j", 10));
    app.on_event(&begun(card("r", &[])));
    app.on_event(&progress("r", 1.0, Some(4.0), None));
    app.on_event(&notice("note"));
    app.set_busy(true);
    app
}

#[test]
fn no_color_means_no_colour_in_any_view() {
    let mut app = busy_app(app_no_color());
    assert_colourless(&render(&app, 80, 24), "transcript");
    assert_colourless(&render(&app, 120, 40), "transcript 120x40");
    app.on_key(crate::common::ctrl('c'));
    assert_colourless(&render(&app, 80, 24), "flash");

    app.on_event(&approval(prompt("c1")));
    let buf = render(&app, 120, 40);
    assert_colourless(&buf, "approval");
    app.on_key(key(KeyCode::Char('s')));
    let buf = render(&app, 120, 40);
    assert_colourless(&buf, "approval selected");
    // The selection is still visible, by modifier.
    assert!(
        buf.content
            .iter()
            .any(|c| c.modifier.contains(Modifier::REVERSED)),
        "selection not marked"
    );
    app.on_key(key(KeyCode::Esc));

    type_str(&mut app, "/mcp\n");
    assert_colourless(&render(&app, 80, 24), "/mcp");
    app.on_key(key(KeyCode::Esc));
    type_str(&mut app, "/tools\n");
    assert_colourless(&render(&app, 80, 24), "/tools");
    app.on_key(key(KeyCode::Esc));
    type_str(&mut app, "/help\n");
    assert_colourless(&render(&app, 80, 24), "/help");
    app.on_key(key(KeyCode::Esc));

    app.on_event(&elicitation(ElicitationRequest::Form {
        id: "e".into(),
        server: "s".into(),
        message: "m".into(),
        schema: json!({"properties": {"n": {"type": "integer"}}, "required": ["n"]}),
    }));
    app.on_key(key(KeyCode::Tab));
    app.on_key(key(KeyCode::Enter));
    assert_colourless(&render(&app, 80, 24), "form with error");
    app.on_key(key(KeyCode::Esc));
    app.on_event(&elicitation(ElicitationRequest::Url {
        id: "u".into(),
        server: "s".into(),
        message: "m".into(),
        url: "https://x.example".into(),
    }));
    assert_colourless(&render(&app, 80, 24), "url");
}

#[test]
fn colour_mode_does_colour_the_diff() {
    // The contrast: without NO_COLOR the drift diff's added line is green.
    let (mut app, _) = crate::common::app();
    app.on_event(&approval(prompt("c1")));
    app.on_key(key(KeyCode::End));
    let buf = render(&app, 120, 40);
    let green = buf
        .content
        .iter()
        .any(|c| c.symbol() == "+" && c.fg == Color::Green);
    let red = buf
        .content
        .iter()
        .any(|c| c.symbol() == "-" && c.fg == Color::Red);
    assert!(green && red);
}
