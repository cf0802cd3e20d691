//! A model turn through the gate against the in-memory server: an allowed call is sent once
//! with the definition it was decided on and its result reaches the model; a denied call is
//! never sent; the server's instructions open the conversation, marked as the server's.

use crate::fakes::{FakeCaller, FakeServers, Sends};
use mcp_host_core::decision::{DecidedBy, Mode, Verdict};
use mcp_host_core::event::{CallSource, CallStatus};
use mcp_host_engine::{Conversation, Engine, EngineConfig, Gate, Hooks, Quiet, ToolSource};
use mcp_host_models::{Message, ModelResponse, Scripted, StopReason, ToolCall, Usage};
use mcp_host_policy::{Answers, Policy, Rule, RuleSource};
use mcp_host_registry::catalogue::ServerTools;
use tokio_util::sync::CancellationToken;

fn echo_step(message: &str) -> ModelResponse {
    ModelResponse {
        text: String::new(),
        tool_calls: vec![ToolCall {
            id: "c1".into(),
            name: "f__echo".into(),
            arguments: serde_json::json!({ "message": message }).to_string(),
        }],
        stop: StopReason::ToolUse,
        usage: Usage::default(),
    }
}

/// One turn on "go" with `policy` in auto mode; the history, the report and what was sent.
async fn turn(policy: Policy) -> (Conversation, mcp_host_engine::TurnReport, Sends) {
    let servers = FakeServers::new();
    let sent = Sends::default();
    let gate = Gate::new(
        FakeCaller { sent: sent.clone() },
        policy,
        Hooks::default(),
        None,
    );
    let provider = Scripted::new([echo_step("hello"), ModelResponse::text("done")]);
    let tools = ToolSource::fixed(mcp_host_registry::catalogue::Catalogue::build(vec![
        ServerTools::new(
            mcp_host_core::ServerId::new("f"),
            servers.tools.items.clone(),
        ),
    ]));
    let engine = Engine {
        provider: &provider,
        servers: &servers,
        tools: &tools,
        gate: &gate,
        observer: &Quiet,
        config: EngineConfig {
            model: "m".into(),
            max_steps: 5,
            mode: Mode::Auto,
            result_chars: mcp_host_engine::DEFAULT_RESULT_CHARS,
            context_window: 100_000,
            store: None,
            background_after: None,
        },
    };
    let mut conv = Conversation::new(100_000, Answers::default());
    let report = engine
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await
        .unwrap();
    (conv, report, sent)
}

fn tool_result(conv: &Conversation) -> (String, bool) {
    conv.history()
        .iter()
        .find_map(|m| match m {
            Message::ToolResult {
                content, is_error, ..
            } => Some((content.clone(), *is_error)),
            _ => None,
        })
        .unwrap()
}

#[tokio::test]
async fn an_allowed_call_is_sent_once_and_its_result_reaches_the_model() {
    let (conv, report, sent) = turn(Policy::default()).await;
    assert_eq!(
        *sent.lock().unwrap(),
        [(
            "f".to_string(),
            "echo".to_string(),
            serde_json::json!({"message": "hello"})
        )]
    );
    let (content, is_error) = tool_result(&conv);
    assert!(!is_error && content.contains("hello"), "{content}");
    assert_eq!(report.text, "done");
    let record = &report.calls[0];
    assert_eq!(record.source, CallSource::Model);
    assert_eq!(record.status, CallStatus::Ok);
    assert_eq!(record.verdict, Some(Verdict::Allow));
    assert!(record.result_bytes.is_some_and(|b| b > 0));
    let Some(Message::System { text }) = conv.history().first() else {
        panic!("no system prompt: {:?}", conv.history());
    };
    assert!(
        text.contains("<server-instructions server=\"f\">") && text.contains("Use echo"),
        "{text}"
    );
}

#[tokio::test]
async fn a_denied_call_is_never_sent_and_the_model_reads_why() {
    let deny = Rule {
        pattern: "f__echo".into(),
        when: None,
        source: RuleSource {
            scope: "user".into(),
            file: "test".into(),
            key: "permissions.deny[0]".into(),
        },
    };
    let policy = Policy {
        deny: vec![deny],
        ..Policy::default()
    };
    let (conv, report, sent) = turn(policy).await;
    assert!(sent.lock().unwrap().is_empty(), "a denied call was sent");
    let (content, is_error) = tool_result(&conv);
    assert!(is_error && content.contains("denied"), "{content}");
    let record = &report.calls[0];
    assert_eq!(record.status, CallStatus::Refused);
    assert!(matches!(
        record.decided_by,
        Some(DecidedBy::DenyRule { .. })
    ));
}
