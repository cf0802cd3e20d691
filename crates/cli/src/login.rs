//! The person's side of an OAuth login (`mcp-host auth login`): a listener on 127.0.0.1
//! receives the authorization server's redirect; the authorization URL is printed, and
//! opened in a browser when there is one. On a machine without a browser the person opens
//! the URL elsewhere and pastes the address they were sent to (or just its `code=…&state=…`
//! part) here. The redirect's `state` and `iss` are checked by the OAuth flow, not here.

use mcp_host_auth::{AuthorizationResponse, Authorizer, OAuthError, RedirectListener};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio::io::AsyncBufReadExt;

/// How long a login waits for the person.
pub const LOGIN_TIMEOUT: Duration = Duration::from_secs(600);
pub struct LoopbackAuthorizer {
    listener: RedirectListener,
    env: BTreeMap<String, String>,
}

impl LoopbackAuthorizer {
    pub async fn bind(env: BTreeMap<String, String>) -> std::io::Result<Self> {
        Ok(Self {
            listener: RedirectListener::bind().await?,
            env,
        })
    }

    pub fn redirect_uri(&self) -> String {
        self.listener.redirect_uri()
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
                r = self.listener.redirected() => r,
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
}
