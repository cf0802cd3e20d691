//! How every mcp-host database is opened: a pool over SQLite (a file in WAL mode, writers
//! waiting for each other, foreign keys on) or PostgreSQL, through sqlx's `Any` driver so
//! that the same queries serve both. Queries are written once in portable SQL with `$n`
//! placeholders, which both drivers bind by number. The caller runs its own migrations.

use crate::StoreError;
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::sqlite::SqliteConnectOptions;
use sqlx::{AnyPool, ConnectOptions, Executor};
use std::path::Path;
use std::time::Duration;

/// Which server a pool talks to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

/// The `sqlite://` URL of the file at `path` (any characters in it escaped), creating its
/// directory if needed.
pub fn sqlite_url(path: &Path) -> std::io::Result<String> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    Ok(SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .to_url_lossy()
        .to_string())
}

/// A pool of at most `max_connections` over `url`.
pub async fn connect(
    url: &str,
    backend: Backend,
    max_connections: u32,
) -> Result<AnyPool, sqlx::Error> {
    install_default_drivers();
    let pool = AnyPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .after_connect(move |conn, _| {
            Box::pin(async move {
                if backend == Backend::Sqlite {
                    // Writers from several tasks and processes wait for each other instead
                    // of failing; foreign keys are off by default in SQLite.
                    conn.execute("PRAGMA busy_timeout = 5000").await?;
                    conn.execute("PRAGMA foreign_keys = ON").await?;
                }
                Ok(())
            })
        })
        .connect(url)
        .await?;
    if backend == Backend::Sqlite {
        // WAL is a property of the file: set once, it holds for every connection.
        sqlx::query("PRAGMA journal_mode = WAL")
            .execute(&pool)
            .await?;
    }
    Ok(pool)
}

/// Opens (creating it and its directory if needed) the SQLite file at `path` with a small
/// pool, as every store file of one person is opened.
pub async fn open_sqlite(path: &Path) -> Result<AnyPool, StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.display().to_string(),
        source,
    };
    let url = sqlite_url(path).map_err(|e| open_err(sqlx::Error::Io(e)))?;
    connect(&url, Backend::Sqlite, 2).await.map_err(open_err)
}
