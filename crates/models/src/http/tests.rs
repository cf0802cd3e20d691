//! The model client against servers on loopback that keep, drop and misuse connections,
//! redirect, and stand in for proxies.

use super::*;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc;

/// One request as a server read it: its request line, headers (lower-case names) and body.
#[derive(Clone)]
struct Seen {
    line: String,
    headers: Vec<(String, String)>,
    body: String,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        (self.headers.iter())
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Seen> {
    let mut line = String::new();
    if reader.read_line(&mut line).ok()? == 0 {
        return None;
    }
    let mut headers = Vec::new();
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        let h = h.trim_end();
        if h.is_empty() {
            break;
        }
        let (name, value) = h.split_once(':')?;
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }
    let length = (headers.iter())
        .find(|(n, _)| n == "content-length")
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Seen {
        line: line.trim_end().to_string(),
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// What the server does after reading a request on a connection.
type Answer = Box<dyn Fn(&Seen, usize, &mut TcpStream) -> bool + Send + Sync>;

/// A server on loopback: each request is sent on `seen`, then `answer` (given how many
/// requests came before it on its connection) writes to the connection and says whether to
/// keep it open. Counts connections accepted.
fn server(answer: Answer) -> (String, Arc<AtomicUsize>, mpsc::Receiver<Seen>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    let (tx, rx) = mpsc::channel();
    let answer = Arc::new(answer);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            count.fetch_add(1, Ordering::SeqCst);
            let (answer, tx) = (answer.clone(), tx.clone());
            // A connection of its own: a kept one must not hold up the next.
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut before = 0;
                while let Some(seen) = read_request(&mut reader) {
                    // Told before it is answered, so requests are told in the order they
                    // came even when they came on different connections.
                    let _ = tx.send(seen.clone());
                    if !answer(&seen, before, &mut stream) {
                        break;
                    }
                    before += 1;
                }
            });
        }
    });
    (url, accepted, rx)
}

fn ok(stream: &mut TcpStream, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\n\r\n{body}",
        body.len()
    );
}

pub(super) fn client() -> ModelClient {
    ModelClient::with_proxies(Duration::from_secs(10), Matcher::builder().build())
}

pub(super) async fn post(
    client: &ModelClient,
    url: &str,
    body: &'static str,
) -> Result<(u16, String), HttpError> {
    let target = Target::parse(url).unwrap();
    let key = HeaderValue::from_static("Bearer k");
    let headers = [(http::header::AUTHORIZATION, key)];
    let r = client
        .post_json(&target, &headers, Bytes::from_static(body.as_bytes()))
        .await?;
    Ok((r.status.as_u16(), r.body.text(1 << 20).await))
}

#[test]
fn a_target_is_its_origin_its_path_and_its_host_header() {
    let t = Target::parse("http://127.0.0.1:8080/v1/chat/completions?x=1").unwrap();
    assert_eq!(
        t.origin,
        Origin {
            https: false,
            host: "127.0.0.1".into(),
            port: 8080
        }
    );
    assert_eq!(t.path, "/v1/chat/completions?x=1");
    assert_eq!(t.host_header, "127.0.0.1:8080");
    let t = Target::parse("HTTPS://API.example.com/v1").unwrap();
    assert_eq!((t.origin.https, t.origin.port), (true, 443));
    assert_eq!(t.origin.host, "api.example.com");
    let t = Target::parse("http://[::1]:9/x").unwrap();
    assert_eq!(t.origin.host, "[::1]");
    for bad in ["ftp://h/x", "not a url", "/v1", "http://user:pw@h/x"] {
        assert!(Target::parse(bad).is_err(), "{bad}");
    }
}

/// A URL's password never reaches a message: not the refusal of a URL that carries one,
/// not one that quotes the URL for another reason.
#[test]
fn a_password_in_a_url_is_never_quoted() {
    let refused = Target::parse("http://me:s3cret@h:8080/v1").unwrap_err();
    assert!(
        !refused.contains("s3cret") && refused.contains("http://me:***@h:8080/v1"),
        "{refused}"
    );
    let broken = Target::parse("http://me:s3cret@h:8080/v 1").unwrap_err();
    assert!(!broken.contains("s3cret"), "{broken}");
    let keyed = Target::parse("http://h:8080/v 1?key=s3cret").unwrap_err();
    assert!(!keyed.contains("s3cret"), "{keyed}");
}

/// A turn's requests go on one connection, each with its body, host, type and key.
#[tokio::test]
async fn requests_one_after_another_share_one_connection() {
    let (url, accepted, seen) = server(Box::new(|_, _, s| {
        ok(s, "fine");
        true
    }));
    let c = client();
    for body in ["{\"n\":1}", "{\"n\":2}", "{\"n\":3}"] {
        assert_eq!(
            post(&c, &format!("{url}/v1/x"), body).await.unwrap(),
            (200, "fine".into())
        );
        let s = seen.recv().unwrap();
        assert_eq!(s.line, "POST /v1/x HTTP/1.1");
        assert_eq!(s.body, body);
        assert_eq!(s.header("content-type"), Some("application/json"));
        assert_eq!(s.header("authorization"), Some("Bearer k"));
        assert_eq!(s.header("user-agent"), Some(AGENT));
        assert!(AGENT.starts_with("mcp-host/0."), "{AGENT}");
        assert_eq!(s.header("host"), url.strip_prefix("http://"));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 1);
    // A plain-HTTP endpoint never made the TLS configuration (the system's roots).
    assert!(c.inner.tls.is_unmade());
}

/// An endpoint that closes a kept connection (without saying so) gets the next request on
/// a new connection, not an error.
#[tokio::test]
async fn a_kept_connection_the_endpoint_closed_is_replaced() {
    let (url, accepted, seen) = server(Box::new(|_, _, s| {
        ok(s, "once");
        false
    }));
    let c = client();
    for _ in 0..3 {
        assert_eq!(post(&c, &url, "{}").await.unwrap(), (200, "once".into()));
        seen.recv().unwrap();
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
}

/// An endpoint that closes a kept connection as the next request reaches it (the close and
/// the request cross on the wire) gets the request again on a new connection: the request
/// never reached anyone who would answer it.
#[tokio::test]
async fn a_request_that_meets_the_endpoints_close_goes_again_on_a_new_connection() {
    let (url, accepted, seen) = server(Box::new(|_, before, s| {
        if before > 0 {
            return false;
        }
        ok(s, "fresh");
        true
    }));
    let c = client();
    for _ in 0..3 {
        assert_eq!(post(&c, &url, "{}").await.unwrap(), (200, "fresh".into()));
    }
    assert_eq!(accepted.load(Ordering::SeqCst), 3);
    // The first request, then the second and third each twice.
    for _ in 0..5 {
        seen.recv_timeout(Duration::from_secs(10)).unwrap();
    }
}

/// An endpoint that reads the request and hangs up without an answer is an error that
/// says so, not a hang and not a second copy of the request.
#[tokio::test]
async fn an_endpoint_that_hangs_up_without_answering_is_an_error() {
    let (url, _, seen) = server(Box::new(|_, _, _| false));
    let e = post(&client(), &url, "{}").await.unwrap_err();
    assert!(!e.is_connect(), "{e}");
    seen.recv().unwrap();
    assert!(seen.try_recv().is_err(), "the request was sent twice");
}

/// 307 and 308 to the same origin are followed with the same body; a redirect elsewhere,
/// or one that would turn the POST into a GET, is an error naming where it points.
#[tokio::test]
async fn only_a_redirect_that_keeps_the_request_and_its_origin_is_followed() {
    let (url, accepted, seen) = server(Box::new(|s, _, stream| {
        let path = s.line.split(' ').nth(1).unwrap_or_default().to_string();
        let redirect = |code: &str, to: &str| {
            format!("HTTP/1.1 {code} R\r\nlocation: {to}\r\ncontent-length: 0\r\n\r\n")
        };
        let answer = match path.as_str() {
            "/old" => redirect("308", "/new"),
            "/away" => redirect("307", "http://127.0.0.2:9/new"),
            "/found" => redirect("302", "/new"),
            _ => {
                ok(stream, &format!("at {path}"));
                return true;
            }
        };
        let _ = stream.write_all(answer.as_bytes());
        true
    }));
    let c = client();
    assert_eq!(
        post(&c, &format!("{url}/old"), "{\"a\":1}").await.unwrap(),
        (200, "at /new".into())
    );
    assert_eq!(seen.recv().unwrap().line, "POST /old HTTP/1.1");
    assert_eq!(
        accepted.load(Ordering::SeqCst),
        1,
        "the redirect's connection was kept"
    );
    let followed = seen.recv().unwrap();
    assert_eq!(
        (followed.line.as_str(), followed.body.as_str()),
        ("POST /new HTTP/1.1", "{\"a\":1}")
    );
    for (path, to) in [("/away", "http://127.0.0.2:9/new"), ("/found", "/new")] {
        let e = post(&c, &format!("{url}{path}"), "{}").await.unwrap_err();
        assert!(e.to_string().contains(to), "{e}");
        assert_eq!(seen.recv().unwrap().line, format!("POST {path} HTTP/1.1"));
        assert!(seen.try_recv().is_err(), "{path} was followed");
    }
}

/// Through a proxy, a plain-HTTP endpoint is asked for by its whole URL, with the proxy's
/// credentials; an `https://` one through a `CONNECT` tunnel, whose refusal is an error
/// that says what the proxy answered.
#[tokio::test]
async fn a_proxy_is_asked_as_http_proxies_are() {
    let (proxy, _, seen) = server(Box::new(|s, _, stream| {
        if s.line.starts_with("CONNECT ") {
            let _ = stream.write_all(b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\n\r\n");
            false
        } else {
            ok(stream, "proxied");
            true
        }
    }));
    let with_auth = proxy.replace("http://", "http://u:p@");
    let matcher = Matcher::builder()
        .http(with_auth.clone())
        .https(with_auth)
        .build();
    let c = ModelClient::with_proxies(Duration::from_secs(10), matcher);
    let answer = post(&c, "http://model.invalid:8080/v1/chat", "{}")
        .await
        .unwrap();
    assert_eq!(answer, (200, "proxied".into()));
    let s = seen.recv().unwrap();
    assert_eq!(s.line, "POST http://model.invalid:8080/v1/chat HTTP/1.1");
    assert_eq!(s.header("proxy-authorization"), Some("Basic dTpw"));
    assert_eq!(s.header("host"), Some("model.invalid:8080"));
    let e = post(&c, "https://model.invalid/v1/chat", "{}")
        .await
        .unwrap_err();
    assert!(e.is_connect() && e.to_string().contains("403"), "{e}");
    let s = seen.recv().unwrap();
    assert_eq!(s.line, "CONNECT model.invalid:443 HTTP/1.1");
    assert_eq!(s.header("proxy-authorization"), Some("Basic dTpw"));
    // Nothing reached the endpoint's TLS: the configuration was never needed.
    assert!(c.inner.tls.is_unmade());
}

/// An `https://` endpoint that accepts and never speaks fails within the connect timeout.
#[tokio::test(start_paused = true)]
async fn an_endpoint_silent_in_its_handshake_times_out() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("https://{}/v1", listener.local_addr().unwrap());
    let _ = rustls::crypto::ring::default_provider().install_default();
    let e = post(&client(), &url, "{}").await.unwrap_err();
    assert!(e.is_timeout(), "{e}");
    drop(listener);
}

/// Nothing listening is refused at once (no retry will help); the error says where.
#[tokio::test]
async fn nothing_listening_is_refused() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let e = post(&client(), &format!("http://127.0.0.1:{port}/v1"), "{}")
        .await
        .unwrap_err();
    assert!(
        e.is_refused() && e.to_string().contains(&port.to_string()),
        "{e}"
    );
}

/// An endpoint whose answer's head never ends is cut off at hyper's bound on a head
/// (about 400 KB), not read until memory runs out; an error page is read only in part.
#[tokio::test]
async fn an_answer_is_read_within_bounds() {
    let (endless, _, _) = server(Box::new(|_, _, s| {
        let _ = s.write_all(b"HTTP/1.1 200 OK\r\n");
        let header = format!("x-filler: {}\r\n", "y".repeat(1000));
        // Bounded, so the test ends even if the client kept reading: 64 MB.
        for _ in 0..64_000 {
            if s.write_all(header.as_bytes()).is_err() {
                break;
            }
        }
        false
    }));
    let e = post(&client(), &endless, "{}").await.unwrap_err();
    assert!(e.to_string().contains("too large"), "{e}");
    let (huge_page, _, _) = server(Box::new(|_, _, s| {
        let body = "e".repeat(1 << 20);
        let _ = write!(
            s,
            "HTTP/1.1 500 Oops\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        );
        true
    }));
    let target = Target::parse(&huge_page).unwrap();
    let r = client()
        .post_json(&target, &[], Bytes::new())
        .await
        .unwrap();
    assert_eq!(r.status.as_u16(), 500);
    assert_eq!(r.body.text(8 * 1024).await.len(), 8 * 1024);
}
