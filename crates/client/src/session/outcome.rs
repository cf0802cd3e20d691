//! A `tools/call` result the wire already decoded as rmcp's type, read into the host's
//! outcome without the trip through a JSON value when every block is text (nearly every
//! result is). Everything else is read as JSON by `lenient.rs`, which keeps unknown blocks.

use mcp_host_core::{CallOutcome, Content};
use rmcp::model::{CallToolResult, ContentBlock};

/// What [`crate::lenient::parse_call_result`] makes of `result`'s JSON, for a result whose
/// blocks are all text (a test holds the two equal); any other result is handed back.
pub(crate) fn text_call_result(result: CallToolResult) -> Result<CallOutcome, Box<CallToolResult>> {
    if !(result.content.iter()).all(|block| matches!(block, ContentBlock::Text(_))) {
        return Err(Box::new(result));
    }
    let content = (result.content.into_iter())
        .filter_map(|block| match block {
            ContentBlock::Text(t) => Some(Content::Text { text: t.text }),
            _ => None,
        })
        .collect();
    Ok(CallOutcome {
        content,
        structured: result.structured_content.filter(|v| !v.is_null()),
        is_error: result.is_error.unwrap_or(false),
        input_rounds: Vec::new(),
        task_id: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lenient::parse_call_result;
    use serde_json::json;

    /// The typed shortcut gives what the JSON reading gives, for text results with and
    /// without structured content, error flags, annotations and `_meta`; anything else is
    /// left to the JSON reading.
    #[test]
    fn a_typed_text_result_reads_as_its_json_does() {
        let results = [
            json!({"content": [{"type": "text", "text": "hi"}]}),
            json!({"content": [], "isError": true}),
            json!({"content": [{"type": "text", "text": "a", "annotations": {"priority": 0.5}, "_meta": {"k": 1}},
                {"type": "text", "text": "b"}], "structuredContent": {"x": [1, 2]}, "isError": false}),
            json!({"content": [{"type": "text", "text": "n"}], "structuredContent": null}),
            json!({"structuredContent": 7, "_meta": {"m": true}}),
        ];
        for json in results {
            let typed: CallToolResult = serde_json::from_value(json.clone()).unwrap();
            let via_json = parse_call_result(&serde_json::to_value(&typed).unwrap()).unwrap();
            assert_eq!(text_call_result(typed).unwrap(), via_json, "{json}");
        }
        let image = json!({"content": [{"type": "text", "text": "t"},
            {"type": "image", "data": "AA==", "mimeType": "image/png"}]});
        let typed: CallToolResult = serde_json::from_value(image).unwrap();
        assert_eq!(text_call_result(typed.clone()), Err(Box::new(typed)));
    }
}
