//! What the model reads of a tool result: text as text, structured content as JSON when
//! there is no text, and images and audio as references (the providers here take text tool
//! results only, so the bytes are stored and named, never pasted as base64). Every cut is
//! stated.

use mcp_host_core::{CallOutcome, Content};

/// The base64 payloads of a result's images and audio, in block order.
pub fn media(outcome: &CallOutcome) -> Vec<&str> {
    outcome
        .content
        .iter()
        .filter_map(|c| match c {
            Content::Image { data, .. } | Content::Audio { data, .. } => Some(data.as_str()),
            _ => None,
        })
        .collect()
}

/// Renders a result; `stored[i]` is the handle the i-th media block was stored under, if it
/// was.
pub fn render(outcome: &CallOutcome, stored: &[Option<String>]) -> String {
    let mut stored = stored.iter();
    let mut media_ref = |kind: &str, mime: &Option<String>, data: &str| {
        let mime = mime.as_deref().unwrap_or("unknown type");
        let size = data.len() / 4 * 3;
        match stored.next().and_then(Option::as_ref) {
            Some(handle) => format!(
                "[{kind} ({mime}, about {size} bytes) not shown to the model; stored base64 as handle {handle}]"
            ),
            None => format!("[{kind} ({mime}, about {size} bytes) not shown to the model]"),
        }
    };
    let mut parts: Vec<String> = outcome
        .content
        .iter()
        .map(|c| match c {
            Content::Text { text } => text.clone(),
            Content::Image { mime_type, data } => media_ref("image", mime_type, data),
            Content::Audio { mime_type, data } => media_ref("audio", mime_type, data),
            Content::ResourceLink { uri, .. } => format!("[resource link {uri}]"),
            Content::Resource { uri, text, .. } => {
                text.clone().unwrap_or_else(|| format!("[resource {uri}]"))
            }
            Content::Unknown { raw } => raw.to_string(),
        })
        .collect();
    if parts.is_empty()
        && let Some(s) = &outcome.structured
    {
        parts.push(s.to_string());
    }
    parts.join("\n")
}

/// Characters of a result a front end shows on its card.
pub const PREVIEW_CHARS: usize = 600;

/// The start of a result as a front end shows it: rendered, escapes stripped, cut.
pub fn preview_text(outcome: &CallOutcome) -> String {
    let text = render(outcome, &[]);
    let head: String = text.chars().take(PREVIEW_CHARS).collect();
    mcp_host_core::sanitize::strip_terminal_escapes(&head)
}

/// Cuts `text` to `limit` characters and says so.
pub fn cap(text: &str, limit: usize) -> String {
    let total = text.chars().count();
    if total <= limit {
        return text.to_string();
    }
    let kept: String = text.chars().take(limit).collect();
    format!(
        "{kept}\n[result cut: {} more characters were not shown]",
        total - limit
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cuts_are_stated() {
        assert_eq!(cap("short", 10), "short");
        assert_eq!(
            cap("abcdef", 3),
            "abc\n[result cut: 3 more characters were not shown]"
        );
    }

    #[test]
    fn media_become_references() {
        let outcome = CallOutcome {
            content: vec![
                Content::Text {
                    text: "chart:".into(),
                },
                Content::Image {
                    mime_type: Some("image/png".into()),
                    data: "AAAA".repeat(10),
                },
                Content::Audio {
                    mime_type: None,
                    data: "BBBB".into(),
                },
            ],
            structured: None,
            is_error: false,
            input_rounds: Vec::new(),
            task_id: None,
        };
        assert_eq!(media(&outcome), ["AAAA".repeat(10).as_str(), "BBBB"]);
        let text = render(&outcome, &[Some("h1".into()), None]);
        assert_eq!(
            text,
            "chart:\n[image (image/png, about 30 bytes) not shown to the model; stored base64 as handle h1]\n[audio (unknown type, about 3 bytes) not shown to the model]"
        );
    }
}
