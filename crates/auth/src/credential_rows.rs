//! Credentials kept by a service rather than on one machine's disk: [`CredentialRows`] is
//! where a hosted mode puts a user's sealed credentials (rows of its database, seen by every
//! replica), with a refresh lease in place of the `flock` that serialises refreshes among
//! processes of one machine. The vault seals before it hands a row over and opens after it
//! reads one, so an implementation only ever holds ciphertext.

use crate::credentials::{CredentialError, CredentialKey};
use std::sync::Arc;
use std::time::Duration;

/// One user's sealed credentials in a shared store, and their refresh leases.
#[async_trait::async_trait]
pub trait CredentialRows: Send + Sync + std::fmt::Debug {
    /// The sealed text kept for `key`, if any.
    async fn load(&self, key: &CredentialKey) -> Result<Option<String>, CredentialError>;
    /// Replaces what is kept for `key`.
    async fn save(&self, key: &CredentialKey, sealed: &str) -> Result<(), CredentialError>;
    /// Forgets `key`; absent already is fine.
    async fn clear(&self, key: &CredentialKey) -> Result<(), CredentialError>;
    /// Takes `key`'s refresh lease for `holder` until `ttl` from now, unless someone else
    /// holds one that has not run out. Whether it was taken.
    async fn try_lease(
        &self,
        key: &CredentialKey,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, CredentialError>;
    /// Gives `holder`'s lease back (someone else's stays).
    async fn release(&self, key: &CredentialKey, holder: &str) -> Result<(), CredentialError>;
}

/// How long a refresh lease lasts if its holder never gives it back (a replica killed
/// mid-refresh): longer than a token request, short enough not to stall the others.
pub(crate) const LEASE: Duration = Duration::from_secs(30);

/// A lease held for a refresh; dropping it gives it back.
#[derive(Debug)]
pub(crate) struct Lease {
    pub rows: Arc<dyn CredentialRows>,
    pub key: CredentialKey,
    pub holder: String,
}

impl Drop for Lease {
    fn drop(&mut self) {
        let (rows, key, holder) = (self.rows.clone(), self.key.clone(), self.holder.clone());
        // Drop cannot wait; giving the lease back is a task of its own. Without a runtime
        // (or if the task fails) the lease runs out by itself after LEASE.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = rows.release(&key, &holder).await {
                    tracing::debug!(error = %e, "refresh lease not given back; it runs out");
                }
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::credentials::{CredentialVault, Protection};
    use crate::sealed::SealingKey;
    use serde_json::json;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// Rows in memory, leases by holder alone (no clock: a lease lasts until given back).
    #[derive(Debug, Default)]
    struct MemoryRows {
        rows: Mutex<HashMap<String, String>>,
        leases: Mutex<HashMap<String, String>>,
    }

    fn name(key: &CredentialKey) -> String {
        format!("{}\n{}", key.issuer, key.resource)
    }

    #[async_trait::async_trait]
    impl CredentialRows for MemoryRows {
        async fn load(&self, key: &CredentialKey) -> Result<Option<String>, CredentialError> {
            Ok(self.rows.lock().unwrap().get(&name(key)).cloned())
        }
        async fn save(&self, key: &CredentialKey, sealed: &str) -> Result<(), CredentialError> {
            self.rows.lock().unwrap().insert(name(key), sealed.into());
            Ok(())
        }
        async fn clear(&self, key: &CredentialKey) -> Result<(), CredentialError> {
            self.rows.lock().unwrap().remove(&name(key));
            Ok(())
        }
        async fn try_lease(
            &self,
            key: &CredentialKey,
            holder: &str,
            _ttl: Duration,
        ) -> Result<bool, CredentialError> {
            let mut leases = self.leases.lock().unwrap();
            if leases.contains_key(&name(key)) {
                return Ok(false);
            }
            leases.insert(name(key), holder.into());
            Ok(true)
        }
        async fn release(&self, key: &CredentialKey, holder: &str) -> Result<(), CredentialError> {
            let mut leases = self.leases.lock().unwrap();
            if leases.get(&name(key)).is_some_and(|h| h == holder) {
                leases.remove(&name(key));
            }
            Ok(())
        }
    }

    fn key() -> CredentialKey {
        CredentialKey {
            issuer: "https://as.example".into(),
            resource: "https://mcp.example/mcp".into(),
        }
    }

    fn seal() -> Arc<SealingKey> {
        Arc::new(SealingKey::from_base64(&SealingKey::generate().unwrap()).unwrap())
    }

    #[tokio::test]
    async fn rows_hold_only_ciphertext_that_opens_for_its_own_user_alone() {
        let rows = Arc::new(MemoryRows::default());
        let seal = seal();
        let alice = CredentialVault::sealed_rows(rows.clone(), seal.clone(), "user a");
        assert_eq!(alice.protection().unwrap(), Protection::SealedRows);
        let value = json!({"access_token": "tok-a1", "refresh_token": "ref-a1"});
        alice.save(&key(), &value).await.unwrap();
        let kept = rows.rows.lock().unwrap().values().next().cloned().unwrap();
        assert!(
            !kept.contains("tok-a1") && !kept.contains("ref-a1"),
            "{kept}"
        );
        assert_eq!(alice.load(&key()).await.unwrap(), Some(value));
        // The same rows seen as another user's: Alice's row does not open there.
        let bob = CredentialVault::sealed_rows(rows.clone(), seal, "user b");
        assert!(matches!(
            bob.load(&key()).await,
            Err(CredentialError::Corrupt { .. })
        ));
        // Nor with another key.
        let elsewhere = CredentialVault::sealed_rows(rows.clone(), self::seal(), "user a");
        assert!(elsewhere.load(&key()).await.is_err());
        alice.clear(&key()).await.unwrap();
        assert_eq!(alice.load(&key()).await.unwrap(), None);
    }

    #[tokio::test]
    async fn the_refresh_lease_is_exclusive_and_given_back_on_drop() {
        let rows = Arc::new(MemoryRows::default());
        let vault = CredentialVault::sealed_rows(rows.clone(), seal(), "user a");
        let held = vault
            .lock_refresh(&key(), Duration::from_secs(1))
            .await
            .unwrap();
        let second = vault.lock_refresh(&key(), Duration::from_millis(60)).await;
        assert!(matches!(second, Err(CredentialError::LockTimeout(_))));
        drop(held);
        // Given back by a task of its own: the next lock waits for it, within bounds.
        vault
            .lock_refresh(&key(), Duration::from_secs(5))
            .await
            .unwrap();
    }
}
