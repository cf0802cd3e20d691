//! The service database: one pool over SQLite (one file, WAL: the default) or PostgreSQL (for
//! more than one replica), the same migrations for both, and the small helpers every table
//! module shares (ids, clock, hashing). Queries are written once in portable SQL with `$n`
//! placeholders, which both drivers bind by number (the pool is opened by
//! `mcp_host_store::db`). The engine's store of every user (histories, remembered answers,
//! large results, tool calls, pins) lives here too, in tables of its own, one scope per
//! user, and so do their sealed OAuth credentials ([`Db::user_data`]): a user's
//! conversation goes on with its context, and their sign-ins hold, on any replica.

pub use mcp_host_store::db::Backend;

use crate::credentials::UserCredentials;
use mcp_host_auth::CredentialRows;
use mcp_host_core::redact::url as redact;
use mcp_host_store::pins::PinStore;
use mcp_host_store::{Store, StoreError};
use sha2::{Digest, Sha256};
use sqlx::AnyPool;
use std::path::Path;
use std::sync::Arc;

/// The service's own tables (`migrations/`); the store's are its own crate's.
const SERVICE_MIGRATIONS: &[mcp_host_store::migrations::Embedded] = mcp_host_store::embed_migrations!("migrations":
    "0001_service.sql",
    "0002_leases_settings_expiry.sql",
);

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot open the service database {url}: {source}")]
    Open { url: String, source: sqlx::Error },
    #[error("cannot migrate the service database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("cannot migrate the users' stores in the service database: {0}")]
    Store(#[from] StoreError),
    #[error("service database query failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("the service database holds an unreadable value: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Conflict(String),
}

#[derive(Clone, Debug)]
pub struct Db {
    pub(crate) pool: AnyPool,
    /// The same database for the sessions' stores, which run on the worker threads' own
    /// runtimes. A PostgreSQL connection's socket belongs to the runtime that opened it;
    /// keeping the workers' connections in a pool of their own means the service's runtime
    /// never depends on a worker's, which stops first at drain.
    sessions: AnyPool,
    pub backend: Backend,
}

impl Db {
    /// Opens `url` (`postgres://…`) or, with none, the SQLite file `default_file`, and
    /// brings its schema up to date.
    pub async fn open(url: Option<&str>, default_file: &Path) -> Result<Self, DbError> {
        let (url, backend) = match url {
            Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => {
                (u.to_string(), Backend::Postgres)
            }
            Some(u) if u.starts_with("sqlite:") => (u.to_string(), Backend::Sqlite),
            Some(u) => {
                return Err(DbError::Open {
                    url: redact(u).into_owned(),
                    source: sqlx::Error::Configuration(
                        "expected a postgres:// or sqlite: URL".into(),
                    ),
                });
            }
            None => {
                let url =
                    mcp_host_store::db::sqlite_url(default_file).map_err(|e| DbError::Open {
                        url: default_file.display().to_string(),
                        source: sqlx::Error::Io(e),
                    })?;
                (url, Backend::Sqlite)
            }
        };
        let max = if backend == Backend::Sqlite { 4 } else { 16 };
        let open_err = |source| DbError::Open {
            url: redact(&url).into_owned(),
            source,
        };
        let pool = (mcp_host_store::db::connect(&url, backend, max).await).map_err(open_err)?;
        let sessions =
            (mcp_host_store::db::connect(&url, backend, max / 2).await).map_err(open_err)?;
        mcp_host_store::migrations::migrator(SERVICE_MIGRATIONS)?
            .run(&pool)
            .await?;
        Store::migrate_shared(&pool).await?;
        Ok(Self {
            pool,
            sessions,
            backend,
        })
    }

    /// What `user` keeps in this database (their rows, no one else's), for the service's
    /// own runtime.
    pub fn user_data(&self, user: &str) -> UserData {
        UserData::of(&self.pool, user)
    }

    /// The same for a session on a worker thread.
    pub fn session_user_data(&self, user: &str) -> UserData {
        UserData::of(&self.sessions, user)
    }
}

/// One user's part of the database: the engine's store, the tool-definition pins, and the
/// sealed OAuth credentials for remote servers.
#[derive(Clone, Debug)]
pub struct UserData {
    pub store: Store,
    pub pins: PinStore,
    pub credentials: Arc<dyn CredentialRows>,
}

impl UserData {
    fn of(pool: &AnyPool, user: &str) -> Self {
        Self {
            store: Store::scoped(pool.clone(), user),
            pins: PinStore::scoped(pool.clone(), user),
            credentials: Arc::new(UserCredentials {
                pool: pool.clone(),
                user: user.to_string(),
            }),
        }
    }
}

impl Db {
    /// What the pool talks to, for the start-up line: the backend and, for PostgreSQL,
    /// whether this connection is encrypted.
    pub async fn describe(&self) -> Result<String, DbError> {
        match self.backend {
            Backend::Sqlite => Ok("SQLite".into()),
            Backend::Postgres => {
                let row = sqlx::query(
                    "SELECT CASE WHEN ssl THEN 1 ELSE 0 END AS tls FROM pg_stat_ssl WHERE pid = pg_backend_pid()",
                )
                .fetch_one(&self.pool)
                .await?;
                let tls: i32 = sqlx::Row::try_get(&row, "tls")?;
                Ok(if tls == 1 {
                    "PostgreSQL over TLS"
                } else {
                    "PostgreSQL (no TLS)"
                }
                .into())
            }
        }
    }
}

/// Milliseconds since the Unix epoch.
pub fn now_ms() -> i64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// A new random id: 16 bytes as lowercase hex.
pub fn new_id() -> String {
    hex(&rand::random::<[u8; 16]>())
}

/// A new secret (token, cookie, CSRF token): 32 random bytes, URL-safe base64.
pub fn new_secret() -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(rand::random::<[u8; 32]>())
}

/// What is kept of a secret: its SHA-256, hex. Secrets are 256 random bits, so a plain hash
/// is enough (no password stretching needed) and lookups stay indexed.
pub fn secret_hash(secret: &str) -> String {
    hex(&Sha256::digest(secret.as_bytes()))
}

pub use mcp_host_core::hex::lower as hex;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_migrations_are_its_folder() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations");
        if let Err(e) = mcp_host_store::migrations::check_folder(&dir, SERVICE_MIGRATIONS) {
            panic!("{e}");
        }
    }
}
