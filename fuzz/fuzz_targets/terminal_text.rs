//! The one sanitiser for text that reaches a terminal, a log or a person's approval: what
//! `strip_terminal_escapes` returns holds no escape, control (but `\n`, `\t`) or bidi
//! character and is its own fixed point; `one_line` is one line within its length; what
//! `reveal` returns hides nothing (no control, invisible or bidi character); `to_json`
//! reads back as the same text.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_core::sanitize::{
    is_bidi_control, is_invisible, one_line, reveal, strip_terminal_escapes, to_json,
};

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let clean = strip_terminal_escapes(&text);
    for c in clean.chars() {
        assert!(
            !(c.is_control() && c != '\n' && c != '\t') && !is_bidi_control(c),
            "{:?} kept in {clean:?}",
            c
        );
    }
    assert_eq!(strip_terminal_escapes(&clean), clean, "not a fixed point");
    let line = one_line(&text, 40);
    assert!(
        !line.contains('\n') && line.chars().count() <= 40,
        "{line:?}"
    );
    let shown = reveal(&text);
    for c in shown.chars() {
        assert!(
            !c.is_control() && !is_invisible(c) && !is_bidi_control(c),
            "{:?} hidden in {shown:?}",
            c
        );
    }
    if let Ok(json) = to_json(&text.as_ref()) {
        let back: String = serde_json::from_str(&json).unwrap_or_default();
        assert_eq!(back, text.as_ref());
    }
});
