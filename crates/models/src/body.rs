//! A request body kept from one step of a turn to the next: `head`, then the history's
//! items (comma-separated), then a tail. A step writes only what changed: items are
//! appended in place after the ones sent before, and only the tail (what follows the items)
//! is written again. Copying the whole history into a fresh buffer at every step was a fifth
//! of the host's time per step at the end of a 2,000-call turn, and grew with the turn.
//!
//! The buffer is handed out as [`Bytes`] and taken back at the next step without a copy when
//! the request that borrowed it is gone (as it is once its answer has been read); if another
//! request still holds it, the next step copies it, so a shared provider stays correct.

use crate::Reuse;
use crate::types::{Message, ToolSpec};
use bytes::{BufMut, Bytes, BytesMut};
use serde_json::Value;
use std::sync::{Arc, Mutex, PoisonError};

/// Writes `value`'s JSON to `out`.
pub(crate) fn write_json(out: &mut BytesMut, value: &impl serde::Serialize) {
    // Infallible: what the providers encode has string keys only, and memory takes every
    // write.
    let _ = serde_json::to_writer(out.writer(), value);
}

/// A body's head: the object `fields` with `,"key":[` in place of its closing brace, so
/// that the items go next.
pub(crate) fn head(fields: &Value, key: &str) -> Vec<u8> {
    // An object always serialises (its keys are strings).
    let mut head = serde_json::to_vec(fields).unwrap_or_else(|_| b"{}".to_vec());
    head.pop();
    if head.len() > 1 {
        head.push(b',');
    }
    let _ = serde_json::to_writer(&mut head, key);
    head.extend_from_slice(b":[");
    head
}

/// The end of a body whose items are all closed: the array, then `tools` (their JSON) if
/// any, then the object.
pub(crate) fn close_with_tools(out: &mut BytesMut, tools: Option<&[u8]>) {
    out.extend_from_slice(b"]");
    if let Some(tools) = tools {
        out.extend_from_slice(b",\"tools\":");
        out.extend_from_slice(tools);
    }
    out.extend_from_slice(b"}");
}

/// What a provider sent last: the body, which the next step extends, and the tools' JSON.
#[derive(Debug, Default)]
pub(crate) struct Sent {
    pub(crate) body: Growing<Message>,
    pub(crate) tools: ToolsJson,
}

/// The tools' JSON as a provider last encoded it, with the list it was made from. The
/// engine offers the same list (the same `Arc`) at every step until the catalogue or the
/// exposure changes, so a step copies this text and encodes nothing; a new list equal to
/// the last is recognised by comparing, and only a changed one is encoded again.
#[derive(Debug, Default)]
pub(crate) struct ToolsJson(Mutex<Option<(Arc<[ToolSpec]>, Bytes)>>);

impl ToolsJson {
    /// `tools`' JSON as `encode` gives it.
    pub(crate) fn get(
        &self,
        tools: &Arc<[ToolSpec]>,
        encode: impl FnOnce(&[ToolSpec]) -> Value,
    ) -> Bytes {
        let mut last = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let text = match last.take() {
            Some((sent, text)) if Arc::ptr_eq(&sent, tools) || *sent == **tools => text,
            _ => {
                let mut out = BytesMut::new();
                write_json(&mut out, &encode(tools));
                out.freeze()
            }
        };
        // The newest list is kept, so that the next step's (the same `Arc`) matches at once.
        *last = Some((tools.clone(), text.clone()));
        text
    }
}

/// Writes `items[i]` as `encode` gives it, after a comma unless it is the first: an array
/// of one JSON value per item.
pub(crate) fn comma_separated<T>(
    encode: impl Fn(&T, &mut BytesMut),
) -> impl Fn(&[T], usize, &mut BytesMut) {
    move |items, i, out| {
        if i > 0 {
            out.put_u8(b',');
        }
        encode(&items[i], out);
    }
}

#[derive(Debug)]
pub(crate) struct Growing<T>(Mutex<State<T>>);

#[derive(Debug)]
struct State<T> {
    /// Whose request the items are, when its sender said.
    sender: Option<u64>,
    /// The last body: its head, the items, its tail.
    body: Bytes,
    /// How long the last body's head was.
    head: usize,
    /// Each item written, with where its JSON ends in `body`.
    items: Vec<(T, usize)>,
}

impl<T> Default for Growing<T> {
    fn default() -> Self {
        Self(Mutex::new(State {
            sender: None,
            body: Bytes::new(),
            head: 0,
            items: Vec::new(),
        }))
    }
}

impl<T: PartialEq + Clone> Growing<T> {
    /// `head`, then what `encode(items, i, buf)` writes for each item `i` in turn, then what
    /// `tail` writes. `head` ends where the first item goes (`..."messages":[`); `encode`
    /// writes an item with whatever separates it from the ones before (a comma, or the
    /// closing of a group they opened), and may look back at them but never ahead; `tail`
    /// closes what `head` and the items opened.
    ///
    /// An item is reused only where it equals the one written at its place, or where the
    /// sender's [`Reuse`] vouches that it is unchanged (comparing was itself a pass over the
    /// whole history at every step). A compaction, or another conversation on the same
    /// provider, starts over from where the two differ; another head starts over entirely.
    pub(crate) fn body(
        &self,
        head: &[u8],
        items: &[T],
        reuse: Option<Reuse>,
        encode: impl Fn(&[T], usize, &mut BytesMut),
        tail: impl FnOnce(&mut BytesMut),
    ) -> Bytes {
        let mut state = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let state = &mut *state;
        // No copy when the last request is gone; a copy when another still holds it.
        let mut buf = BytesMut::from(std::mem::take(&mut state.body));
        if state.head != head.len() || buf.get(..head.len()) != Some(head) {
            buf.clear();
            buf.extend_from_slice(head);
            state.head = head.len();
            state.items.clear();
        }
        let same = match reuse {
            Some(r) if state.sender == Some(r.sender) => {
                r.unchanged.min(state.items.len()).min(items.len())
            }
            _ => (state.items.iter().zip(items))
                .take_while(|((old, _), new)| old == *new)
                .count(),
        };
        state.sender = reuse.map(|r| r.sender);
        state.items.truncate(same);
        buf.truncate(state.items.last().map_or(state.head, |(_, end)| *end));
        for (i, item) in items.iter().enumerate().skip(same) {
            encode(items, i, &mut buf);
            state.items.push((item.clone(), buf.len()));
        }
        tail(&mut buf);
        let body = buf.freeze();
        state.body = body.clone();
        body
    }
}

/// Histories a turn goes through, for tests holding a provider's extended bodies equal to
/// the ones it encoded afresh: steps of one and several calls, a system note between two
/// results, a closing answer, a rewrite of the start, another conversation.
#[cfg(test)]
pub(crate) fn test_histories() -> Vec<Vec<crate::Message>> {
    use crate::{Message, ToolCall};
    let call = |id: &str| ToolCall {
        id: id.into(),
        name: "t".into(),
        arguments: if id == "c" {
            String::new()
        } else {
            "{\"a\":1}".into()
        },
    };
    let result = |id: &str| Message::ToolResult {
        call_id: id.into(),
        name: "t".into(),
        content: format!("result of {id}"),
        is_error: id == "b",
    };
    let mut history = vec![
        Message::System { text: "sys".into() },
        Message::User { text: "hi".into() },
    ];
    let mut steps = Vec::new();
    for (i, ids) in [vec!["a", "b"], vec!["c"], vec!["d", "e", "f"]]
        .iter()
        .enumerate()
    {
        history.push(Message::Assistant {
            text: if i == 1 {
                "thinking".into()
            } else {
                String::new()
            },
            tool_calls: ids.iter().map(|id| call(id)).collect(),
        });
        for id in ids {
            history.push(result(id));
            steps.push(history.clone());
        }
    }
    let mut between = history.clone();
    between.insert(
        between.len() - 1,
        Message::System {
            text: "note".into(),
        },
    );
    steps.push(between.clone());
    between.push(Message::Assistant {
        text: "done".into(),
        tool_calls: vec![],
    });
    steps.push(between);
    let mut rewritten = history;
    rewritten[1] = Message::User {
        text: "summary".into(),
    };
    steps.push(rewritten);
    steps.push(vec![
        result("x"),
        Message::User {
            text: "other".into(),
        },
    ]);
    steps.push(vec![Message::System {
        text: "only".into(),
    }]);
    steps
}

/// Holds `body` equal to `afresh` over [`test_histories`], on one provider's state, with
/// and without tools.
#[cfg(test)]
pub(crate) fn assert_extends_as_afresh(
    body: impl Fn(&Sent, &crate::ModelRequest) -> Bytes,
    afresh: impl Fn(&crate::ModelRequest) -> Value,
) {
    let tool = crate::types::ToolSpec {
        name: "t".into(),
        description: "d".into(),
        input_schema: serde_json::json!({"type": "object"}),
    };
    let sent = Sent::default();
    for (i, messages) in test_histories().into_iter().enumerate() {
        let tools = if i % 2 == 0 {
            vec![tool.clone()]
        } else {
            vec![]
        };
        let request = crate::ModelRequest::new("m", messages, tools);
        let extended: Value = serde_json::from_slice(&body(&sent, &request)).unwrap_or_default();
        assert_eq!(extended, afresh(&request), "step {i}");
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn body(growing: &Growing<u32>, head: &str, items: &[u32], reuse: Option<Reuse>) -> String {
        let bytes = growing.body(
            head.as_bytes(),
            items,
            reuse,
            comma_separated(|n, out| write_json(out, n)),
            |buf| buf.extend_from_slice(b"]}"),
        );
        String::from_utf8(bytes.to_vec()).unwrap()
    }

    /// The same list is encoded once; an equal new list is recognised; a changed one is
    /// encoded again.
    #[test]
    fn tools_are_encoded_once_per_list_they_differ_from() {
        let spec = |name: &str| ToolSpec {
            name: name.into(),
            description: String::new(),
            input_schema: serde_json::json!({"type": "object"}),
        };
        let encoded = std::cell::Cell::new(0);
        let encode = |tools: &[ToolSpec]| {
            encoded.set(encoded.get() + 1);
            Value::from(tools.iter().map(|t| t.name.clone()).collect::<Vec<_>>())
        };
        let cache = ToolsJson::default();
        let first: Arc<[ToolSpec]> = vec![spec("a"), spec("b")].into();
        assert_eq!(cache.get(&first, encode), &b"[\"a\",\"b\"]"[..]);
        assert_eq!(cache.get(&first, encode), &b"[\"a\",\"b\"]"[..]);
        let equal: Arc<[ToolSpec]> = vec![spec("a"), spec("b")].into();
        assert_eq!(cache.get(&equal, encode), &b"[\"a\",\"b\"]"[..]);
        assert_eq!(encoded.get(), 1);
        let changed: Arc<[ToolSpec]> = vec![spec("a")].into();
        assert_eq!(cache.get(&changed, encode), &b"[\"a\"]"[..]);
        assert_eq!(encoded.get(), 2);
    }

    #[test]
    fn a_step_appends_in_place_and_a_held_body_is_copied_not_changed() {
        let growing = Growing::default();
        let first = growing.body(
            b"{\"a\":[",
            &[1, 2],
            None,
            comma_separated(|n, out| write_json(out, n)),
            |b| b.extend_from_slice(b"]}"),
        );
        // The first body is still held (a request in flight): the next step must not
        // write into it.
        assert_eq!(
            body(&growing, "{\"a\":[", &[1, 2, 3], None),
            "{\"a\":[1,2,3]}"
        );
        assert_eq!(&first[..], b"{\"a\":[1,2]}");
        drop(first);
        assert_eq!(
            body(&growing, "{\"a\":[", &[1, 2, 3, 4], None),
            "{\"a\":[1,2,3,4]}"
        );
        let before = growing.0.lock().unwrap().body.as_ptr();
        assert_eq!(
            body(&growing, "{\"a\":[", &[1, 2, 3, 5], None),
            "{\"a\":[1,2,3,5]}"
        );
        assert_eq!(
            growing.0.lock().unwrap().body.as_ptr(),
            before,
            "copied, not written in place"
        );
        // A changed item, a shorter list, an empty one, another head.
        assert_eq!(body(&growing, "{\"a\":[", &[1, 9], None), "{\"a\":[1,9]}");
        assert_eq!(body(&growing, "{\"a\":[", &[], None), "{\"a\":[]}");
        assert_eq!(body(&growing, "{\"b\":[", &[5], None), "{\"b\":[5]}");
        let vouched = |unchanged| {
            Some(Reuse {
                sender: 3,
                unchanged,
            })
        };
        assert_eq!(
            body(&growing, "{\"b\":[", &[5, 6], vouched(0)),
            "{\"b\":[5,6]}"
        );
        assert_eq!(
            body(&growing, "{\"b\":[", &[5, 6, 7], vouched(2)),
            "{\"b\":[5,6,7]}"
        );
    }
}
