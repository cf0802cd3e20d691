//! Results too large for the model's context are stored whole, content-addressed, in the
//! SQLite store; the model gets a preview that says what was cut and a
//! handle, and `read_result(handle, offset, length)` reads any part back. Offsets and lengths
//! are in bytes of the UTF-8 text, moved inwards to character boundaries.

use mcp_host_core::ToolDefinition;
use mcp_host_registry::exposure::HostTool;
use mcp_host_store::Store;
use serde_json::{Value, json};

/// Bytes one `read_result` call returns at most.
pub const MAX_READ: usize = 100_000;
/// Bytes one `read_result` reads when the model gives no length (the schema says so too).
pub const DEFAULT_READ: usize = 20_000;
const HEAD: usize = 2_000;
const TAIL: usize = 1_000;

/// Why a stored result could not be read back; the model reads the message.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("no stored result has the handle `{0}`")]
    Unknown(String),
    #[error("`{handle}`: {source}")]
    Store {
        handle: String,
        source: mcp_host_store::StoreError,
    },
    #[error("the result `{0}` is not UTF-8 text")]
    NotText(String),
}

/// Large results, content-addressed in the SQLite store.
#[derive(Clone, Debug)]
pub struct ResultStore {
    store: Store,
}

impl ResultStore {
    pub fn new(store: Store) -> Self {
        Self { store }
    }

    /// Stores `text` (once per distinct content) and returns its handle.
    pub async fn put(&self, text: &str) -> Result<String, mcp_host_store::StoreError> {
        self.store.put_result(text).await
    }

    /// Reads `length` bytes from `offset`; the answer says where the next read starts. Only
    /// the page (and up to three bytes either side, to find character boundaries) is read.
    pub async fn read(
        &self,
        handle: &str,
        offset: usize,
        length: usize,
    ) -> Result<Value, ReadError> {
        let length = length.clamp(1, MAX_READ);
        // A UTF-8 character is at most four bytes: three bytes before the range and eight
        // after it are enough to find every boundary used below.
        let from = offset.saturating_sub(3);
        let want = (offset - from) + length + 8;
        let (bytes, total) = match self
            .store
            .get_result_range(handle, from as u64, want as u64)
            .await
        {
            Ok(Some(found)) => found,
            Ok(None) => return Err(ReadError::Unknown(handle.to_string())),
            Err(source) => {
                return Err(ReadError::Store {
                    handle: handle.to_string(),
                    source,
                });
            }
        };
        let total = total as usize;
        // Byte i of the whole text starts a character (or is the end). Past what was read
        // counts as a boundary, which only ends the loops below: the slice is checked.
        let is_boundary =
            |i: usize| i >= total || bytes.get(i - from).is_none_or(|b| (b & 0xC0) != 0x80);
        let mut start = offset.min(total);
        while !is_boundary(start) {
            start += 1;
        }
        let mut end = start.saturating_add(length).min(total);
        while end > start && !is_boundary(end) {
            end -= 1;
        }
        if end == start && start < total {
            // A read shorter than one character still moves forward by that character.
            end = start + 1;
            while !is_boundary(end) {
                end += 1;
            }
        }
        let text = bytes
            .get(start - from..end - from)
            .and_then(|b| std::str::from_utf8(b).ok())
            .ok_or_else(|| ReadError::NotText(handle.to_string()))?;
        let next = (end < total).then_some(end);
        Ok(
            json!({"handle": handle, "offset": start, "total_bytes": total, "next_offset": next, "text": text}),
        )
    }
}

/// The definition of the `read_result` tool, offered beside the catalogue's.
pub fn read_result_definition() -> ToolDefinition {
    ToolDefinition {
        name: HostTool::ReadResult.name().into(),
        description: "Read part of a tool result that was too large to show, by the handle given in its preview. Offsets and lengths are in bytes; the answer gives next_offset until the end.".into(),
        input_schema: json!({"type": "object", "properties": {
            "handle": {"type": "string"},
            "offset": {"type": "integer", "minimum": 0, "default": 0},
            "length": {"type": "integer", "minimum": 1, "maximum": MAX_READ, "default": DEFAULT_READ}
        }, "required": ["handle"], "additionalProperties": false}),
    }
}

/// What the model sees instead of a large result: how big it is, where it is, its head and
/// tail, and for JSON its shape.
pub fn preview(text: &str, handle: &str) -> String {
    let head_end = floor_boundary(text, HEAD.min(text.len()));
    let tail_start = ceil_boundary(text, text.len().saturating_sub(TAIL).max(head_end));
    let mut out = format!(
        "[This result is {} bytes, too large to show whole. It is stored as handle {handle}; read any part with read_result(handle, offset, length). Below: the first {head_end} and the last {} bytes.]\n",
        text.len(),
        text.len() - tail_start
    );
    if let Ok(v) = serde_json::from_str::<Value>(text) {
        out.push_str(&format!("[JSON shape: {}]\n", shape(&v, 0)));
    }
    out.push_str(&text[..head_end]);
    out.push_str("\n[…]\n");
    out.push_str(&text[tail_start..]);
    out
}

fn shape(v: &Value, depth: usize) -> String {
    match v {
        Value::Object(m) if depth < 2 => {
            let fields: Vec<String> = m
                .iter()
                .take(20)
                .map(|(k, v)| format!("{k}: {}", shape(v, depth + 1)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Value::Object(m) => format!("object({} keys)", m.len()),
        Value::Array(a) => format!("array({})", a.len()),
        Value::String(_) => "string".into(),
        Value::Number(_) => "number".into(),
        Value::Bool(_) => "bool".into(),
        Value::Null => "null".into(),
    }
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

fn ceil_boundary(s: &str, mut i: usize) -> usize {
    while !s.is_char_boundary(i) {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_stored_result_reads_back_byte_for_byte_in_pages() {
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(Store::open(&dir.path().join("s.sqlite")).await.unwrap());
        let text: String = (0..400_000).map(|i| format!("{i:06}é\n")).collect();
        let handle = store.put(&text).await.unwrap();
        assert_eq!(store.put(&text).await.unwrap(), handle, "content-addressed");
        let mut back = String::new();
        let mut offset = Some(0);
        while let Some(o) = offset {
            // An odd page size lands inside the two-byte é: pages still join exactly.
            let page = store.read(&handle, o, 99_999).await.unwrap();
            back.push_str(page["text"].as_str().unwrap());
            offset = page["next_offset"].as_u64().map(|n| n as usize);
        }
        assert_eq!(back, text);
        // One-byte reads never stall inside a character and never split one.
        let small = store.put("aé€😀b").await.unwrap();
        let (mut at, mut pieces) = (Some(0), Vec::new());
        while let Some(o) = at {
            let page = store.read(&small, o, 1).await.unwrap();
            pieces.push(page["text"].as_str().unwrap().to_string());
            at = page["next_offset"].as_u64().map(|n| n as usize);
        }
        assert_eq!(pieces, ["a", "é", "€", "😀", "b"]);
        // An offset inside a character starts at the next one.
        let page = store.read(&small, 2, 3).await.unwrap();
        assert_eq!(page["text"], "€");
        assert!(store.read("../../etc/passwd", 0, 10).await.is_err());
        assert!(store.read(&"0".repeat(32), 0, 10).await.is_err());
    }

    #[test]
    fn previews_say_what_was_cut_and_show_json_shape() {
        let json_text =
            serde_json::to_string(&json!({"items": vec![1; 5000], "meta": {"n": 1}})).unwrap();
        let p = preview(&json_text, "h");
        assert!(p.contains("too large to show whole") && p.contains("handle h"));
        assert!(p.contains("items: array(5000)"), "{p}");
    }
}
