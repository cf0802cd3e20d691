//! The stdio wire against the rmcp transport it replaced: how fast each turns server lines
//! into messages for the service loop, for answers of 200 B, 64 KiB and 4 MiB. Both read
//! the same bytes from an in-memory pipe; the wire also checks nesting depth, correlates
//! ids (each answer's request is sent first) and keeps refused answers. Run:
//! `cargo bench -p mcp-host-client --bench wire`.

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark: a panic is the report.

use mcp_host_client::wire::Wire;
use rmcp::model::{ClientRequest, JsonRpcMessage, PingRequest, RequestId};
use rmcp::service::RoleClient;
use rmcp::transport::Transport;
use rmcp::transport::async_rw::AsyncRwTransport;
use std::time::{Duration, Instant};
use tokio::io::AsyncWriteExt;

fn answer(id: i64, text_bytes: usize) -> Vec<u8> {
    let text = "x".repeat(text_bytes);
    let mut line = serde_json::to_vec(&serde_json::json!({
        "jsonrpc": "2.0", "id": id,
        "result": {"content": [{"type": "text", "text": text}]}
    }))
    .unwrap();
    line.push(b'\n');
    line
}

async fn feed(mut out: tokio::io::DuplexStream, lines: Vec<Vec<u8>>) {
    for l in lines {
        out.write_all(&l).await.unwrap();
    }
}

/// Time to receive `n` answers of `size` through `t`, whose server side writes into `out`.
async fn receive_all<T: Transport<RoleClient>>(
    mut t: T,
    out: tokio::io::DuplexStream,
    n: usize,
    size: usize,
    correlate: bool,
) -> Duration {
    let lines: Vec<Vec<u8>> = (0..n as i64).map(|i| answer(i, size)).collect();
    if correlate {
        for i in 0..n as i64 {
            let ping = ClientRequest::PingRequest(PingRequest::default());
            t.send(JsonRpcMessage::request(ping, RequestId::Number(i)))
                .await
                .unwrap();
        }
    }
    let began = Instant::now();
    let writer = tokio::spawn(feed(out, lines));
    for _ in 0..n {
        t.receive().await.expect("a message");
    }
    let took = began.elapsed();
    writer.await.unwrap();
    took
}

fn main() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!("| answer size | messages | rmcp AsyncRwTransport (µs/msg) | wire (µs/msg) |");
    println!("|---|---|---|---|");
    for (size, n) in [
        (200usize, 20_000usize),
        (64 * 1024, 2_000),
        (4 * 1024 * 1024, 40),
    ] {
        let (mut old_best, mut new_best) = (Duration::MAX, Duration::MAX);
        for _ in 0..5 {
            rt.block_on(async {
                let (server_out, client_in) = tokio::io::duplex(1 << 20);
                let (client_out, _server_in) = tokio::io::duplex(64 << 20);
                let t = AsyncRwTransport::<RoleClient, _, _>::new_client(client_in, client_out)
                    .with_max_line_length(64 << 20);
                old_best = old_best.min(receive_all(t, server_out, n, size, false).await);
                let (server_out, client_in) = tokio::io::duplex(1 << 20);
                let (client_out, _server_in) = tokio::io::duplex(64 << 20);
                let t = Wire::new(client_in, client_out, 64 << 20);
                new_best = new_best.min(receive_all(t, server_out, n, size, true).await);
            });
        }
        let per = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
        println!(
            "| {size} B | {n} | {:.1} | {:.1} |",
            per(old_best),
            per(new_best)
        );
    }
}
