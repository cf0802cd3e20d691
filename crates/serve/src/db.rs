//! The service database: one pool over SQLite (one file, WAL: the default) or PostgreSQL (for
//! more than one replica), the same migrations for both, and the small helpers every table
//! module shares (ids, clock, hashing). Queries are written once in portable SQL with `$n`
//! placeholders, which both drivers bind by number.

use sha2::{Digest, Sha256};
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{AnyPool, Executor};
use std::path::Path;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("cannot open the service database {url}: {source}")]
    Open { url: String, source: sqlx::Error },
    #[error("cannot migrate the service database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("service database query failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("the service database holds an unreadable value: {0}")]
    Corrupt(String),
    #[error("{0}")]
    Conflict(String),
}

/// Which server the pool talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone, Debug)]
pub struct Db {
    pub(crate) pool: AnyPool,
    pub backend: Backend,
}

impl Db {
    /// Opens `url` (`postgres://…`) or, with none, the SQLite file `default_file`, and
    /// brings its schema up to date.
    pub async fn open(url: Option<&str>, default_file: &Path) -> Result<Self, DbError> {
        install_default_drivers();
        let (url, backend) = match url {
            Some(u) if u.starts_with("postgres://") || u.starts_with("postgresql://") => {
                (u.to_string(), Backend::Postgres)
            }
            Some(u) if u.starts_with("sqlite:") => (u.to_string(), Backend::Sqlite),
            Some(u) => {
                return Err(DbError::Open {
                    url: redact(u),
                    source: sqlx::Error::Configuration(
                        "expected a postgres:// or sqlite: URL".into(),
                    ),
                });
            }
            None => {
                if let Some(dir) = default_file.parent() {
                    std::fs::create_dir_all(dir).map_err(|e| DbError::Open {
                        url: default_file.display().to_string(),
                        source: sqlx::Error::Io(e),
                    })?;
                }
                (
                    format!("sqlite://{}?mode=rwc", default_file.display()),
                    Backend::Sqlite,
                )
            }
        };
        let pool = AnyPoolOptions::new()
            .max_connections(if backend == Backend::Sqlite { 4 } else { 16 })
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _| {
                Box::pin(async move {
                    if backend == Backend::Sqlite {
                        // Writers from several tasks wait for each other instead of failing.
                        conn.execute("PRAGMA busy_timeout = 5000").await?;
                        conn.execute("PRAGMA foreign_keys = ON").await?;
                    }
                    Ok(())
                })
            })
            .connect(&url)
            .await
            .map_err(|source| DbError::Open {
                url: redact(&url),
                source,
            })?;
        if backend == Backend::Sqlite {
            // WAL is a property of the file: set once, it holds for every connection.
            sqlx::query("PRAGMA journal_mode = WAL")
                .execute(&pool)
                .await?;
        }
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(Self { pool, backend })
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

/// A URL as it may be shown: without its password.
pub fn redact(url: &str) -> String {
    // The query may carry it too (`?password=…`, libpq's form): everything after `?` goes.
    let url = url.split_once('?').map_or(url, |(base, _)| base);
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let creds = &url[scheme + 3..at];
            match creds.split_once(':') {
                Some((user, _)) => format!("{}{user}:***{}", &url[..scheme + 3], &url[at..]),
                None => url.to_string(),
            }
        }
        _ => url.to_string(),
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

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_url_is_shown_without_its_password() {
        assert_eq!(
            redact("postgres://mcp:s3cret@127.0.0.1:5432/db"),
            "postgres://mcp:***@127.0.0.1:5432/db"
        );
        assert_eq!(redact("sqlite:///tmp/x.db"), "sqlite:///tmp/x.db");
        assert_eq!(
            redact("postgres://mcp@127.0.0.1/db?password=s3cret&sslmode=require"),
            "postgres://mcp@127.0.0.1/db"
        );
    }
}
