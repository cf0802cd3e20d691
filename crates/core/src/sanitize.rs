//! Strips terminal control sequences from server-supplied text before it is displayed: a
//! hostile server must not be able to move the cursor, retitle the window, hide text or
//! write hyperlinks into the user's terminal.

/// Removes ANSI/VT escape sequences (CSI, OSC, DCS and friends) and C0/C1 control characters,
/// keeping `\n` and `\t`. Carriage returns are dropped because they let text overwrite a line.
pub fn strip_terminal_escapes(input: &str) -> String {
    let mut out = String::with_capacity(input.len());
    let mut chars = input.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => skip_escape(&mut chars),
            // C1 CSI / OSC / DCS / APC / PM / SOS introduce strings just like their ESC forms.
            '\u{9b}' => skip_csi(&mut chars),
            '\u{9d}' | '\u{90}' | '\u{9f}' | '\u{9e}' | '\u{98}' => skip_string(&mut chars),
            '\n' | '\t' => out.push(c),
            c if c.is_control() => {}
            // Bidi overrides can make displayed text differ from what runs.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' => {}
            c => out.push(c),
        }
    }
    out
}

type Chars<'a> = std::iter::Peekable<std::str::Chars<'a>>;

fn skip_escape(chars: &mut Chars<'_>) {
    match chars.next() {
        Some('[') => skip_csi(chars),
        Some(']' | 'P' | '_' | '^' | 'X') => skip_string(chars),
        // Two-byte sequences (ESC c, ESC 7, ...) and charset selections (ESC ( B).
        Some('(' | ')' | '*' | '+' | '#' | '%') => {
            chars.next();
        }
        _ => {}
    }
}

fn skip_csi(chars: &mut Chars<'_>) {
    // Parameter and intermediate bytes, then one final byte in 0x40..=0x7e.
    for c in chars.by_ref() {
        if ('\u{40}'..='\u{7e}').contains(&c) {
            break;
        }
    }
}

/// OSC/DCS-style strings end at BEL, ST (ESC \) or C1 ST.
fn skip_string(chars: &mut Chars<'_>) {
    while let Some(c) = chars.next() {
        match c {
            '\u{7}' | '\u{9c}' => break,
            '\u{1b}' => {
                if chars.peek() == Some(&'\\') {
                    chars.next();
                }
                break;
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::strip_terminal_escapes as strip;

    #[test]
    fn keeps_plain_text_newlines_and_tabs() {
        assert_eq!(strip("héllo\n\tworld"), "héllo\n\tworld");
    }

    #[test]
    fn removes_csi_colour_and_cursor_moves() {
        assert_eq!(strip("\x1b[31mred\x1b[0m \x1b[2J\x1b[1;1Hx"), "red x");
    }

    #[test]
    fn removes_osc_title_and_hyperlinks_with_either_terminator() {
        assert_eq!(strip("a\x1b]0;pwned\x07b"), "ab");
        assert_eq!(strip("\x1b]8;;http://evil\x1b\\link\x1b]8;;\x1b\\"), "link");
    }

    #[test]
    fn removes_carriage_returns_c1_controls_and_bidi_overrides() {
        assert_eq!(strip("safe\rrm -rf"), "saferm -rf");
        assert_eq!(strip("x\u{9b}31my"), "xy");
        assert_eq!(strip("a\u{202e}cba"), "acba");
    }

    #[test]
    fn unterminated_sequences_swallow_the_rest_without_panicking() {
        assert_eq!(strip("ok\x1b]never ends"), "ok");
        assert_eq!(strip("ok\x1b"), "ok");
        assert_eq!(strip("ok\x1b["), "ok");
    }
}
