//! Credentials that outlive the process: [`VaultCredentialStore`] is rmcp's
//! [`CredentialStore`] over [`crate::CredentialVault`] (the OS keyring, else one 0600
//! JSON file per credential in a 0700 directory; a cross-process refresh lock either way),
//! for ONE server. "The file" below is the vault's item for the credential, wherever it is.
//!
//! **Keying.** A store is made for one resource: the server's canonical URL (parsed, fragment
//! dropped, the same string the flow sends as RFC 8707 `resource`). The issuer is not known
//! when the store is made (discovery has not run), so the file is keyed by
//! ([`ISSUER_IN_FILE`], resource) and the issuer lives *inside* the file, in
//! `StoredCredentials::issuer`, where rmcp checks it: `initialize_from_store` discards
//! credentials whose issuer differs from the one discovery finds, and every refresh saves the
//! current issuer again. Audience: the file also records the resource it was saved for, and
//! [`CredentialStore::load`] refuses (returns `None` for) a file recorded for any other
//! resource, so a token for server A is never handed to the manager of server B even if a
//! file were copied or renamed.
//!
//! **Client secret.** `StoredCredentials` has no `client_secret` (rmcp gap). The file keeps
//! the secret given with [`VaultCredentialStore::with_client_secret`] (from `AuthSettings`),
//! or the one already in the file for the same client id, beside the credentials, and
//! [`VaultCredentialStore::stored_client_secret`] reads it back after a restart.
//!
//! **Refresh coordination.** rmcp takes [`CredentialStore::acquire_refresh_guard`] before it
//! loads the credential to refresh and holds it through the token request and the save; the
//! guard here is the file's exclusive `flock`. That alone serialises refreshes but does not
//! make them one: rmcp's `refresh_token` does not look at the expiry again once it holds the
//! guard, so a second process that saw the expired token before the first one refreshed would
//! refresh again (with the rotated refresh token). So `load` also coalesces: when the
//! credential it read is due for refresh (rmcp's rule: fewer than `min(30 s, lifetime / 2)`
//! seconds left) it waits for the refresh lock and reads again. If another process refreshed
//! meanwhile, the fresh credential is returned and no refresh follows. If not, this store
//! keeps the lock *reserved* and hands it to the guard rmcp asks for next, so there is no
//! gap in which a second process could slip in; an unclaimed reservation is released after
//! a few seconds. `load` and `save` never wait for a lock this store already holds (a live
//! guard or a reservation), so rmcp's load → request → save under its guard cannot deadlock.
//! A rotated refresh token is in the file (atomic rename, fsync) before the guard is
//! released, hence before anyone can use it.
//!
//! **Jitter.** rmcp decides to refresh from what `load` returns, by its fixed rule (fewer than
//! `min(30 s, lifetime / 2)` seconds left). Each store draws a fraction once and hands rmcp a
//! copy whose `token_received_at` is that fraction of `min(90 s, lifetime / 4)` earlier, so
//! refreshes start early by a spread amount, before expiry, and the same copy drives the
//! coalescing above.
//!
//! **Reads.** rmcp asks the store for the credential before every request. A credential this
//! store read or wrote whose access token is live (known expiry, outside the refresh margin)
//! is handed out again from memory, so a busy session does not make a D-Bus call (keyring)
//! or a file read per request. Anything else (a secret alone, no expiry) is read every time,
//! so a login made elsewhere is seen. Whatever is
//! due, and anything under a refresh guard, is read from the vault, so the coalescing and the
//! rotation above always see the latest. (A `logout` in another process therefore takes
//! effect in a running session at its next refresh; the tokens themselves stay valid at the
//! server until then anyway.)
//!
//! **Rejection.** On `invalid_grant`, the credential is cleared only if the file still holds
//! the refresh token that was rejected; a credential another process saved since stays.
//!
//! Nothing here logs a token or a secret.

use super::OAuthError;
use super::store::{CredentialRefreshGuard, CredentialStore, StoreError, StoredCredentials};
use crate::{CredentialError, CredentialKey, CredentialVault, RefreshLock};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The issuer half of the file key: the issuer is unknown before discovery, so it is kept
/// inside the file (see the module header).
pub const ISSUER_IN_FILE: &str = "";

/// How long a refresh waits for another process's refresh to finish: longer than that
/// refresh's own token request may take (the OAuth HTTP client gives up after 30 s), so a
/// slow authorization server makes the second process wait, not fail.
pub const DEFAULT_LOCK_WAIT: Duration = Duration::from_secs(35);

/// How long a lock taken by `load` for the refresh rmcp is about to make stays reserved if
/// no refresh claims it (rmcp refreshes right after such a load; this only bounds a miss).
const RESERVATION_TTL: Duration = Duration::from_secs(5);

/// A refresh starts up to this much earlier than rmcp's rule alone would start it, by an
/// amount drawn once per store (and never more than a quarter of the token's lifetime), so
/// that credentials issued together, or one credential shared by many hosts, do not all
/// refresh in the same second.
pub const MAX_REFRESH_JITTER: Duration = Duration::from_secs(90);

/// rmcp refreshes once fewer than `min(REFRESH_BUFFER_SECS, expires_in / 2)` seconds remain
/// (`AuthorizationManager::REFRESH_BUFFER_SECS`, private); `load` uses the same rule.
const REFRESH_BUFFER_SECS: u64 = 30;

/// What the file holds.
#[derive(Serialize, Deserialize)]
struct CredentialFile {
    /// The resource (canonical server URL) these credentials are for.
    resource: String,
    credentials: StoredCredentials,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    client_secret: Option<String>,
}

/// The refresh lock as this store holds it.
#[derive(Default)]
struct LockState {
    /// Live guards handed to rmcp.
    guards: u32,
    /// Taken by `load` for a credential due for refresh, for the next guard.
    reserved: Option<(RefreshLock, u64)>,
    next_reservation: u64,
}

impl LockState {
    fn holds(&self) -> bool {
        self.guards > 0 || self.reserved.is_some()
    }
}

fn lock_state(state: &Mutex<LockState>) -> MutexGuard<'_, LockState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The guard rmcp holds across a refresh: the file lock, and this store's note of it.
struct Guard {
    _lock: RefreshLock,
    state: Arc<Mutex<LockState>>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        let mut state = lock_state(&self.state);
        state.guards = state.guards.saturating_sub(1);
    }
}

/// rmcp's [`CredentialStore`] in a private file, for one server. Make one per `OAuth`
/// (it is the manager's store; clones share the lock bookkeeping and are the same store).
#[derive(Clone)]
pub struct VaultCredentialStore {
    vault: CredentialVault,
    key: CredentialKey,
    client_secret: Option<String>,
    lock_wait: Duration,
    /// Where in `[0, MAX_REFRESH_JITTER)` this store's refreshes start early.
    jitter_fraction: f64,
    state: Arc<Mutex<LockState>>,
    /// The credential as this store last read or wrote it (see "Reads" in the header).
    last: Arc<Mutex<Option<StoredCredentials>>>,
}

impl std::fmt::Debug for VaultCredentialStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VaultCredentialStore")
            .field("vault", &self.vault)
            .field("resource", &self.key.resource)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "REDACTED"),
            )
            .field("lock_wait", &self.lock_wait)
            .field("jitter_fraction", &self.jitter_fraction)
            .finish_non_exhaustive()
    }
}

fn store_error(e: CredentialError) -> StoreError {
    StoreError::CredentialStoreError(e.to_string())
}

/// The server URL as a resource: parsed, without fragment (as the flow sends it).
pub fn canonical_resource(server_url: &str) -> Result<String, OAuthError> {
    let mut url = url::Url::parse(server_url)
        .map_err(|e| OAuthError::Config(format!("server URL {server_url:?}: {e}")))?;
    url.set_fragment(None);
    Ok(url.to_string())
}

fn now_epoch_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

/// The refresh token in a credential, if any (compared, never logged).
fn refresh_token_of(credentials: &StoredCredentials) -> Option<String> {
    let token = serde_json::to_value(credentials.token_response.as_ref()?).ok()?;
    token
        .get("refresh_token")
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The token's lifetime in seconds, if it has one.
fn lifetime_of(credentials: &StoredCredentials) -> Option<u64> {
    let token = serde_json::to_value(credentials.token_response.as_ref()?).ok()?;
    token.get("expires_in").and_then(Value::as_u64)
}

/// Whether the access token is inside rmcp's refresh margin (`None` without an expiry).
fn in_refresh_margin(credentials: &StoredCredentials) -> Option<bool> {
    let expires_in = lifetime_of(credentials)?;
    let received_at = credentials.token_received_at?;
    let remaining = expires_in.saturating_sub(now_epoch_secs().saturating_sub(received_at));
    let buffer = REFRESH_BUFFER_SECS.min(expires_in / 2);
    Some(remaining < buffer.max(1))
}

/// Whether rmcp's `get_access_token` would refresh this credential now.
pub(crate) fn due_for_refresh(credentials: &StoredCredentials) -> bool {
    refresh_token_of(credentials).is_some() && in_refresh_margin(credentials) == Some(true)
}

/// Whether rmcp would send this credential's access token as it is: there is one, its
/// expiry is known, and it is outside the refresh margin. Only such a credential may be
/// served from memory; anything else (no token, a secret alone, an unknown expiry) is read
/// from the vault every time, so a login made elsewhere is seen.
fn live(credentials: &StoredCredentials) -> bool {
    credentials.token_response.is_some() && in_refresh_margin(credentials) == Some(false)
}

impl VaultCredentialStore {
    /// The credentials for the server at `server_url`, kept in `vault` (the user's, e.g.
    /// over `$XDG_DATA_HOME/mcp-host/credentials`; clones of one vault share its keyring).
    pub fn new(vault: CredentialVault, server_url: &str) -> Result<Self, OAuthError> {
        Ok(Self {
            vault,
            key: CredentialKey {
                issuer: ISSUER_IN_FILE.to_string(),
                resource: canonical_resource(server_url)?,
            },
            client_secret: None,
            lock_wait: DEFAULT_LOCK_WAIT,
            jitter_fraction: rand::random::<f64>(),
            state: Arc::default(),
            last: Arc::default(),
        })
    }

    /// Keeps `secret` (the `client_secret` of `AuthSettings`) in the file with the
    /// credentials, so that a confidential client can refresh after a restart.
    pub fn with_client_secret(mut self, secret: Option<String>) -> Self {
        self.client_secret = secret;
        self
    }

    /// How long to wait for another process's refresh (default [`DEFAULT_LOCK_WAIT`]).
    pub fn with_lock_wait(mut self, wait: Duration) -> Self {
        self.lock_wait = wait;
        self
    }

    /// Where in `[0, MAX_REFRESH_JITTER)` refreshes start early (0 to 1; random by default).
    pub fn with_jitter_fraction(mut self, fraction: f64) -> Self {
        self.jitter_fraction = fraction.clamp(0.0, 1.0);
        self
    }

    /// The credential as rmcp is to see it: received earlier by this store's jitter, so that
    /// rmcp's expiry rule (which it applies to what `load` returns) refreshes that much
    /// sooner. Only the copy handed out is shifted: every save carries a fresh
    /// `token_received_at`, so the shift never accumulates on disk.
    fn jittered(&self, mut credentials: StoredCredentials) -> StoredCredentials {
        if let (Some(lifetime), Some(received_at)) =
            (lifetime_of(&credentials), credentials.token_received_at)
        {
            let window = MAX_REFRESH_JITTER.as_secs().min(lifetime / 4);
            // Truncation is intended: whole seconds, within the window.
            let shift = (self.jitter_fraction * window as f64) as u64;
            credentials.token_received_at = Some(received_at.saturating_sub(shift));
        }
        credentials
    }

    /// The resource (canonical server URL) this store is for.
    pub fn resource(&self) -> &str {
        &self.key.resource
    }

    /// The key of this store's file in `CredentialVault`.
    pub fn credential_key(&self) -> CredentialKey {
        self.key.clone()
    }

    /// The client secret kept with the credentials, if any.
    pub async fn stored_client_secret(&self) -> Result<Option<String>, OAuthError> {
        self.read()
            .await
            .map(|f| f.and_then(|f| f.client_secret))
            .map_err(|e| OAuthError::Store(e.to_string()))
    }

    /// The secret kept for the client `client_id` (none for a secret of another client).
    pub async fn stored_client_secret_for(
        &self,
        client_id: &str,
    ) -> Result<Option<String>, OAuthError> {
        self.read()
            .await
            .map(|f| {
                f.filter(|f| f.credentials.client_id == client_id)
                    .and_then(|f| f.client_secret)
            })
            .map_err(|e| OAuthError::Store(e.to_string()))
    }

    /// Keeps `secret` as the client secret of the pre-registered client `client_id` (the
    /// secret then needs no place in the config): beside a credential of that client, which
    /// stays, or alone, replacing a credential of any other client.
    pub async fn store_client_secret(
        &self,
        client_id: &str,
        secret: &str,
    ) -> Result<(), OAuthError> {
        let credentials = self
            .read()
            .await
            .map_err(|e| OAuthError::Store(e.to_string()))?
            .map(|f| f.credentials)
            .filter(|c| c.client_id == client_id)
            .unwrap_or_else(|| StoredCredentials::new(client_id.to_string(), None, vec![], None));
        self.write(credentials, Some(secret.to_string()))
            .await
            .map_err(|e| OAuthError::Store(e.to_string()))
    }

    async fn write(
        &self,
        credentials: StoredCredentials,
        client_secret: Option<String>,
    ) -> Result<(), StoreError> {
        let file = CredentialFile {
            resource: self.key.resource.clone(),
            credentials,
            client_secret,
        };
        let value = serde_json::to_value(&file).map_err(|_| {
            StoreError::CredentialStoreError("credentials could not be serialized".into())
        })?;
        self.vault
            .save(&self.key, &value)
            .await
            .map_err(store_error)?;
        self.remember(Some(&file.credentials));
        Ok(())
    }

    fn remember(&self, credentials: Option<&StoredCredentials>) {
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = credentials.cloned();
    }

    /// The remembered credential, if it is still good to hand out without reading the
    /// vault: [`live`], and no refresh of this store under way.
    fn remembered(&self) -> Option<StoredCredentials> {
        if lock_state(&self.state).holds() {
            return None;
        }
        let last = self
            .last
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()?;
        let jittered = self.jittered(last);
        live(&jittered).then_some(jittered)
    }

    /// The stored credential as it is, without waiting for a refresh another process may be
    /// making: for showing status and deciding whether to attach OAuth at all.
    pub async fn peek(&self) -> Result<Option<StoredCredentials>, OAuthError> {
        self.read()
            .await
            .map(|f| f.map(|f| f.credentials))
            .map_err(|e| OAuthError::Store(e.to_string()))
    }

    /// The file's content, if it is for this resource.
    async fn read(&self) -> Result<Option<CredentialFile>, StoreError> {
        let Some(value) = self.vault.load(&self.key).await.map_err(store_error)? else {
            return Ok(None);
        };
        // No serde detail in the message: it could quote a token.
        let file: CredentialFile = serde_json::from_value(value).map_err(|_| {
            StoreError::CredentialStoreError(format!(
                "the credential file for {} is not in the expected format",
                self.key.resource
            ))
        })?;
        if file.resource != self.key.resource {
            tracing::warn!(
                resource = %self.key.resource,
                recorded = %file.resource,
                "ignoring a credential file recorded for another resource"
            );
            return Ok(None);
        }
        Ok(Some(file))
    }

    /// Keeps `lock` for the next guard; released by itself after [`RESERVATION_TTL`] if no
    /// refresh claims it.
    fn reserve(&self, lock: RefreshLock) {
        let id = {
            let mut state = lock_state(&self.state);
            state.next_reservation += 1;
            let id = state.next_reservation;
            state.reserved = Some((lock, id));
            id
        };
        let state = Arc::downgrade(&self.state);
        let release = async move {
            tokio::time::sleep(RESERVATION_TTL).await;
            if let Some(state) = state.upgrade() {
                let mut state = lock_state(&state);
                if state.reserved.as_ref().is_some_and(|(_, r)| *r == id) {
                    state.reserved = None;
                }
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => {
                handle.spawn(release);
            }
            // No runtime to time it: do not hold the lock at all.
            Err(_) => lock_state(&self.state).reserved = None,
        }
    }
}

#[async_trait::async_trait]
impl CredentialStore for VaultCredentialStore {
    async fn load(&self) -> Result<Option<StoredCredentials>, StoreError> {
        if let Some(credentials) = self.remembered() {
            return Ok(Some(credentials));
        }
        let Some(file) = self.read().await? else {
            self.remember(None);
            return Ok(None);
        };
        self.remember(Some(&file.credentials));
        let credentials = self.jittered(file.credentials);
        if !due_for_refresh(&credentials) || lock_state(&self.state).holds() {
            return Ok(Some(credentials));
        }
        // Due for refresh: another process may be refreshing it right now. Wait for it and
        // read again, so that its rotated token is used instead of refreshing a second time.
        let lock = match self.vault.lock_refresh(&self.key, Duration::ZERO).await {
            Ok(lock) => Ok(lock),
            Err(_) => {
                // Tests wait for this line to know a second process is in the coalescing path.
                tracing::debug!(resource = %self.key.resource, "waiting for another process's refresh");
                self.vault.lock_refresh(&self.key, self.lock_wait).await
            }
        };
        let lock = match lock {
            Ok(lock) => lock,
            Err(e) => {
                tracing::debug!(resource = %self.key.resource, error = %e, "refresh lock not taken on load");
                return Ok(Some(credentials));
            }
        };
        let again = self.read().await?.map(|f| f.credentials);
        self.remember(again.as_ref());
        let again = again.map(|c| self.jittered(c));
        if again.as_ref().is_some_and(due_for_refresh) && !lock_state(&self.state).holds() {
            self.reserve(lock);
        }
        Ok(again)
    }

    async fn save(&self, credentials: StoredCredentials) -> Result<(), StoreError> {
        let client_secret = match &self.client_secret {
            Some(secret) => Some(secret.clone()),
            // Keep a secret stored earlier for the same client (say, from registration).
            None => self.read().await.ok().flatten().and_then(|f| {
                (f.credentials.client_id == credentials.client_id)
                    .then_some(f.client_secret)
                    .flatten()
            }),
        };
        self.write(credentials, client_secret).await
    }

    async fn clear(&self) -> Result<(), StoreError> {
        self.vault.clear(&self.key).await.map_err(store_error)?;
        self.remember(None);
        Ok(())
    }

    async fn on_refresh_token_rejected(
        &self,
        credentials: &StoredCredentials,
    ) -> Result<(), StoreError> {
        // rmcp calls this under our guard, so nobody replaces the file meanwhile.
        let Some(rejected) = refresh_token_of(credentials) else {
            return Ok(());
        };
        let current = self.read().await?.filter(|f| {
            f.credentials.client_id == credentials.client_id
                && refresh_token_of(&f.credentials).as_deref() == Some(rejected.as_str())
        });
        if let Some(file) = current {
            tracing::info!(resource = %self.key.resource, "refresh token rejected; clearing the stored credential");
            match file.client_secret {
                // The client's own secret is not what was rejected: keep it for the next login.
                Some(secret) => {
                    let client =
                        StoredCredentials::new(credentials.client_id.clone(), None, vec![], None);
                    self.write(client, Some(secret)).await
                }
                None => self.clear().await,
            }
        } else {
            tracing::debug!(resource = %self.key.resource, "refresh token rejected, but the stored credential was replaced since; keeping it");
            Ok(())
        }
    }

    async fn acquire_refresh_guard(&self) -> Result<Option<CredentialRefreshGuard>, StoreError> {
        let reserved = lock_state(&self.state).reserved.take();
        let lock = match reserved {
            Some((lock, _)) => lock,
            None => self
                .vault
                .lock_refresh(&self.key, self.lock_wait)
                .await
                .map_err(store_error)?,
        };
        lock_state(&self.state).guards += 1;
        Ok(Some(CredentialRefreshGuard::new(Guard {
            _lock: lock,
            state: self.state.clone(),
        })))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn credentials(access: &str, refresh: &str, received_at: u64) -> StoredCredentials {
        let token = serde_json::from_value(serde_json::json!({
            "access_token": access,
            "token_type": "Bearer",
            "expires_in": 3600,
            "refresh_token": refresh,
        }))
        .unwrap();
        StoredCredentials::new("client".into(), Some(token), vec![], Some(received_at))
    }

    #[test]
    fn expiry_follows_rmcps_rule() {
        let now = now_epoch_secs();
        assert!(!due_for_refresh(&credentials("a", "r", now)));
        assert!(due_for_refresh(&credentials("a", "r", now - 3590)));
        assert!(due_for_refresh(&credentials("a", "r", now - 7200)));
        assert_eq!(
            refresh_token_of(&credentials("a", "r", now)).as_deref(),
            Some("r")
        );
    }

    /// A store over files in `dir` for `http://h/mcp` that never waits for a lock.
    fn test_store(dir: &std::path::Path, jitter_fraction: f64) -> VaultCredentialStore {
        VaultCredentialStore::new(CredentialVault::new(dir), "http://h/mcp")
            .unwrap()
            .with_jitter_fraction(jitter_fraction)
            .with_lock_wait(Duration::ZERO)
    }

    #[tokio::test]
    async fn refreshes_start_early_by_the_stores_jitter_within_a_quarter_of_the_lifetime() {
        let dir = tempfile::tempdir().unwrap();
        let store = |fraction| test_store(dir.path(), fraction);
        let now = now_epoch_secs();
        // rmcp alone refreshes a one-hour token 30 s before expiry; 60 s before is not due.
        let sixty_left = credentials("a", "r", now - 3540);
        store(0.0).save(sixty_left.clone()).await.unwrap();
        let seen = store(0.0).load().await.unwrap().unwrap();
        assert!(!due_for_refresh(&seen));
        // Full jitter (90 s) makes it due, and only the copy handed out is shifted.
        let seen = store(1.0).load().await.unwrap().unwrap();
        assert!(due_for_refresh(&seen));
        assert_eq!(seen.token_received_at, Some(now - 3540 - 90));
        let on_disk = store(0.0).read().await.unwrap().unwrap().credentials;
        assert_eq!(on_disk.token_received_at, Some(now - 3540));
        // A short-lived token is shifted by at most a quarter of its life.
        let token = serde_json::from_value(serde_json::json!({
            "access_token": "a", "token_type": "Bearer", "expires_in": 40, "refresh_token": "r",
        }))
        .unwrap();
        let short = StoredCredentials::new("client".into(), Some(token), vec![], Some(now));
        assert_eq!(store(1.0).jittered(short).token_received_at, Some(now - 10));
    }

    fn access_token_of(credentials: &StoredCredentials) -> String {
        let token = serde_json::to_value(credentials.token_response.as_ref().unwrap()).unwrap();
        token["access_token"].as_str().unwrap().to_string()
    }

    #[tokio::test]
    async fn a_fresh_credential_is_served_from_memory_and_a_due_one_from_the_vault() {
        let dir = tempfile::tempdir().unwrap();
        let store = |fraction| test_store(dir.path(), fraction);
        let mine = store(0.0);
        let other = store(0.0);
        let now = now_epoch_secs();
        mine.save(credentials("fresh", "r", now)).await.unwrap();
        // Another process logs out: a running session keeps its live token until it is due.
        other.clear().await.unwrap();
        let seen = mine.load().await.unwrap().unwrap();
        assert_eq!(access_token_of(&seen), "fresh");
        // Due for refresh: the vault is read, and what another process saved there wins.
        mine.save(credentials("stale", "r", now - 7200))
            .await
            .unwrap();
        other.save(credentials("rotated", "r2", now)).await.unwrap();
        let seen = mine.load().await.unwrap().unwrap();
        assert_eq!(access_token_of(&seen), "rotated");
        // A secret alone is never served from memory: a login made elsewhere is seen.
        mine.store_client_secret("another-client", "s")
            .await
            .unwrap();
        assert!(mine.load().await.unwrap().unwrap().token_response.is_none());
        other
            .save(credentials("signed-in", "r3", now))
            .await
            .unwrap();
        let seen = mine.load().await.unwrap().unwrap();
        assert_eq!(access_token_of(&seen), "signed-in");
        // And a cleared vault is seen as such once nothing live is remembered.
        mine.save(credentials("stale", "r", now - 7200))
            .await
            .unwrap();
        other.clear().await.unwrap();
        assert!(mine.load().await.unwrap().is_none());
    }

    #[tokio::test(start_paused = true)]
    async fn a_due_credential_reserves_the_lock_for_the_refresh() {
        let dir = tempfile::tempdir().unwrap();
        let store = VaultCredentialStore::new(CredentialVault::new(dir.path()), "http://h/mcp")
            .unwrap()
            .with_lock_wait(Duration::from_millis(200));
        store
            .save(credentials("a", "r", now_epoch_secs() - 7200))
            .await
            .unwrap();
        store.load().await.unwrap().unwrap();
        assert!(lock_state(&store.state).reserved.is_some());
        // A second load by the same store does not wait for its own lock.
        store.load().await.unwrap().unwrap();
        let guard = store.acquire_refresh_guard().await.unwrap();
        assert!(lock_state(&store.state).reserved.is_none());
        assert_eq!(lock_state(&store.state).guards, 1);
        drop(guard);
        assert!(!lock_state(&store.state).holds());
        // An unclaimed reservation is let go.
        store.load().await.unwrap().unwrap();
        assert!(lock_state(&store.state).holds());
        // (Paused time: the sleep advances the clock past the reservation's end at once.)
        tokio::time::sleep(RESERVATION_TTL + Duration::from_millis(1)).await;
        assert!(!lock_state(&store.state).holds());
    }
}
