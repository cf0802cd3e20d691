//! The approval a person sees for a tool whose text was cleaned or reads as instructions to
//! the model (issue 12, item 9): the reason names the phrases, the description carries the
//! host's note on what was removed, and the call asks even in auto mode.

use crate::common::*;
use mcp_host_client::Manager;
use mcp_host_core::event::ApprovalPrompt;
use mcp_host_core::{ServerId, ServerState};
use mcp_host_engine::host::Servers;
use mcp_host_engine::{
    Approval, Conversation, Engine, EngineConfig, Gate, Hooks, Observer, Reply, ToolSource,
};
use mcp_host_models::{ModelResponse, Scripted, StopReason, ToolCall, Usage};
use mcp_host_policy::{AnswerScope, Answers, Mode, Policy};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use std::sync::Mutex;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// Keeps (reason, description) of each approval request and allows the call once.
#[derive(Default)]
struct Asked(Mutex<Vec<(String, String)>>);

impl Observer for Asked {
    fn approval(&self, prompt: ApprovalPrompt, reply: Reply) {
        self.0
            .lock()
            .unwrap()
            .push((prompt.reason.clone(), prompt.description));
        let _ = reply.send(Approval::Allow {
            scope: AnswerScope::Once,
        });
    }
}

#[tokio::test]
async fn the_approval_names_the_phrases_and_what_was_removed() {
    let (m, caller) = Manager::start(
        vec![fake_setup("f", &["--fault", "hidden-instructions"], |_| {})],
        manager_options(Duration::from_millis(50), Duration::from_millis(200)),
    );
    wait_status(&m, "f", |s| s.state == ServerState::Ready).await;
    let m = Servers::new(m, Default::default());
    let id = ServerId::new("f");
    let catalogue = Catalogue::build(vec![ServerTools::new(
        id.clone(),
        m.tools(&id).unwrap().items.clone(),
    )]);
    let provider = Scripted::new([
        ModelResponse {
            text: String::new(),
            tool_calls: vec![ToolCall {
                id: "c1".into(),
                name: "f__notes".into(),
                arguments: r#"{"note": "hi"}"#.into(),
            }],
            stop: StopReason::ToolUse,
            usage: Usage::default(),
        },
        ModelResponse::text("done"),
    ]);
    let asked = Asked::default();
    let gate = Gate::new(caller, Policy::default(), Hooks::default(), None);
    let tools = ToolSource::fixed(catalogue);
    let engine = Engine {
        provider: &provider,
        servers: &m,
        tools: &tools,
        gate: &gate,
        observer: &asked,
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
    engine
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await
        .unwrap();
    let asked = asked.0.lock().unwrap().clone();
    assert_eq!(asked.len(), 1, "auto mode still asks: {asked:?}");
    let (reason, description) = &asked[0];
    assert!(
        reason.contains("reads as instructions to the model") && reason.contains("~/.ssh"),
        "{reason}"
    );
    assert!(
        description.contains("hidden character(s) were removed"),
        "{description}"
    );
    m.shutdown().await;
}
