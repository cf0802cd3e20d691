//! OAuth for the connections the connection manager makes: [`OAuth::for_server`] gives a
//! configured remote server OAuth only when a sign-in is stored or the grant is a machine
//! one. Who approves a new round: a [`Person`] when the front end has one at hand (a chat:
//! they are asked first, and say yes or no), else [`NobodyToAsk`], so a sign-in that stopped
//! working ends in `needs_auth` with the command that fixes it instead of a login started
//! behind the user's back.

use super::{
    AuthSettings, AuthorizationResponse, Authorizer, Grant, OAuth, OAuthError, VaultCredentialStore,
};
use crate::CredentialVault;
use futures::future::BoxFuture;
use mcp_host_config::{ServerSpec, Transport};
use std::sync::Arc;

/// The redirect URI of a background connection's settings. It only matters for a new login,
/// which happens in `mcp-host auth login` (with its own listener), never here.
const UNUSED_REDIRECT_URI: &str = "http://127.0.0.1/callback";

/// A person who can approve a round from inside a session, and where their browser is sent
/// back to.
#[derive(Clone)]
pub struct Person {
    pub authorizer: Arc<dyn Authorizer>,
    pub redirect_uri: String,
}

impl OAuth {
    /// OAuth for the configured server `spec` when it has a stored credential in `vault`
    /// (from `mcp-host auth login`, refreshed as needed) or a machine-to-machine grant in
    /// its `oauth` block. `None` otherwise (and for a stdio server): a 401 then leaves the
    /// server in `needs_auth`. A round the stored sign-in needs (it stopped working, the
    /// server wants more scope or moved) goes to `person`, who is asked first; without one
    /// nothing is registered with an authorization server behind the user's back.
    pub async fn for_server(
        vault: CredentialVault,
        spec: &ServerSpec,
        person: Option<Person>,
    ) -> Result<Option<Self>, OAuthError> {
        let Transport::Http { url, .. } = &spec.transport else {
            return Ok(None);
        };
        let oauth = spec.oauth.as_deref();
        let machine = oauth.is_some_and(|o| o.is_machine());
        let store = VaultCredentialStore::new(vault, url)?;
        // A secret kept alone (`auth set-secret`) is not a sign-in.
        let stored = matches!(store.peek().await, Ok(Some(c)) if c.token_response.is_some());
        if !stored && !machine {
            return Ok(None);
        }
        // A machine grant from the config replaces the person's.
        let (authorizer, redirect_uri): (Arc<dyn Authorizer>, String) = match person {
            Some(p) => (p.authorizer, p.redirect_uri),
            None => (
                Arc::new(NobodyToAsk {
                    server: spec.name.clone(),
                }),
                UNUSED_REDIRECT_URI.into(),
            ),
        };
        let settings = AuthSettings::new(redirect_uri, Grant::AuthorizationCode(authorizer))
            .configured(oauth)?
            .with_stored_secret(&store)
            .await?;
        let store = store.with_client_secret(settings.client_secret.clone());
        Self::with_store(url, settings, Arc::new(store))
            .await
            .map(Some)
    }
}

/// Stands in for the person while the host runs: a new login is never started behind the
/// user's back; the server goes to `needs_auth` with the command that fixes it.
struct NobodyToAsk {
    server: String,
}

impl NobodyToAsk {
    fn why(&self) -> String {
        format!(
            "the stored sign-in no longer works; run `mcp-host auth login {}`",
            self.server
        )
    }
}

impl Authorizer for NobodyToAsk {
    fn authorize<'a>(
        &'a self,
        _url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        let why = self.why();
        Box::pin(async move { Err(OAuthError::Authorization(why)) })
    }

    fn unavailable(&self) -> Option<String> {
        Some(self.why())
    }

    fn step_up_unavailable(&self, scopes: &str) -> Option<String> {
        Some(format!(
            "the server asks for more scope than the sign-in has; run `mcp-host auth login {} --scope \"{scopes}\"`",
            self.server
        ))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::oauth::{CredentialStore, StoredCredentials};
    use mcp_host_config::{RawServer, Scope};

    fn spec(json: &str) -> ServerSpec {
        let raw: RawServer = serde_json::from_str(json).unwrap();
        raw.to_spec("remote", Scope::User, &|_| None).unwrap()
    }

    const URL: &str = "http://127.0.0.1:9/mcp";

    #[tokio::test]
    async fn only_what_works_without_a_person_gets_oauth() {
        let dir = tempfile::tempdir().unwrap();
        let vault = || CredentialVault::new(dir.path());
        let remote = spec(&format!(r#"{{"url":"{URL}"}}"#));
        let for_server = |spec: ServerSpec| async move {
            OAuth::for_server(vault(), &spec, None).await.unwrap()
        };
        assert!(for_server(spec(r#"{"command":"x"}"#)).await.is_none());
        // Nothing stored: a 401 is for `mcp-host auth login`, not for the background.
        assert!(for_server(remote.clone()).await.is_none());
        // A client secret kept alone is not a sign-in.
        let store = VaultCredentialStore::new(vault(), URL).unwrap();
        store.store_client_secret("c", "s").await.unwrap();
        assert!(for_server(remote.clone()).await.is_none());
        // A stored sign-in is used, and so is a machine grant from the config.
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "a", "token_type": "Bearer", "expires_in": 3600,
        }))
        .unwrap();
        let signed_in = StoredCredentials::new("c".into(), Some(token), vec![], Some(0));
        store.save(signed_in).await.unwrap();
        assert!(for_server(remote).await.is_some());
        store.clear().await.unwrap();
        let machine = spec(&format!(
            r#"{{"url":"{URL}","oauth":{{"grant":"client_credentials","clientId":"c","clientSecret":"s"}}}}"#
        ));
        assert!(for_server(machine).await.is_some());
    }

    #[tokio::test]
    async fn nobody_is_asked_and_the_refusal_names_the_fix() {
        let nobody = NobodyToAsk {
            server: "remote".into(),
        };
        let fix = "run `mcp-host auth login remote`";
        assert!(nobody.unavailable().is_some_and(|why| why.contains(fix)));
        let refused = nobody.authorize("https://as.example/authorize").await;
        assert!(matches!(refused, Err(OAuthError::Authorization(why)) if why.contains(fix)));
    }
}
