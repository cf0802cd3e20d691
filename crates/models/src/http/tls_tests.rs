//! The model client over TLS, against servers on loopback with a test CA's certificate
//! (`tests/fixtures/tls`): straight to the endpoint, and through an `https://` proxy, where
//! the endpoint's TLS runs inside the proxy's.

use super::tests::{client, post};
use super::*;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

fn fixture(name: &str) -> Vec<u8> {
    let dir = env!("CARGO_MANIFEST_DIR");
    std::fs::read(format!("{dir}/tests/fixtures/tls/{name}")).unwrap()
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// What a TLS server saw: a request line (or `handshake refused`) and the ALPN agreed.
type Seen = (String, Option<Vec<u8>>);

/// A TLS listener on loopback with the `localhost` certificate.
async fn tls_listener() -> (TcpListener, tokio_rustls::TlsAcceptor, u16) {
    let mut server = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(
            vec![CertificateDer::from(fixture("localhost.der"))],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(fixture("localhost.key.der"))),
        )
        .unwrap();
    server.alpn_protocols = vec![b"http/1.1".to_vec()];
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    (listener, Arc::new(server).into(), port)
}

/// Reads a request's line and headers; the body's length, from `content-length`.
async fn read_head(tls: &mut (impl AsyncBufReadExt + Unpin)) -> Option<(String, usize)> {
    let mut line = String::new();
    if tls.read_line(&mut line).await.unwrap_or(0) == 0 {
        return None;
    }
    let mut length = 0;
    loop {
        let mut h = String::new();
        tls.read_line(&mut h).await.ok()?;
        if let Some(v) = h.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().ok()?;
        }
        if h.trim().is_empty() {
            return Some((line.trim_end().to_string(), length));
        }
    }
}

/// A model endpoint over TLS answering every request with `secure`, keeping connections.
async fn endpoint() -> (u16, UnboundedReceiver<Seen>) {
    let (listener, acceptor, port) = tls_listener().await;
    let (seen_tx, seen) = unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            tokio::spawn(serve(acceptor.clone(), tcp, seen_tx.clone()));
        }
    });
    (port, seen)
}

async fn serve(acceptor: tokio_rustls::TlsAcceptor, tcp: TcpStream, seen: UnboundedSender<Seen>) {
    let Ok(tls) = acceptor.accept(tcp).await else {
        let _ = seen.send(("handshake refused".to_string(), None));
        return;
    };
    let alpn = tls.get_ref().1.alpn_protocol().map(<[u8]>::to_vec);
    let mut tls = BufReader::new(tls);
    while let Some((line, length)) = read_head(&mut tls).await {
        let mut body = vec![0; length];
        if tls.read_exact(&mut body).await.is_err() {
            return;
        }
        let _ = seen.send((line, alpn.clone()));
        let answer = "HTTP/1.1 200 OK\r\ncontent-length: 6\r\n\r\nsecure";
        if tls.get_mut().write_all(answer.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A client trusting the test CA (or nothing), through `proxies`.
fn client_trusting(ca: bool, proxies: Matcher) -> ModelClient {
    let mut roots = rustls::RootCertStore::empty();
    if ca {
        roots.add(CertificateDer::from(fixture("ca.der"))).unwrap();
    }
    let mut config = rustls::ClientConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connect_timeout = client().inner.connect_timeout;
    ModelClient::with(connect_timeout, proxies, connect::Tls::preset(config))
}

/// Over TLS: the endpoint's certificate is checked against the roots, HTTP/1.1 is agreed
/// by ALPN, and the connection is kept. A certificate no root vouches for is refused
/// before anything is sent.
#[tokio::test]
async fn an_https_endpoint_is_verified_and_its_connection_kept() {
    let (port, mut seen) = endpoint().await;
    let c = client_trusting(true, Matcher::builder().build());
    for host in ["localhost", "127.0.0.1", "localhost"] {
        let answer = post(&c, &format!("https://{host}:{port}/v1/chat"), "{}").await;
        assert_eq!(answer.unwrap(), (200, "secure".into()), "{host}");
        let (line, alpn) = seen.recv().await.unwrap();
        assert_eq!(line, "POST /v1/chat HTTP/1.1");
        assert_eq!(alpn.as_deref(), Some(&b"http/1.1"[..]));
    }
    // Three requests, two origins (the name and the address): two connections, the first
    // used again.
    assert_eq!(c.inner.idle.lock().unwrap().len(), 2);
    let distrusting = client_trusting(false, Matcher::builder().build());
    let url = format!("https://localhost:{port}/v1");
    let e = post(&distrusting, &url, "{}").await.unwrap_err();
    assert!(e.is_connect() && e.to_string().contains("TLS"), "{e}");
    assert_eq!(seen.recv().await.unwrap().0, "handshake refused");
}

/// Through an `https://` proxy: TLS to the proxy (its certificate checked too), `CONNECT`
/// inside it with the proxy URL's credentials, then the endpoint's own TLS inside the
/// tunnel, verified for the endpoint's name.
#[tokio::test]
async fn an_https_proxy_carries_the_endpoints_tls_inside_its_own() {
    let (endpoint_port, mut seen) = endpoint().await;
    let (listener, acceptor, proxy_port) = tls_listener().await;
    let (asked_tx, mut asked) = unbounded_channel();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            let (acceptor, asked_tx) = (acceptor.clone(), asked_tx.clone());
            tokio::spawn(async move {
                let mut tls = BufReader::new(acceptor.accept(tcp).await.unwrap());
                let mut auth = None;
                let mut line = String::new();
                tls.read_line(&mut line).await.unwrap();
                loop {
                    let mut h = String::new();
                    tls.read_line(&mut h).await.unwrap();
                    if let Some(v) = h.strip_prefix("Proxy-Authorization: ") {
                        auth = Some(v.trim().to_string());
                    }
                    if h.trim().is_empty() {
                        break;
                    }
                }
                let _ = asked_tx.send((line.trim_end().to_string(), auth));
                let mut upstream = TcpStream::connect(("127.0.0.1", endpoint_port))
                    .await
                    .unwrap();
                let mut tls = tls.into_inner();
                tls.write_all(b"HTTP/1.1 200 Connection established\r\n\r\n")
                    .await
                    .unwrap();
                let _ = tokio::io::copy_bidirectional(&mut tls, &mut upstream).await;
            });
        }
    });
    let proxy = format!("https://u:p@localhost:{proxy_port}");
    let c = client_trusting(true, Matcher::builder().https(proxy).build());
    let url = format!("https://localhost:{endpoint_port}/v1/chat");
    assert_eq!(post(&c, &url, "{}").await.unwrap(), (200, "secure".into()));
    let (line, auth) = asked.recv().await.unwrap();
    assert_eq!(line, format!("CONNECT localhost:{endpoint_port} HTTP/1.1"));
    assert_eq!(auth.as_deref(), Some("Basic dTpw"));
    assert_eq!(seen.recv().await.unwrap().0, "POST /v1/chat HTTP/1.1");
}
