//! Benchmarks of the connection layer with real supervised processes (the fake server):
//! start-to-ready time for 1, 10 and 50 servers, and the latency of sequential `tools/call`
//! round trips over stdio in both eras. Run: `scripts/bench.sh` (release build).

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark: a panic is the report.

use hdrhistogram::Histogram;
use mcp_host_client::backoff::RetryPolicy;
use mcp_host_client::{Manager, ManagerOptions, ServerSetup, SupervisorCommand};
use mcp_host_config::{RawServer, Scope};
use mcp_host_core::{ServerId, ServerState, TransportKind};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

fn setups(n: usize, era: &str) -> Vec<ServerSetup> {
    let fake = mcp_host_testkit::fake_server()
        .to_string_lossy()
        .into_owned();
    (0..n)
        .map(|i| {
            let raw = RawServer {
                command: Some(fake.clone()),
                args: vec!["--era".into(), era.into()],
                ..RawServer::default()
            };
            let name = format!("s{i}");
            let spec = raw.to_spec(&name, Scope::Flag, &|_| None).unwrap();
            ServerSetup {
                id: ServerId::new(&name),
                transport: TransportKind::Stdio,
                spec: Some(spec),
                initial: ServerState::Starting,
            }
        })
        .collect()
}

fn options() -> ManagerOptions {
    ManagerOptions {
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
    }
}

async fn all_ready(m: &Manager) {
    for id in m.ids().cloned().collect::<Vec<_>>() {
        let mut rx = m.watch(&id).unwrap();
        rx.wait_for(|s| s.state == ServerState::Ready)
            .await
            .unwrap();
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

async fn startup(n: usize, era: &str, rounds: usize) -> (f64, f64) {
    let mut times = Vec::new();
    for _ in 0..rounds {
        let t0 = Instant::now();
        let (m, _caller) = Manager::start(setups(n, era), options());
        all_ready(&m).await;
        times.push(ms(t0.elapsed()));
        m.shutdown().await;
    }
    times.sort_by(f64::total_cmp);
    (times[times.len() / 2], times[0])
}

async fn calls(era: &str, count: usize) -> Histogram<u64> {
    let (m, caller) = Manager::start(setups(1, era), options());
    all_ready(&m).await;
    let id = ServerId::new("s0");
    let args = serde_json::json!({"message": "ping"}).as_object().cloned();
    let never = CancellationToken::new();
    for _ in 0..100 {
        caller
            .call(&id, "echo", args.clone(), &never)
            .await
            .unwrap();
    }
    let mut h = Histogram::<u64>::new(3).unwrap();
    for _ in 0..count {
        let t0 = Instant::now();
        caller
            .call(&id, "echo", args.clone(), &never)
            .await
            .unwrap();
        h.record(t0.elapsed().as_micros() as u64).unwrap();
    }
    m.shutdown().await;
    h
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        println!("| servers | era | start-to-ready median (ms) | best (ms) |");
        println!("|---|---|---|---|");
        for (n, rounds) in [(1, 20), (10, 10), (50, 5)] {
            for era in ["legacy", "modern"] {
                let (median, best) = startup(n, era, rounds).await;
                println!("| {n} | {era} | {median:.1} | {best:.1} |");
            }
        }
        println!();
        println!("| era | calls | p50 (µs) | p90 (µs) | p99 (µs) | max (µs) |");
        println!("|---|---|---|---|---|---|");
        for era in ["legacy", "modern"] {
            let h = calls(era, 2000).await;
            println!(
                "| {era} | {} | {} | {} | {} | {} |",
                h.len(),
                h.value_at_quantile(0.5),
                h.value_at_quantile(0.9),
                h.value_at_quantile(0.99),
                h.max()
            );
        }
    });
}
