//! Where tokens live. The contract is rmcp's `CredentialStore` (load, save, clear, a hook
//! for rejected refresh tokens, and a guard for cross-process refresh locking), re-exported
//! so that a persistent store can be plugged in; these are the only rmcp types the crate
//! exports. The default keeps credentials in memory.

pub use rmcp::transport::auth::{
    AuthError as StoreError, CredentialRefreshGuard, CredentialStore, InMemoryCredentialStore,
    StoredCredentials,
};

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// A sign-in made anew (`mcp-host auth login`: a person asking to sign in means new scope
/// or a moved authorization server, not the stored credential checked again): the stored
/// credential is hidden from the flow until the new one is saved over it, so a sign-in
/// that fails loses nothing.
pub struct FreshSignIn {
    inner: Arc<dyn CredentialStore>,
    saved: AtomicBool,
}

impl FreshSignIn {
    pub fn new(inner: Arc<dyn CredentialStore>) -> Self {
        Self {
            inner,
            saved: AtomicBool::new(false),
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for FreshSignIn {
    async fn load(&self) -> Result<Option<StoredCredentials>, StoreError> {
        if self.saved.load(Ordering::SeqCst) {
            self.inner.load().await
        } else {
            Ok(None)
        }
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), StoreError> {
        self.inner.save(credentials).await?;
        self.saved.store(true, Ordering::SeqCst);
        Ok(())
    }

    async fn clear(&self) -> Result<(), StoreError> {
        // Before the new credential is saved there is nothing of this sign-in to clear,
        // and the stored one is not this sign-in's to lose.
        if self.saved.load(Ordering::SeqCst) {
            self.inner.clear().await?;
        }
        Ok(())
    }
}

/// Refuses an access token that cannot be sent as it is in `Authorization: Bearer`: one
/// with spaces or characters outside visible ASCII (RFC 6750's token is a subset). HTTP
/// strips a header value's outer whitespace, so the server would be sent another token than
/// the one issued; every token is saved through [`Shared`], whoever obtained it.
fn unsendable_token(token: &str) -> Result<(), StoreError> {
    if !token.is_empty() && token.bytes().all(|b| b.is_ascii_graphic()) {
        return Ok(());
    }
    Err(StoreError::TokenExchangeFailed(
        "the authorization server issued an access token with spaces or characters that \
         cannot be sent in an Authorization header"
            .into(),
    ))
}

/// One store seen from two places: rmcp's authorization manager (which takes a store by
/// value) and our client-credentials exchange, which saves the tokens it obtains itself.
#[derive(Clone)]
pub(crate) struct Shared(pub Arc<dyn CredentialStore>);

#[async_trait::async_trait]
impl CredentialStore for Shared {
    async fn load(&self) -> Result<Option<StoredCredentials>, StoreError> {
        self.0.load().await
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), StoreError> {
        if let Some(response) = &credentials.token_response {
            use oauth2::TokenResponse;
            unsendable_token(response.access_token().secret())?;
        }
        self.0.save(credentials).await
    }

    async fn clear(&self) -> Result<(), StoreError> {
        self.0.clear().await
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), StoreError> {
        self.0.on_refresh_token_rejected(credentials).await
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, StoreError> {
        self.0.acquire_refresh_guard().await
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn credentials(access_token: &str) -> StoredCredentials {
        let response = serde_json::json!({"access_token": access_token, "token_type": "Bearer"});
        let response = serde_json::from_value(response).unwrap();
        StoredCredentials::new("client".into(), Some(response), Vec::new(), None)
    }

    /// A token HTTP would change on the way (its outer spaces stripped) or cannot carry is
    /// refused where every token is saved, and nothing is stored; a token of visible ASCII
    /// (a JWT, an opaque one with `~+/=`) is kept.
    #[tokio::test]
    async fn a_token_that_cannot_be_sent_as_issued_is_refused() {
        let inner = Arc::new(InMemoryCredentialStore::new());
        let shared = Shared(inner.clone());
        for bad in [" $", "a b", "tab\there", "", "caf\u{e9}"] {
            assert!(shared.save(credentials(bad)).await.is_err(), "{bad:?}");
            assert!(inner.load().await.unwrap().is_none(), "{bad:?} was stored");
        }
        let good = "eyJhbGciOi.J9-_x.y~+/=";
        shared.save(credentials(good)).await.unwrap();
        assert!(inner.load().await.unwrap().is_some());
    }
}
