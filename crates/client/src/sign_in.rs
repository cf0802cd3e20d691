//! A sign-in a person approves from inside a session (a chat): when a remote server's stored
//! sign-in needs a new round (it stopped working, the server asks for more scope, or it
//! moved to another authorization server), the person is asked through the session's
//! questions, the same way as a server's own elicitation: first whether to sign in at all,
//! with the reason, before anything is registered; then to open the authorization page.
//! The authorization server sends the browser back to this server's own loopback listener.
//! A "no" fails the request with the command that signs in later.

use crate::handler::{ELICITATION_TIMEOUT, ElicitationAsk, ElicitationKind, ElicitationReply};
use futures::future::BoxFuture;
use mcp_host_auth::{AuthorizationResponse, Authorizer, OAuthError, Person, RedirectListener};
use mcp_host_core::ServerId;
use std::sync::Arc;
use tokio::sync::{mpsc, oneshot};

pub(crate) struct AskInSession {
    server: ServerId,
    asks: mpsc::UnboundedSender<ElicitationAsk>,
    listener: RedirectListener,
}

impl AskInSession {
    /// The person for `server`'s OAuth, with a listener of its own for the redirect.
    pub(crate) async fn person(
        server: ServerId,
        asks: mpsc::UnboundedSender<ElicitationAsk>,
    ) -> std::io::Result<Person> {
        let listener = RedirectListener::bind().await?;
        let redirect_uri = listener.redirect_uri();
        Ok(Person {
            authorizer: Arc::new(Self {
                server,
                asks,
                listener,
            }),
            redirect_uri,
        })
    }

    fn declined(&self) -> OAuthError {
        OAuthError::Authorization(format!(
            "the sign-in was declined; run `mcp-host auth login {}` to sign in later",
            self.server
        ))
    }

    /// Puts `kind` to the person; whether they accepted.
    async fn ask(&self, kind: ElicitationKind) -> bool {
        let (reply, answer) = oneshot::channel();
        let ask = ElicitationAsk {
            server: self.server.clone(),
            kind,
            reply,
        };
        if self.asks.send(ask).is_err() {
            return false;
        }
        matches!(
            tokio::time::timeout(ELICITATION_TIMEOUT, answer).await,
            Ok(Ok(ElicitationReply::Accept(_)))
        )
    }
}

impl Authorizer for AskInSession {
    fn consent<'a>(&'a self, reason: &'a str) -> BoxFuture<'a, Result<(), OAuthError>> {
        Box::pin(async move {
            let kind = ElicitationKind::Form {
                message: format!("{reason}. Sign in now?"),
                schema: serde_json::json!({"type": "object", "properties": {}}),
            };
            if self.ask(kind).await {
                Ok(())
            } else {
                Err(self.declined())
            }
        })
    }

    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            let kind = ElicitationKind::Url {
                message: format!("Sign in to {} in your browser", self.server),
                url: url.to_string(),
            };
            if !self.ask(kind).await {
                return Err(self.declined());
            }
            match tokio::time::timeout(ELICITATION_TIMEOUT, self.listener.redirected()).await {
                Ok(answer) => answer,
                Err(_) => Err(OAuthError::Authorization(format!(
                    "the sign-in did not come back within {} minutes",
                    ELICITATION_TIMEOUT.as_secs() / 60
                ))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// The person, answering every question with `yes`, and the browser coming back.
    async fn answering(
        mut asks: mpsc::UnboundedReceiver<ElicitationAsk>,
        yes: bool,
        redirect_uri: String,
    ) -> Vec<ElicitationKind> {
        let mut seen = Vec::new();
        while let Some(ask) = asks.recv().await {
            let is_url = matches!(ask.kind, ElicitationKind::Url { .. });
            seen.push(ask.kind);
            let reply = if yes {
                ElicitationReply::Accept(serde_json::json!({}))
            } else {
                ElicitationReply::Decline
            };
            ask.reply.send(reply).unwrap();
            if is_url && yes {
                let port = reqwest::Url::parse(&redirect_uri).unwrap().port().unwrap();
                let mut s = tokio::net::TcpStream::connect(("127.0.0.1", port))
                    .await
                    .unwrap();
                s.write_all(b"GET /callback?code=c&state=s HTTP/1.1\r\nHost: x\r\n\r\n")
                    .await
                    .unwrap();
                let mut page = String::new();
                s.read_to_string(&mut page).await.unwrap();
            }
        }
        seen
    }

    #[tokio::test]
    async fn the_person_is_asked_with_the_reason_then_to_open_the_page() {
        let (tx, rx) = mpsc::unbounded_channel();
        let person = AskInSession::person(ServerId::new("remote"), tx)
            .await
            .unwrap();
        let answers = tokio::spawn(answering(rx, true, person.redirect_uri.clone()));
        let who = person.authorizer.clone();
        who.consent("remote asks for more access (files:write)")
            .await
            .unwrap();
        let back = who
            .authorize("https://as.example/authorize?x=1")
            .await
            .unwrap();
        assert_eq!((back.code.as_str(), back.state.as_str()), ("c", "s"));
        drop((who, person));
        let seen = answers.await.unwrap();
        assert!(
            matches!(&seen[0], ElicitationKind::Form { message, .. } if message.contains("files:write"))
        );
        assert!(
            matches!(&seen[1], ElicitationKind::Url { url, .. } if url == "https://as.example/authorize?x=1")
        );
    }

    #[tokio::test]
    async fn a_no_fails_with_the_command_for_later() {
        let (tx, rx) = mpsc::unbounded_channel();
        let person = AskInSession::person(ServerId::new("remote"), tx)
            .await
            .unwrap();
        tokio::spawn(answering(rx, false, person.redirect_uri.clone()));
        let refused = person.authorizer.consent("why").await.unwrap_err();
        assert!(
            matches!(&refused, OAuthError::Authorization(m) if m.contains("mcp-host auth login remote")),
            "{refused:?}"
        );
        assert!(person.authorizer.authorize("https://as/").await.is_err());
    }
}
