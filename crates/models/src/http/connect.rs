//! Opening a connection to a model endpoint: TCP (within the connect timeout), through the
//! proxy the environment names for it (`HTTPS_PROXY`, `HTTP_PROXY`, `ALL_PROXY`, minus
//! `NO_PROXY`, read as curl reads them), a `CONNECT` tunnel for an `https://` endpoint behind
//! a proxy, and TLS (rustls, the system's roots, HTTP/1.1 by ALPN) when the endpoint or the
//! proxy is `https://`. The TLS configuration (loading the roots is most of a client's
//! start) is built at the first TLS connection, never for a model on `http://`.

use super::{HttpError, Origin};
use http::HeaderValue;
use hyper_util::client::proxy::matcher::Intercept;
use std::sync::{Arc, OnceLock};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

/// Any byte stream a connection runs on: TCP, TLS over TCP, TLS over a tunnel.
pub(super) trait Io: AsyncRead + AsyncWrite + Send + Unpin + 'static {}
impl<T: AsyncRead + AsyncWrite + Send + Unpin + 'static> Io for T {}

/// A proxy's answer to `CONNECT` is a status line and headers; more is not an answer.
const TUNNEL_ANSWER_MAX: usize = 8 * 1024;

/// The TLS configuration, made once per client at its first TLS connection.
#[derive(Default)]
pub(super) struct Tls(OnceLock<Result<Arc<rustls::ClientConfig>, String>>);

impl Tls {
    /// Whether no TLS connection has been made (so no roots were loaded).
    #[cfg(test)]
    pub(super) fn is_unmade(&self) -> bool {
        self.0.get().is_none()
    }

    /// TLS as `config` says (a test's own root), instead of the system's.
    #[cfg(test)]
    pub(super) fn preset(config: rustls::ClientConfig) -> Self {
        Self(OnceLock::from(Ok(Arc::new(config))))
    }

    fn config(&self) -> Result<Arc<rustls::ClientConfig>, HttpError> {
        let made = self.0.get_or_init(|| {
            use rustls_platform_verifier::BuilderVerifierExt;
            // The process's provider when the host installed one (it does, before any
            // client), else ring, the one this workspace builds rustls with.
            let provider = rustls::crypto::CryptoProvider::get_default()
                .cloned()
                .unwrap_or_else(|| Arc::new(rustls::crypto::ring::default_provider()));
            let mut config = rustls::ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .and_then(|b| b.with_platform_verifier())
                .map_err(|e| format!("cannot set up TLS: {e}"))?
                .with_no_client_auth();
            config.alpn_protocols = vec![b"http/1.1".to_vec()];
            Ok(Arc::new(config))
        });
        made.clone().map_err(HttpError::connect)
    }

    async fn wrap(&self, io: Box<dyn Io>, host: &str) -> Result<Box<dyn Io>, HttpError> {
        let name = rustls::pki_types::ServerName::try_from(bare(host).to_string())
            .map_err(|e| HttpError::connect(format!("`{host}` is not a TLS server name: {e}")))?;
        let tls = tokio_rustls::TlsConnector::from(self.config()?)
            .connect(name, io)
            .await
            .map_err(|e| HttpError::connect(format!("TLS with {host}: {e}")))?;
        Ok(Box::new(tls))
    }
}

/// A host as a URI writes it, without the brackets of an IPv6 address.
fn bare(host: &str) -> &str {
    host.strip_prefix('[')
        .and_then(|h| h.strip_suffix(']'))
        .unwrap_or(host)
}

async fn tcp(host: &str, port: u16) -> Result<Box<dyn Io>, HttpError> {
    let stream = tokio::net::TcpStream::connect((bare(host), port))
        .await
        .map_err(|e| HttpError::io_connect(format!("connecting to {host}:{port}"), e))?;
    // Requests are written whole; waiting to coalesce them only delays the model's answer.
    let _ = stream.set_nodelay(true);
    Ok(Box::new(stream))
}

/// A stream to `origin`, through `proxy` when there is one. For an `http://` endpoint behind
/// a proxy the stream is to the proxy, and requests name the endpoint in absolute form.
pub(super) async fn open(
    tls: &Tls,
    origin: &Origin,
    proxy: Option<&Intercept>,
) -> Result<Box<dyn Io>, HttpError> {
    let Some(proxy) = proxy else {
        let io = tcp(&origin.host, origin.port).await?;
        return if origin.https {
            tls.wrap(io, &origin.host).await
        } else {
            Ok(io)
        };
    };
    let uri = proxy.uri();
    let proxy_tls = uri.scheme_str() == Some("https");
    let Some(host) = uri.host() else {
        return Err(HttpError::connect(format!("the proxy `{uri}` has no host")));
    };
    let port = uri.port_u16().unwrap_or(if proxy_tls { 443 } else { 80 });
    let mut io = tcp(host, port).await?;
    if proxy_tls {
        io = tls.wrap(io, host).await?;
    }
    if !origin.https {
        return Ok(io);
    }
    let io = tunnel(io, origin, proxy.basic_auth()).await?;
    tls.wrap(io, &origin.host).await
}

/// Asks the proxy on `io` for a tunnel to `origin` (`CONNECT host:port`).
async fn tunnel(
    mut io: Box<dyn Io>,
    origin: &Origin,
    auth: Option<&HeaderValue>,
) -> Result<Box<dyn Io>, HttpError> {
    let authority = format!("{}:{}", origin.host, origin.port);
    let mut ask = format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n");
    if let Some(auth) = auth.and_then(|a| a.to_str().ok()) {
        ask.push_str("Proxy-Authorization: ");
        ask.push_str(auth);
        ask.push_str("\r\n");
    }
    ask.push_str("\r\n");
    let failed = |e: std::io::Error| HttpError::io_connect("the proxy's tunnel".into(), e);
    io.write_all(ask.as_bytes()).await.map_err(failed)?;
    let mut answer = Vec::with_capacity(256);
    let mut buf = [0u8; 512];
    while !answer.ends_with(b"\r\n\r\n") {
        let n = io.read(&mut buf).await.map_err(failed)?;
        if n == 0 {
            return Err(HttpError::connect(
                "the proxy closed the connection instead of opening a tunnel".into(),
            ));
        }
        answer.extend_from_slice(&buf[..n]);
        if answer.len() > TUNNEL_ANSWER_MAX {
            return Err(HttpError::connect(
                "the proxy's answer to CONNECT is too long".into(),
            ));
        }
    }
    // Nothing may follow the answer before the client speaks: a byte there would be read
    // as the start of the endpoint's TLS.
    let head_end = answer
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or(0)
        + 4;
    let status_line = answer.split(|&b| b == b'\r').next().unwrap_or_default();
    let status_line = String::from_utf8_lossy(status_line);
    let mut words = status_line.split(' ');
    let ok = words.next().is_some_and(|v| v.starts_with("HTTP/1."))
        && words
            .next()
            .is_some_and(|code| code.len() == 3 && code.starts_with('2'));
    if !ok || head_end != answer.len() {
        return Err(HttpError::connect(format!(
            "the proxy refused a tunnel to {authority}: {}",
            mcp_host_core::sanitize::one_line(&status_line, 200)
        )));
    }
    Ok(io)
}
