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
