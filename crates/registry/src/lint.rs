//! Findings about tool definitions that a user (and later policy) should see: names that
//! look like another server's tool (Unicode UTS #39 confusable skeletons), invisible or
//! direction-changing characters in names and descriptions, and descriptions cut to size.

use serde::Serialize;
use unicode_general_category::{GeneralCategory, get_general_category};

/// Descriptions shown with every request are cut here…
pub const DESCRIPTION_LIMIT: usize = 4096;
/// …and those loaded on demand (`load_tools`) here.
pub const DESCRIPTION_LIMIT_ON_DEMAND: usize = 16_384;

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Flag {
    /// The tool's name looks like `other_tool` of `other_server` but is not the same text.
    Confusable {
        other_server: String,
        other_tool: String,
    },
    /// Invisible, format or bidi-control characters in a field.
    HiddenCharacters {
        field: String,
        count: usize,
        examples: Vec<String>,
    },
    /// The description was longer than the limit and was cut.
    DescriptionCut { original_chars: usize, limit: usize },
    /// The input schema could not be compiled; the tool cannot be called.
    SchemaUnavailable { reason: String },
    /// The input schema could not be compiled; calls are sent unvalidated (by config).
    SchemaUnvalidated { reason: String },
}

/// Characters that render as nothing or change how surrounding text is displayed.
pub fn is_hidden(c: char) -> bool {
    matches!(
        get_general_category(c),
        GeneralCategory::Format | GeneralCategory::PrivateUse | GeneralCategory::Unassigned
    ) || (c.is_control() && !matches!(c, '\n' | '\t' | '\r'))
        // Variation selectors and the Hangul fillers are common invisible padding.
        || matches!(c, '\u{FE00}'..='\u{FE0F}' | '\u{E0100}'..='\u{E01EF}' | '\u{115F}' | '\u{1160}' | '\u{3164}' | '\u{FFA0}')
}

/// A finding for `field` if `text` contains hidden characters.
pub fn hidden_characters(field: &str, text: &str) -> Option<Flag> {
    let hidden: Vec<char> = text.chars().filter(|c| is_hidden(*c)).collect();
    if hidden.is_empty() {
        return None;
    }
    let mut examples: Vec<String> = hidden
        .iter()
        .map(|c| format!("U+{:04X}", *c as u32))
        .collect();
    examples.dedup();
    examples.truncate(5);
    Some(Flag::HiddenCharacters {
        field: field.into(),
        count: hidden.len(),
        examples,
    })
}

/// The UTS #39 skeleton: two strings with the same skeleton are visually confusable.
pub fn skeleton(s: &str) -> String {
    unicode_security::confusable_detection::skeleton(s)
        .collect::<String>()
        .to_lowercase()
}

/// Cuts `text` to `limit` characters, saying so visibly. Returns the text and, when cut,
/// how long it was.
pub fn cap_description(text: &str, limit: usize) -> (String, Option<usize>) {
    let total = text.chars().count();
    if total <= limit {
        return (text.to_string(), None);
    }
    let kept: String = text.chars().take(limit).collect();
    (
        format!(
            "{kept}… [description cut: {} more characters]",
            total - limit
        ),
        Some(total),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cyrillic_look_alikes_share_a_skeleton() {
        // "rеad_file" with a Cyrillic е (U+0435).
        assert_eq!(skeleton("r\u{0435}ad_file"), skeleton("read_file"));
        assert_ne!("r\u{0435}ad_file", "read_file");
        assert_ne!(skeleton("write_file"), skeleton("read_file"));
    }

    #[test]
    fn invisible_and_bidi_characters_are_found() {
        let f =
            hidden_characters("description", "Reads a file.\u{200B}\u{202E}txt\u{E0041}").unwrap();
        let Flag::HiddenCharacters {
            count, examples, ..
        } = f
        else {
            panic!()
        };
        assert_eq!(count, 3);
        assert_eq!(examples, ["U+200B", "U+202E", "U+E0041"]);
        assert!(hidden_characters("name", "plain_name-1\nnext line\ttab").is_none());
    }

    #[test]
    fn long_descriptions_are_cut_visibly() {
        let (text, cut) = cap_description(&"a".repeat(5000), DESCRIPTION_LIMIT);
        assert_eq!(cut, Some(5000));
        assert!(text.ends_with("[description cut: 904 more characters]"));
        assert_eq!(cap_description("short", 10), ("short".into(), None));
    }
}
