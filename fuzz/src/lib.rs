//! What several fuzz targets share: one tokio runtime and one HTTP client for every input
//! of a target (building them per input would be most of its time; no connection is kept
//! between inputs).

use std::sync::OnceLock;
use std::time::Duration;

pub fn runtime() -> &'static (tokio::runtime::Runtime, reqwest::Client) {
    static RT: OnceLock<(tokio::runtime::Runtime, reqwest::Client)> = OnceLock::new();
    RT.get_or_init(|| {
        mcp_host_client::install_crypto_provider();
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(0)
            .connect_timeout(Duration::from_millis(200))
            .timeout(Duration::from_secs(5))
            .build()
            .expect("client");
        (rt, client)
    })
}

/// The model providers' client, shared by every input like the runtime.
pub fn model_client() -> &'static mcp_host_models::ModelClient {
    static CLIENT: OnceLock<mcp_host_models::ModelClient> = OnceLock::new();
    CLIENT.get_or_init(|| mcp_host_models::ModelClient::new(Duration::from_millis(200)))
}

/// What the loopback server read of one request.
pub struct Request {
    pub path: String,
    pub bearer: Option<String>,
}

/// What it answers.
pub struct Reply {
    pub status: u16,
    pub content_type: &'static str,
    /// Whole header lines, each ending in `\r\n`.
    pub headers: String,
    pub body: Vec<u8>,
}

/// A minimal HTTP/1.1 server on a loopback port, one connection at a time, each answered by
/// `answer` and closed. Returns its base URL (`http://127.0.0.1:PORT`).
pub fn serve_loopback(answer: impl Fn(&Request) -> Reply + Send + 'static) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("loopback");
    let base = format!("http://{}", listener.local_addr().expect("address"));
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let mut reader = BufReader::new(conn.try_clone().expect("clone"));
            let mut first = String::new();
            let _ = reader.read_line(&mut first);
            let path = first.split(' ').nth(1).unwrap_or("/").to_string();
            let (mut length, mut bearer) = (0usize, None);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(v) = lower.strip_prefix("content-length:") {
                    length = v.trim().parse().unwrap_or(0);
                }
                if let Some(token) = lower.strip_prefix("authorization: bearer ") {
                    let start = line.len() - token.len();
                    bearer = Some(line[start..].trim().to_string());
                }
            }
            let mut body = vec![0; length.min(1 << 20)];
            let _ = reader.read_exact(&mut body);
            let reply = answer(&Request { path, bearer });
            let head = format!(
                "HTTP/1.1 {} X\r\ncontent-type: {}\r\n{}content-length: {}\r\nconnection: close\r\n\r\n",
                reply.status,
                reply.content_type,
                reply.headers,
                reply.body.len()
            );
            let _ = conn.write_all(head.as_bytes());
            let _ = conn.write_all(&reply.body);
        }
    });
    base
}
