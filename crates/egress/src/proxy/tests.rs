//! The proxy against local origin servers: every refusal the issue names, and the two
//! allowed paths (a TLS tunnel, a plain request), each with its one report.

use super::*;
use crate::resolve::Resolver;
use crate::sni::hello_for;
use std::sync::Mutex;
use tokio::sync::mpsc;

struct Harness {
    proxy: SocketAddr,
    records: Arc<Mutex<Vec<EgressRecord>>>,
    reported: mpsc::UnboundedReceiver<()>,
    _stop: tokio_util::sync::DropGuard,
}

/// An origin that sends everything it receives to `got`, and answers `reply`.
async fn origin(reply: &'static [u8]) -> (u16, mpsc::UnboundedReceiver<Vec<u8>>) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            let tx = tx.clone();
            tokio::spawn(async move {
                let mut buf = vec![0u8; 4096];
                let n = s.read(&mut buf).await.unwrap_or(0);
                let _ = tx.send(buf[..n].to_vec());
                let _ = s.write_all(reply).await;
            });
        }
    });
    (port, rx)
}

async fn proxy(hosts: &[&str], private: &[&str]) -> Harness {
    let rules = Rules {
        hosts: hosts.iter().map(|h| HostRule::parse(h).unwrap()).collect(),
        private: private
            .iter()
            .map(|p| AddressRange::parse(p).unwrap())
            .collect(),
    };
    let resolver = Resolver::with_fixed("site.test=127.0.0.1,inside.test=127.0.0.1").unwrap();
    let records = Arc::new(Mutex::new(Vec::new()));
    let (tx, reported) = mpsc::unbounded_channel();
    let sink = records.clone();
    let report: Report = Arc::new(move |r| {
        sink.lock().unwrap().push(r);
        let _ = tx.send(());
    });
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let stop = CancellationToken::new();
    let p = Arc::new(Proxy::new("probe", rules, Arc::new(resolver), report));
    tokio::spawn(p.serve(listener, stop.clone()));
    Harness {
        proxy: addr,
        records,
        reported,
        _stop: stop.drop_guard(),
    }
}

impl Harness {
    /// Sends `request` (and then `after`), returns what the proxy answered until it closed.
    async fn exchange(&mut self, request: &str, after: &[u8]) -> String {
        let mut s = TcpStream::connect(self.proxy).await.unwrap();
        s.write_all(request.as_bytes()).await.unwrap();
        s.write_all(after).await.unwrap();
        let mut out = Vec::new();
        let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
        String::from_utf8_lossy(&out).into_owned()
    }

    async fn last_record(&mut self) -> EgressRecord {
        tokio::time::timeout(Duration::from_secs(10), self.reported.recv())
            .await
            .unwrap()
            .unwrap();
        self.records.lock().unwrap().last().cloned().unwrap()
    }
}

#[tokio::test]
async fn a_tunnel_to_an_allowed_host_carries_its_hello_and_is_reported_with_bytes() {
    let (port, mut got) = origin(b"server hello").await;
    let mut h = proxy(&["site.test:*"], &["127.0.0.1"]).await;
    let hello = hello_for(Some("site.test"));
    let answer = h
        .exchange(
            &format!("CONNECT site.test:{port} HTTP/1.1\r\nHost: site.test:{port}\r\n\r\n"),
            &hello,
        )
        .await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert!(answer.ends_with("server hello"), "{answer}");
    assert_eq!(got.recv().await.unwrap(), hello);
    let r = h.last_record().await;
    assert!(r.allowed, "{r:?}");
    assert_eq!(
        (r.host.as_str(), r.port, r.method.as_str()),
        ("site.test", port, "connect")
    );
    assert_eq!((r.bytes_up, r.bytes_down), (hello.len() as u64, 12));
}

/// A head sent in small writes, its blank line cut between two of them, is read whole: the
/// proxy's search of a growing head looks only at new bytes and the three before them.
#[tokio::test]
async fn a_head_trickled_in_pieces_with_its_blank_line_cut_is_read_whole() {
    let (port, mut got) = origin(b"server hello").await;
    let mut h = proxy(&["site.test:*"], &["127.0.0.1"]).await;
    let mut s = TcpStream::connect(h.proxy).await.unwrap();
    s.set_nodelay(true).unwrap();
    let head = format!("CONNECT site.test:{port} HTTP/1.1\r\nHost: site.test:{port}\r\n\r");
    for piece in head.as_bytes().chunks(3) {
        s.write_all(piece).await.unwrap();
        tokio::task::yield_now().await;
    }
    s.write_all(b"\n").await.unwrap();
    let hello = hello_for(Some("site.test"));
    s.write_all(&hello).await.unwrap();
    let mut out = Vec::new();
    let _ = tokio::time::timeout(Duration::from_secs(10), s.read_to_end(&mut out)).await;
    drop(s);
    let answer = String::from_utf8_lossy(&out);
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    assert_eq!(got.recv().await.unwrap(), hello);
    assert!(h.last_record().await.allowed);
}

#[tokio::test]
async fn an_sni_that_names_another_host_is_refused_and_nothing_reaches_the_origin() {
    let (port, mut got) = origin(b"x").await;
    let mut h = proxy(&["site.test:*"], &["127.0.0.1"]).await;
    let answer = h
        .exchange(
            &format!("CONNECT site.test:{port} HTTP/1.1\r\n\r\n"),
            &hello_for(Some("evil.test")),
        )
        .await;
    assert!(!answer.contains("x"), "{answer}");
    let r = h.last_record().await;
    assert!(!r.allowed && r.detail.contains("SNI mismatch"), "{r:?}");
    assert!(got.try_recv().is_err(), "the origin heard nothing");
    // Plain bytes are not TLS: refused the same way.
    let _ = h
        .exchange(
            &format!("CONNECT site.test:{port} HTTP/1.1\r\n\r\n"),
            b"GET / HTTP/1.1\r\n\r\n",
        )
        .await;
    let r = h.last_record().await;
    assert!(
        !r.allowed && r.detail.contains("not start with TLS"),
        "{r:?}"
    );
}

#[tokio::test]
async fn private_addresses_are_refused_whether_literal_or_resolved() {
    let mut h = proxy(&["10.0.0.1:443", "inside.test:*", "[fe80::1]:443"], &[]).await;
    for (target, shown) in [
        ("10.0.0.1:443", "10.0.0.1"),
        ("inside.test:8080", "127.0.0.1"),
        ("[fe80::1]:443", "fe80::1"),
    ] {
        let answer = h
            .exchange(&format!("CONNECT {target} HTTP/1.1\r\n\r\n"), b"")
            .await;
        assert!(answer.starts_with("HTTP/1.1 403"), "{target}: {answer}");
        let r = h.last_record().await;
        assert!(
            !r.allowed && r.detail.contains(shown) && r.detail.contains("private"),
            "{r:?}"
        );
    }
}

#[tokio::test]
async fn a_host_off_the_allow_list_is_refused_with_its_name() {
    let mut h = proxy(&["api.example.com"], &[]).await;
    let answer = h
        .exchange("CONNECT evil.example.com:443 HTTP/1.1\r\n\r\n", b"")
        .await;
    assert!(
        answer.starts_with("HTTP/1.1 403") && answer.contains("allow-list"),
        "{answer}"
    );
    let r = h.last_record().await;
    assert_eq!(
        (r.host.as_str(), r.port, r.allowed),
        ("evil.example.com", 443, false)
    );
    // The allowed name on another port is not allowed either.
    let _ = h
        .exchange("CONNECT api.example.com:22 HTTP/1.1\r\n\r\n", b"")
        .await;
    assert!(!h.last_record().await.allowed);
}

#[tokio::test]
async fn a_plain_request_goes_to_its_url_host_rewritten_for_the_origin() {
    let (port, mut got) = origin(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok").await;
    let mut h = proxy(&["site.test:*"], &["127.0.0.0/8"]).await;
    let answer = h
        .exchange(
            &format!(
                "GET http://site.test:{port}/page?q=1 HTTP/1.1\r\nHost: evil.test\r\nProxy-Authorization: Basic eA==\r\nConnection: keep-alive\r\nAccept: */*\r\n\r\n"
            ),
            b"",
        )
        .await;
    assert!(answer.ends_with("ok"), "{answer}");
    let sent = String::from_utf8(got.recv().await.unwrap()).unwrap();
    assert!(
        sent.starts_with(&format!(
            "GET /page?q=1 HTTP/1.1\r\nHost: site.test:{port}\r\n"
        )),
        "{sent}"
    );
    assert!(
        !sent.contains("evil.test") && !sent.contains("Proxy-Authorization"),
        "{sent}"
    );
    assert!(
        sent.contains("Accept: */*\r\n") && sent.ends_with("Connection: close\r\n\r\n"),
        "{sent}"
    );
    let r = h.last_record().await;
    assert!(r.allowed && r.method == "get" && r.bytes_down > 0, "{r:?}");
}

#[tokio::test]
async fn requests_a_proxy_must_not_serve_are_refused() {
    let mut h = proxy(&["site.test:*"], &["127.0.0.1"]).await;
    for request in [
        "GET https://site.test/ HTTP/1.1\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: site.test\r\n\r\n",
        "CONNECT site.test HTTP/1.1\r\n\r\n",
        "NOT HTTP\r\n\r\n",
    ] {
        let answer = h.exchange(request, b"").await;
        assert!(answer.starts_with("HTTP/1.1 400"), "{request:?}: {answer}");
        assert!(!h.last_record().await.allowed);
    }
}
