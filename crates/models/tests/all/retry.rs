//! Retries against a local server: 429 (with `retry-after`) and 503 are retried, 400 is not.

use mcp_host_models::{Message, ModelRequest, OpenAiCompatible, Provider, ProviderError, Retry};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Answers request n with `statuses[n]` (the last one repeats); counts requests.
fn server(statuses: Vec<u16>) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = s.read(&mut buf);
            let n = seen.fetch_add(1, Ordering::SeqCst);
            let status = statuses[n.min(statuses.len() - 1)];
            let body = if status == 200 {
                "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_string()
            } else {
                "{\"error\":\"busy\"}".to_string()
            };
            let _ = write!(
                s,
                "HTTP/1.1 {status} X\r\nretry-after: 0\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, count)
}

fn provider(url: &str) -> OpenAiCompatible {
    let client = mcp_host_models::ModelClient::new(Duration::from_secs(10));
    let mut p = OpenAiCompatible::new(client, url, None);
    p.retry = Retry {
        attempts: 4,
        base: Duration::from_millis(10),
        max_wait: Duration::from_millis(50),
    };
    p
}

fn request() -> ModelRequest {
    ModelRequest::new("m", vec![Message::User { text: "hi".into() }], vec![])
}

#[tokio::test]
async fn overload_and_server_errors_are_retried() {
    let (url, count) = server(vec![429, 503, 200]);
    let r = provider(&url).complete(&request()).await.unwrap();
    assert_eq!(r.text, "ok");
    assert_eq!(count.load(Ordering::SeqCst), 3);
}

#[tokio::test]
async fn other_client_errors_are_not_retried_and_attempts_are_capped() {
    let (url, count) = server(vec![400]);
    let e = provider(&url).complete(&request()).await.unwrap_err();
    assert!(
        matches!(e, ProviderError::Status { status: 400, .. }),
        "{e}"
    );
    assert_eq!(count.load(Ordering::SeqCst), 1);
    let (url, count) = server(vec![503]);
    assert!(provider(&url).complete(&request()).await.is_err());
    assert_eq!(count.load(Ordering::SeqCst), 4, "four attempts in all");
}
