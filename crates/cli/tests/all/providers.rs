//! `mcp-host run` end to end through each of the five model wire formats (Anthropic
//! Messages, OpenAI Responses, Chat Completions as `openai-chat` and `openai-compatible`,
//! Gemini `streamGenerateContent`, Ollama `/api/chat`), against a local fake model speaking
//! that format exactly and two fake MCP servers. Every turn has three steps: two calls on
//! different servers in one response, then a call refused for invalid arguments (an error
//! result the model reads), then a text answer. Checked: the JSON report, the calls recorded
//! in the store, and what the host sent: endpoint, auth headers, the system prompt, the tools
//! in the provider's shape, and the replayed calls and results (ids, echo text, error
//! marking) in the provider's shape. Also: how a bad provider or a missing key is reported.

use crate::common::*;
use serde_json::{Value, json};

const PROMPT: &str = "Echo a greeting through a, add 40 and 2 through b, then report.";
const INSTRUCTIONS: &str = "Server a echoes.";
/// The first step's text, as it is streamed, before its two calls.
const PREAMBLE: [&str; 2] = ["Let me ", "do both."];
/// The final answer, as it is streamed.
const ANSWER: [&str; 2] = ["Echoed and ", "added: 42."];
const ECHO_ARGS: &str = r#"{"message":"hello from a"}"#;
const ADD_ARGS: &str = r#"{"a":40,"b":2}"#;
/// `a` is not a number: the host refuses the call without sending it.
const BAD_ARGS: &str = r#"{"a":"two","b":2}"#;

/// A tool call as the fake model streams it. An empty id: the wire carries none.
#[derive(Clone, Copy)]
struct Call {
    id: &'static str,
    name: &'static str,
    args: &'static str,
}

impl Call {
    fn input(&self) -> Value {
        serde_json::from_str(self.args).unwrap()
    }
}

/// One provider's side of the turn.
#[derive(Clone, Copy)]
struct Wire {
    /// The `-m` value.
    model: &'static str,
    /// `--base-url` for a fake model at the given URL.
    base: fn(&str) -> String,
    /// The host's environment (the provider's key).
    env: &'static [(&'static str, &'static str)],
    content_type: &'static str,
    /// What every request must target.
    target: &'static str,
    /// Headers every request must carry (`None`: must not carry).
    headers: &'static [(&'static str, Option<&'static str>)],
    /// The call ids on the wire, in order (echo, add, bad).
    wire_ids: [&'static str; 3],
    /// The ids the host gives those calls; `None`: made up by the host and not sent back,
    /// so only their uniqueness matters.
    ids: Option<[&'static str; 3]>,
    /// A response that streams `text` and then makes `calls` (no calls: the turn ends).
    render: fn(&[&str], &[Call]) -> String,
    /// How many tool results a request carries.
    results: fn(&Value) -> usize,
    /// Checks the requests in this format exactly.
    check: fn(&Turn),
}

impl Wire {
    fn calls(&self) -> [Call; 3] {
        let [echo, add, bad] = self.wire_ids;
        [
            Call {
                id: echo,
                name: "a__echo",
                args: ECHO_ARGS,
            },
            Call {
                id: add,
                name: "b__add",
                args: ADD_ARGS,
            },
            Call {
                id: bad,
                name: "a__add",
                args: BAD_ARGS,
            },
        ]
    }
}

/// What the host sent in a turn.
struct Turn {
    requests: Vec<SeenRequest>,
    /// Why the host refused the third call: the error text the model got back.
    refusal: String,
}

/// Runs the three-step turn through `wire`: checks the report, the requests (generically,
/// then with `wire.check`) and last the calls' ids and their record in the store.
fn turn(wire: Wire) {
    let (url, seen) = fake_model_server(wire.content_type, move |request| {
        let calls = wire.calls();
        // The step is read off the history the host sent, not off a counter.
        match (wire.results)(&request.body) {
            0 => (wire.render)(&PREAMBLE, &calls[..2]),
            2 => (wire.render)(&[], &calls[2..]),
            3 => (wire.render)(&ANSWER, &[]),
            n => (wire.render)(&[&format!("unexpected: a request with {n} results")], &[]),
        }
    });
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({"a": fake_server(&["--instructions", INSTRUCTIONS]), "b": fake_server(&[])}),
    );
    let out = sb.run_with_env(
        &[
            "run",
            "-p",
            PROMPT,
            "-m",
            wire.model,
            "--base-url",
            &(wire.base)(&url),
            "--allowed-tools",
            "a__echo,a__add,b__add",
            "--output-format",
            "json",
        ],
        &cfg,
        wire.env,
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["result"], ANSWER.concat(), "{report:#}");
    assert_eq!(report["end"], "finished");
    assert_eq!(report["steps"], 3);

    let calls = report["tool_calls"].as_array().unwrap();
    let summary: Vec<(&str, Option<&str>, bool)> = calls
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["server"].as_str(),
                c["is_error"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            ("a__echo", Some("a"), false),
            ("b__add", Some("b"), false),
            // Refused for its arguments, but still named with its server.
            ("a__add", Some("a"), true)
        ],
        "{report:#}"
    );
    assert!(calls[0]["refused"].is_null() && calls[1]["refused"].is_null());
    let refusal = calls[2]["refused"].as_str().unwrap().to_string();
    assert!(
        refusal.contains("/a") && refusal.contains("nothing was sent"),
        "{refusal}"
    );

    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 3, "{requests:#?}");
    let model = wire.model.split_once(':').unwrap().1;
    for r in &requests {
        assert_eq!(r.line, format!("POST {} HTTP/1.1", wire.target));
        assert_eq!(r.header("content-type"), Some("application/json"));
        for (name, value) in wire.headers {
            assert_eq!(r.header(name), *value, "header {name}");
        }
        // Gemini names the model in the path instead.
        assert!(
            r.body["model"] == model || wire.target.contains(&format!("/models/{model}:")),
            "{}",
            r.body["model"]
        );
    }
    (wire.check)(&Turn { requests, refusal });

    let ids: Vec<&str> = calls.iter().map(|c| c["id"].as_str().unwrap()).collect();
    if let Some(expected) = wire.ids {
        assert_eq!(ids, expected);
    }
    // Providers promise ids unique within a turn; the store keys its record of calls on them.
    let mut distinct = ids.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert_eq!(
        distinct.len(),
        3,
        "call ids repeat within the turn: {ids:?}"
    );
    let conversation = report["conversation_id"].as_str().unwrap();
    assert_eq!(
        stored_call_ids(&sb, conversation),
        ids,
        "the calls recorded in the store"
    );
}

/// The call ids the store recorded for a conversation, in order.
fn stored_call_ids(sb: &Sandbox, conversation: &str) -> Vec<String> {
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let store = mcp_host_store::Store::open(&sb.path().join("data/mcp-host/store.sqlite"))
            .await
            .unwrap();
        let id = mcp_host_store::ConversationId::new(conversation).unwrap();
        store
            .load_tool_calls(&id)
            .await
            .unwrap()
            .into_iter()
            .map(|row| row.call_id)
            .collect()
    })
}

/// The system prompt carries server a's instructions, marked as a's.
fn assert_instructions(system: &Value) {
    let text = system.as_str().unwrap_or_default();
    assert!(
        text.contains(&format!(
            "<server-instructions server=\"a\">\n{INSTRUCTIONS}\n</server-instructions>"
        )),
        "{system}"
    );
}

/// The offered tool named `name`, found by `name_of`.
fn offered<'a>(tools: &'a Value, name: &str, name_of: fn(&Value) -> &Value) -> &'a Value {
    tools
        .as_array()
        .unwrap()
        .iter()
        .find(|t| name_of(t) == name)
        .unwrap_or_else(|| panic!("{name} not offered in {tools:#}"))
}

/// The JSON Schema of the fake server's `add`, as the JSON-Schema dialects send it.
fn add_schema() -> Value {
    json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}}})
}

/// A piece cut in two, as streams split arguments.
fn halves(s: &str) -> [&str; 2] {
    let (a, b) = s.split_at(s.len() / 2);
    [a, b]
}

// ---------------------------------------------------------------------------------------
// Anthropic Messages: named SSE events; text and `tool_use` content blocks, the input as
// `input_json_delta` fragments; results as `tool_result` blocks in one user message.

fn anthropic_stream(text: &[&str], calls: &[Call]) -> String {
    let event = |v: Value| format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap());
    let mut out = event(json!({"type": "message_start", "message": {
        "id": "msg_01", "type": "message", "role": "assistant", "content": [], "model": "claude-sonnet-4-5",
        "stop_reason": null, "stop_sequence": null,
        "usage": {"input_tokens": 120, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 1}
    }}));
    let mut index = 0;
    if !text.is_empty() {
        out += &event(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}),
        );
        out += &event(json!({"type": "ping"}));
        for t in text {
            out += &event(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": t}}),
            );
        }
        out += &event(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    for c in calls {
        out += &event(
            json!({"type": "content_block_start", "index": index, "content_block": {"type": "tool_use", "id": c.id, "name": c.name, "input": {}}}),
        );
        for part in [""].into_iter().chain(halves(c.args)) {
            out += &event(
                json!({"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": part}}),
            );
        }
        out += &event(json!({"type": "content_block_stop", "index": index}));
        index += 1;
    }
    let stop = if calls.is_empty() {
        "end_turn"
    } else {
        "tool_use"
    };
    out += &event(
        json!({"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": null}, "usage": {"output_tokens": 30}}),
    );
    out + &event(json!({"type": "message_stop"}))
}

fn anthropic_results(body: &Value) -> usize {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "user")
        .flat_map(|m| m["content"].as_array().cloned().unwrap_or_default())
        .filter(|b| b["type"] == "tool_result")
        .count()
}

fn messages(body: &Value) -> Vec<Value> {
    body["messages"].as_array().cloned().unwrap_or_default()
}

const ANTHROPIC: Wire = Wire {
    model: "anthropic:claude-sonnet-4-5",
    base: |url| url.to_string(),
    env: &[("ANTHROPIC_API_KEY", "sk-ant-test")],
    content_type: "text/event-stream",
    target: "/v1/messages",
    headers: &[
        ("x-api-key", Some("sk-ant-test")),
        ("anthropic-version", Some("2023-06-01")),
        ("authorization", None),
    ],
    wire_ids: ["toolu_01", "toolu_02", "toolu_03"],
    ids: Some(["toolu_01", "toolu_02", "toolu_03"]),
    render: anthropic_stream,
    results: anthropic_results,
    check: anthropic_history,
};

#[test]
fn anthropic_messages_carry_a_three_step_turn() {
    turn(ANTHROPIC);
}

fn anthropic_history(t: &Turn) {
    let first = &t.requests[0].body;
    assert_eq!(first["stream"], true);
    assert_instructions(&first["system"][0]["text"]);
    assert_eq!(
        first["system"][0]["cache_control"],
        json!({"type": "ephemeral"})
    );
    let add = offered(&first["tools"], "a__add", |t| &t["name"]);
    assert_eq!(add["input_schema"], add_schema());
    assert_eq!(add["description"], "Adds a and b");
    assert_eq!(
        first["messages"],
        json!([{"role": "user", "content": [{"type": "text", "text": PROMPT}]}])
    );

    let second = messages(&t.requests[1].body);
    assert_eq!(
        second[1..],
        [
            json!({"role": "assistant", "content": [
                {"type": "text", "text": PREAMBLE.concat()},
                {"type": "tool_use", "id": "toolu_01", "name": "a__echo", "input": {"message": "hello from a"}},
                {"type": "tool_use", "id": "toolu_02", "name": "b__add", "input": {"a": 40, "b": 2}}
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_01", "content": "hello from a", "is_error": false},
                {"type": "tool_result", "tool_use_id": "toolu_02", "content": "42", "is_error": false}
            ]}),
        ]
    );
    let third = messages(&t.requests[2].body);
    assert_eq!(third[..3], second[..]);
    assert_eq!(
        third[3..],
        [
            json!({"role": "assistant", "content": [
                {"type": "tool_use", "id": "toolu_03", "name": "a__add", "input": {"a": "two", "b": 2}}
            ]}),
            json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "toolu_03", "content": t.refusal, "is_error": true}
            ]}),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// OpenAI Responses: named `response.*` events with sequence numbers; a message item, then
// `function_call` items whose arguments stream as deltas; history as `input` items.

/// Numbers events as the API does.
#[derive(Default)]
struct ResponsesEvents {
    out: String,
    seq: u64,
}

impl ResponsesEvents {
    fn push(&mut self, kind: &str, mut data: Value) {
        data["type"] = json!(kind);
        data["sequence_number"] = json!(self.seq);
        self.seq += 1;
        self.out += &format!("event: {kind}\ndata: {data}\n\n");
    }
}

fn responses_stream(text: &[&str], calls: &[Call]) -> String {
    let mut e = ResponsesEvents::default();
    let response = |status: &str, output: Value| {
        json!({"id": "resp_1", "object": "response", "created_at": 1_750_000_000, "status": status,
               "model": "gpt-5", "output": output, "usage": null})
    };
    e.push(
        "response.created",
        json!({"response": response("in_progress", json!([]))}),
    );
    e.push(
        "response.in_progress",
        json!({"response": response("in_progress", json!([]))}),
    );
    let mut output = Vec::new();
    if !text.is_empty() {
        let index = output.len();
        e.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": "msg_1", "type": "message", "status": "in_progress", "role": "assistant", "content": []}}),
        );
        e.push(
            "response.content_part.added",
            json!({"item_id": "msg_1", "output_index": index, "content_index": 0, "part": {"type": "output_text", "annotations": [], "text": ""}}),
        );
        for t in text {
            e.push(
                "response.output_text.delta",
                json!({"item_id": "msg_1", "output_index": index, "content_index": 0, "delta": t, "logprobs": []}),
            );
        }
        let all = text.concat();
        e.push(
            "response.output_text.done",
            json!({"item_id": "msg_1", "output_index": index, "content_index": 0, "text": all, "logprobs": []}),
        );
        let part = json!({"type": "output_text", "annotations": [], "text": all});
        e.push(
            "response.content_part.done",
            json!({"item_id": "msg_1", "output_index": index, "content_index": 0, "part": part}),
        );
        let item = json!({"id": "msg_1", "type": "message", "status": "completed", "role": "assistant", "content": [part]});
        e.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
        output.push(item);
    }
    for c in calls {
        let index = output.len();
        let item_id = format!("fc_{index}");
        e.push(
            "response.output_item.added",
            json!({"output_index": index, "item": {"id": item_id, "type": "function_call", "status": "in_progress", "arguments": "", "call_id": c.id, "name": c.name}}),
        );
        for d in halves(c.args) {
            e.push(
                "response.function_call_arguments.delta",
                json!({"item_id": item_id, "output_index": index, "delta": d}),
            );
        }
        e.push(
            "response.function_call_arguments.done",
            json!({"item_id": item_id, "output_index": index, "arguments": c.args}),
        );
        let item = json!({"id": item_id, "type": "function_call", "status": "completed", "arguments": c.args, "call_id": c.id, "name": c.name});
        e.push(
            "response.output_item.done",
            json!({"output_index": index, "item": item}),
        );
        output.push(item);
    }
    let mut done = response("completed", json!(output));
    done["usage"] = json!({"input_tokens": 120, "input_tokens_details": {"cached_tokens": 0},
                           "output_tokens": 30, "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": 150});
    e.push("response.completed", json!({"response": done}));
    e.out
}

fn responses_results(body: &Value) -> usize {
    body["input"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|i| i["type"] == "function_call_output")
        .count()
}

const RESPONSES: Wire = Wire {
    model: "openai:gpt-5",
    base: |url| format!("{url}/v1"),
    env: &[("OPENAI_API_KEY", "sk-openai-test")],
    content_type: "text/event-stream",
    target: "/v1/responses",
    headers: &[("authorization", Some("Bearer sk-openai-test"))],
    wire_ids: ["call_echo", "call_add", "call_bad"],
    ids: Some(["call_echo", "call_add", "call_bad"]),
    render: responses_stream,
    results: responses_results,
    check: responses_history,
};

#[test]
fn openai_responses_carry_a_three_step_turn() {
    turn(RESPONSES);
}

fn responses_history(t: &Turn) {
    let first = &t.requests[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(first["store"], false);
    assert_instructions(&first["instructions"]);
    let add = offered(&first["tools"], "a__add", |t| &t["name"]);
    assert_eq!(
        *add,
        json!({"type": "function", "name": "a__add", "description": "Adds a and b", "parameters": add_schema(), "strict": false})
    );
    assert_eq!(
        first["input"],
        json!([{"type": "message", "role": "user", "content": [{"type": "input_text", "text": PROMPT}]}])
    );

    let second = t.requests[1].body["input"].as_array().unwrap().clone();
    assert_eq!(
        second[1..],
        [
            json!({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": PREAMBLE.concat()}]}),
            json!({"type": "function_call", "call_id": "call_echo", "name": "a__echo", "arguments": ECHO_ARGS}),
            json!({"type": "function_call", "call_id": "call_add", "name": "b__add", "arguments": ADD_ARGS}),
            json!({"type": "function_call_output", "call_id": "call_echo", "output": "hello from a"}),
            json!({"type": "function_call_output", "call_id": "call_add", "output": "42"}),
        ]
    );
    let third = t.requests[2].body["input"].as_array().unwrap().clone();
    assert_eq!(third[..6], second[..]);
    assert_eq!(
        third[6..],
        [
            json!({"type": "function_call", "call_id": "call_bad", "name": "a__add", "arguments": BAD_ARGS}),
            // No error flag in this API: the text says so.
            json!({"type": "function_call_output", "call_id": "call_bad", "output": format!("ERROR: {}", t.refusal)}),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Chat Completions: `data:` chunks, tool calls as deltas by index (id and name first, then
// argument pieces), a usage chunk, `[DONE]`; results as `role: tool` messages.

fn chat_stream(text: &[&str], calls: &[Call]) -> String {
    let chunk = |choices: Value| {
        let v = json!({"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 1_750_000_000,
                       "model": "gpt-4.1", "system_fingerprint": "fp_1", "choices": choices});
        format!("data: {v}\n\n")
    };
    let delta = |d: Value, finish: Value| {
        chunk(json!([{"index": 0, "delta": d, "logprobs": null, "finish_reason": finish}]))
    };
    let content = if text.is_empty() {
        json!(null)
    } else {
        json!("")
    };
    let mut out = delta(
        json!({"role": "assistant", "content": content, "refusal": null}),
        Value::Null,
    );
    for t in text {
        out += &delta(json!({"content": t}), Value::Null);
    }
    for (i, c) in calls.iter().enumerate() {
        out += &delta(
            json!({"tool_calls": [{"index": i, "id": c.id, "type": "function", "function": {"name": c.name, "arguments": ""}}]}),
            Value::Null,
        );
        for a in halves(c.args) {
            out += &delta(
                json!({"tool_calls": [{"index": i, "function": {"arguments": a}}]}),
                Value::Null,
            );
        }
    }
    let finish = if calls.is_empty() {
        "stop"
    } else {
        "tool_calls"
    };
    out += &delta(json!({}), json!(finish));
    // `stream_options.include_usage`: a last chunk with no choices.
    let mut usage: Value =
        serde_json::from_str(chunk(json!([])).trim_start_matches("data: ")).unwrap();
    usage["usage"] = json!({"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150,
                            "prompt_tokens_details": {"cached_tokens": 0}});
    out + &format!("data: {usage}\n\ndata: [DONE]\n\n")
}

fn tool_messages(body: &Value) -> usize {
    messages(body)
        .iter()
        .filter(|m| m["role"] == "tool")
        .count()
}

const CHAT: Wire = Wire {
    model: "openai-chat:gpt-4.1",
    base: |url| format!("{url}/v1"),
    env: &[("OPENAI_API_KEY", "sk-openai-test")],
    content_type: "text/event-stream",
    target: "/v1/chat/completions",
    headers: &[("authorization", Some("Bearer sk-openai-test"))],
    wire_ids: ["call_echo", "call_add", "call_bad"],
    ids: Some(["call_echo", "call_add", "call_bad"]),
    render: chat_stream,
    results: tool_messages,
    check: chat_history,
};

fn chat_history(t: &Turn) {
    let first = &t.requests[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(first["stream_options"], json!({"include_usage": true}));
    assert_eq!(first["messages"][0]["role"], "system");
    assert_instructions(&first["messages"][0]["content"]);
    assert_eq!(
        first["messages"][1],
        json!({"role": "user", "content": PROMPT})
    );
    let add = offered(&first["tools"], "a__add", |t| &t["function"]["name"]);
    assert_eq!(
        *add,
        json!({"type": "function", "function": {"name": "a__add", "description": "Adds a and b", "parameters": add_schema()}})
    );

    let second = messages(&t.requests[1].body);
    assert_eq!(
        second[2..],
        [
            json!({"role": "assistant", "content": PREAMBLE.concat(), "tool_calls": [
                {"id": "call_echo", "type": "function", "function": {"name": "a__echo", "arguments": ECHO_ARGS}},
                {"id": "call_add", "type": "function", "function": {"name": "b__add", "arguments": ADD_ARGS}}
            ]}),
            json!({"role": "tool", "tool_call_id": "call_echo", "content": "hello from a"}),
            json!({"role": "tool", "tool_call_id": "call_add", "content": "42"}),
        ]
    );
    let third = messages(&t.requests[2].body);
    assert_eq!(third[..5], second[..]);
    assert_eq!(
        third[5..],
        [
            json!({"role": "assistant", "content": null, "tool_calls": [
                {"id": "call_bad", "type": "function", "function": {"name": "a__add", "arguments": BAD_ARGS}}
            ]}),
            // No error flag in this API: the text says so.
            json!({"role": "tool", "tool_call_id": "call_bad", "content": format!("ERROR: {}", t.refusal)}),
        ]
    );
}

#[test]
fn openai_chat_completions_carry_a_three_step_turn() {
    turn(CHAT);
}

#[test]
fn an_openai_compatible_endpoint_gets_the_same_turn_without_a_key() {
    turn(Wire {
        model: "openai-compatible:local-model",
        env: &[],
        headers: &[("authorization", None)],
        ..CHAT
    });
}

// ---------------------------------------------------------------------------------------
// Gemini: `data:` events (CRLF-separated, as Google sends them), each a whole response;
// function calls whole, mostly without ids, the first of a step signed; results as
// `functionResponse` parts of one user content.

fn gemini_stream(text: &[&str], calls: &[Call]) -> String {
    let mut events: Vec<Value> = text.iter().map(|t| json!([{"text": t}])).collect();
    if !calls.is_empty() {
        let parts: Vec<Value> = calls
            .iter()
            .enumerate()
            .map(|(i, c)| {
                let mut call = json!({"name": c.name, "args": c.input()});
                if !c.id.is_empty() {
                    call["id"] = json!(c.id);
                }
                let mut part = json!({"functionCall": call});
                if i == 0 {
                    part["thoughtSignature"] = json!(gemini_signature(c.name));
                }
                part
            })
            .collect();
        events.push(json!(parts));
    }
    let last = events.len() - 1;
    events
        .into_iter()
        .enumerate()
        .map(|(i, parts)| {
            let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
            if i == last {
                candidate["finishReason"] = json!("STOP");
            }
            let v = json!({
                "candidates": [candidate],
                "usageMetadata": {"promptTokenCount": 120, "candidatesTokenCount": 10 * (i + 1), "totalTokenCount": 130 + 10 * i},
                "modelVersion": "gemini-3-flash-preview",
                "responseId": "r1"
            });
            format!("data: {v}\r\n\r\n")
        })
        .collect()
}

fn gemini_signature(name: &str) -> String {
    format!("c2ln/{name}")
}

fn gemini_results(body: &Value) -> usize {
    body["contents"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|c| c["role"] == "user")
        .flat_map(|c| c["parts"].as_array().cloned().unwrap_or_default())
        .filter(|p| p.get("functionResponse").is_some())
        .count()
}

const GEMINI: Wire = Wire {
    model: "gemini:gemini-3-flash-preview",
    base: |url| url.to_string(),
    env: &[("GEMINI_API_KEY", "goog-test")],
    content_type: "text/event-stream",
    target: "/v1beta/models/gemini-3-flash-preview:streamGenerateContent?alt=sse",
    headers: &[
        ("x-goog-api-key", Some("goog-test")),
        ("authorization", None),
    ],
    // Gemini leaves most calls without an id; the host makes them up.
    wire_ids: ["", "fc_add", ""],
    ids: Some(["gemini_call_0", "fc_add", "gemini_call_1"]),
    render: gemini_stream,
    results: gemini_results,
    check: gemini_history,
};

#[test]
fn gemini_carries_a_three_step_turn() {
    turn(GEMINI);
}

fn gemini_history(t: &Turn) {
    let first = &t.requests[0].body;
    assert_instructions(&first["systemInstruction"]["parts"][0]["text"]);
    let declarations = &first["tools"][0]["functionDeclarations"];
    let add = offered(declarations, "a__add", |t| &t["name"]);
    assert_eq!(
        *add,
        json!({"name": "a__add", "description": "Adds a and b", "parameters": add_schema()})
    );
    assert_eq!(
        first["contents"],
        json!([{"role": "user", "parts": [{"text": PROMPT}]}])
    );

    let second = t.requests[1].body["contents"].as_array().unwrap().clone();
    assert_eq!(
        second[1..],
        [
            // Signatures go back with their calls; made-up ids do not go out.
            json!({"role": "model", "parts": [
                {"text": PREAMBLE.concat()},
                {"functionCall": {"name": "a__echo", "args": {"message": "hello from a"}}, "thoughtSignature": gemini_signature("a__echo")},
                {"functionCall": {"name": "b__add", "args": {"a": 40, "b": 2}, "id": "fc_add"}}
            ]}),
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "a__echo", "response": {"content": "hello from a"}}},
                {"functionResponse": {"name": "b__add", "response": {"content": "42"}, "id": "fc_add"}}
            ]}),
        ]
    );
    let third = t.requests[2].body["contents"].as_array().unwrap().clone();
    assert_eq!(third[..3], second[..]);
    assert_eq!(
        third[3..],
        [
            json!({"role": "model", "parts": [
                {"functionCall": {"name": "a__add", "args": {"a": "two", "b": 2}}, "thoughtSignature": gemini_signature("a__add")}
            ]}),
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "a__add", "response": {"error": t.refusal}}}
            ]}),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Ollama: NDJSON lines; tool calls whole, arguments as objects, no ids; the last line is
// `done: true`; results as `role: tool` messages naming the tool.

fn ollama_stream(text: &[&str], calls: &[Call]) -> String {
    let line = |message: Value| {
        let mut v = json!({"model": "qwen3:8b", "created_at": "2025-06-01T10:00:00.000Z", "message": message, "done": false});
        v["message"]["role"] = json!("assistant");
        format!("{v}\n")
    };
    let mut out: String = text.iter().map(|t| line(json!({"content": t}))).collect();
    if !calls.is_empty() {
        let calls: Vec<Value> = calls
            .iter()
            .map(|c| json!({"function": {"name": c.name, "arguments": c.input()}}))
            .collect();
        out += &line(json!({"content": "", "tool_calls": calls}));
    }
    let done = json!({
        "model": "qwen3:8b", "created_at": "2025-06-01T10:00:01.000Z",
        "message": {"role": "assistant", "content": ""},
        "done": true, "done_reason": "stop",
        "total_duration": 1_000_000, "load_duration": 1000, "prompt_eval_count": 120,
        "prompt_eval_duration": 1000, "eval_count": 30, "eval_duration": 1000
    });
    out + &format!("{done}\n")
}

const OLLAMA: Wire = Wire {
    model: "ollama:qwen3:8b",
    base: |url| url.to_string(),
    // A key in the environment is not sent to Ollama.
    env: &[("OPENAI_API_KEY", "sk-openai-test")],
    content_type: "application/x-ndjson",
    target: "/api/chat",
    headers: &[("authorization", None)],
    wire_ids: ["", "", ""],
    // Ollama sends no ids and gets none back; the host makes them up.
    ids: None,
    render: ollama_stream,
    results: tool_messages,
    check: ollama_history,
};

#[test]
fn ollama_carries_a_three_step_turn() {
    turn(OLLAMA);
}

fn ollama_history(t: &Turn) {
    let first = &t.requests[0].body;
    assert_eq!(first["stream"], true);
    assert_eq!(first["messages"][0]["role"], "system");
    assert_instructions(&first["messages"][0]["content"]);
    assert_eq!(
        first["messages"][1],
        json!({"role": "user", "content": PROMPT})
    );
    let add = offered(&first["tools"], "a__add", |t| &t["function"]["name"]);
    assert_eq!(
        *add,
        json!({"type": "function", "function": {"name": "a__add", "description": "Adds a and b", "parameters": add_schema()}})
    );

    let second = messages(&t.requests[1].body);
    assert_eq!(
        second[2..],
        [
            json!({"role": "assistant", "content": PREAMBLE.concat(), "tool_calls": [
                {"function": {"name": "a__echo", "arguments": {"message": "hello from a"}}},
                {"function": {"name": "b__add", "arguments": {"a": 40, "b": 2}}}
            ]}),
            json!({"role": "tool", "content": "hello from a", "tool_name": "a__echo"}),
            json!({"role": "tool", "content": "42", "tool_name": "b__add"}),
        ]
    );
    let third = messages(&t.requests[2].body);
    assert_eq!(third[..5], second[..]);
    assert_eq!(
        third[5..],
        [
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"function": {"name": "a__add", "arguments": {"a": "two", "b": 2}}}
            ]}),
            // No error flag on a tool message: the text says so.
            json!({"role": "tool", "content": format!("ERROR: {}", t.refusal), "tool_name": "a__add"}),
        ]
    );
}

// ---------------------------------------------------------------------------------------
// Choosing a provider.

#[test]
fn an_unknown_provider_is_refused_with_the_supported_list() {
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({}));
    let out = sb.run_with(&["run", "-p", "hi", "-m", "nosuch:m"], &cfg);
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(
        err.contains("unknown provider `nosuch`")
            && err.contains("anthropic, openai, openai-chat, openai-compatible, gemini, ollama"),
        "{err}"
    );
}

#[test]
fn gemini_without_a_key_or_base_url_says_it_needs_gemini_api_key() {
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({}));
    // Another provider's key does not stand in for it.
    let out = sb.run_with_env(
        &["run", "-p", "hi", "-m", "gemini:x"],
        &cfg,
        &[("OPENAI_API_KEY", "sk-openai-test")],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stdout(&out));
    let err = stderr(&out);
    assert!(err.contains("gemini needs GEMINI_API_KEY"), "{err}");
}
