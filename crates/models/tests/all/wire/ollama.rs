//! Ollama `/api/chat`: NDJSON, one object per line; tool calls whole with object arguments
//! and no ids; the `done` line carries the reason and the counts.

use super::history::{self, RESULT_A, RESULT_B, STEP_ONE, STEP_TWO, SYSTEM, USER, call};
use super::server::{NDJSON, halves, serve};
use mcp_host_models::{Ollama, Provider, ProviderError, StopReason, Usage};
use serde_json::{Value, json};

fn line(message: Value) -> String {
    let mut v = json!({"model": "qwen3:8b", "created_at": "2025-06-01T10:00:00.000Z", "message": message, "done": false});
    v["message"]["role"] = json!("assistant");
    format!("{v}\n")
}

fn text(t: &str) -> String {
    line(json!({"content": t}))
}

fn done(reason: &str, prompt: u64, eval: u64) -> String {
    let v = json!({
        "model": "qwen3:8b", "created_at": "2025-06-01T10:00:01.000Z",
        "message": {"role": "assistant", "content": ""},
        "done": true, "done_reason": reason,
        "total_duration": 1_000_000, "load_duration": 1000, "prompt_eval_count": prompt,
        "prompt_eval_duration": 1000, "eval_count": eval, "eval_duration": 1000
    });
    format!("{v}\n")
}

fn step_one() -> Vec<String> {
    let calls = line(json!({"content": "", "tool_calls": [
        {"function": {"name": "read_file", "arguments": {"path": "a.txt"}}},
        {"function": {"index": 1, "name": "read_file", "arguments": {"path": "b.txt"}}}
    ]}));
    let mut v = vec![text(STEP_ONE[0]), text(STEP_ONE[1])];
    v.extend(halves(&calls));
    v.push(done("stop", 120, 30));
    v
}

fn step_two() -> Vec<String> {
    // The last line comes without its newline before the stream ends.
    let last = done("stop", 200, 12);
    vec![
        text(STEP_TWO[0]),
        text(STEP_TWO[1]),
        last.trim_end().to_string(),
    ]
}

#[tokio::test]
async fn a_two_step_tool_turn() {
    let (url, requests) = serve(NDJSON, vec![step_one(), step_two()]);
    let provider = Ollama::new(
        history::client(),
        &format!("{url}/"),
        Some("proxy-token".into()),
    );

    let (request, mut rx) = history::request("qwen3:8b", history::first());
    let step = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(step.text, "Let me check both.");
    assert_eq!(
        step.tool_calls,
        [
            call("ollama_call_0", "a.txt"),
            call("ollama_call_1", "b.txt")
        ]
    );
    assert_eq!(
        step.stop,
        StopReason::ToolUse,
        "Ollama says stop; the calls say tool use"
    );
    assert_eq!(
        step.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 30,
            cache_read_tokens: 0,
            cache_write_tokens: 0
        }
    );
    assert_eq!(history::deltas(&mut rx), STEP_ONE);

    let sent = requests.recv().unwrap();
    assert_eq!(sent.line, "POST /api/chat HTTP/1.1");
    assert_eq!(sent.header("authorization"), Some("Bearer proxy-token"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["model"], "qwen3:8b");
    assert_eq!(
        sent.body["tools"],
        json!([{"type": "function", "function": {"name": "read_file", "description": "Read a file", "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path"}, "encoding": {"type": ["string", "null"], "default": null}},
            "required": ["path"],
            "additionalProperties": false
        }}}])
    );

    let (request, mut rx) = history::request("qwen3:8b", history::second(&step));
    let answer = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(answer.text, STEP_TWO.concat());
    assert_eq!(answer.stop, StopReason::EndTurn);
    assert_eq!(answer.usage.output_tokens, 12);
    assert_eq!(history::deltas(&mut rx), STEP_TWO);

    let sent = requests.recv().unwrap();
    assert_eq!(
        sent.body["messages"],
        json!([
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": USER},
            {"role": "assistant", "content": "Let me check both.", "tool_calls": [
                {"function": {"name": "read_file", "arguments": {"path": "a.txt"}}},
                {"function": {"name": "read_file", "arguments": {"path": "b.txt"}}}
            ]},
            {"role": "tool", "content": RESULT_A, "tool_name": "read_file"},
            {"role": "tool", "content": format!("ERROR: {RESULT_B}"), "tool_name": "read_file"}
        ])
    );
}

#[tokio::test]
async fn length_is_max_tokens_and_an_error_line_is_a_stream_error() {
    let cut = vec![text("Par"), done("length", 1, 8)];
    let unknown = vec![text("x"), done("unload", 1, 1)];
    let error = vec![
        text("Hel"),
        "{\"error\":\"model requires more system memory\"}\n".to_string(),
    ];
    let (url, requests) = serve(NDJSON, vec![cut, unknown, error]);
    let provider = Ollama::new(history::client(), &url, None);
    let (request, _rx) = history::request("qwen3:8b", history::first());
    assert_eq!(
        provider.complete(&request).await.unwrap().stop,
        StopReason::MaxTokens
    );
    assert_eq!(
        requests.recv().unwrap().header("authorization"),
        None,
        "no auth by default"
    );
    assert_eq!(
        provider.complete(&request).await.unwrap().stop,
        StopReason::Other
    );
    let e = provider.complete(&request).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::Stream(m) if m == "model requires more system memory"),
        "{e}"
    );
}
