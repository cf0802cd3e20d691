//! How the host treats a remote server that answers with an HTTP error: transient errors
//! (5xx, refused) are retried on the first connection, 401/403 mean `needs_auth` at once,
//! other 4xx fail at once. The server is a raw local HTTP responder that counts requests.

use crate::common::*;
use mcp_host_client::backoff::Backoff;
use mcp_host_client::{Manager, ManagerOptions, ServerSetup};
use mcp_host_config::{RawServer, Scope};
use mcp_host_core::{ServerId, ServerState, TransportKind};
use std::io::{Read, Write};
use std::net::TcpListener;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

/// Answers every request with `status` (and a challenge for 401); returns URL and counter.
fn responder(status: u16) -> (String, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let count = Arc::new(AtomicUsize::new(0));
    let seen = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let mut buf = [0u8; 65536];
            let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
            if s.read(&mut buf).unwrap_or(0) == 0 {
                continue;
            }
            seen.fetch_add(1, Ordering::SeqCst);
            let extra = if status == 401 {
                "WWW-Authenticate: Bearer resource_metadata=\"http://127.0.0.1/.well-known/oauth-protected-resource\"\r\n"
            } else {
                ""
            };
            let body = "oops";
            let _ = write!(
                s,
                "HTTP/1.1 {status} X\r\n{extra}Content-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (url, count)
}

/// Accepts connections and never answers.
fn silent() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    url
}

/// Answers every request with the head of an event stream and then nothing, holding the
/// connection; returns the URL, the connections ever opened and those still open (the
/// host closing one reads as its end).
fn silent_stream() -> (String, Arc<AtomicUsize>, Arc<AtomicUsize>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let (opened, open) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (ever, now) = (opened.clone(), open.clone());
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let (ever, now) = (ever.clone(), now.clone());
            std::thread::spawn(move || {
                let mut s = stream;
                ever.fetch_add(1, Ordering::SeqCst);
                now.fetch_add(1, Ordering::SeqCst);
                let mut buf = [0u8; 65536];
                if s.read(&mut buf).unwrap_or(0) > 0 {
                    let head = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n";
                    let _ = s.write_all(head.as_bytes());
                    while s.read(&mut buf).unwrap_or(0) > 0 {}
                }
                now.fetch_sub(1, Ordering::SeqCst);
            });
        }
    });
    (url, opened, open)
}

pub(crate) fn http_setup(name: &str, url: &str) -> ServerSetup {
    let raw = RawServer {
        kind: Some("http".into()),
        url: Some(url.into()),
        timeout: Some(if name == "silent" { 300 } else { 5000 }),
        ..RawServer::default()
    };
    ServerSetup {
        id: ServerId::new(name),
        transport: TransportKind::Http,
        spec: Some(raw.to_spec(name, Scope::Flag, &|_| None).unwrap()),
        initial: ServerState::Starting,
    }
}

fn options() -> ManagerOptions {
    manager_options(Duration::from_millis(20), Duration::from_millis(50))
}

#[tokio::test]
async fn http_errors_are_retried_only_when_transient() {
    let (url_503, n_503) = responder(503);
    let (url_401, n_401) = responder(401);
    let (url_404, n_404) = responder(404);
    // A port that was bound and released: connection refused.
    let refused = {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}/mcp", l.local_addr().unwrap())
    };
    let (m, _calls) = Manager::start(
        vec![
            http_setup("unavailable", &url_503),
            http_setup("unauthorized", &url_401),
            http_setup("not_found", &url_404),
            http_setup("refused", &refused),
            http_setup("silent", &silent()),
        ],
        options(),
    );
    assert!(
        m.wait_settled(Duration::from_secs(30)).await,
        "every server settles"
    );
    let state = |n: &str| m.status(&ServerId::new(n)).unwrap();

    let auth = state("unauthorized");
    assert_eq!(auth.state.label(), "needs_auth", "{auth:?}");
    assert_eq!(auth.restarts, 0);
    let nf = state("not_found");
    assert_eq!(nf.state.label(), "failed", "{nf:?}");
    assert_eq!(nf.restarts, 0, "404 is not retried: {nf:?}");
    for name in ["unavailable", "refused", "silent"] {
        let s = state(name);
        assert_eq!(s.state.label(), "failed", "{name}: {s:?}");
        assert_eq!(
            s.restarts, 3,
            "{name}: first connection retried 3 times: {s:?}"
        );
    }
    let (a, b, c) = (
        n_503.load(Ordering::SeqCst),
        n_401.load(Ordering::SeqCst),
        n_404.load(Ordering::SeqCst),
    );
    assert!(a >= 4, "503: one request per attempt at least, got {a}");
    assert!(b >= 1 && b < a, "401 {b} is not retried like 503 {a}");
    // One handshake and no retry: server/discover, initialize (on the same connection and
    // a fresh one), and the one GET that asks whether it serves the legacy HTTP+SSE transport.
    assert!((1..=4).contains(&c), "404 {c}: one handshake, not retried");
    m.shutdown().await;
}

/// Found by the simulation: rmcp's transport awaits the answer to its first request
/// without watching its own cancellation, so a handshake the host gave up on kept its task
/// and connection for as long as the server kept the event stream open (forever, here).
#[tokio::test]
async fn a_handshake_given_up_on_leaves_no_connection_open() {
    use mcp_host_client::{ClientFeatures, Endpoint, EraChoice, Session};
    let (url, opened, open) = silent_stream();
    let endpoint = Endpoint::Http {
        url,
        headers: Default::default(),
        client: mcp_host_client::http_client(Duration::from_secs(2))
            .unwrap()
            .into(),
        auth: None,
        wire: mcp_host_client::HttpWire::Streamable,
    };
    let timeout = Duration::from_millis(300);
    let connected = Session::connect(
        &endpoint,
        EraChoice::Auto,
        timeout,
        ClientFeatures::default(),
    )
    .await;
    assert!(connected.is_err(), "a silent server cannot be connected");
    assert!(opened.load(Ordering::SeqCst) >= 1);
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while open.load(Ordering::SeqCst) != 0 {
        assert!(
            std::time::Instant::now() < deadline,
            "{} of {} connections still open after the handshake was given up",
            open.load(Ordering::SeqCst),
            opened.load(Ordering::SeqCst)
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Found by the simulation: the reconnect budget started afresh at every handshake, so a
/// remote server that shakes hands and then refuses every listing was redialled forever,
/// its backoff never growing; the budget now starts afresh only once a server is ready.
#[tokio::test]
async fn a_remote_server_that_never_lists_its_tools_runs_out_of_retries() {
    let (mut server, port) = fake_http_with(0, &["--fault", "list-error"]);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let (m, _calls) = Manager::start(vec![http_setup("r", &url)], options());
    let end = wait_status(&m, "r", |s| s.state.label() == "failed").await;
    assert_eq!(
        end.restarts, 3,
        "the first connection's three retries: {end:?}"
    );
    assert!(
        end.state
            .error()
            .is_some_and(|e| e.contains("listing tools failed")),
        "{end:?}"
    );
    m.shutdown().await;
    server.kill().unwrap();
    server.wait().unwrap();
}

async fn wait_for(m: &Manager, cond: impl Fn(&mcp_host_core::ServerStatus) -> bool) {
    wait_status(m, "r", cond).await;
}

#[tokio::test]
async fn a_remote_server_that_vanishes_is_reconnected_then_given_up_on() {
    let (mut first, port) = fake_http(0);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let mut opts = options();
    opts.health_interval = Duration::from_millis(100);
    opts.retry.backoff = Backoff {
        base: Duration::from_millis(100),
        max: Duration::from_millis(400),
        jitter: 0.0,
    };
    let (m, _calls) = Manager::start(vec![http_setup("r", &url)], opts);
    wait_for(&m, |s| s.state == ServerState::Ready).await;

    first.kill().unwrap();
    first.wait().unwrap();
    wait_for(&m, |s| s.restarts >= 1).await;
    let (mut second, _) = fake_http(port);
    wait_for(&m, |s| s.state == ServerState::Ready && s.restarts >= 1).await;
    let restarts_before = m.status(&ServerId::new("r")).unwrap().restarts;

    second.kill().unwrap();
    second.wait().unwrap();
    wait_for(&m, |s| s.state.label() == "failed").await;
    let end = m.status(&ServerId::new("r")).unwrap();
    assert_eq!(
        end.restarts - restarts_before,
        5,
        "five reconnects, then failed: {end:?}"
    );
    m.shutdown().await;
}

#[test]
fn a_server_that_wants_a_login_says_how_and_auth_commands_report_it() {
    let (url, _) = responder(401);
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        serde_json::json!({"remote": {"type": "http", "url": url}, "local": fake_server(&[])}),
    );
    let rows = sb.servers_json(&cfg);
    let remote = row(&rows, "remote");
    assert_eq!(remote["state"], "needs_auth");
    assert!(
        remote["error"]
            .as_str()
            .unwrap()
            .contains("mcp-host auth login remote"),
        "{remote}"
    );
    let status = sb.run_with(&["auth", "status"], &cfg);
    assert!(status.status.success(), "{}", stderr(&status));
    let text = stdout(&status);
    let lines: Vec<&str> = text.lines().collect();
    // No session bus in the sandbox: files, and the reason why not the keyring.
    assert!(
        lines[0].starts_with(
            "credentials: private files (0600); OS keyring (Secret Service) unavailable: connect:"
        ),
        "{text}"
    );
    assert_eq!(
        lines[1..],
        ["remote: not signed in (mcp-host auth login remote)"]
    );
    let out = sb.run_with(&["auth", "logout", "remote"], &cfg);
    assert!(out.status.success(), "{}", stderr(&out));
    // OAuth is for remote servers only, and unknown names are named.
    let out = sb.run_with(&["auth", "login", "local"], &cfg);
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("not an enabled http server"),
        "{}",
        stderr(&out)
    );
    let out = sb.run_with(&["auth", "login", "nope"], &cfg);
    assert!(
        stderr(&out).contains("no server named `nope`"),
        "{}",
        stderr(&out)
    );
}
