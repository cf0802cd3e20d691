//! Benchmarks of the agent loop with real supervised fake servers and a scripted model:
//! what the engine adds to a tool call (turn time minus the raw call time), what parallel
//! dispatch saves, what storing and previewing a 20 MB result costs, and how fast a
//! provider's stream is read from a local socket. Run: `scripts/bench.sh` (release build).

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark: a panic is the report.

use mcp_host_client::backoff::RetryPolicy;
use mcp_host_client::{Manager, ManagerOptions, ServerSetup, SupervisorCommand};
use mcp_host_config::{RawServer, Scope};
use mcp_host_core::{ServerId, ServerState, TransportKind};
use mcp_host_engine::host::Servers;
use mcp_host_engine::{
    Conversation, Engine, EngineConfig, Gate, Hooks, Quiet, ResultStore, ToolSource, preview,
};
use mcp_host_models::{
    Message, ModelRequest, ModelResponse, OpenAiCompatible, Provider, Scripted, StopReason,
    ToolCall, Usage,
};
use mcp_host_policy::{Answers, Mode, Policy};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use std::io::{Read, Write};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn setup(name: &str) -> ServerSetup {
    let raw = RawServer {
        command: Some(
            mcp_host_testkit::fake_server()
                .to_string_lossy()
                .into_owned(),
        ),
        ..RawServer::default()
    };
    ServerSetup {
        id: ServerId::new(name),
        transport: TransportKind::Stdio,
        spec: Some(raw.to_spec(name, Scope::Flag, &|_| None).unwrap()),
        initial: ServerState::Starting,
    }
}

async fn start(names: &[&str]) -> (Servers, ToolSource, mcp_host_client::ToolCaller) {
    let options = ManagerOptions {
        supervisor: SupervisorCommand {
            program: env!("CARGO_BIN_EXE_mcp-host").into(),
            grace: Duration::from_secs(1),
            record_dir: None,
            ..SupervisorCommand::default()
        },
        host_env: std::sync::Arc::new(std::env::vars().collect()),
        retry: RetryPolicy::default(),
        http_client: mcp_host_client::http_client(Duration::from_secs(2))
            .unwrap()
            .into(),
        health_interval: Duration::from_secs(30),
        ask_person: None,
        sign_in_here: false,
        credentials: None,
        harness: None,
        log_dir: None,
    };
    let (m, caller) = Manager::start(names.iter().map(|n| setup(n)).collect(), options);
    let mut servers = Vec::new();
    for n in names {
        let id = ServerId::new(n);
        let mut rx = m.watch(&id).unwrap();
        rx.wait_for(|s| s.state == ServerState::Ready)
            .await
            .unwrap();
        servers.push(ServerTools::new(
            id.clone(),
            m.tools(&id).unwrap().items.clone(),
        ));
    }
    let m = Servers::new(m, Default::default());
    (m, ToolSource::fixed(Catalogue::build(servers)), caller)
}

fn step(calls: Vec<ToolCall>) -> ModelResponse {
    ModelResponse {
        text: String::new(),
        tool_calls: calls,
        stop: StopReason::ToolUse,
        usage: Usage::default(),
    }
}

fn call(i: usize, name: &str, args: serde_json::Value) -> ToolCall {
    ToolCall {
        id: format!("c{i}"),
        name: name.into(),
        arguments: args.to_string(),
    }
}

fn config() -> EngineConfig {
    EngineConfig {
        model: "m".into(),
        max_steps: 100,
        mode: Mode::Auto,
        result_chars: mcp_host_engine::DEFAULT_RESULT_CHARS,
        context_window: 200_000,
        store: None,
        background_after: None,
    }
}

async fn run(m: &Servers, gate: &Gate, c: &ToolSource, script: Vec<ModelResponse>) -> Duration {
    let provider = Scripted::new(script);
    let engine = Engine {
        provider: &provider,
        servers: m,
        tools: c,
        gate,
        observer: &Quiet,
        config: config(),
    };
    let mut conv = Conversation::new(200_000, Answers::default());
    let t0 = Instant::now();
    engine
        .run_turn(&mut conv, "go", &CancellationToken::new())
        .await
        .unwrap();
    t0.elapsed()
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Serves one Chat Completions stream of `chunks` text deltas of `size` bytes.
fn stream_server(chunks: usize, size: usize) -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let piece = "x".repeat(size);
    let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": piece}, "finish_reason": null}]});
    let body = format!("data: {chunk}\n\n").repeat(chunks) + "data: [DONE]\n\n";
    std::thread::spawn(move || {
        for s in listener.incoming() {
            let mut s = s.unwrap();
            let mut buf = [0u8; 65536];
            let mut head = Vec::new();
            while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                let n = s.read(&mut buf).unwrap();
                head.extend_from_slice(&buf[..n]);
            }
            let _ = write!(
                s,
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n{body}"
            );
        }
    });
    url
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (m, c, caller) = start(&["a", "b", "c", "d"]).await;
        let gate = Gate::new(caller, Policy::default(), Hooks::default(), None);
        // Raw calls go to a second set of the same servers: the gate holds the first
        // set's only caller.
        let (raw_m, _, raw_caller) = start(&["a"]).await;
        let echo = serde_json::json!({"message": "ping"});

        // Engine overhead: a turn of 20 steps with one echo each, against 20 raw calls.
        let never = CancellationToken::new();
        let id = ServerId::new("a");
        let mut raw = Vec::new();
        let mut per_step = Vec::new();
        for _ in 0..15 {
            let t0 = Instant::now();
            for _ in 0..20 {
                raw_caller
                    .call(&id, "echo", echo.as_object().cloned(), &never)
                    .await
                    .unwrap();
            }
            raw.push(t0.elapsed().as_secs_f64() * 1e6 / 20.0);
            let mut script: Vec<_> = (0..20)
                .map(|i| step(vec![call(i, "a__echo", echo.clone())]))
                .collect();
            script.push(ModelResponse::text("done"));
            per_step.push(run(&m, &gate, &c, script).await.as_secs_f64() * 1e6 / 20.0);
        }
        let (raw, per_step) = (median(raw), median(per_step));
        println!("| measure | median |");
        println!("|---|---|");
        println!("| raw `tools/call` round trip | {raw:.0} µs |");
        println!("| engine step with one call (scripted model) | {per_step:.0} µs |");
        println!("| engine overhead per step | {:.0} µs |", per_step - raw);

        // Parallel dispatch: four 200 ms calls, on four servers versus on one.
        let slow = serde_json::json!({"ms": 200});
        for (label, names) in [
            ("4 servers", ["a__slow", "b__slow", "c__slow", "d__slow"]),
            ("1 untrusted server", ["a__slow"; 4]),
        ] {
            let mut times = Vec::new();
            for _ in 0..5 {
                let calls = names
                    .iter()
                    .enumerate()
                    .map(|(i, n)| call(i, n, slow.clone()))
                    .collect();
                let t = run(
                    &m,
                    &gate,
                    &c,
                    vec![step(calls), ModelResponse::text("done")],
                )
                .await;
                times.push(t.as_secs_f64() * 1000.0);
            }
            println!(
                "| one step, four 200 ms calls on {label} | {:.0} ms |",
                median(times)
            );
        }

        // A 20 MB result: store (SQLite, content-addressed) and preview.
        let dir = tempfile::tempdir().unwrap();
        let store = ResultStore::new(
            mcp_host_store::Store::open(&dir.path().join("s.sqlite"))
                .await
                .unwrap(),
        );
        let text = mcp_host_testkit::big_text(20 * 1024 * 1024);
        let mut put = Vec::new();
        for i in 0..5 {
            // A different first byte each round, so every put writes.
            let t = format!("{i}{text}");
            let t0 = Instant::now();
            let handle = store.put(&t).await.unwrap();
            let _ = preview(&t, &handle);
            put.push(t0.elapsed().as_secs_f64() * 1000.0);
        }
        println!(
            "| store and preview a 20 MB result | {:.0} ms |",
            median(put)
        );
        let handle = store.put(&text).await.unwrap();
        let t0 = Instant::now();
        store.read(&handle, 10_000_000, 100_000).await.unwrap();
        println!(
            "| read_result of 100 KB from it | {:.1} ms |",
            t0.elapsed().as_secs_f64() * 1000.0
        );
        m.shutdown().await;
        raw_m.shutdown().await;

        // Reading a provider stream: 20,000 SSE chunks of 500 bytes (10 MB of text).
        let url = stream_server(20_000, 500);
        let provider = OpenAiCompatible::new(
            mcp_host_models::ModelClient::new(Duration::from_secs(5)),
            &url,
            None,
        );
        let request = ModelRequest::new("m", vec![Message::User { text: "hi".into() }], vec![]);
        let mut rates = Vec::new();
        for _ in 0..5 {
            let t0 = Instant::now();
            let r = provider.complete(&request).await.unwrap();
            assert_eq!(r.text.len(), 10_000_000);
            rates.push(10.0 / t0.elapsed().as_secs_f64());
        }
        println!(
            "| Chat Completions stream read (10 MB in 500-byte deltas) | {:.0} MB/s |",
            median(rates)
        );
    });
}
