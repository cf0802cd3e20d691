//! The terminal's markdown renderer over a model's (or a server's) text: it never panics,
//! every line fits the width it was laid out to (wide characters included), and no line
//! carries an escape or control character to the terminal.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&width, body)) = data.split_first() else {
        return;
    };
    let width = usize::from(width % 120) + 1;
    let text = String::from_utf8_lossy(body);
    for line in mcp_host_tui::markdown_lines(&text, width) {
        for c in line.chars() {
            assert!(!c.is_control(), "{c:?} rendered in {line:?}");
        }
    }
});
