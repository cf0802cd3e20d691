//! The OS keyring as a home for credential contents: the freedesktop Secret Service over
//! D-Bus (gnome-keyring, KWallet, KeePassXC), through `keyring-core` and its pure-Rust zbus
//! store. One item per credential, under the service [`SERVICE`] and an account named by
//! the credential's key hash (so no URL is an attribute anyone can search by), labelled with
//! the resource so a person browsing their keyring knows what it is.
//!
//! Whether the keyring can be used is found out by [`OsKeyring::probe`], which writes, reads
//! and deletes a canary item: connecting is not enough, because a locked keyring or one
//! without a default collection accepts the connection and the lookups, and fails only on
//! the write. Without a session bus the probe fails in about a millisecond. A locked keyring
//! on a desktop answers the write by asking its owner for the password (the Secret Service
//! waits for that prompt without a deadline), so the probe gives up after
//! [`PROBE_TIMEOUT`] and files are used: a background connection never hangs on a dialog
//! nobody may be there to answer. (The abandoned probe thread finishes, and deletes its
//! canary, if the prompt is answered later.)
//!
//! The calls are blocking D-Bus round trips of a few milliseconds. They are made from async
//! code deliberately: the zbus store is built with `crypto-rust` (async-io underneath), whose
//! blocking calls are safe inside a tokio runtime; with zbus's `tokio` feature they would
//! panic there ("cannot start a runtime from within a runtime"), so that feature must not
//! be enabled anywhere in the tree.

use crate::credentials::{CredentialError, CredentialKey};
use keyring_core::{Entry, Error as KeyringError, api::CredentialStore};
use std::collections::HashMap;
use std::sync::Arc;

/// The Secret Service "service" attribute of every item this host stores.
pub const SERVICE: &str = "mcp-host";

/// How long the probe waits for the keyring to accept its canary.
pub const PROBE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(5);

/// A reachable, unlocked keyring that accepted a write.
#[derive(Clone)]
pub struct OsKeyring {
    store: Arc<CredentialStore>,
}

impl std::fmt::Debug for OsKeyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OsKeyring(Secret Service)")
    }
}

/// Why the keyring is not used (shown to the person, so it says what was tried).
#[derive(Debug, thiserror::Error)]
#[error("OS keyring (Secret Service) unavailable: {0}")]
pub struct KeyringUnavailable(String);

fn keyring_error(key: &CredentialKey, e: KeyringError) -> CredentialError {
    CredentialError::Keyring {
        resource: key.resource.clone(),
        detail: e.to_string(),
    }
}

impl OsKeyring {
    /// Connects to the Secret Service and proves it can store: write, read back, delete,
    /// within [`PROBE_TIMEOUT`].
    pub fn probe() -> Result<Self, KeyringUnavailable> {
        let (answer, answered) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            // The receiver is gone if the probe timed out; nobody needs the answer then.
            let _ = answer.send(Self::probe_now());
        });
        answered.recv_timeout(PROBE_TIMEOUT).unwrap_or_else(|_| {
            Err(KeyringUnavailable(format!(
                "no answer within {} s (a locked keyring waiting for its password?)",
                PROBE_TIMEOUT.as_secs()
            )))
        })
    }

    fn probe_now() -> Result<Self, KeyringUnavailable> {
        let unavailable = |what: &str, e: KeyringError| KeyringUnavailable(format!("{what}: {e}"));
        let store: Arc<CredentialStore> = zbus_secret_service_keyring_store::Store::new()
            .map_err(|e| unavailable("connect", e))?;
        // Unique per probe: two probes at once (two processes, or two vaults in one) must
        // not delete each other's canary.
        let canary = format!(
            "probe-{}-{:016x}",
            std::process::id(),
            rand::random::<u64>()
        );
        let entry =
            Entry::new_in_store(&store, SERVICE, &canary).map_err(|e| unavailable("entry", e))?;
        entry
            .set_password("canary")
            .map_err(|e| unavailable("write", e))?;
        let read = entry.get_password().map_err(|e| unavailable("read", e));
        // Delete even when the read failed, so no canary is left behind.
        let deleted = entry.delete_credential();
        if read? != "canary" {
            return Err(KeyringUnavailable("read back something else".into()));
        }
        deleted.map_err(|e| unavailable("delete", e))?;
        Ok(Self { store })
    }

    fn entry(&self, key: &CredentialKey) -> Result<Entry, CredentialError> {
        let label = format!("mcp-host OAuth credential for {}", key.resource);
        let modifiers = HashMap::from([("label", label.as_str())]);
        Entry::new_in_store_with_modifiers(&self.store, SERVICE, &key.stem(), &modifiers)
            .map_err(|e| keyring_error(key, e))
    }

    /// The stored value, if any. It is opaque JSON to this module.
    pub fn load(&self, key: &CredentialKey) -> Result<Option<serde_json::Value>, CredentialError> {
        let text = match self.entry(key)?.get_password() {
            Ok(text) => text,
            Err(KeyringError::NoEntry) => return Ok(None),
            Err(e) => return Err(keyring_error(key, e)),
        };
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|e| CredentialError::Corrupt {
                path: format!("keyring item for {}", key.resource),
                detail: e.to_string(),
            })
    }

    pub fn save(
        &self,
        key: &CredentialKey,
        value: &serde_json::Value,
    ) -> Result<(), CredentialError> {
        self.entry(key)?
            .set_password(&value.to_string())
            .map_err(|e| keyring_error(key, e))
    }

    /// Deletes the item. Absent already is fine.
    pub fn clear(&self, key: &CredentialKey) -> Result<(), CredentialError> {
        match self.entry(key)?.delete_credential() {
            Ok(()) | Err(KeyringError::NoEntry) => Ok(()),
            Err(e) => Err(keyring_error(key, e)),
        }
    }
}
