//! The loopback end of an authorization-code round (RFC 8252 §7.3): a listener on
//! 127.0.0.1 that takes the authorization server's redirect and answers the browser with a
//! short page. Used by `mcp-host auth login` and by a sign-in a person approves inside a
//! session. The redirect's `state` and `iss` are checked by the flow, not here.

use super::{AuthorizationResponse, OAuthError};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

/// The longest request head the listener reads (a redirect is a short GET).
const MAX_HEAD: usize = 16 * 1024;
const PATH: &str = "/callback";

/// A listener on a free 127.0.0.1 port for the authorization server's redirect.
pub struct RedirectListener {
    listener: TcpListener,
    port: u16,
}

impl RedirectListener {
    pub async fn bind() -> std::io::Result<Self> {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await?;
        let port = listener.local_addr()?.port();
        Ok(Self { listener, port })
    }

    pub fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Serves the loopback until the redirect arrives; other requests (a favicon) get 404.
    pub async fn redirected(&self) -> Result<AuthorizationResponse, OAuthError> {
        loop {
            let (mut stream, _) = self.listener.accept().await.map_err(|e| {
                OAuthError::Authorization(format!("the redirect listener failed: {e}"))
            })?;
            let mut head = Vec::new();
            let mut buf = [0u8; 2048];
            let mut end = mcp_host_core::http_head::HeadEnd::default();
            while end.find(&head).is_none() && head.len() < MAX_HEAD {
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

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[tokio::test]
    async fn the_loopback_listener_takes_the_redirect_and_ignores_other_paths() {
        let auth = RedirectListener::bind().await.unwrap();
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
