//! The one sanitiser for text that reaches a terminal or a log: a hostile server (or model)
//! must not be able to move the cursor, retitle the window, write the clipboard, hide text or
//! write hyperlinks into the user's terminal. Three tools, one notion of "dangerous":
//! - [`strip_terminal_escapes`]: plain text for display (escape sequences and controls go);
//! - [`reveal`]: text a person approves, where nothing may be hidden (invisible characters,
//!   bidi controls and long runs of spaces become visible markers such as `⟨U+202E⟩`);
//! - [`to_json`] / [`to_json_pretty`]: JSON whose strings escape what serde_json leaves raw
//!   (DEL, C1 controls, U+2028/2029, bidi and other invisible characters) as `\uXXXX`.

use serde::Serialize;
use serde_json::ser::{Formatter, PrettyFormatter, Serializer};
use std::borrow::Cow;
use std::io;
use unicode_general_category::{GeneralCategory, get_general_category};

/// Removes ANSI/VT escape sequences (CSI, OSC, DCS and friends) and C0/C1 control characters,
/// keeping `\n` and `\t`. Carriage returns are dropped because they let text overwrite a line.
pub fn strip_terminal_escapes(input: &str) -> String {
    terminal_safe(input).into_owned()
}

/// [`strip_terminal_escapes`] without a copy of text that has nothing to strip (most text:
/// a large result printed whole was copied once for each time it was made safe).
pub fn terminal_safe(input: &str) -> Cow<'_, str> {
    if is_plain(input) {
        return Cow::Borrowed(input);
    }
    Cow::Owned(strip_slowly(input))
}

/// Visible ASCII, newlines and tabs only: no escape, control, invisible or bidi character,
/// nothing any sanitiser here would strip or flag (most text is only that, and this is one
/// pass over its bytes instead of a walk over its characters).
pub fn is_plain(text: &str) -> bool {
    let plain = |b: &u8| matches!(b, b' '..=b'~' | b'\n' | b'\t');
    // Whole blocks are judged without stopping at the first byte that fails, which lets the
    // compiler test a block's bytes side by side (a result of megabytes took 12 instructions
    // a byte one by one); a block that fails ends the search.
    let (blocks, rest) = text.as_bytes().as_chunks::<32>();
    blocks
        .iter()
        .all(|block| block.iter().fold(true, |all, b| all & plain(b)))
        && rest.iter().all(plain)
}

/// No byte of `bytes` is DEL or above (so none starts a character beyond ASCII), judged in
/// whole blocks as [`is_plain`] does: short fragments are decided without a call, long ones
/// without stopping at each byte.
fn below_del(bytes: &[u8]) -> bool {
    let (blocks, rest) = bytes.as_chunks::<16>();
    blocks
        .iter()
        .all(|block| block.iter().fold(true, |all, &b| all & (b < 0x7f)))
        && rest.iter().all(|&b| b < 0x7f)
}

fn strip_slowly(input: &str) -> String {
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
            // Bidi controls can make displayed text differ from what runs.
            c if is_bidi_control(c) => {}
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

/// The first line of untrusted text, cleaned and cut to `max` characters (with `…`), for a
/// one-line message to a person or a model.
pub fn one_line(text: &str, max: usize) -> String {
    let clean = strip_terminal_escapes(text);
    let first = clean.lines().next().unwrap_or_default();
    if first.chars().count() > max {
        first
            .chars()
            .take(max.saturating_sub(1))
            .collect::<String>()
            + "…"
    } else {
        first.to_string()
    }
}

/// Bidi embeddings, overrides, isolates and marks: they reorder what is displayed.
pub fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
    )
}

/// Characters that draw nothing or change how their neighbours are drawn: controls (other
/// than `\n` and `\t`), format characters (zero-width, bidi, the TAG block), line and
/// paragraph separators, unassigned code points, variation selectors and the Hangul fillers.
pub fn is_invisible(c: char) -> bool {
    (c.is_control() && !matches!(c, '\n' | '\t'))
        || matches!(
            get_general_category(c),
            GeneralCategory::Format
                | GeneralCategory::Unassigned
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
        )
        || matches!(
            c,
            '\u{fe00}'..='\u{fe0f}'
                | '\u{e0100}'..='\u{e01ef}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{3164}'
                | '\u{ffa0}'
                | '\u{034f}'
        )
}

/// Spaces other than U+0020 look like one but are not one.
fn is_odd_space(c: char) -> bool {
    c != ' ' && get_general_category(c) == GeneralCategory::SpaceSeparator
}

/// From this many spaces in a row, a run is shown as `⟨N spaces⟩`: it could push text out of
/// sight or fake an indentation, and a wrap point would swallow it.
pub const SPACE_RUN: usize = 3;

/// Text as a person must see it before approving it: every character that could hide or
/// disguise something becomes visible. Controls and invisible characters become `⟨U+XXXX⟩`
/// (`\n`, `\t` and `\r` as those two-character escapes, so a line cannot be faked), runs of
/// [`SPACE_RUN`] or more spaces become `⟨N spaces⟩`, odd spaces (no-break, em, ideographic)
/// become their code point, and a literal `⟨` is shown as `⟨U+27E8⟩` so no text can imitate
/// a marker. Everything else is kept as is.
pub fn reveal(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut spaces = 0usize;
    let flush = |out: &mut String, spaces: &mut usize| {
        match *spaces {
            0 => {}
            n if n >= SPACE_RUN => out.push_str(&format!("⟨{n} spaces⟩")),
            n => out.extend(std::iter::repeat_n(' ', n)),
        }
        *spaces = 0;
    };
    for c in s.chars() {
        if c == ' ' {
            spaces += 1;
            continue;
        }
        flush(&mut out, &mut spaces);
        match c {
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            '⟨' => out.push_str("⟨U+27E8⟩"),
            c if is_invisible(c) || is_odd_space(c) => {
                out.push_str(&format!("⟨U+{:04X}⟩", c as u32));
            }
            c => out.push(c),
        }
    }
    flush(&mut out, &mut spaces);
    out
}

/// Characters serde_json writes raw that must not reach a terminal raw: DEL, C1 controls and
/// every invisible character (it already escapes C0 controls).
fn json_must_escape(c: char) -> bool {
    c == '\u{7f}' || (!c.is_ascii() && is_invisible(c))
}

/// A serde_json formatter that escapes [`json_must_escape`] characters as `\uXXXX` (surrogate
/// pairs above the BMP), in keys and values alike; structure comes from the inner formatter.
/// The output is still valid JSON and parses back to the same strings.
pub struct TerminalSafe<F>(pub F);

impl<F: Formatter> Formatter for TerminalSafe<F> {
    fn write_string_fragment<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        fragment: &str,
    ) -> io::Result<()> {
        // Only DEL and non-ASCII characters can need escaping here (serde_json escapes the
        // control characters itself): ASCII runs are skipped a byte at a time, and only the
        // characters after them are decoded (decoding every character was most of the cost
        // of an audit line).
        let bytes = fragment.as_bytes();
        // Most fragments (keys, names, hashes) are ASCII without DEL: one pass settles them.
        if below_del(bytes) {
            return w.write_all(bytes);
        }
        let (mut start, mut next) = (0, 0);
        while let Some(ascii) = bytes[next..].iter().position(|&b| b >= 0x7f) {
            let at = next + ascii;
            // `at` starts a character: `next` does, and only ASCII bytes lie between.
            let Some(c) = fragment.get(at..).and_then(|rest| rest.chars().next()) else {
                break;
            };
            next = at + c.len_utf8();
            if json_must_escape(c) {
                w.write_all(&bytes[start..at])?;
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    write!(w, "\\u{unit:04x}")?;
                }
                start = next;
            }
        }
        w.write_all(&bytes[start..])
    }

    fn begin_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_array(w)
    }
    fn end_array<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array(w)
    }
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_array_value(w, first)
    }
    fn end_array_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_array_value(w)
    }
    fn begin_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object(w)
    }
    fn end_object<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object(w)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        self.0.begin_object_key(w, first)
    }
    fn end_object_key<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_key(w)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.begin_object_value(w)
    }
    fn end_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        self.0.end_object_value(w)
    }
}

fn write_with<F: Formatter>(v: &impl Serialize, f: F) -> Result<String, serde_json::Error> {
    let mut buf = Vec::with_capacity(128);
    append_with(v, f, &mut buf)?;
    // Only whole `str` slices and ASCII escapes were written.
    String::from_utf8(buf).map_err(|e| serde::ser::Error::custom(e.to_string()))
}

fn append_with<F: Formatter>(
    v: &impl Serialize,
    f: F,
    out: &mut Vec<u8>,
) -> Result<(), serde_json::Error> {
    v.serialize(&mut Serializer::with_formatter(out, TerminalSafe(f)))
}

/// Appends `v` to `out` as one-line terminal-safe JSON (see [`TerminalSafe`]).
pub fn append_json(v: &impl Serialize, out: &mut Vec<u8>) -> Result<(), serde_json::Error> {
    append_with(v, serde_json::ser::CompactFormatter, out)
}

/// One-line JSON that is safe to print on a terminal (see [`TerminalSafe`]).
pub fn to_json(v: &impl Serialize) -> Result<String, serde_json::Error> {
    write_with(v, serde_json::ser::CompactFormatter)
}

/// Indented JSON that is safe to print on a terminal (see [`TerminalSafe`]).
pub fn to_json_pretty(v: &impl Serialize) -> Result<String, serde_json::Error> {
    write_with(v, PrettyFormatter::new())
}

#[cfg(test)]
mod tests {
    use super::strip_terminal_escapes as strip;

    #[test]
    fn plain_ascii_takes_the_short_way_to_the_same_answer() {
        let every_ascii: String = (0u8..=127).map(char::from).collect();
        for text in [
            "plain text\n\twith tabs ~ {json: [1]}",
            "",
            "a\rb",
            "\u{1b}[31mred\u{1b}[0m",
            every_ascii.as_str(),
        ] {
            assert_eq!(strip(text), super::strip_slowly(text), "{text:?}");
        }
    }

    /// Blocks are judged whole: any one byte that is not plain, wherever it falls (in a
    /// block, across a block's end, in the tail), makes the text not plain.
    #[test]
    fn one_byte_anywhere_decides_whether_text_is_plain() {
        let one_by_one = |t: &[u8]| t.iter().all(|b| matches!(b, b' '..=b'~' | b'\n' | b'\t'));
        for len in [1, 31, 32, 33, 63, 64, 65, 100] {
            for at in 0..len {
                for b in [0u8, b'\t', b'\n', b'\r', 0x1b, b' ', b'~', 0x7f] {
                    let mut text = vec![b'a'; len];
                    text[at] = b;
                    let text = String::from_utf8(text).unwrap();
                    assert_eq!(
                        super::is_plain(&text),
                        one_by_one(text.as_bytes()),
                        "{len} {at} {b}"
                    );
                }
                for b in [0u8, 0x1b, b'~', 0x7f, 0x80, 0xc3, 0xff] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = b;
                    assert_eq!(super::below_del(&bytes), b < 0x7f, "{len} {at} {b}");
                }
            }
            let mut text = "a".repeat(len - 1);
            text.push('é');
            assert!(!super::is_plain(&text), "{len}");
        }
    }

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

    #[test]
    fn removes_every_bidi_control() {
        assert_eq!(strip("a\u{2067}b\u{200f}c\u{61c}d"), "abcd");
    }

    #[test]
    fn reveal_shows_invisible_characters_and_long_space_runs() {
        use super::reveal;
        let secret = format!("hello{}SECRET", " ".repeat(250));
        assert_eq!(reveal(&secret), "hello⟨250 spaces⟩SECRET");
        assert_eq!(reveal("a  b"), "a  b");
        assert_eq!(
            reveal("x\u{202e}y\u{200b}z\u{e0041}\u{85}\u{1b}[2J"),
            "x⟨U+202E⟩y⟨U+200B⟩z⟨U+E0041⟩⟨U+0085⟩⟨U+001B⟩[2J"
        );
        assert_eq!(reveal("l1\nl2\r\t\u{a0}"), "l1\\nl2\\r\\t⟨U+00A0⟩");
        // Text cannot pass itself off as a marker.
        assert_eq!(reveal("⟨9 spaces⟩"), "⟨U+27E8⟩9 spaces⟩");
        assert_eq!(reveal("héllo wörld ✓"), "héllo wörld ✓");
    }

    #[test]
    fn the_ascii_skipping_writer_escapes_as_one_that_decodes_every_character() {
        let reference = |text: &str| -> String {
            text.chars()
                .map(|c| match c {
                    c if super::json_must_escape(c) => {
                        let mut units = [0u16; 2];
                        let units = c.encode_utf16(&mut units);
                        units.iter().map(|u| format!("\\u{u:04x}")).collect()
                    }
                    c => c.to_string(),
                })
                .collect()
        };
        let pieces = [
            "a",
            "\u{7f}",
            "ü",
            "\u{202e}",
            "✓",
            "\u{e0041}",
            "\u{85}",
            "xyz",
            "",
        ];
        for a in pieces {
            for b in pieces {
                for c in pieces {
                    let text = format!("{a}{b}{c}{a}");
                    let mut out = Vec::new();
                    let mut f = super::TerminalSafe(serde_json::ser::CompactFormatter);
                    serde_json::ser::Formatter::write_string_fragment(&mut f, &mut out, &text)
                        .unwrap();
                    assert_eq!(
                        String::from_utf8(out).unwrap(),
                        reference(&text),
                        "{text:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn json_writer_escapes_what_serde_json_leaves_raw() {
        use super::{to_json, to_json_pretty};
        let v = serde_json::json!({
            "k\u{9b}": "a\u{9b}31m\u{85}b\u{7f}c\u{2028}d\u{202e}e\u{200b}f\u{e0041}g\u{1b}h ü ✓"
        });
        let raw = serde_json::to_string(&v).unwrap();
        assert!(raw.contains('\u{9b}'), "serde_json itself leaves C1 raw");
        for text in [to_json(&v).unwrap(), to_json_pretty(&v).unwrap()] {
            assert!(
                !text.chars().any(|c| c.is_control() && c != '\n'),
                "{text:?}"
            );
            assert!(
                !text.contains('\u{202e}') && !text.contains('\u{2028}'),
                "{text:?}"
            );
            assert!(
                text.contains(
                    "\\u009b31m\\u0085b\\u007fc\\u2028d\\u202ee\\u200bf\\udb40\\udc41g\\u001bh ü ✓"
                ),
                "{text:?}"
            );
            let back: serde_json::Value = serde_json::from_str(&text).unwrap();
            assert_eq!(back, v);
        }
        assert_eq!(to_json(&v).unwrap().lines().count(), 1);
        assert_eq!(
            to_json_pretty(&serde_json::json!({"a": [1]})).unwrap(),
            "{\n  \"a\": [\n    1\n  ]\n}"
        );
    }
}
