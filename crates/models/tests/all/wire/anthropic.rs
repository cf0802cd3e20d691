//! Anthropic Messages: named SSE events, a text block then `tool_use` blocks whose input
//! arrives as `input_json_delta` fragments, usage split between `message_start` and
//! `message_delta`.

use super::history::{self, RESULT_A, RESULT_B, STEP_ONE, STEP_TWO, SYSTEM, USER};
use super::server::{SSE, event, halves, serve};
use mcp_host_models::{Anthropic, Provider, ProviderError, StopReason, Usage};
use serde_json::{Value, json};

fn start(input: u64, cache_read: u64, cache_write: u64) -> String {
    event(
        "message_start",
        &json!({"type": "message_start", "message": {
            "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
            "stop_reason": null, "stop_sequence": null,
            "usage": {"input_tokens": input, "cache_creation_input_tokens": cache_write, "cache_read_input_tokens": cache_read, "output_tokens": 1}
        }}),
    )
}

fn block_start(index: u64, block: Value) -> String {
    event(
        "content_block_start",
        &json!({"type": "content_block_start", "index": index, "content_block": block}),
    )
}

fn delta(index: u64, delta: Value) -> String {
    event(
        "content_block_delta",
        &json!({"type": "content_block_delta", "index": index, "delta": delta}),
    )
}

fn text(index: u64, t: &str) -> String {
    delta(index, json!({"type": "text_delta", "text": t}))
}

fn json_part(index: u64, partial: &str) -> String {
    delta(
        index,
        json!({"type": "input_json_delta", "partial_json": partial}),
    )
}

fn block_stop(index: u64) -> String {
    event(
        "content_block_stop",
        &json!({"type": "content_block_stop", "index": index}),
    )
}

fn finish(reason: &str, output: u64) -> Vec<String> {
    vec![
        event(
            "message_delta",
            &json!({"type": "message_delta", "delta": {"stop_reason": reason, "stop_sequence": null}, "usage": {"output_tokens": output}}),
        ),
        event("message_stop", &json!({"type": "message_stop"})),
    ]
}

fn step_one() -> Vec<String> {
    let [a, b] = halves(&json_part(1, "th\": \"a.txt\"}"));
    let mut v = vec![
        start(120, 64, 10),
        block_start(0, json!({"type": "text", "text": ""})),
        event("ping", &json!({"type": "ping"})),
        text(0, STEP_ONE[0]),
        text(0, STEP_ONE[1]),
        block_stop(0),
        block_start(
            1,
            json!({"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {}}),
        ),
        json_part(1, ""),
        json_part(1, "{\"pa"),
        a,
        b,
        block_stop(1),
        block_start(
            2,
            json!({"type": "tool_use", "id": "toolu_02", "name": "read_file", "input": {}}),
        ),
        json_part(2, "{\"path\": \"b.t"),
        json_part(2, "xt\"}"),
        block_stop(2),
    ];
    v.extend(finish("tool_use", 30));
    v
}

fn step_two() -> Vec<String> {
    let mut v = vec![
        start(200, 120, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        text(0, STEP_TWO[0]),
        text(0, STEP_TWO[1]),
        block_stop(0),
    ];
    v.extend(finish("end_turn", 12));
    v
}

#[tokio::test]
async fn a_two_step_tool_turn() {
    let (url, requests) = serve(SSE, vec![step_one(), step_two()]);
    let provider = Anthropic::new(history::client(), &url, Some("sk-ant-test".into()));

    let (request, mut rx) = history::request("claude-sonnet-4-5", history::first());
    let step = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(step.text, "Let me check both.");
    // The input arrives as fragments and is kept as the model wrote it.
    assert_eq!(step.tool_calls[0].id, "toolu_01");
    assert_eq!(step.tool_calls[0].arguments, "{\"path\": \"a.txt\"}");
    assert_eq!(step.tool_calls[1].arguments, "{\"path\": \"b.txt\"}");
    assert_eq!(step.tool_calls[1].name, "read_file");
    assert_eq!(step.stop, StopReason::ToolUse);
    assert_eq!(
        step.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 30,
            cache_read_tokens: 64,
            cache_write_tokens: 10
        }
    );
    assert_eq!(history::deltas(&mut rx), STEP_ONE);

    let sent = requests.recv().unwrap();
    assert_eq!(sent.line, "POST /v1/messages HTTP/1.1");
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.header("anthropic-version"), Some("2023-06-01"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(
        sent.body["system"],
        json!([{"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}])
    );
    let tool = &sent.body["tools"][0];
    assert_eq!(tool["name"], "read_file");
    assert!(
        tool["input_schema"].get("$schema").is_none(),
        "lowered for Anthropic"
    );
    assert_eq!(tool["input_schema"]["required"], json!(["path"]));

    let (request, mut rx) = history::request("claude-sonnet-4-5", history::second(&step));
    let answer = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(answer.text, STEP_TWO.concat());
    assert_eq!(answer.stop, StopReason::EndTurn);
    assert_eq!(answer.usage.cache_read_tokens, 120);
    assert_eq!(history::deltas(&mut rx), STEP_TWO);

    let sent = requests.recv().unwrap();
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": USER}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "Let me check both."},
                {"type": "tool_use", "id": "toolu_01", "name": "read_file", "input": {"path": "a.txt"}},
                {"type": "tool_use", "id": "toolu_02", "name": "read_file", "input": {"path": "b.txt"}}
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": RESULT_A, "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": RESULT_B, "is_error": true}
            ]}
        ])
    );
}

#[tokio::test]
async fn an_error_event_mid_stream_is_a_stream_error() {
    let reply = vec![
        start(10, 0, 0),
        block_start(0, json!({"type": "text", "text": ""})),
        text(0, "Hel"),
        event(
            "error",
            &json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        ),
    ];
    let (url, _requests) = serve(SSE, vec![reply]);
    let provider = Anthropic::new(history::client(), &url, None);
    let (request, _rx) = history::request("claude-sonnet-4-5", history::first());
    let e = provider.complete(&request).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::Stream(m) if m == "Overloaded"),
        "{e}"
    );
}
