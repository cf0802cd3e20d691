//! Where OAuth credentials persist: [`CredentialVault`], one credential per (authorization
//! server issuer, resource) key. The contents go to the OS keyring when one is reachable and
//! unlocked ([`crate::OsKeyring`], probed once, on first use, so commands that never touch a
//! credential never pay for D-Bus), else to one file per key, readable by the user alone
//! (0600, in a 0700 directory), written atomically (a temporary file, fsync, rename), so a
//! crash never leaves half a token. [`VaultChoice`] can force either.
//!
//! A refresh is serialised across processes by an exclusive `flock` on a lock file in the
//! same directory, whichever holds the contents: whoever holds it reads the current
//! credential, refreshes, and writes the rotated one before releasing it, so a second
//! process waiting for the lock finds the new token and does not refresh again.
//!
//! With the keyring in use, a file left from a time without one is still read (and removed
//! when the keyring takes the next save), so moving to a desktop session loses no sign-in.
//! A hosted service keeps its users' credentials in rows of its database instead
//! ([`CredentialVault::sealed_rows`], `credential_rows.rs`), sealed, with a refresh lease
//! for the lock. The content is opaque JSON to this module; it never logs it.

use crate::credential_rows::{CredentialRows, LEASE, Lease};
use crate::keyring::OsKeyring;
use crate::sealed::SealingKey;
use sha2::{Digest, Sha256};
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    #[error("credential store {path}: {source}")]
    Io {
        path: String,
        source: std::io::Error,
    },
    #[error("credential file {path} is not valid JSON: {detail}")]
    Corrupt { path: String, detail: String },
    #[error("another process held the refresh lock for {0:?}")]
    LockTimeout(Duration),
    #[error("OS keyring, credential for {resource}: {detail}")]
    Keyring { resource: String, detail: String },
    #[error("{0} (MCP_HOST_CREDENTIAL_STORE=keyring)")]
    KeyringRequired(String),
    #[error("the service's credential store: {0}")]
    Rows(String),
}

/// Where credential contents may go.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum VaultChoice {
    /// The OS keyring when it works, else private files.
    #[default]
    Auto,
    /// The OS keyring or nothing: every operation fails when it is unavailable.
    Keyring,
    /// Private files only.
    Files,
}

impl std::str::FromStr for VaultChoice {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "auto" | "" => Ok(Self::Auto),
            "keyring" => Ok(Self::Keyring),
            "file" | "files" => Ok(Self::Files),
            other => Err(format!(
                "unknown credential store `{other}` (expected auto, keyring or file)"
            )),
        }
    }
}

/// How a vault protects what it holds, for telling the person.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Protection {
    OsKeyring,
    /// Private files sealed with a service key.
    SealedFiles,
    /// Rows of the service's database, sealed with the service key (the hosted mode).
    SealedRows,
    /// Private files; `why` says why not the keyring (None when files were chosen).
    PrivateFiles {
        why: Option<String>,
    },
}

impl std::fmt::Display for Protection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::OsKeyring => f.write_str("OS keyring (Secret Service)"),
            Self::SealedFiles => {
                f.write_str("private files sealed with the service key (AES-256-GCM)")
            }
            Self::SealedRows => {
                f.write_str("the service database, sealed with the service key (AES-256-GCM)")
            }
            Self::PrivateFiles { why: None } => f.write_str("private files (0600)"),
            Self::PrivateFiles { why: Some(why) } => write!(f, "private files (0600); {why}"),
        }
    }
}

/// What the first use of a vault found.
#[derive(Debug)]
enum Backend {
    Keyring(OsKeyring),
    Files {
        why: Option<String>,
    },
    /// The keyring was required and is not there.
    Unavailable(String),
    /// A service's shared store (always sealed).
    Rows(Arc<dyn CredentialRows>),
}

/// Which credential: the issuer that granted it and the resource (server) it is for.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CredentialKey {
    pub issuer: String,
    pub resource: String,
}

impl CredentialKey {
    /// The file stem and keyring account: a hash, so neither URL appears in a name.
    pub(crate) fn stem(&self) -> String {
        let digest = Sha256::digest(format!("{}\n{}", self.issuer, self.resource).as_bytes());
        digest[..16].iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The credential store of one user: the keyring or files for contents, and a directory
/// for files and refresh locks. Clones share the one probe of the keyring.
#[derive(Clone, Debug)]
pub struct CredentialVault {
    dir: PathBuf,
    choice: VaultChoice,
    backend: Arc<OnceLock<Backend>>,
    /// Files are sealed with this key, bound to this context (whose credentials they are).
    seal: Option<(Arc<SealingKey>, String)>,
}

/// What a sealed file is bound to: whose vault, and which credential.
fn aad(context: &str, key: &CredentialKey) -> String {
    format!(
        "mcp-host credential\n{context}\n{}\n{}",
        key.issuer, key.resource
    )
}

/// Held while a refresh is in progress; dropping it lets the next process in.
#[derive(Debug)]
pub struct RefreshLock {
    _held: Held,
}

#[derive(Debug)]
enum Held {
    File(#[allow(dead_code)] nix::fcntl::Flock<File>),
    Lease(#[allow(dead_code)] Lease),
}

fn io_err(path: &Path) -> impl FnOnce(std::io::Error) -> CredentialError + '_ {
    move |source| CredentialError::Io {
        path: path.display().to_string(),
        source,
    }
}

impl CredentialVault {
    /// Files in `dir` only (no keyring).
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self::choosing(dir, VaultChoice::Files)
    }

    /// Contents where `choice` says; `dir` holds the files and the refresh locks.
    pub fn choosing(dir: impl Into<PathBuf>, choice: VaultChoice) -> Self {
        Self {
            dir: dir.into(),
            choice,
            backend: Arc::default(),
            seal: None,
        }
    }

    /// Files in `dir` sealed with `key` for `context` (who they belong to): a file opens
    /// only with the same key, in the same context, under the same credential key, and a
    /// plain file found there is refused, never read.
    pub fn sealed(
        dir: impl Into<PathBuf>,
        key: Arc<SealingKey>,
        context: impl Into<String>,
    ) -> Self {
        Self {
            seal: Some((key, context.into())),
            ..Self::choosing(dir, VaultChoice::Files)
        }
    }

    /// Rows of a service's store, sealed with `key` for `context` (who they belong to), as
    /// [`CredentialVault::sealed`] seals files. Refresh locks are the rows' leases.
    pub fn sealed_rows(
        rows: Arc<dyn CredentialRows>,
        key: Arc<SealingKey>,
        context: impl Into<String>,
    ) -> Self {
        let vault = Self::sealed(PathBuf::new(), key, context);
        let _ = vault.backend.set(Backend::Rows(rows));
        vault
    }

    fn backend(&self) -> &Backend {
        self.backend.get_or_init(|| match self.choice {
            VaultChoice::Files => Backend::Files { why: None },
            VaultChoice::Auto => match OsKeyring::probe() {
                Ok(k) => Backend::Keyring(k),
                Err(e) => Backend::Files {
                    why: Some(e.to_string()),
                },
            },
            VaultChoice::Keyring => match OsKeyring::probe() {
                Ok(k) => Backend::Keyring(k),
                Err(e) => Backend::Unavailable(e.to_string()),
            },
        })
    }

    /// Where the contents go (probing the keyring if not done yet).
    pub fn protection(&self) -> Result<Protection, CredentialError> {
        match self.backend() {
            Backend::Rows(_) => Ok(Protection::SealedRows),
            _ if self.seal.is_some() => Ok(Protection::SealedFiles),
            Backend::Keyring(_) => Ok(Protection::OsKeyring),
            Backend::Files { why } => Ok(Protection::PrivateFiles { why: why.clone() }),
            Backend::Unavailable(why) => Err(CredentialError::KeyringRequired(why.clone())),
        }
    }

    /// The stored credential, if any.
    pub async fn load(
        &self,
        key: &CredentialKey,
    ) -> Result<Option<serde_json::Value>, CredentialError> {
        match self.backend() {
            Backend::Keyring(k) => match k.load(key)? {
                Some(v) => Ok(Some(v)),
                None => self.load_file(key),
            },
            Backend::Files { .. } => self.load_file(key),
            Backend::Unavailable(why) => Err(CredentialError::KeyringRequired(why.clone())),
            Backend::Rows(rows) => match rows.load(key).await? {
                Some(sealed) => self
                    .open_sealed(key, &sealed, "the service database")
                    .map(Some),
                None => Ok(None),
            },
        }
    }

    /// Replaces the stored credential.
    pub async fn save(
        &self,
        key: &CredentialKey,
        value: &serde_json::Value,
    ) -> Result<(), CredentialError> {
        match self.backend() {
            Backend::Keyring(k) => {
                k.save(key, value)?;
                // The keyring has it now; a file copy from before would only go stale.
                self.clear_file(key)
            }
            Backend::Files { .. } => self.save_file(key, value),
            Backend::Unavailable(why) => Err(CredentialError::KeyringRequired(why.clone())),
            Backend::Rows(rows) => {
                let sealed = self.seal_value(key, value)?;
                rows.save(key, &sealed).await
            }
        }
    }

    /// Forgets the credential (logout), wherever it is. Absent already is fine.
    pub async fn clear(&self, key: &CredentialKey) -> Result<(), CredentialError> {
        match self.backend() {
            Backend::Rows(rows) => return rows.clear(key).await,
            Backend::Keyring(k) => k.clear(key)?,
            Backend::Files { .. } | Backend::Unavailable(_) => {}
        }
        self.clear_file(key)
    }

    /// `value` sealed for `key` in this vault's context. Only a sealed vault calls this.
    fn seal_value(
        &self,
        key: &CredentialKey,
        value: &serde_json::Value,
    ) -> Result<String, CredentialError> {
        let Some((seal, context)) = &self.seal else {
            return Err(CredentialError::Rows(
                "a vault without a key cannot seal".into(),
            ));
        };
        seal.seal(value.to_string().as_bytes(), &aad(context, key))
            .map_err(|e| CredentialError::Rows(e.to_string()))
    }

    /// Opens `sealed` (kept at `place`) as `key`'s credential in this vault's context.
    fn open_sealed(
        &self,
        key: &CredentialKey,
        sealed: &str,
        place: &str,
    ) -> Result<serde_json::Value, CredentialError> {
        let corrupt = |detail: String| CredentialError::Corrupt {
            path: place.to_string(),
            detail,
        };
        let Some((seal, context)) = &self.seal else {
            return Err(corrupt(
                "a sealed credential in a vault without a key".into(),
            ));
        };
        let plain = (seal.open(sealed, &aad(context, key))).map_err(|e| corrupt(e.to_string()))?;
        serde_json::from_slice(&plain).map_err(|e| corrupt(e.to_string()))
    }

    fn ensure_dir(&self) -> Result<(), CredentialError> {
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(io_err(&self.dir))?;
        // An existing directory keeps its mode unless told: tighten it.
        std::fs::set_permissions(&self.dir, std::fs::Permissions::from_mode(0o700))
            .map_err(io_err(&self.dir))
    }

    /// The file that holds `key`'s credential when files hold the contents.
    pub fn path(&self, key: &CredentialKey) -> PathBuf {
        self.dir.join(format!("{}.json", key.stem()))
    }

    fn load_file(&self, key: &CredentialKey) -> Result<Option<serde_json::Value>, CredentialError> {
        let path = self.path(key);
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err(&path)(e)),
        };
        let corrupt = |detail: String| CredentialError::Corrupt {
            path: path.display().to_string(),
            detail,
        };
        let stored: serde_json::Value =
            serde_json::from_str(&text).map_err(|e| corrupt(e.to_string()))?;
        if self.seal.is_none() {
            return Ok(Some(stored));
        }
        let Some(sealed) = stored.get("sealed").and_then(|v| v.as_str()) else {
            return Err(corrupt("a plain credential in a sealed vault".into()));
        };
        self.open_sealed(key, sealed, &path.display().to_string())
            .map(Some)
    }

    /// Replaces the file, atomically, readable by the user alone.
    fn save_file(
        &self,
        key: &CredentialKey,
        value: &serde_json::Value,
    ) -> Result<(), CredentialError> {
        self.ensure_dir()?;
        let path = self.path(key);
        let contents = match &self.seal {
            None => value.to_string(),
            Some(_) => serde_json::json!({ "sealed": self.seal_value(key, value)? }).to_string(),
        };
        // Unique per write: two saves of one key at once (two tasks, or two processes) must
        // not share a temporary file.
        let tmp = self.dir.join(format!(
            "{}.{}.{:016x}.tmp",
            key.stem(),
            std::process::id(),
            rand::random::<u64>()
        ));
        let write = || -> std::io::Result<()> {
            let mut f = OpenOptions::new()
                .write(true)
                .create_new(true)
                .mode(0o600)
                .open(&tmp)?;
            f.write_all(contents.as_bytes())?;
            f.sync_all()?;
            std::fs::rename(&tmp, &path)?;
            // The rename is durable once the directory is.
            File::open(&self.dir)?.sync_all()
        };
        write().map_err(|e| {
            let _ = std::fs::remove_file(&tmp);
            io_err(&path)(e)
        })
    }

    fn clear_file(&self, key: &CredentialKey) -> Result<(), CredentialError> {
        let path = self.path(key);
        match std::fs::remove_file(&path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(io_err(&path)(e)),
        }
    }

    /// Takes the credential's refresh lock, waiting at most `wait` for another process
    /// (or, in a service's rows, another replica).
    pub async fn lock_refresh(
        &self,
        key: &CredentialKey,
        wait: Duration,
    ) -> Result<RefreshLock, CredentialError> {
        let deadline = tokio::time::Instant::now() + wait;
        loop {
            if let Some(held) = self.try_lock_refresh(key).await? {
                return Ok(RefreshLock { _held: held });
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(CredentialError::LockTimeout(wait));
            }
            // Polling keeps the wait async and bounded; a refresh takes milliseconds.
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// The refresh lock if nobody holds it now.
    async fn try_lock_refresh(&self, key: &CredentialKey) -> Result<Option<Held>, CredentialError> {
        if let Backend::Rows(rows) = self.backend() {
            // Unique per attempt: a lease is given back only by whoever took it.
            let holder = format!("{:032x}", rand::random::<u128>());
            return Ok(rows.try_lease(key, &holder, LEASE).await?.then(|| {
                Held::Lease(Lease {
                    rows: rows.clone(),
                    key: key.clone(),
                    holder,
                })
            }));
        }
        self.ensure_dir()?;
        let path = self.dir.join(format!("{}.lock", key.stem()));
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .mode(0o600)
            .open(&path)
            .map_err(io_err(&path))?;
        match nix::fcntl::Flock::lock(file, nix::fcntl::FlockArg::LockExclusiveNonblock) {
            Ok(lock) => Ok(Some(Held::File(lock))),
            Err((_, nix::errno::Errno::EWOULDBLOCK)) => Ok(None),
            Err((_, errno)) => Err(io_err(&path)(std::io::Error::from(errno))),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn key() -> CredentialKey {
        CredentialKey {
            issuer: "https://as.example".into(),
            resource: "https://mcp.example/mcp".into(),
        }
    }

    #[tokio::test]
    async fn credentials_round_trip_in_private_files_and_can_be_cleared() {
        let dir = tempfile::tempdir().unwrap();
        let files = CredentialVault::new(dir.path().join("creds"));
        assert!(files.load(&key()).await.unwrap().is_none());
        let value = json!({"access_token": "a1", "refresh_token": "r1", "client_secret": "s"});
        files.save(&key(), &value).await.unwrap();
        assert_eq!(files.load(&key()).await.unwrap().unwrap(), value);
        let path = files.path(&key());
        let mode = std::fs::metadata(&path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let dir_mode = std::fs::metadata(dir.path().join("creds"))
            .unwrap()
            .permissions()
            .mode()
            & 0o777;
        assert_eq!(dir_mode, 0o700);
        // Neither URL leaks into a file name.
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        assert!(!name.contains("example"));
        // A different resource is a different credential (a token is for one audience).
        let other = CredentialKey {
            resource: "https://other.example/mcp".into(),
            ..key()
        };
        assert!(files.load(&other).await.unwrap().is_none());
        files.clear(&key()).await.unwrap();
        files.clear(&key()).await.unwrap();
        assert!(files.load(&key()).await.unwrap().is_none());
    }

    #[tokio::test]
    async fn a_sealed_vault_keeps_no_token_in_plain_and_opens_only_its_own_files() {
        let dir = tempfile::tempdir().unwrap();
        let secret = SealingKey::generate().unwrap();
        let seal = Arc::new(SealingKey::from_base64(&secret).unwrap());
        let alice = CredentialVault::sealed(dir.path().join("a"), seal.clone(), "user a");
        let value = json!({"access_token": "tok-a1", "refresh_token": "ref-a1"});
        alice.save(&key(), &value).await.unwrap();
        let on_disk = std::fs::read_to_string(alice.path(&key())).unwrap();
        assert!(
            !on_disk.contains("tok-a1") && !on_disk.contains("ref-a1"),
            "{on_disk}"
        );
        assert_eq!(alice.load(&key()).await.unwrap().unwrap(), value);
        assert_eq!(alice.protection().unwrap(), Protection::SealedFiles);
        // Alice's file copied into Bob's vault does not open there.
        let bob = CredentialVault::sealed(dir.path().join("b"), seal, "user b");
        std::fs::create_dir_all(dir.path().join("b")).unwrap();
        std::fs::copy(alice.path(&key()), bob.path(&key())).unwrap();
        assert!(matches!(
            bob.load(&key()).await,
            Err(CredentialError::Corrupt { .. })
        ));
        // A plain file planted in a sealed vault is refused, not believed.
        std::fs::write(bob.path(&key()), value.to_string()).unwrap();
        assert!(matches!(
            bob.load(&key()).await,
            Err(CredentialError::Corrupt { .. })
        ));
    }

    #[tokio::test]
    async fn the_refresh_lock_is_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let files = CredentialVault::new(dir.path());
        let held = files
            .lock_refresh(&key(), Duration::from_secs(1))
            .await
            .unwrap();
        // flock locks belong to open file descriptions, so a second open in this process
        // contends exactly as another process would.
        let second = files.lock_refresh(&key(), Duration::from_millis(100)).await;
        assert!(matches!(second, Err(CredentialError::LockTimeout(_))));
        drop(held);
        files
            .lock_refresh(&key(), Duration::from_secs(1))
            .await
            .unwrap();
    }
}
