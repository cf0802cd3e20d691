//! The person's side of an OAuth login (`mcp-host auth login`): a listener on 127.0.0.1
//! receives the authorization server's redirect; the authorization URL is printed, and
//! opened in a browser when there is one. On a machine without a browser the person opens
//! the URL elsewhere and pastes the address they were sent to (or just its `code=…&state=…`
//! part) here. The redirect's `state` and `iss` are checked by the OAuth flow, not here.

use mcp_host_auth::{AuthorizationResponse, Authorizer, OAuthError};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// How long a login waits for the person.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(600);
/// The longest request head the listener reads (a redirect is a short GET).
const MAX_HEAD: usize = 16 * 1024;
const PATH: &str = "/callback";

pub struct LoopbackAuthorizer {
    listener: TcpListener,
    port: u16,
    env: BTreeMap<String, String>,
}

impl LoopbackAuthorizer {
    pub async fn bind(env: BTreeMap<String, String>) -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self {
            listener,
            port,
            env,
        })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Serves the loopback until the redirect arrives; other requests (a favicon) get 404.
    async fn redirected(&self) -> Result<AuthorizationResponse, OAuthError> {
        loop {
            let (mut stream, _) = self.listener.accept().await.map_err(|e| {
                OAuthError::Authorization(format!("the redirect listener failed: {e}"))
            })?;
            let mut head = Vec::new();
            let mut buf = [0u8; 2048];
            while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < MAX_HEAD {
                match stream.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => head.extend_from_slice(&buf[..n]),
                }
            }
            let head = String::from_utf8_lossy(&head);
            let target = head
                .lines()
                .next()
                .and_then(|l| l.strip_prefix("GET "))
                .and_then(|l| l.split_whitespace().next())
                .unwrap_or_default()
                .to_string();
            if !target.starts_with(PATH) {
                let _ = stream
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            }
            let answer = AuthorizationResponse::from_redirect(&format!(
                "http://127.0.0.1:{}{target}",
                self.port
            ));
            let page = match &answer {
                Ok(_) => "mcp-host is authorized. You can close this tab.",
                Err(_) => "mcp-host was not authorized. See the terminal for details.",
            };
            let _ = stream
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                        page.len()
                    )
                    .as_bytes(),
                )
                .await;
            return answer;
        }
    }
}

/// A pasted redirect address, or just its query.
pub fn pasted(line: &str) -> Result<AuthorizationResponse, OAuthError> {
    let line = line.trim();
    if line.starts_with("http://") || line.starts_with("https://") {
        AuthorizationResponse::from_redirect(line)
    } else {
        let query = line.trim_start_matches('?');
        AuthorizationResponse::from_redirect(&format!("http://pasted.invalid/?{query}"))
    }
}

async fn paste_from_stdin() -> Result<AuthorizationResponse, OAuthError> {
    let mut lines = tokio::io::BufReader::new(tokio::io::stdin()).lines();
    loop {
        match lines.next_line().await {
            Ok(Some(line)) if line.trim().is_empty() => {}
            Ok(Some(line)) => return pasted(&line),
            // No terminal to paste into: wait for the browser instead.
            Ok(None) | Err(_) => std::future::pending::<()>().await,
        }
    }
}

impl Authorizer for LoopbackAuthorizer {
    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> futures::future::BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            let opened = mcp_host_engine::browser::open(url, &self.env);
            crate::output::errln!(
                "{} this address to authorize mcp-host:\n\n  {url}\n\nWaiting for the answer at {} (or paste the address you were sent to, then Enter).",
                if opened {
                    "Opened your browser at"
                } else {
                    "Open"
                },
                self.redirect_uri()
            );
            tokio::select! {
                r = self.redirected() => r,
                r = paste_from_stdin() => r,
                () = tokio::time::sleep(LOGIN_TIMEOUT) => Err(OAuthError::Authorization(format!(
                    "nobody answered within {} minutes",
                    LOGIN_TIMEOUT.as_secs() / 60
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pasted_address_or_query_is_read() {
        let full = pasted("http://127.0.0.1:5555/callback?code=abc&state=xyz&iss=https%3A%2F%2Fas")
            .unwrap();
        assert_eq!(
            (full.code.as_str(), full.state.as_str(), full.iss.as_deref()),
            ("abc", "xyz", Some("https://as"))
        );
        let query = pasted("  code=abc&state=xyz ").unwrap();
        assert_eq!((query.code.as_str(), query.state.as_str()), ("abc", "xyz"));
        assert!(pasted("error=access_denied&state=xyz").is_err());
        assert!(pasted("nonsense").is_err());
    }

    #[tokio::test]
    async fn the_loopback_listener_takes_the_redirect_and_ignores_other_paths() {
        let auth = LoopbackAuthorizer::bind(BTreeMap::new()).await.unwrap();
        let port = auth.port;
        let browser = tokio::spawn(async move {
            let get = |path: &'static str| async move {
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                s.write_all(format!("GET {path} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes())
                    .await
                    .unwrap();
                let mut out = String::new();
                s.read_to_string(&mut out).await.unwrap();
                out
            };
            let favicon = get("/favicon.ico").await;
            let done = get("/callback?code=c1&state=s1").await;
            (favicon, done)
        });
        let answer = auth.redirected().await.unwrap();
        assert_eq!((answer.code.as_str(), answer.state.as_str()), ("c1", "s1"));
        let (favicon, done) = browser.await.unwrap();
        assert!(favicon.starts_with("HTTP/1.1 404"));
        assert!(done.contains("authorized"));
    }
}
