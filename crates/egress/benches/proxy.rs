//! The egress proxy on loopback against a direct connection, in one run so the ratio holds
//! on a noisy machine: the latency a plain request gains (a fresh connection per request,
//! as a server behind the proxy makes them) and the throughput of a TLS-shaped tunnel.
//! Prints markdown tables for `docs/benchmarks.md`.

#![allow(clippy::unwrap_used, clippy::print_stdout)]

use hdrhistogram::Histogram;
use mcp_host_core::confinement::{AddressRange, HostRule};
use mcp_host_egress::{Proxy, Resolver, Rules, sni};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

const REQUESTS: usize = 2_000;
const TUNNEL_BYTES: u64 = 512 << 20;

/// An origin that answers each request with a short response and closes, or, for a tunnel,
/// reads everything sent and answers with the byte count.
async fn origin() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = vec![0u8; 64 * 1024];
                let n = s.read(&mut buf).await.unwrap_or(0);
                if buf[..n].starts_with(b"GET") {
                    let _ = s
                        .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                        .await;
                    return;
                }
                let mut total = n as u64;
                loop {
                    match s.read(&mut buf).await {
                        Ok(0) | Err(_) => break,
                        Ok(n) => total += n as u64,
                    }
                }
                let _ = s.write_all(&total.to_be_bytes()).await;
            });
        }
    });
    addr
}

async fn proxy() -> SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let rules = Rules {
        hosts: vec![HostRule::parse("site.test:*").unwrap()],
        private: vec![AddressRange::parse("127.0.0.1").unwrap()],
    };
    let resolver = Resolver::with_fixed("site.test=127.0.0.1").unwrap();
    let p = Arc::new(Proxy::new(
        "bench",
        rules,
        Arc::new(resolver),
        Arc::new(|_| {}),
    ));
    tokio::spawn(p.serve(listener, CancellationToken::new()));
    addr
}

async fn request(to: SocketAddr, head: &[u8]) {
    let mut s = TcpStream::connect(to).await.unwrap();
    s.write_all(head).await.unwrap();
    let mut out = Vec::new();
    s.read_to_end(&mut out).await.unwrap();
    assert!(out.ends_with(b"ok"), "{}", String::from_utf8_lossy(&out));
}

async fn latency(to: SocketAddr, head: &[u8]) -> Histogram<u64> {
    let mut h = Histogram::<u64>::new(3).unwrap();
    for _ in 0..100 {
        request(to, head).await;
    }
    for _ in 0..REQUESTS {
        let t = Instant::now();
        request(to, head).await;
        h.record(t.elapsed().as_nanos() as u64).unwrap();
    }
    h
}

/// Streams `TUNNEL_BYTES` to the origin, directly or through a CONNECT tunnel.
async fn stream(to: SocketAddr, connect: Option<&str>) -> Duration {
    let mut s = TcpStream::connect(to).await.unwrap();
    let start = Instant::now();
    let mut sent = 0u64;
    if let Some(target) = connect {
        s.write_all(format!("CONNECT {target} HTTP/1.1\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut head = [0u8; 39];
        s.read_exact(&mut head).await.unwrap();
        assert!(head.starts_with(b"HTTP/1.1 200"));
        let hello = sni::hello_for(Some("site.test"));
        s.write_all(&hello).await.unwrap();
        sent += hello.len() as u64;
    }
    let chunk = vec![7u8; 256 * 1024];
    while sent < TUNNEL_BYTES {
        s.write_all(&chunk).await.unwrap();
        sent += chunk.len() as u64;
    }
    s.shutdown().await.unwrap();
    let mut count = [0u8; 8];
    s.read_exact(&mut count).await.unwrap();
    assert_eq!(u64::from_be_bytes(count), sent);
    start.elapsed()
}

fn us(h: &Histogram<u64>, q: f64) -> String {
    format!("{:.0}", h.value_at_quantile(q) as f64 / 1000.0)
}

#[tokio::main]
async fn main() {
    let origin = origin().await;
    let proxy = proxy().await;
    let target = format!("site.test:{}", origin.port());
    let direct_head = format!("GET /x HTTP/1.1\r\nHost: {target}\r\n\r\n");
    let proxied_head = format!("GET http://{target}/x HTTP/1.1\r\nHost: {target}\r\n\r\n");
    let direct = latency(origin, direct_head.as_bytes()).await;
    let proxied = latency(proxy, proxied_head.as_bytes()).await;
    println!("| {REQUESTS} plain requests, a connection each | p50 µs | p99 µs |");
    println!("|---|---|---|");
    println!("| direct | {} | {} |", us(&direct, 0.5), us(&direct, 0.99));
    println!(
        "| through the proxy | {} | {} |",
        us(&proxied, 0.5),
        us(&proxied, 0.99)
    );
    println!(
        "| added by the proxy (p50) | {:.0} | |",
        (proxied.value_at_quantile(0.5) as f64 - direct.value_at_quantile(0.5) as f64) / 1000.0
    );
    println!();
    let mb = TUNNEL_BYTES as f64 / (1 << 20) as f64;
    let mut rows = Vec::new();
    for _ in 0..3 {
        let d = stream(origin, None).await;
        let t = stream(proxy, Some(&target)).await;
        rows.push((mb / d.as_secs_f64(), mb / t.as_secs_f64()));
    }
    rows.sort_by(|a, b| a.1.total_cmp(&b.1));
    let (d, t) = rows[1];
    println!("| {mb:.0} MiB through a tunnel (median of 3) | MiB/s |");
    println!("|---|---|");
    println!("| direct | {d:.0} |");
    println!("| through the proxy (CONNECT, SNI checked) | {t:.0} |");
    println!("| ratio | {:.2} |", t / d);
}
