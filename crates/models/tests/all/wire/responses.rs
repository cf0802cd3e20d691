//! OpenAI Responses: named `response.*` events with sequence numbers; a message item with
//! text deltas, then function-call items whose arguments stream as deltas (by output index,
//! or by item id only), a `done` with the whole arguments, and `response.completed` with
//! usage.

use super::history::{self, RESULT_A, RESULT_B, STEP_ONE, STEP_TWO, SYSTEM, USER, call};
use super::server::{SSE, event, halves, serve};
use mcp_host_models::{OpenAiResponses, Provider, ProviderError, StopReason, Usage};
use serde_json::{Value, json};

/// Numbers the events as the API does.
struct Events(Vec<String>, u64);

impl Events {
    fn new() -> Self {
        Self(Vec::new(), 0)
    }

    fn push(&mut self, kind: &str, mut data: Value) -> &mut Self {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.1);
        self.1 += 1;
        self.0.push(event(kind, &data));
        self
    }

    fn created(&mut self) -> &mut Self {
        let r = json!({"response": {"id": "resp_1", "object": "response", "status": "in_progress", "output": [], "usage": null}});
        self.push("response.created", r.clone());
        self.push("response.in_progress", r)
    }

    fn message(&mut self, index: u64, pieces: &[&str]) -> &mut Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        );
        self.push(
            "response.content_part.added",
            json!({"item_id": "msg_1", "output_index": index, "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ""}}),
        );
        for p in pieces {
            self.push(
                "response.output_text.delta",
                json!({"item_id": "msg_1", "output_index": index, "content_index": 0, "delta": p, "logprobs": []}),
            );
        }
        let all = pieces.concat();
        self.push(
            "response.output_text.done",
            json!({"item_id": "msg_1", "output_index": index, "content_index": 0, "text": all}),
        );
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": {"id": "msg_1", "type": "message", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "annotations": [], "text": all}]}}),
        )
    }

    /// A function call. `lean` is how some compatible servers stream it: deltas name the
    /// item only, and the `done` events leave the arguments out.
    fn function_call(
        &mut self,
        index: u64,
        item: &str,
        call_id: &str,
        fragments: &[&str],
        lean: bool,
    ) -> &mut Self {
        self.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": item, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": call_id, "name": "read_file"}}),
        );
        for f in fragments {
            let mut d = json!({"item_id": item, "delta": f});
            if !lean {
                d["output_index"] = json!(index);
            }
            self.push("response.function_call_arguments.delta", d);
        }
        let mut done = json!({"item_id": item, "output_index": index});
        let mut item = json!({"id": item, "type": "function_call", "status": "completed", "call_id": call_id, "name": "read_file"});
        if !lean {
            done["arguments"] = json!(fragments.concat());
            item["arguments"] = json!(fragments.concat());
        }
        self.push("response.function_call_arguments.done", done);
        self.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        )
    }

    fn completed(&mut self, input: u64, output: u64, cached: u64) -> Vec<String> {
        self.push(
            "response.completed",
            json!({"response": {"id": "resp_1", "object": "response", "status": "completed", "output": [],
                   "usage": {"input_tokens": input, "input_tokens_details": {"cached_tokens": cached},
                             "output_tokens": output, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": input + output}}}),
        );
        self.0.clone()
    }
}

fn step_one() -> Vec<String> {
    let events = Events::new()
        .created()
        .message(0, &STEP_ONE)
        .function_call(
            1,
            "fc_1",
            "call_abc",
            &["{\"pa", "th\":\"a.", "txt\"}"],
            false,
        )
        .function_call(2, "fc_2", "call_def", &["{\"path\":", "\"b.txt\"}"], true)
        .completed(120, 30, 64);
    // One event arrives in two pieces.
    let mut v = events[..4].to_vec();
    v.extend(halves(&events[4]));
    v.extend_from_slice(&events[5..]);
    v
}

#[tokio::test]
async fn a_two_step_tool_turn() {
    let step_two = Events::new()
        .created()
        .message(0, &STEP_TWO)
        .completed(200, 12, 128);
    let (url, requests) = serve(SSE, vec![step_one(), step_two]);
    let provider = OpenAiResponses::new(
        history::client(),
        &format!("{url}/v1/"),
        Some("sk-test".into()),
    );

    let (request, mut rx) = history::request("gpt-5", history::first());
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
    assert_eq!(sent.line, "POST /v1/responses HTTP/1.1");
    assert_eq!(sent.header("authorization"), Some("Bearer sk-test"));
    assert_eq!(sent.body["stream"], true);
    assert_eq!(sent.body["store"], false);
    assert_eq!(sent.body["instructions"], SYSTEM);
    assert_eq!(
        sent.body["tools"],
        json!([{"type": "function", "name": "read_file", "description": "Read a file", "strict": false, "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path"}, "encoding": {"type": ["string", "null"], "default": null}},
            "required": ["path"],
            "additionalProperties": false
        }}])
    );

    let (request, mut rx) = history::request("gpt-5", history::second(&step));
    let answer = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(answer.text, STEP_TWO.concat());
    assert_eq!(answer.stop, StopReason::EndTurn);
    assert_eq!(answer.usage.cache_read_tokens, 128);
    assert_eq!(history::deltas(&mut rx), STEP_TWO);

    let sent = requests.recv().unwrap();
    assert_eq!(sent.body["instructions"], SYSTEM);
    assert_eq!(
        sent.body["input"],
        json!([
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": USER}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Let me check both."}]},
            {"type": "function_call", "call_id": "call_abc", "name": "read_file", "arguments": "{\"path\":\"a.txt\"}"},
            {"type": "function_call", "call_id": "call_def", "name": "read_file", "arguments": "{\"path\":\"b.txt\"}"},
            {"type": "function_call_output", "call_id": "call_abc", "output": RESULT_A},
            {"type": "function_call_output", "call_id": "call_def", "output": format!("ERROR: {RESULT_B}")}
        ])
    );
}

#[tokio::test]
async fn a_response_cut_at_the_token_limit_is_max_tokens() {
    let mut e = Events::new();
    e.created().message(0, &["Part"]);
    e.push(
        "response.incomplete",
        json!({"response": {"id": "resp_1", "status": "incomplete", "incomplete_details": {"reason": "max_output_tokens"},
               "usage": {"input_tokens": 5, "output_tokens": 16}}}),
    );
    let (url, _requests) = serve(SSE, vec![e.0]);
    let provider = OpenAiResponses::new(history::client(), &url, None);
    let (request, _rx) = history::request("gpt-5", history::first());
    let r = provider.complete(&request).await.unwrap();
    assert_eq!(r.text, "Part");
    assert_eq!(r.stop, StopReason::MaxTokens);
    assert_eq!(r.usage.output_tokens, 16);
}

#[tokio::test]
async fn error_and_failed_events_are_stream_errors() {
    let mut error = Events::new();
    error.created().message(0, &["Hel"]);
    error.push(
        "error",
        json!({"code": "server_error", "message": "The server had an error", "param": null}),
    );
    let mut failed = Events::new();
    failed.created();
    failed.push(
        "response.failed",
        json!({"response": {"id": "resp_1", "status": "failed", "error": {"code": "rate_limit_exceeded", "message": "Slow down"}}}),
    );
    let (url, _requests) = serve(SSE, vec![error.0, failed.0]);
    let provider = OpenAiResponses::new(history::client(), &url, None);
    for expected in ["The server had an error", "Slow down"] {
        let (request, _rx) = history::request("gpt-5", history::first());
        let e = provider.complete(&request).await.unwrap_err();
        assert!(
            matches!(&e, ProviderError::Stream(m) if m == expected),
            "{e}"
        );
    }
}
