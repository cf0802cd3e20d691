//! One server's proxy: accepts on its listener, reads one request head (bounded in size and
//! time), decides, connects, and splices bytes, counting them. What it decides:
//! - the host and port must match the server's allow-list;
//! - the name is resolved here, and an address outside the public internet is refused
//!   unless its range is allowed;
//! - a tunnel's first bytes must be a TLS ClientHello naming that same host (an address
//!   literal may have none);
//! - a plain request goes to the host its URL names, whatever its `Host` header said.
//!
//! Every connection ends in exactly one report.

use crate::resolve::Resolve;
use crate::sni::{self, Hello};
use mcp_host_core::confinement::{AddressRange, EgressRecord, HostRule, is_private};
use std::net::{IpAddr, SocketAddr};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

/// What one server may reach.
#[derive(Clone, Debug, Default)]
pub struct Rules {
    pub hosts: Vec<HostRule>,
    pub private: Vec<AddressRange>,
}

/// Where the proxy's records go (the audit log, the server's denial count).
pub type Report = Arc<dyn Fn(EgressRecord) + Send + Sync>;

/// Largest request head the proxy reads.
const MAX_HEAD: usize = 16 * 1024;
/// How long a client has to send its request head, and its ClientHello.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Connections one server may have open through its proxy at once.
const MAX_CONNECTIONS: usize = 64;

pub struct Proxy {
    server: String,
    rules: Rules,
    resolver: Arc<dyn Resolve>,
    report: Report,
}

/// The request a client sent.
struct Request {
    method: String,
    host: String,
    port: u16,
    /// For a plain request: its head rewritten for the origin server.
    plain_head: Option<Vec<u8>>,
}

/// Why a connection was refused, and what the client is told.
struct Refusal {
    status: &'static str,
    reason: String,
}

fn refuse(status: &'static str, reason: impl Into<String>) -> Refusal {
    Refusal {
        status,
        reason: reason.into(),
    }
}

impl Proxy {
    pub fn new(server: &str, rules: Rules, resolver: Arc<dyn Resolve>, report: Report) -> Self {
        Self {
            server: server.to_string(),
            rules,
            resolver,
            report,
        }
    }

    /// Serves `listener` until `stop`; every connection in flight ends with it.
    pub async fn serve(self: Arc<Self>, listener: TcpListener, stop: CancellationToken) {
        let slots = Arc::new(Semaphore::new(MAX_CONNECTIONS));
        loop {
            let accepted = tokio::select! {
                () = stop.cancelled() => return,
                accepted = listener.accept() => accepted,
            };
            let Ok((stream, _)) = accepted else {
                // Out of descriptors or a reset before accept: let the moment pass.
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            };
            let Ok(slot) = slots.clone().acquire_owned().await else {
                return;
            };
            let proxy = self.clone();
            let stop = stop.clone();
            tokio::spawn(async move {
                let _slot = slot;
                tokio::select! {
                    () = stop.cancelled() => {}
                    () = proxy.handle(stream) => {}
                }
            });
        }
    }

    fn record(&self, req: (&str, &str, u16), allowed: bool, detail: String, bytes: (u64, u64)) {
        let (method, host, port) = req;
        (self.report)(EgressRecord {
            server: self.server.clone(),
            host: host.to_string(),
            port,
            method: method.to_string(),
            allowed,
            detail,
            bytes_up: bytes.0,
            bytes_down: bytes.1,
        });
    }

    async fn handle(&self, mut client: TcpStream) {
        let mut buf = Vec::with_capacity(4096);
        let head_len =
            match tokio::time::timeout(HEAD_TIMEOUT, read_head(&mut client, &mut buf)).await {
                Ok(Ok(n)) => n,
                // Nothing was asked for: nothing to record.
                _ => return,
            };
        let req = match parse_request(&buf[..head_len]) {
            Ok(r) => r,
            Err(refusal) => {
                self.record(("?", "?", 0), false, refusal.reason.clone(), (0, 0));
                answer_refusal(&mut client, &refusal).await;
                return;
            }
        };
        let what = (req.method.as_str(), req.host.as_str(), req.port);
        let upstream = match self.decide(&req).await {
            Ok(addrs) => addrs,
            Err(refusal) => {
                self.record(what, false, refusal.reason.clone(), (0, 0));
                answer_refusal(&mut client, &refusal).await;
                return;
            }
        };
        let mut first = buf[head_len..].to_vec();
        match &req.plain_head {
            Some(head) => {
                let mut out = head.clone();
                out.append(&mut first);
                first = out;
            }
            // The tunnel's name is checked before anything is dialled: a fronting attempt
            // never reaches the origin at all.
            None => {
                if client
                    .write_all(b"HTTP/1.1 200 Connection Established\r\n\r\n")
                    .await
                    .is_err()
                {
                    return;
                }
                if let Err(reason) = self.check_hello(&mut client, &mut first, &req.host).await {
                    self.record(what, false, reason, (0, 0));
                    return;
                }
            }
        }
        let (mut server, addr) = match connect_any(&upstream, req.port).await {
            Ok(s) => s,
            Err(e) => {
                let refusal = refuse("502 Bad Gateway", format!("cannot connect: {e}"));
                self.record(what, true, refusal.reason.clone(), (0, 0));
                if req.plain_head.is_some() {
                    answer_refusal(&mut client, &refusal).await;
                }
                return;
            }
        };
        let mut up = first.len() as u64;
        if server.write_all(&first).await.is_err() {
            self.record(what, true, format!("{addr}: upstream closed"), (0, 0));
            return;
        }
        let (more_up, down) = tokio::io::copy_bidirectional(&mut client, &mut server)
            .await
            .unwrap_or((0, 0));
        up += more_up;
        self.record(what, true, addr.to_string(), (up, down));
    }

    /// The addresses the request may go to, or why it may not.
    async fn decide(&self, req: &Request) -> Result<Vec<IpAddr>, Refusal> {
        let (host, port) = (req.host.as_str(), req.port);
        if !self.rules.hosts.iter().any(|r| r.matches(host, port)) {
            return Err(refuse(
                "403 Forbidden",
                format!("{host}:{port} is not on this server's network allow-list"),
            ));
        }
        let addrs = match host.parse::<IpAddr>() {
            Ok(ip) => vec![ip],
            Err(_) => self
                .resolver
                .resolve(host)
                .await
                .map_err(|e| refuse("502 Bad Gateway", e.0))?,
        };
        let allowed =
            |ip: &IpAddr| !is_private(*ip) || self.rules.private.iter().any(|r| r.contains(*ip));
        let (ok, private): (Vec<IpAddr>, Vec<IpAddr>) = addrs.into_iter().partition(allowed);
        if ok.is_empty() {
            return Err(match private.first() {
                Some(ip) => refuse(
                    "403 Forbidden",
                    format!("{host} is {ip}, a private address this server may not reach"),
                ),
                None => refuse("502 Bad Gateway", format!("{host} has no address")),
            });
        }
        Ok(ok)
    }

    /// Reads the tunnel's first TLS record and checks the name it carries.
    async fn check_hello(
        &self,
        client: &mut TcpStream,
        first: &mut Vec<u8>,
        host: &str,
    ) -> Result<(), String> {
        let read = async {
            // One buffer for every read: a new one the size of what is still missing, zeroed
            // at each read, cost a trickling client's every byte up to 16 KiB of zeroing.
            let mut chunk = [0u8; 4096];
            loop {
                match sni::client_hello(first) {
                    Hello::Incomplete(need) => {
                        let want = need.saturating_sub(first.len()).clamp(1, chunk.len());
                        let n =
                            (client.read(&mut chunk[..want]).await).map_err(|e| e.to_string())?;
                        if n == 0 {
                            return Err("the tunnel closed before its ClientHello".to_string());
                        }
                        first.extend_from_slice(&chunk[..n]);
                    }
                    other => return Ok(other),
                }
            }
        };
        let hello = tokio::time::timeout(HEAD_TIMEOUT, read)
            .await
            .map_err(|_| "no ClientHello in time".to_string())??;
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        match hello {
            Hello::Named(name) if name.trim_end_matches('.') == host => Ok(()),
            Hello::Named(name) => Err(format!(
                "the TLS ClientHello names {name}, not {host} (SNI mismatch)"
            )),
            Hello::Unnamed if host.parse::<IpAddr>().is_ok() => Ok(()),
            Hello::Unnamed => Err(format!("the TLS ClientHello names no server, not {host}")),
            Hello::Unreadable(why) => Err(format!("the tunnel did not start with TLS ({why})")),
            Hello::Incomplete(_) => Err("incomplete ClientHello".to_string()),
        }
    }
}

/// Reads until the end of the request head; returns its length (the rest of `buf` is the
/// body's start, or a pipelined ClientHello).
async fn read_head(client: &mut TcpStream, buf: &mut Vec<u8>) -> std::io::Result<usize> {
    let mut chunk = [0u8; 4096];
    let mut end = mcp_host_core::http_head::HeadEnd::default();
    loop {
        if let Some(at) = end.find(buf) {
            return Ok(at);
        }
        if buf.len() >= MAX_HEAD {
            return Err(std::io::Error::other("request head too large"));
        }
        let n = client.read(&mut chunk).await?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn parse_request(head: &[u8]) -> Result<Request, Refusal> {
    let mut headers = [httparse::EMPTY_HEADER; 64];
    let mut req = httparse::Request::new(&mut headers);
    match req.parse(head) {
        Ok(httparse::Status::Complete(_)) => {}
        _ => return Err(refuse("400 Bad Request", "not an HTTP request")),
    }
    let method = req.method.unwrap_or_default().to_string();
    let target = req.path.unwrap_or_default();
    if method == "CONNECT" {
        let (host, port) = authority(target, None)
            .ok_or_else(|| refuse("400 Bad Request", format!("bad CONNECT target `{target}`")))?;
        return Ok(Request {
            method: "connect".into(),
            host,
            port,
            plain_head: None,
        });
    }
    let Some(rest) = target.strip_prefix("http://") else {
        let why = if target.starts_with("https://") {
            "an https URL goes through CONNECT"
        } else {
            "this is a proxy: send an absolute URL or CONNECT"
        };
        return Err(refuse("400 Bad Request", why));
    };
    let (auth, path) = rest.split_at(rest.find(['/', '?']).unwrap_or(rest.len()));
    let (host, port) = authority(auth, Some(80))
        .ok_or_else(|| refuse("400 Bad Request", format!("bad URL `{target}`")))?;
    let path = if path.is_empty() { "/" } else { path };
    let mut out = format!("{method} {path} HTTP/1.1\r\nHost: {auth}\r\n").into_bytes();
    for h in req.headers.iter() {
        let name = h.name.to_ascii_lowercase();
        if name == "host" || name == "connection" || name.starts_with("proxy-") {
            continue;
        }
        out.extend_from_slice(h.name.as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(h.value);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"Connection: close\r\n\r\n");
    Ok(Request {
        method: method.to_ascii_lowercase(),
        host,
        port,
        plain_head: Some(out),
    })
}

/// `host:port`, `[v6]:port`, or `host` with a default port.
fn authority(text: &str, default_port: Option<u16>) -> Option<(String, u16)> {
    let (host, port) = if let Some(v6) = text.strip_prefix('[') {
        let (addr, rest) = v6.split_once(']')?;
        let port = match rest.strip_prefix(':') {
            Some(p) => p.parse().ok()?,
            None if rest.is_empty() => default_port?,
            None => return None,
        };
        (addr.to_string(), port)
    } else {
        match text.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), p.parse().ok()?),
            None => (text.to_string(), default_port?),
        }
    };
    let valid = !host.is_empty()
        && port != 0
        && host
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':'));
    valid.then(|| (host.to_ascii_lowercase(), port))
}

async fn connect_any(addrs: &[IpAddr], port: u16) -> std::io::Result<(TcpStream, SocketAddr)> {
    let mut last = std::io::Error::other("no address");
    for ip in addrs {
        let addr = SocketAddr::new(*ip, port);
        match tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr)).await {
            Ok(Ok(s)) => return Ok((s, addr)),
            Ok(Err(e)) => last = e,
            Err(_) => last = std::io::ErrorKind::TimedOut.into(),
        }
    }
    Err(last)
}

async fn answer_refusal(client: &mut TcpStream, refusal: &Refusal) {
    let body = format!("mcp-host sandbox: {}\n", refusal.reason);
    let head = format!(
        "HTTP/1.1 {}\r\nContent-Type: text/plain\r\nConnection: close\r\nContent-Length: {}\r\n\r\n",
        refusal.status,
        body.len()
    );
    let _ = client.write_all(head.as_bytes()).await;
    let _ = client.write_all(body.as_bytes()).await;
    let _ = client.shutdown().await;
}

#[cfg(test)]
mod tests;
