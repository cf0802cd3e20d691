//! OpenAI-compatible Chat Completions: `data:` chunks with `choices[0].delta`, tool calls as
//! index-keyed fragments, a usage chunk after the finish, `[DONE]`.

use super::history::{self, RESULT_A, RESULT_B, STEP_ONE, STEP_TWO, SYSTEM, USER, call};
use super::server::{SSE, data, halves, serve};
use mcp_host_models::{OpenAiCompatible, Provider, ProviderError, StopReason, Usage};
use serde_json::{Value, json};

fn chunk(delta: Value, finish: Value) -> String {
    data(&json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]
    }))
}

fn usage(prompt: u64, completion: u64, cached: u64) -> String {
    data(&json!({
        "id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1, "model": "gpt-4.1",
        "choices": [],
        "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion,
                  "prompt_tokens_details": {"cached_tokens": cached}}
    }))
}

fn step_one() -> Vec<String> {
    let [a, b] = halves(&chunk(
        json!({"tool_calls": [{"index": 0, "function": {"arguments": "{\"pa"}}]}),
        Value::Null,
    ));
    vec![
        chunk(json!({"role": "assistant", "content": ""}), Value::Null),
        chunk(json!({"content": STEP_ONE[0]}), Value::Null),
        chunk(json!({"content": STEP_ONE[1]}), Value::Null),
        chunk(
            json!({"tool_calls": [{"index": 0, "id": "call_abc", "type": "function", "function": {"name": "read_file", "arguments": ""}}]}),
            Value::Null,
        ),
        a,
        b,
        chunk(
            json!({"tool_calls": [{"index": 0, "function": {"arguments": "th\":\"a.txt\"}"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "id": "call_def", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":"}}]}),
            Value::Null,
        ),
        chunk(
            json!({"tool_calls": [{"index": 1, "function": {"arguments": "\"b.txt\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("tool_calls")),
        usage(120, 30, 64),
        "data: [DONE]\n\n".into(),
    ]
}

fn step_two() -> Vec<String> {
    vec![
        chunk(
            json!({"role": "assistant", "content": STEP_TWO[0]}),
            Value::Null,
        ),
        chunk(json!({"content": STEP_TWO[1]}), Value::Null),
        chunk(json!({}), json!("stop")),
        usage(200, 12, 0),
        "data: [DONE]\n\n".into(),
    ]
}

#[tokio::test]
async fn a_two_step_tool_turn() {
    let (url, requests) = serve(SSE, vec![step_one(), step_two()]);
    let provider = OpenAiCompatible::new(
        history::client(),
        &format!("{url}/v1"),
        Some("sk-test".into()),
    );

    let (request, mut rx) = history::request("gpt-4.1", history::first());
    let step = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(step.text, "Let me check both.");
    assert_eq!(
        step.tool_calls,
        [call("call_abc", "a.txt"), call("call_def", "b.txt")]
    );
    assert_eq!(step.stop, StopReason::ToolUse);
    assert_eq!(
        step.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 30,
            cache_read_tokens: 64,
            cache_write_tokens: 0
        }
    );
    assert_eq!(history::deltas(&mut rx), STEP_ONE);

    let sent = requests.recv().unwrap();
    assert_eq!(sent.line, "POST /v1/chat/completions HTTP/1.1");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["stream_options"]["include_usage"], true);
    assert_eq!(
        sent.body["tools"],
        json!([{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path"}, "encoding": {"type": ["string", "null"], "default": null}},
            "required": ["path"],
            "additionalProperties": false
        }}}])
    );

    let (request, mut rx) = history::request("gpt-4.1", history::second(&step));
    let answer = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(answer.text, STEP_TWO.concat());
    assert!(answer.tool_calls.is_empty());
    assert_eq!(answer.stop, StopReason::EndTurn);
    assert_eq!(answer.usage.input_tokens, 200);
    assert_eq!(history::deltas(&mut rx), STEP_TWO);

    let sent = requests.recv().unwrap();
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": USER},
            {"role": "assistant", "content": "Let me check both.", "tool_calls": [
                {"id": "call_abc", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}},
                {"id": "call_def", "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"b.txt\"}"}}
            ]},
            {"role": "tool", "tool_call_id": "call_abc", "content": RESULT_A},
            {"role": "tool", "tool_call_id": "call_def", "content": format!("ERROR: {RESULT_B}")}
        ])
    );
}

#[tokio::test]
async fn a_missing_call_id_is_made_up_and_an_unknown_finish_reason_is_kept_as_other() {
    // A compatible server that leaves out ids and has its own finish reason, and no [DONE].
    let reply = vec![
        chunk(
            json!({"tool_calls": [{"index": 0, "type": "function", "function": {"name": "read_file", "arguments": "{\"path\":\"a.txt\"}"}}]}),
            Value::Null,
        ),
        chunk(json!({}), json!("eos_token")),
    ];
    let (url, _requests) = serve(SSE, vec![reply]);
    let provider = OpenAiCompatible::new(history::client(), &url, None);
    let (request, _rx) = history::request("local", history::first());
    let r = provider.complete(&request).await.unwrap();
    assert_eq!(r.tool_calls, [call("call_0", "a.txt")]);
    assert_eq!(r.stop, StopReason::Other);
}

#[tokio::test]
async fn an_error_chunk_mid_stream_is_a_stream_error() {
    let reply = vec![
        chunk(json!({"content": "Hel"}), Value::Null),
        data(
            &json!({"error": {"message": "model overloaded", "type": "server_error", "code": 503}}),
        ),
    ];
    let (url, _requests) = serve(SSE, vec![reply]);
    let provider = OpenAiCompatible::new(history::client(), &url, None);
    let (request, _rx) = history::request("local", history::first());
    let e = provider.complete(&request).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::Stream(m) if m == "model overloaded"),
        "{e}"
    );
}

/// A stream that never ends is stopped at the response limit, not read into memory without
/// end: 66 MiB of text deltas, each event well under the per-event limit.
#[tokio::test]
async fn a_stream_that_never_ends_is_stopped_at_the_response_limit() {
    let piece = chunk(json!({"content": "x".repeat(1 << 20)}), Value::Null);
    let reply = vec![piece; 66];
    let (url, _requests) = serve(SSE, vec![reply]);
    let provider = OpenAiCompatible::new(history::client(), &url, None);
    let (request, _rx) = history::request("local", history::first());
    let e = provider.complete(&request).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::Stream(m) if m.contains("64 MiB")),
        "{e}"
    );
}
