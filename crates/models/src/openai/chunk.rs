//! One streamed Chat Completions chunk, as a step reads it: read typed, borrowing the
//! chunk's text (a `Value` built and dropped per chunk was a tenth of a step). A chunk of
//! an unexpected shape (a field of another type than the API's) is read again as a `Value`,
//! taking each part that has the expected type, so a lenient server keeps working.

use crate::wire::at;
use serde::Deserialize;
use serde_json::Value;
use serde_json::value::RawValue;
use std::borrow::Cow;

#[derive(Debug, Default, Deserialize)]
pub(super) struct Chunk<'a> {
    /// vLLM, llama.cpp and proxies report a failure mid-stream as an `error` in place of a
    /// chunk; its message is read when there is one.
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
    #[serde(default)]
    pub usage: Option<ChunkUsage>,
    #[serde(default, borrow)]
    choices: Vec<Choice<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct ChunkUsage {
    #[serde(default)]
    pub prompt_tokens: Option<u64>,
    #[serde(default)]
    pub completion_tokens: Option<u64>,
    #[serde(default)]
    prompt_tokens_details: Option<Details>,
}

#[derive(Debug, Default, Deserialize)]
struct Details {
    #[serde(default)]
    cached_tokens: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Choice<'a> {
    #[serde(default, borrow)]
    pub delta: Delta<'a>,
    #[serde(default, borrow)]
    pub finish_reason: Option<Cow<'a, str>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct Delta<'a> {
    #[serde(default, borrow)]
    pub content: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct CallDelta<'a> {
    #[serde(default)]
    pub index: Option<u64>,
    #[serde(default, borrow)]
    pub id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub function: Option<FunctionDelta<'a>>,
}

#[derive(Debug, Default, Deserialize)]
pub(super) struct FunctionDelta<'a> {
    #[serde(default, borrow)]
    pub name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    pub arguments: Option<Cow<'a, str>>,
}

/// What a payload is: a chunk, an error the server reported, or neither (not JSON: skipped).
pub(super) enum Payload<'a> {
    Chunk(Chunk<'a>),
    Error(String),
    Skip,
}

/// Reads `data`; `spare` holds the `Value` when the typed reading failed.
pub(super) fn read<'a>(data: &'a str, spare: &'a mut Option<Value>) -> Payload<'a> {
    // A derived struct would also take an array, member by member: only an object is
    // read typed (an array, read as a `Value`, is a chunk with nothing in it, as before).
    let typed = (data.trim_start().starts_with('{'))
        .then(|| serde_json::from_str::<Chunk>(data).ok())
        .flatten();
    match typed {
        Some(chunk) => {
            let error = chunk
                .error
                .and_then(|raw| serde_json::from_str(raw.get()).ok());
            match error.as_ref().and_then(message_of) {
                Some(message) => Payload::Error(message),
                None => Payload::Chunk(chunk),
            }
        }
        None => match serde_json::from_str::<Value>(data) {
            Ok(value) => {
                let event = spare.insert(value);
                match event.get("error").and_then(message_of) {
                    Some(message) => Payload::Error(message),
                    None => Payload::Chunk(from_value(event)),
                }
            }
            Err(_) => Payload::Skip,
        },
    }
}

impl<'a> Chunk<'a> {
    /// The first choice: the only one a request for one completion gets.
    pub fn choice(&self) -> Option<&Choice<'a>> {
        self.choices.first()
    }
}

impl ChunkUsage {
    pub fn cached_tokens(&self) -> Option<u64> {
        self.prompt_tokens_details.as_ref()?.cached_tokens
    }
}

/// An `error` that is not `null`: its `message`, the error itself when it is a string, or
/// "unknown error".
fn message_of(error: &Value) -> Option<String> {
    if error.is_null() {
        return None;
    }
    let message = (error.get("message").and_then(Value::as_str))
        .or_else(|| error.as_str())
        .unwrap_or("unknown error");
    Some(message.to_string())
}

fn text(v: Option<&Value>) -> Option<Cow<'_, str>> {
    v.and_then(Value::as_str).map(Cow::Borrowed)
}

/// The parts of `event` that have the expected type; the rest is as if absent.
fn from_value(event: &Value) -> Chunk<'_> {
    let u64_at = |v: &Value, path| at(v, path).and_then(Value::as_u64);
    let usage = event
        .get("usage")
        .filter(|u| u.is_object())
        .map(|u| ChunkUsage {
            prompt_tokens: u64_at(u, "/prompt_tokens"),
            completion_tokens: u64_at(u, "/completion_tokens"),
            prompt_tokens_details: Some(Details {
                cached_tokens: u64_at(u, "/prompt_tokens_details/cached_tokens"),
            }),
        });
    let choice = at(event, "/choices/0").map(|choice| Choice {
        delta: Delta {
            content: text(at(choice, "/delta/content")),
            tool_calls: (at(choice, "/delta/tool_calls").and_then(Value::as_array)).map(|calls| {
                (calls.iter())
                    .map(|d| CallDelta {
                        index: d.get("index").and_then(Value::as_u64),
                        id: text(d.get("id")),
                        function: Some(FunctionDelta {
                            name: text(at(d, "/function/name")),
                            arguments: text(at(d, "/function/arguments")),
                        }),
                    })
                    .collect()
            }),
        },
        finish_reason: text(choice.get("finish_reason")),
    });
    Chunk {
        error: None,
        usage,
        choices: choice.into_iter().collect(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::panic)]
    use super::*;

    fn chunk_of(data: &str, check: impl FnOnce(&Chunk)) {
        let mut spare = None;
        match read(data, &mut spare) {
            Payload::Chunk(chunk) => check(&chunk),
            Payload::Error(e) => panic!("error {e} from {data}"),
            Payload::Skip => panic!("skipped {data}"),
        }
    }

    #[test]
    fn a_chunk_is_read_with_its_escapes_and_its_call_deltas() {
        let data = r#"{"id":"x","choices":[{"index":0,"delta":{"content":"a \"b\"\n","tool_calls":[{"index":1,"id":"c1","type":"function","function":{"name":"f","arguments":"{\"q\":"}}]},"finish_reason":null}],"usage":{"prompt_tokens":3,"completion_tokens":4,"prompt_tokens_details":{"cached_tokens":2}}}"#;
        chunk_of(data, |chunk| {
            let choice = chunk.choice().unwrap();
            assert_eq!(choice.delta.content.as_deref(), Some("a \"b\"\n"));
            let call = &choice.delta.tool_calls.as_ref().unwrap()[0];
            assert_eq!((call.index, call.id.as_deref()), (Some(1), Some("c1")));
            let f = call.function.as_ref().unwrap();
            assert_eq!(
                (f.name.as_deref(), f.arguments.as_deref()),
                (Some("f"), Some("{\"q\":"))
            );
            assert_eq!(choice.finish_reason, None);
            let usage = chunk.usage.as_ref().unwrap();
            assert_eq!(
                (usage.prompt_tokens, usage.completion_tokens),
                (Some(3), Some(4))
            );
            assert_eq!(usage.cached_tokens(), Some(2));
        });
    }

    /// A field of another type than the API's is as if absent; the rest of the chunk counts.
    #[test]
    fn a_chunk_of_an_odd_shape_keeps_what_has_the_expected_type() {
        let data = r#"{"choices":[{"delta":{"content":"hi","tool_calls":[{"index":"0","id":7,"function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":"none"}"#;
        assert!(
            serde_json::from_str::<Chunk>(data).is_err(),
            "the typed reading fails"
        );
        chunk_of(data, |chunk| {
            let choice = chunk.choice().unwrap();
            assert_eq!(choice.delta.content.as_deref(), Some("hi"));
            let call = &choice.delta.tool_calls.as_ref().unwrap()[0];
            assert_eq!((call.index, call.id.as_deref()), (None, None));
            assert_eq!(call.function.as_ref().unwrap().name.as_deref(), Some("f"));
            assert_eq!(choice.finish_reason.as_deref(), Some("tool_calls"));
            assert!(chunk.usage.is_none());
        });
        chunk_of(r#"{"choices":null,"usage":{"prompt_tokens":1}}"#, |chunk| {
            assert!(chunk.choice().is_none());
            assert_eq!(chunk.usage.as_ref().unwrap().prompt_tokens, Some(1));
        });
    }

    #[test]
    fn an_error_in_place_of_a_chunk_is_reported_and_a_null_one_is_not() {
        for (data, expected) in [
            (r#"{"error":{"message":"overloaded"}}"#, "overloaded"),
            (r#"{"error":"bad"}"#, "bad"),
            (r#"{"error":{"code":5}}"#, "unknown error"),
            (r#"{"error":{"message":"odd"},"choices":7}"#, "odd"),
        ] {
            let mut spare = None;
            match read(data, &mut spare) {
                Payload::Error(message) => assert_eq!(message, expected, "{data}"),
                _ => panic!("no error from {data}"),
            }
        }
        chunk_of(
            r#"{"error":null,"choices":[{"delta":{"content":"ok"}}]}"#,
            |chunk| {
                assert_eq!(chunk.choice().unwrap().delta.content.as_deref(), Some("ok"));
            },
        );
        let mut spare = None;
        assert!(matches!(read("not json", &mut spare), Payload::Skip));
        // An array is no chunk: its members are not read as fields by position.
        for data in [r#"[{"message":"x"}]"#, r#"[null,{"prompt_tokens":5}]"#] {
            chunk_of(data, |chunk| {
                assert!(chunk.choice().is_none() && chunk.usage.is_none(), "{data}");
            });
        }
    }
}
