//! Gemini `streamGenerateContent?alt=sse`: `data:` events (CRLF-separated, as Google sends
//! them), each a whole `GenerateContentResponse` with running usage; function calls arrive
//! whole, usually without ids, and Gemini 3 signs the first one.

use super::history::{self, RESULT_A, RESULT_B, STEP_ONE, STEP_TWO, SYSTEM, USER, call};
use super::server::{SSE, halves, serve};
use mcp_host_models::{Gemini, Message, Provider, ProviderError, StopReason, Usage};
use serde_json::{Value, json};

fn data(v: &Value) -> String {
    format!("data: {v}\r\n\r\n")
}

fn response(parts: Value, finish: Option<&str>, prompt: u64, candidates: u64) -> String {
    let mut candidate = json!({"content": {"parts": parts, "role": "model"}, "index": 0});
    if let Some(f) = finish {
        candidate["finishReason"] = json!(f);
    }
    data(&json!({
        "candidates": [candidate],
        "usageMetadata": {"promptTokenCount": prompt, "candidatesTokenCount": candidates, "totalTokenCount": prompt + candidates},
        "modelVersion": "gemini-3-flash-preview",
        "responseId": "r1"
    }))
}

fn step_one() -> Vec<String> {
    let calls = response(
        json!([
            {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}, "thoughtSignature": "c2lnLWE="},
            {"functionCall": {"name": "read_file", "args": {"path": "b.txt"}, "id": "fc_b"}}
        ]),
        Some("STOP"),
        120,
        30,
    );
    let mut last: Value = serde_json::from_str(calls.trim().trim_start_matches("data: ")).unwrap();
    last["usageMetadata"]["cachedContentTokenCount"] = json!(64);
    last["usageMetadata"]["thoughtsTokenCount"] = json!(5);
    let mut v = vec![
        response(json!([{"text": STEP_ONE[0]}]), None, 120, 3),
        response(
            json!([{"text": "I should read both.", "thought": true}]),
            None,
            120,
            3,
        ),
    ];
    v.extend(halves(&response(
        json!([{"text": STEP_ONE[1]}]),
        None,
        120,
        6,
    )));
    v.push(data(&last));
    v
}

fn step_two() -> Vec<String> {
    vec![
        response(json!([{"text": STEP_TWO[0]}]), None, 200, 4),
        response(json!([{"text": STEP_TWO[1]}]), Some("STOP"), 200, 12),
    ]
}

#[tokio::test]
async fn a_two_step_tool_turn() {
    let (url, requests) = serve(SSE, vec![step_one(), step_two()]);
    let provider = Gemini::new(history::client(), &url, Some("goog-key".into()));

    let (request, mut rx) = history::request("gemini-3-flash-preview", history::first());
    let step = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(
        step.text, "Let me check both.",
        "thought text is not answer text"
    );
    assert_eq!(
        step.tool_calls,
        [call("gemini_call_0", "a.txt"), call("fc_b", "b.txt")]
    );
    assert_eq!(step.stop, StopReason::ToolUse);
    assert_eq!(
        step.usage,
        Usage {
            input_tokens: 120,
            output_tokens: 35,
            cache_read_tokens: 64,
            cache_write_tokens: 0
        }
    );
    assert_eq!(history::deltas(&mut rx), STEP_ONE);

    let sent = requests.recv().unwrap();
    assert_eq!(
        sent.line,
        "POST /v1beta/models/gemini-3-flash-preview:streamGenerateContent?alt=sse HTTP/1.1"
    );
    assert_eq!(sent.header("x-goog-api-key"), Some("goog-key"));
    assert_eq!(sent.header("authorization"), None);
    assert_eq!(
        sent.body["systemInstruction"],
        json!({"parts": [{"text": SYSTEM}]})
    );
    assert_eq!(
        sent.body["tools"],
        json!([{"functionDeclarations": [{"name": "read_file", "description": "Read a file", "parameters": {
            "type": "object",
            "properties": {"path": {"type": "string", "description": "File path"}, "encoding": {"type": "string", "nullable": true}},
            "required": ["path"]
        }}]}])
    );

    let (request, mut rx) =
        history::request("models/gemini-3-flash-preview", history::second(&step));
    let answer = provider.complete(&request).await.unwrap();
    drop(request);
    assert_eq!(answer.text, STEP_TWO.concat());
    assert_eq!(answer.stop, StopReason::EndTurn);
    assert_eq!(answer.usage.output_tokens, 12);
    assert_eq!(history::deltas(&mut rx), STEP_TWO);

    let sent = requests.recv().unwrap();
    assert!(
        sent.path()
            .starts_with("/v1beta/models/gemini-3-flash-preview:"),
        "{}",
        sent.line
    );
    assert_eq!(
        sent.body["contents"],
        json!([
            {"role": "user", "parts": [{"text": USER}]},
            {"role": "model", "parts": [
                {"text": "Let me check both."},
                // The signature comes back with its call; the made-up id does not go out.
                {"functionCall": {"name": "read_file", "args": {"path": "a.txt"}}, "thoughtSignature": "c2lnLWE="},
                {"functionCall": {"name": "read_file", "args": {"path": "b.txt"}, "id": "fc_b"}}
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "response": {"content": RESULT_A}}},
                {"functionResponse": {"name": "read_file", "response": {"error": RESULT_B}, "id": "fc_b"}}
            ]}
        ])
    );
}

#[tokio::test]
async fn calls_without_a_known_signature_get_the_skip_value_on_gemini_3_only() {
    let done = || vec![response(json!([{"text": "ok"}]), Some("STOP"), 1, 1)];
    let (url, requests) = serve(SSE, vec![done(), done()]);
    let provider = Gemini::new(history::client(), &format!("{url}/v1beta/"), None);
    let mut messages = history::first();
    messages.push(Message::Assistant {
        text: String::new(),
        tool_calls: vec![call("from_elsewhere", "a.txt"), call("also", "b.txt")],
    });
    for model in ["gemini-3-pro-preview", "gemini-2.5-flash"] {
        let (request, _rx) = history::request(model, messages.clone());
        provider.complete(&request).await.unwrap();
        let sent = requests.recv().unwrap();
        assert!(
            sent.path().starts_with(&format!("/v1beta/models/{model}:")),
            "{}",
            sent.line
        );
        let parts = &sent.body["contents"][1]["parts"];
        let expected = model
            .starts_with("gemini-3")
            .then_some("skip_thought_signature_validator");
        assert_eq!(parts[0]["thoughtSignature"].as_str(), expected, "{model}");
        assert_eq!(
            parts[1].get("thoughtSignature"),
            None,
            "only the first of parallel calls"
        );
    }
}

#[tokio::test]
async fn other_finish_reasons_and_errors() {
    let cut = vec![response(json!([{"text": "Par"}]), Some("MAX_TOKENS"), 1, 8)];
    let blocked = vec![response(json!([]), Some("SAFETY"), 1, 0)];
    let error = vec![
        response(json!([{"text": "Hel"}]), None, 1, 1),
        data(
            &json!({"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}),
        ),
    ];
    let (url, _requests) = serve(SSE, vec![cut, blocked, error]);
    let provider = Gemini::new(history::client(), &url, None);
    let (request, _rx) = history::request("gemini-2.5-flash", history::first());
    assert_eq!(
        provider.complete(&request).await.unwrap().stop,
        StopReason::MaxTokens
    );
    assert_eq!(
        provider.complete(&request).await.unwrap().stop,
        StopReason::Other
    );
    let e = provider.complete(&request).await.unwrap_err();
    assert!(
        matches!(&e, ProviderError::Stream(m) if m == "The model is overloaded."),
        "{e}"
    );
}
