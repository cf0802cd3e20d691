//! How a call's arguments are shown to the person who approves them. Nothing may be hidden:
//! every string is [`reveal`]ed (invisible, bidi and control characters as `⟨U+XXXX⟩`, long
//! runs of spaces as `⟨N spaces⟩`), nothing is cut for good (a long value is shortened only
//! while the modal is collapsed, with a marker that says how much more there is and which key
//! shows it), and short top-level fields come first, so the `path` of a write stays in view
//! above a long `content` even at 80×24.

use mcp_host_core::sanitize::reveal;
use serde_json::Value;

/// A collapsed value shows at most this many characters...
pub(crate) const COLLAPSED_CHARS: usize = 320;
/// ...and at most this many lines.
pub(crate) const COLLAPSED_LINES: usize = 6;
/// A value up to this long (on one line) counts as short and is listed first.
const SHORT_VALUE_CHARS: usize = 80;

/// One top-level argument: its name (none when the arguments are not an object) and its
/// value as display lines, revealed and complete.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ArgField {
    pub key: Option<String>,
    pub lines: Vec<String>,
}

impl ArgField {
    fn chars(&self) -> usize {
        self.lines.iter().map(|l| l.chars().count()).sum()
    }

    fn is_short(&self) -> bool {
        self.lines.len() == 1 && self.chars() <= SHORT_VALUE_CHARS
    }

    /// Whether collapsing would leave anything out.
    pub(crate) fn collapses(&self) -> bool {
        self.lines.len() > COLLAPSED_LINES || self.chars() > COLLAPSED_CHARS
    }

    /// The lines shown while collapsed, and how many characters they leave out.
    pub(crate) fn collapsed(&self) -> (Vec<String>, usize) {
        let total = self.chars();
        let mut budget = COLLAPSED_CHARS;
        let mut out = Vec::new();
        for l in self.lines.iter().take(COLLAPSED_LINES) {
            if budget == 0 {
                break;
            }
            let take: String = l.chars().take(budget).collect();
            budget -= take.chars().count();
            out.push(take);
        }
        let shown: usize = out.iter().map(|l| l.chars().count()).sum();
        (out, total - shown)
    }
}

/// The arguments as fields: an object's short fields first, in order, then the longer ones
/// from shortest to longest; anything else as one unnamed field.
pub(crate) fn arg_fields(args: &Value) -> Vec<ArgField> {
    let Value::Object(map) = args else {
        return vec![ArgField {
            key: None,
            lines: value_lines(args),
        }];
    };
    let fields: Vec<ArgField> = map
        .iter()
        .map(|(k, v)| ArgField {
            key: Some(quoted(k)),
            lines: value_lines(v),
        })
        .collect();
    let (short, mut long): (Vec<_>, Vec<_>) = fields.into_iter().partition(ArgField::is_short);
    // A long path still goes before a longer content.
    long.sort_by_key(ArgField::chars);
    short.into_iter().chain(long).collect()
}

/// Multi-line text in an approval (a tool's description): each line [`reveal`]ed, line
/// breaks kept (`\r\n` counts as one), so padding and invisible characters show there too.
pub(crate) fn reveal_lines(s: &str) -> String {
    s.replace("\r\n", "\n")
        .split('\n')
        .map(reveal)
        .collect::<Vec<_>>()
        .join("\n")
}

/// A string as JSON would quote it (`"` and `\\` escaped, so no value can fake the end of
/// itself and the start of another field), then [`reveal`]ed.
fn quoted(s: &str) -> String {
    format!(
        "\"{}\"",
        reveal(&s.replace('\\', "\\\\").replace('"', "\\\""))
    )
}

/// A value as lines: a string as one quoted, revealed line (its `\n`s shown as escapes, so
/// no value can fake a line of the modal); arrays and objects indented, two spaces a level.
pub(crate) fn value_lines(v: &Value) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    write_value(v, 0, &mut cur, &mut out);
    out.push(cur);
    out
}

fn write_value(v: &Value, depth: usize, cur: &mut String, out: &mut Vec<String>) {
    let indent = |d: usize| "  ".repeat(d);
    match v {
        Value::String(s) => cur.push_str(&quoted(s)),
        Value::Array(items) if !items.is_empty() => {
            cur.push('[');
            for (i, item) in items.iter().enumerate() {
                out.push(std::mem::take(cur));
                cur.push_str(&indent(depth + 1));
                write_value(item, depth + 1, cur, out);
                if i + 1 < items.len() {
                    cur.push(',');
                }
            }
            out.push(std::mem::take(cur));
            cur.push_str(&indent(depth));
            cur.push(']');
        }
        Value::Object(map) if !map.is_empty() => {
            cur.push('{');
            let n = map.len();
            for (i, (k, item)) in map.iter().enumerate() {
                out.push(std::mem::take(cur));
                cur.push_str(&indent(depth + 1));
                cur.push_str(&quoted(k));
                cur.push_str(": ");
                write_value(item, depth + 1, cur, out);
                if i + 1 < n {
                    cur.push(',');
                }
            }
            out.push(std::mem::take(cur));
            cur.push_str(&indent(depth));
            cur.push('}');
        }
        // Numbers, booleans, null and empty containers are plain ASCII.
        other => cur.push_str(&other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn short_fields_come_first_and_strings_are_revealed() {
        let f = arg_fields(&json!({
            "content": "x".repeat(500),
            "path": "/etc/\u{202e}dwssap",
            "opts": {"a": [1, "b\u{200b}"]},
        }));
        assert_eq!(f[0].key.as_deref(), Some("\"path\""));
        assert_eq!(f[0].lines, vec!["\"/etc/⟨U+202E⟩dwssap\""]);
        assert_eq!(f[1].key.as_deref(), Some("\"opts\""));
        assert_eq!(
            f[1].lines,
            vec!["{", "  \"a\": [", "    1,", "    \"b⟨U+200B⟩\"", "  ]", "}"]
        );
        assert_eq!(f[2].key.as_deref(), Some("\"content\""));
    }

    #[test]
    fn a_long_path_goes_before_a_longer_content() {
        let path = format!("/{}", "d/".repeat(60));
        let f = arg_fields(&json!({"content": "c".repeat(900), "path": path}));
        assert_eq!(f[0].key.as_deref(), Some("\"path\""));
    }

    #[test]
    fn a_long_run_of_spaces_cannot_push_a_secret_out_of_sight() {
        let f = arg_fields(&json!({"body": format!("hello{}SECRET", " ".repeat(250))}));
        assert_eq!(f[0].lines, vec!["\"hello⟨250 spaces⟩SECRET\""]);
        assert!(!f[0].collapses());
    }

    #[test]
    fn collapsing_says_how_much_is_left_out() {
        let f = &arg_fields(&json!({"content": "y".repeat(1000)}))[0];
        assert!(f.collapses());
        let (lines, more) = f.collapsed();
        assert_eq!(lines[0].chars().count(), COLLAPSED_CHARS);
        assert_eq!(more, 1002 - COLLAPSED_CHARS);
    }

    #[test]
    fn quotes_and_backslashes_cannot_fake_another_field() {
        let f = arg_fields(&json!({"a": "x\", \"path\": \"/etc\\n"}));
        assert_eq!(f[0].lines, vec![r#""x\", \"path\": \"/etc\\n""#]);
    }

    #[test]
    fn descriptions_keep_their_lines_and_show_the_rest() {
        assert_eq!(
            reveal_lines("Reads.\r\nSee    ~/.ssh\u{e0041}\n\tend"),
            "Reads.\nSee⟨4 spaces⟩~/.ssh⟨U+E0041⟩\n\\tend"
        );
    }

    #[test]
    fn non_object_arguments_are_one_field() {
        let f = arg_fields(&json!("not json {"));
        assert_eq!(f.len(), 1);
        assert_eq!(f[0].key, None);
    }
}
