//! A call that moved to the background and whose conversation was given up before its
//! result could be delivered still gets its one audit record: `Conversation::abandon`
//! cancels it (its server is told) and records how it ended. Time is paused, so the
//! background threshold and the grace after cancelling pass without waiting.

use crate::fakes::{FakeCaller, FakeServers, Sends};
use mcp_host_core::decision::Mode;
use mcp_host_core::event::CallStatus;
use mcp_host_engine::{Audit, Conversation, Engine, EngineConfig, Gate, Hooks, Quiet, ToolSource};
use mcp_host_models::{ModelResponse, Scripted, StopReason, ToolCall, Usage};
use mcp_host_policy::{Answers, Policy};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use serde_json::Value;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

#[tokio::test(start_paused = true)]
async fn a_background_call_of_an_abandoned_conversation_is_cancelled_and_audited_once() {
    let dir = tempfile::tempdir().unwrap();
    let servers = FakeServers::new();
    let sent = Sends::default();
    let gate = Gate::new(
        FakeCaller { sent: sent.clone() },
        Policy::default(),
        Hooks::default(),
        Some(Audit::new(dir.path())),
    );
    let provider = Scripted::new([
        ModelResponse {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "f__echo".into(),
                arguments: r#"{"message": "never"}"#.into(),
            }],
            stop: StopReason::ToolUse,
            usage: Usage::default(),
        },
        ModelResponse::text("it runs in the background"),
    ]);
    let tools = ToolSource::fixed(Catalogue::build(vec![ServerTools::new(
        mcp_host_core::ServerId::new("f"),
        servers.tools.items.clone(),
    )]));
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
            background_after: Some(Duration::from_secs(1)),
        },
    };
    let mut conv = Conversation::new(100_000, Answers::default());
    let report = engine
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await
        .unwrap();
    assert_eq!(report.calls[0].status, CallStatus::Background);
    let audit = dir.path().join("audit.jsonl");
    assert!(
        !audit.exists(),
        "a background call is audited when it ends, not when it moves"
    );

    conv.abandon(&gate, &Quiet).await;
    let text = std::fs::read_to_string(&audit).unwrap();
    let records: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(records.len(), 1, "{text}");
    assert_eq!(records[0]["id"], "c1");
    assert_eq!(records[0]["status"], "failed");
    assert_eq!(records[0]["background_job"], "bg-1");
    assert_eq!(sent.lock().unwrap().len(), 1, "sent once");
}
