//! The engine against real fake MCP servers, with a scripted model: parallel dispatch and
//! per-server ordering, approvals answered through events, background calls delivered at
//! the next turn, result budgets, compaction, and persisted conversations.

use crate::common::*;
use mcp_host_client::{Manager, ServerSetup, ToolCaller};
use mcp_host_config::RawToolOptions;
use mcp_host_core::event::ApprovalPrompt;
use mcp_host_core::{ServerFacts, ServerId, ServerState};
use mcp_host_engine::host::Servers;
use mcp_host_engine::{
    Approval, Conversation, Engine, EngineConfig, Event, Gate, Hooks, Observer, Reply, ToolSource,
    TurnEnd, TurnReport, history_tokens,
};
use mcp_host_models::{Message, ModelResponse, Scripted, StopReason, ToolCall, Usage};
use mcp_host_policy::{AnswerScope, Answers, Mode, Policy};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use mcp_host_store::Store;
use serde_json::json;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio_util::sync::CancellationToken;

async fn start(servers: Vec<ServerSetup>) -> (Servers, ToolSource, ToolCaller) {
    let facts: BTreeMap<ServerId, Arc<ServerFacts>> = (servers.iter())
        .map(|s| (s.id.clone(), Arc::new(s.spec.clone().unwrap().facts)))
        .collect();
    let (m, caller) = Manager::start(
        servers,
        manager_options(Duration::from_millis(50), Duration::from_millis(200)),
    );
    let m = Servers::new(m, facts);
    let mut tools = Vec::new();
    for id in m.ids() {
        wait_status(&m, id.as_str(), |s| s.state == ServerState::Ready).await;
        tools.push(ServerTools {
            facts: m.facts(id).unwrap().clone(),
            ..ServerTools::new(id.clone(), m.tools(id).unwrap().items.clone())
        });
    }
    (m, ToolSource::fixed(Catalogue::build(tools)), caller)
}

/// The gate over the started servers' calls, with these rules and no hooks.
fn gate(caller: ToolCaller, policy: Policy) -> Gate {
    Gate::new(caller, policy, Hooks::default(), None)
}

fn call(id: &str, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: name.into(),
        arguments: args.to_string(),
    }
}

fn step(calls: Vec<ToolCall>) -> ModelResponse {
    ModelResponse {
        text: String::new(),
        tool_calls: calls,
        stop: StopReason::ToolUse,
        usage: Usage {
            input_tokens: 10,
            output_tokens: 5,
            ..Usage::default()
        },
    }
}

/// Records events as short strings and answers approvals as told (or drops them).
#[derive(Default)]
struct Recorder {
    seen: Mutex<Vec<String>>,
    answer: Option<Approval>,
    /// Every refusal as `{call_id, server, tool, arguments}`.
    refused: Mutex<Vec<serde_json::Value>>,
}

impl Recorder {
    fn seen(&self) -> Vec<String> {
        self.seen.lock().unwrap().clone()
    }

    fn position(&self, what: &str) -> usize {
        let seen = self.seen();
        seen.iter()
            .position(|s| s == what)
            .unwrap_or_else(|| panic!("{what} not in {seen:?}"))
    }
}

impl Observer for Recorder {
    fn approval(&self, prompt: ApprovalPrompt, reply: Reply) {
        let line = format!("asked:{}:{}", prompt.subject.call_id, prompt.subject.name);
        if let Some(answer) = self.answer.clone() {
            let _ = reply.send(answer);
        }
        self.seen.lock().unwrap().push(line);
    }

    fn event(&self, event: Event) {
        let line = match event {
            Event::CallBegun { subject, .. } => format!("begun:{}", subject.call_id),
            Event::CallRefused {
                call_id,
                server,
                tool,
                arguments,
                ..
            } => {
                self.refused.lock().unwrap().push(json!({
                    "call_id": call_id, "server": server.map(|s| s.to_string()),
                    "tool": tool, "arguments": arguments,
                }));
                format!("refused:{call_id}")
            }
            Event::CallEnded {
                call_id,
                background_job,
                ..
            } => match background_job {
                Some(job) => format!("background:{call_id}:{job}"),
                None => format!("ended:{call_id}"),
            },
            Event::Notice { text } => format!("notice:{text}"),
            Event::TextDelta { text } => format!("text:{text}"),
            Event::Progress { call_id, .. } => format!("progress:{call_id}"),
            _ => return,
        };
        self.seen.lock().unwrap().push(line);
    }
}

/// One turn of `engine` on "go" in a fresh conversation.
async fn fresh_turn(engine: &Engine<'_, Scripted>) -> (Conversation, TurnReport) {
    let mut conv = Conversation::new(100_000, Answers::default());
    let report = engine
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await
        .unwrap();
    (conv, report)
}

fn engine_for<'a>(
    provider: &'a Scripted,
    manager: &'a Servers,
    tools: &'a ToolSource,
    gate: &'a Gate,
    observer: &'a dyn Observer,
    config: EngineConfig,
) -> Engine<'a, Scripted> {
    Engine {
        provider,
        servers: manager,
        tools,
        gate,
        observer,
        config,
    }
}

fn config(mode: Mode) -> EngineConfig {
    EngineConfig {
        model: "m".into(),
        max_steps: 5,
        mode,
        result_chars: mcp_host_engine::DEFAULT_RESULT_CHARS,
        context_window: 100_000,
        store: None,
        background_after: None,
    }
}

fn tool_results(history: &[Message]) -> Vec<(String, String, bool)> {
    history
        .iter()
        .filter_map(|m| match m {
            Message::ToolResult {
                call_id,
                content,
                is_error,
                ..
            } => Some((call_id.clone(), content.clone(), *is_error)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn servers_run_in_parallel_and_one_server_keeps_order_unless_trusted_and_read_only() {
    let ro = ["--annotate-readonly", "slow", "--annotate-readonly", "echo"];
    let (m, catalogue, caller) = start(vec![
        fake_setup("u", &ro, |_| {}),
        fake_setup("t", &ro, |r| r.trust = Some(true)),
        fake_setup("p", &ro, |r| {
            r.trust = Some(true);
            r.parallel = Some(false);
        }),
    ])
    .await;
    let slow = json!({"ms": 1000});
    let echo = json!({"message": "quick"});
    let provider = Scripted::new([
        step(vec![
            call("u1", "u__slow", slow.clone()),
            call("u2", "u__echo", echo.clone()),
            call("t1", "t__slow", slow.clone()),
            call("t2", "t__echo", echo.clone()),
            call("p1", "p__slow", slow),
            call("p2", "p__echo", echo),
        ]),
        ModelResponse::text("all six done"),
    ]);
    let recorder = Recorder::default();
    let policy = Policy::default();
    let gate = gate(caller, policy);
    let engine = engine_for(
        &provider,
        &m,
        &catalogue,
        &gate,
        &recorder,
        config(Mode::Auto),
    );
    let (conv, report) = fresh_turn(&engine).await;
    assert_eq!(report.end, TurnEnd::Finished);
    assert_eq!(report.usage.input_tokens, 10);
    // Untrusted, and trusted with `parallel: false`: the echo waits for the slow call.
    assert!(recorder.position("ended:u1") < recorder.position("begun:u2"));
    assert!(recorder.position("ended:p1") < recorder.position("begun:p2"));
    // Trusted and read-only: the echo overtakes the slow call.
    assert!(recorder.position("ended:t2") < recorder.position("ended:t1"));
    // Servers do not wait for each other: the trusted echo ended before the others' slow calls.
    assert!(recorder.position("ended:t2") < recorder.position("ended:u1"));
    // Whatever the finishing order, results go back in call order.
    let ids: Vec<String> = tool_results(conv.history())
        .into_iter()
        .map(|r| r.0)
        .collect();
    assert_eq!(ids, ["u1", "u2", "t1", "t2", "p1", "p2"]);
    m.shutdown().await;
}

#[tokio::test]
async fn approvals_are_asked_per_call_and_answers_hold_for_their_scope() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let policy = Policy::default();
    let echo = |id: &str| call(id, "f__echo", json!({"message": id}));
    // Allowed for the session: asked once, then remembered for the second step.
    let provider = Scripted::new([
        step(vec![echo("c1")]),
        step(vec![echo("c2")]),
        ModelResponse::text("done"),
    ]);
    let recorder = Recorder {
        answer: Some(Approval::Allow {
            scope: AnswerScope::Session,
        }),
        ..Recorder::default()
    };
    let gate = gate(caller, policy);
    let engine = engine_for(
        &provider,
        &m,
        &catalogue,
        &gate,
        &recorder,
        config(Mode::Ask),
    );
    let (_, report) = fresh_turn(&engine).await;
    let asked: Vec<String> = recorder
        .seen()
        .into_iter()
        .filter(|s| s.starts_with("asked:"))
        .collect();
    assert_eq!(asked, ["asked:c1:f__echo"]);
    assert!(report.calls.iter().all(|c| !c.is_error), "{report:?}");
    assert_eq!(
        serde_json::to_value(&report.calls[0].decided_by).unwrap(),
        json!({"by": "user", "scope": "session"})
    );
    assert_eq!(
        serde_json::to_value(&report.calls[1].decided_by).unwrap(),
        json!({"by": "remembered"})
    );

    // Declined, and nobody to ask: both come back to the model as errors it can read.
    for (answer, expect) in [
        (
            Some(Approval::Deny {
                scope: AnswerScope::Once,
                reason: Some("not now".into()),
            }),
            "the user declined it (this once); their reason: not now",
        ),
        (None, "nobody could approve it"),
    ] {
        let provider = Scripted::new([step(vec![echo("c3")]), ModelResponse::text("ok")]);
        let recorder = Recorder {
            answer,
            ..Recorder::default()
        };
        let engine = engine_for(
            &provider,
            &m,
            &catalogue,
            &gate,
            &recorder,
            config(Mode::Ask),
        );
        let (conv, report) = fresh_turn(&engine).await;
        assert_eq!(report.end, TurnEnd::Finished);
        let (_, content, is_error) = &tool_results(conv.history())[0];
        assert!(*is_error && content.contains(expect), "{content}");
        assert!(!recorder.seen().iter().any(|s| s.starts_with("begun:")));
    }
    m.shutdown().await;
}

#[tokio::test]
async fn a_long_call_moves_to_the_background_and_arrives_at_the_next_turn() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let policy = Policy::default();
    let provider = Scripted::new([
        step(vec![call("c1", "f__slow", json!({"ms": 1500}))]),
        ModelResponse::text("started it"),
        ModelResponse::text("got it"),
    ]);
    let recorder = Recorder::default();
    let mut cfg = config(Mode::Auto);
    cfg.background_after = Some(Duration::from_millis(200));
    let gate = gate(caller, policy);
    let engine = engine_for(&provider, &m, &catalogue, &gate, &recorder, cfg);
    let mut conv = Conversation::new(100_000, Answers::default());
    let cancel = CancellationToken::new();
    let report = engine.run_turn(&mut conv, "start", &cancel).await.unwrap();
    assert_eq!(report.text, "started it");
    assert_eq!(report.calls[0].background_job.as_deref(), Some("bg-1"));
    let (_, content, is_error) = &tool_results(conv.history())[0];
    assert!(
        !is_error && content.contains("background as job bg-1"),
        "{content}"
    );
    assert_eq!(conv.background_running(), 1);

    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while conv.background_finished() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never finished"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    engine.run_turn(&mut conv, "and?", &cancel).await.unwrap();
    let requests = provider.requests.lock().unwrap().clone();
    let Some(Message::User { text }) = requests[2].messages.last() else {
        panic!("the last message is not the user's")
    };
    assert!(
        text.contains("<background-result job=\"bg-1\" tool=\"f__slow\" call_id=\"c1\"")
            && text.contains("done")
            && text.ends_with("and?"),
        "{text}"
    );
    assert_eq!(conv.background_running() + conv.background_finished(), 0);
    // The job's card ends when its result is delivered.
    assert!(recorder.position("background:c1:bg-1") < recorder.position("ended:c1"));
    m.shutdown().await;
}

/// A response of more calls than one response may make keeps the first ones; the rest never
/// reach the gate, a card, the audit or the history, and the person is told.
#[tokio::test]
async fn calls_past_the_limit_of_one_response_are_dropped_and_told() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let many: Vec<ToolCall> = (0..mcp_host_engine::MAX_CALLS_PER_RESPONSE + 72)
        .map(|i| call(&format!("c{i}"), "f__add", json!({"a": i, "b": 1})))
        .collect();
    let provider = Scripted::new([step(many), ModelResponse::text("done")]);
    let recorder = Recorder::default();
    let gate = gate(caller, Policy::default());
    let engine = engine_for(
        &provider,
        &m,
        &catalogue,
        &gate,
        &recorder,
        config(Mode::Auto),
    );
    let (conv, report) = fresh_turn(&engine).await;
    assert_eq!(report.text, "done");
    let limit = mcp_host_engine::MAX_CALLS_PER_RESPONSE;
    assert_eq!(report.calls.len(), limit);
    let results = tool_results(conv.history());
    assert_eq!(results.len(), limit);
    assert_eq!(results.last().unwrap().0, format!("c{}", limit - 1));
    let Some(Message::Assistant { tool_calls, .. }) = conv.history().get(1) else {
        panic!("no assistant message: {:?}", conv.history());
    };
    assert_eq!(tool_calls.len(), limit);
    let told = recorder.seen();
    assert!(
        told.iter()
            .any(|s| s.starts_with("notice:")
                && s.contains(&format!("asked for {} calls", limit + 72))),
        "{told:?}"
    );
    assert!(!told.iter().any(|s| s == &format!("begun:c{limit}")));
    m.shutdown().await;
}

/// A background call of a persisted conversation keeps one row, in the turn the model made
/// it: its final record, written when its result is delivered a turn later, replaces the row
/// its own turn left, with the model's arguments.
#[tokio::test]
async fn a_background_call_keeps_one_row_in_its_own_turn() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.sqlite")).await.unwrap();
    let provider = Scripted::new([
        step(vec![call("c1", "f__slow", json!({"ms": 1500}))]),
        ModelResponse::text("started it"),
        ModelResponse::text("got it"),
    ]);
    let mut cfg = config(Mode::Auto);
    cfg.background_after = Some(Duration::from_millis(200));
    cfg.store = Some(store.clone());
    let gate = gate(caller, Policy::default());
    let engine = engine_for(
        &provider,
        &m,
        &catalogue,
        &gate,
        &mcp_host_engine::Quiet,
        cfg,
    );
    let mut conv = Conversation::create(&store, "m", "/work", 100_000, Answers::default())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    engine.run_turn(&mut conv, "start", &cancel).await.unwrap();
    let id = conv.id().unwrap().clone();
    let rows = store.load_tool_calls(&id).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert!(
        rows[0].background && rows[0].took_ms < Some(1000),
        "{rows:?}"
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    while conv.background_finished() == 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "the job never finished"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    engine.run_turn(&mut conv, "and?", &cancel).await.unwrap();
    let rows = store.load_tool_calls(&id).await.unwrap();
    assert_eq!(rows.len(), 1, "{rows:?}");
    let row = &rows[0];
    assert_eq!((row.turn, row.call_id.as_str()), (1, "c1"));
    assert_eq!(row.arguments, json!({"ms": 1500}));
    assert!(row.background && !row.is_error, "{row:?}");
    assert!(
        row.took_ms >= Some(1000),
        "the final record replaced the first: {row:?}"
    );
    m.shutdown().await;
}

/// The fake server, its `echo` results capped at 100 tokens (a longer one is stored).
async fn start_echo_capped_at_100_tokens() -> (Servers, ToolSource, ToolCaller) {
    start(vec![fake_setup("f", &[], |r| {
        r.tools.insert(
            "echo".into(),
            RawToolOptions {
                max_result_tokens: Some(100),
            },
        );
    })])
    .await
}

/// While the catalogue and the exposure stay as they are, each step offers the list of the
/// step before (the same `Arc`, whose JSON a provider reuses); a stored result, which adds
/// `read_result`, makes a new one.
#[tokio::test]
async fn a_step_offers_the_tool_list_of_the_step_before_until_it_changes() {
    let (m, catalogue, caller) = start_echo_capped_at_100_tokens().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.sqlite")).await.unwrap();
    let echo = |id: &str, message: String| call(id, "f__echo", json!({"message": message}));
    let provider = Scripted::new([
        step(vec![echo("a", "hi".into())]),
        step(vec![echo("b", "x".repeat(1_000))]),
        step(vec![echo("c", "hi".into())]),
        ModelResponse::text("ok"),
    ]);
    let recorder = Recorder::default();
    let mut cfg = config(Mode::Auto);
    cfg.store = Some(store.clone());
    let gate = gate(caller, Policy::default());
    let engine = engine_for(&provider, &m, &catalogue, &gate, &recorder, cfg);
    fresh_turn(&engine).await;
    let requests = provider.requests.lock().unwrap().clone();
    let tools: Vec<_> = requests.iter().map(|r| r.tools.clone()).collect();
    assert!(std::sync::Arc::ptr_eq(&tools[0], &tools[1]));
    // Step two's result was over its cap and stored: read_result is offered from then on.
    assert!(!tools[1].iter().any(|t| t.name == "read_result"));
    assert!(tools[2].iter().any(|t| t.name == "read_result"));
    assert!(std::sync::Arc::ptr_eq(&tools[2], &tools[3]));
    m.shutdown().await;
}

#[tokio::test]
async fn results_over_their_budget_are_stored_and_large_ones_flagged() {
    let (m, catalogue, caller) = start_echo_capped_at_100_tokens().await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.sqlite")).await.unwrap();
    let policy = Policy::default();
    let long = "x".repeat(1_000);
    let provider = Scripted::new([
        step(vec![
            call("small", "f__echo", json!({"message": "hi"})),
            call("capped", "f__echo", json!({"message": long})),
            call("large", "f__big", json!({"bytes": 45_000})),
        ]),
        ModelResponse::text("ok"),
    ]);
    let recorder = Recorder::default();
    let mut cfg = config(Mode::Auto);
    cfg.store = Some(store.clone());
    let gate = gate(caller, policy);
    let engine = engine_for(&provider, &m, &catalogue, &gate, &recorder, cfg);
    let (conv, report) = fresh_turn(&engine).await;
    let results = tool_results(conv.history());
    assert_eq!(results[0].1, "hi");
    // Over the tool's 100-token cap: stored whole, previewed, readable by handle.
    let handle = report.calls[1].result_handle.clone().unwrap();
    assert!(results[1].1.contains(&handle) && results[1].1.contains("read_result"));
    assert_eq!(store.get_result(&handle).await.unwrap().unwrap(), long);
    // Over 10,000 tokens but within the default cap: inline, with the size stated.
    assert!(
        results[2]
            .1
            .ends_with("[note: this result is about 11250 tokens]")
    );
    assert!(
        recorder
            .seen()
            .iter()
            .any(|s| s.starts_with("notice:f__big returned a large result"))
    );
    // read_result is offered from the next request on.
    let requests = provider.requests.lock().unwrap().clone();
    assert!(requests[1].tools.iter().any(|t| t.name == "read_result"));
    m.shutdown().await;
}

#[tokio::test]
async fn a_full_window_is_compacted_at_the_turn_boundary() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.sqlite")).await.unwrap();
    let policy = Policy::default();
    let big = "y".repeat(6_000);
    // About 450 tokens each: two of them fit the 800-token threshold, three do not.
    let talk = |n: usize| format!("{n}{}", "z".repeat(1_800));
    let provider = Scripted::new([
        // Turn 1: a large tool call and result.
        step(vec![call("c1", "f__echo", json!({"message": big}))]),
        ModelResponse::text("one"),
        ModelResponse::text("two"),
        // Turn 3 starts with a summary request, then answers.
        ModelResponse::text("SUMMARY: the user talked at length."),
        ModelResponse::text("three"),
    ]);
    let recorder = Recorder::default();
    let mut cfg = config(Mode::Auto);
    cfg.store = Some(store.clone());
    cfg.context_window = 1_000;
    let gate = gate(caller, policy);
    let engine = engine_for(&provider, &m, &catalogue, &gate, &recorder, cfg);
    let mut conv = Conversation::create(&store, "m", "/w", 1_000, Answers::default())
        .await
        .unwrap();
    let cancel = CancellationToken::new();
    engine.run_turn(&mut conv, &talk(1), &cancel).await.unwrap();
    // Turn 2: the old result is cleared (and stays readable by handle), the long arguments
    // are cut, and that is enough.
    engine.run_turn(&mut conv, &talk(2), &cancel).await.unwrap();
    let (_, cleared, _) = &tool_results(conv.history())[0];
    assert!(
        cleared.starts_with("[result cleared to save context: 6000 bytes, stored as handle"),
        "{cleared}"
    );
    let handle = cleared
        .split_whitespace()
        .nth(10)
        .unwrap()
        .trim_end_matches(';');
    assert_eq!(store.get_result(handle).await.unwrap().unwrap(), big);
    let Message::Assistant { tool_calls, .. } = &conv.history()[1] else {
        panic!("{:?}", conv.history()[1])
    };
    assert!(
        tool_calls[0]
            .arguments
            .contains("bytes of arguments were cut")
    );
    assert!(
        recorder
            .seen()
            .iter()
            .any(|s| s.contains("cleared 1 old tool results"))
    );
    // Turn 3: nothing left to clear or cut, so turn 1 is summarised; turn 2 stays whole.
    engine.run_turn(&mut conv, &talk(3), &cancel).await.unwrap();
    let requests = provider.requests.lock().unwrap().clone();
    let summarise = &requests[3];
    assert!(summarise.tools.is_empty());
    assert!(
        matches!(&summarise.messages[0], Message::System { text } if text.contains("summarise"))
    );
    let turn3 = &requests[4].messages;
    let Message::User { text: first_user } = &turn3[0] else {
        panic!("{:?}", turn3[0])
    };
    assert!(
        first_user.contains("SUMMARY: the user talked at length.")
            && first_user.ends_with(&talk(2)),
        "{first_user}"
    );
    assert!(history_tokens(turn3) <= 1_000, "{}", history_tokens(turn3));
    assert!(
        recorder
            .seen()
            .iter()
            .any(|s| s.contains("summarised 4 old messages"))
    );
    // The compacted history is what the store holds.
    let id = conv.id().unwrap().clone();
    let resumed = Conversation::resume(&store, &id, 1_000, Answers::default())
        .await
        .unwrap();
    assert_eq!(resumed.history(), conv.history());
    m.shutdown().await;
}

/// Runs "add 2 and 3" as the first turn of a new conversation in `store` (in `/work`).
async fn first_stored_turn<P: mcp_host_models::Provider>(
    engine: &mcp_host_engine::Engine<'_, P>,
    store: &Store,
) -> mcp_host_store::ConversationId {
    let mut conv = Conversation::create(store, "m", "/work", 100_000, Answers::default())
        .await
        .unwrap();
    engine
        .run_turn(&mut conv, "add 2 and 3", &CancellationToken::new())
        .await
        .unwrap();
    conv.id().unwrap().clone()
}

#[tokio::test]
async fn a_persisted_conversation_resumes_with_its_history_and_call_records() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("s.sqlite")).await.unwrap();
    let policy = Policy::default();
    let provider = Scripted::new([
        step(vec![call("c1", "f__add", json!({"a": 2, "b": 3}))]),
        ModelResponse::text("five"),
        ModelResponse::text("still five"),
    ]);
    let mut cfg = config(Mode::Auto);
    cfg.store = Some(store.clone());
    let gate = gate(caller, policy);
    let engine = engine_for(
        &provider,
        &m,
        &catalogue,
        &gate,
        &mcp_host_engine::Quiet,
        cfg,
    );
    let id = first_stored_turn(&engine, &store).await;
    let latest = store.latest_conversation("/work").await.unwrap().unwrap();
    assert_eq!(latest.id, id);
    let mut resumed = Conversation::resume(&store, &id, 100_000, Answers::default())
        .await
        .unwrap();
    assert_eq!(resumed.history().len(), 4, "{:?}", resumed.history());
    engine
        .run_turn(&mut resumed, "again?", &CancellationToken::new())
        .await
        .unwrap();
    // The model saw the earlier turn, result included.
    let requests = provider.requests.lock().unwrap().clone();
    let last = &requests[2].messages;
    assert!(last.iter().any(
        |m| matches!(m, Message::ToolResult { call_id, content, .. } if call_id == "c1" && content == "5")
    ));
    let stored = store.load_messages(&id).await.unwrap();
    assert_eq!(stored.len(), 6);
    assert_eq!(stored.last().unwrap().0, 2, "the second turn is turn 2");
    let calls = store.load_tool_calls(&id).await.unwrap();
    assert_eq!(calls.len(), 1);
    assert_eq!(
        (calls[0].server.as_str(), calls[0].tool.as_str()),
        ("f", "add")
    );
    assert_eq!(calls[0].verdict, "allow");
    m.shutdown().await;
}

/// When a turn's calls cannot be recorded (here a trigger refuses them), its messages are
/// still saved and the front end is told about the calls: the record never costs the turn
/// its history.
#[tokio::test]
async fn calls_that_cannot_be_recorded_do_not_cost_the_turn_its_messages() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.sqlite");
    let store = Store::open(&path).await.unwrap();
    let refuse_calls = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); \
        c.execute(\"CREATE TRIGGER no_calls BEFORE INSERT ON tool_calls \
        BEGIN SELECT RAISE(ABORT, 'calls refused'); END\"); c.commit()";
    let made = std::process::Command::new("python3")
        .args(["-c", refuse_calls])
        .arg(&path)
        .status()
        .unwrap();
    assert!(made.success());
    let provider = Scripted::new([
        step(vec![call("c1", "f__add", json!({"a": 2, "b": 3}))]),
        ModelResponse::text("five"),
    ]);
    let mut cfg = config(Mode::Auto);
    cfg.store = Some(store.clone());
    let recorder = Recorder::default();
    let gate = gate(caller, Policy::default());
    let engine = engine_for(&provider, &m, &catalogue, &gate, &recorder, cfg);
    let id = first_stored_turn(&engine, &store).await;
    assert_eq!(store.load_messages(&id).await.unwrap().len(), 4);
    assert!(store.load_tool_calls(&id).await.unwrap().is_empty());
    let told = recorder.seen();
    assert!(
        told.iter()
            .any(|s| s.contains("could not be recorded") && s.contains("calls refused")),
        "{told:?}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn progress_notifications_reach_the_front_end_as_events_of_their_call() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let policy = Policy::default();
    let provider = Scripted::new([
        step(vec![call(
            "c1",
            "f__slow",
            json!({"ms": 800, "progressEvery": 100}),
        )]),
        ModelResponse::text("done"),
    ]);
    let recorder = Recorder::default();
    let gate = gate(caller, policy);
    let engine = engine_for(
        &provider,
        &m,
        &catalogue,
        &gate,
        &recorder,
        config(Mode::Auto),
    );
    fresh_turn(&engine).await;
    let first = recorder.position("progress:c1");
    assert!(recorder.position("begun:c1") < first && first < recorder.position("ended:c1"));
    m.shutdown().await;
}

#[tokio::test]
async fn a_refused_call_names_its_server_tool_and_arguments() {
    let (m, catalogue, caller) = start(vec![fake_setup("f", &[], |_| {})]).await;
    let policy = Policy::default();
    let provider = Scripted::new([
        step(vec![
            call("d1", "f__echo", json!({"message": "the real arguments"})),
            ToolCall {
                id: "d2".into(),
                name: "f__echo".into(),
                arguments: "{not json".into(),
            },
            call("d3", "nobody__nothing", json!({"x": 1})),
        ]),
        ModelResponse::text("ok"),
    ]);
    let recorder = Recorder::default();
    let gate = gate(caller, policy);
    let engine = engine_for(
        &provider,
        &m,
        &catalogue,
        &gate,
        &recorder,
        config(Mode::Deny),
    );
    fresh_turn(&engine).await;
    let refused = recorder.refused.lock().unwrap().clone();
    assert_eq!(
        refused,
        [
            json!({"call_id": "d1", "server": "f", "tool": "echo", "arguments": {"message": "the real arguments"}}),
            json!({"call_id": "d2", "server": "f", "tool": "echo", "arguments": "{not json"}),
            json!({"call_id": "d3", "server": null, "tool": null, "arguments": {"x": 1}}),
        ]
    );
    m.shutdown().await;
}
