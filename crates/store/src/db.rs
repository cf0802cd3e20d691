//! How every mcp-host database is opened: a pool over SQLite (a file in WAL mode, synced at
//! checkpoints, writers waiting for each other, foreign keys on) or PostgreSQL, through
//! sqlx's `Any` driver so that the same queries serve both. Queries are written once in
//! portable SQL with `$n` placeholders, which both drivers bind by number. The caller runs
//! its own migrations.

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

impl Backend {
    /// The server `pool` talks to, from the scheme of the URL it was opened with.
    pub fn of(pool: &AnyPool) -> Self {
        match pool.connect_options().database_url.scheme() {
            "postgres" | "postgresql" => Self::Postgres,
            _ => Self::Sqlite,
        }
    }

    /// Whether a multi-row `INSERT` binds the values its rows share again in every row.
    /// SQLite finds a numbered or named parameter (`?n`, `$n`) by comparing with every such
    /// parameter before it, when it parses and again as each value is bound, so a statement
    /// with many of them cost the square of their number (a 300-call turn's save spent 100 M
    /// instructions there with `$n`, still 9 M with `?n`). Anonymous `?` parameters are bound
    /// by position at no such cost, but cannot be reused: the shared values are bound again.
    pub(crate) fn shared_per_row(self) -> bool {
        matches!(self, Self::Sqlite)
    }

    /// How `rows` rows of `per_row` parameters each are cut into multi-row `INSERT`s: each a
    /// power of two rows, at most 32 and within the parameters SQLite allows a statement
    /// (32,766 since 3.32; 999 before); the most while that many are left, then the rest by
    /// its binary digits, largest first. Few rows a statement cost a round trip each (to
    /// SQLite's thread, or to the server); a statement for each count of rows cost a parse
    /// each (a 300-call turn's save made one of 199 rows and one of the rest, at about 7 k
    /// instructions a row, each used once). So every statement has one of six shapes, parsed
    /// once and kept in the connection's statement cache.
    pub(crate) fn insert_chunks(self, rows: usize, per_row: usize) -> impl Iterator<Item = usize> {
        let limit = match self {
            Self::Sqlite => (999 / per_row.max(1)).max(1),
            Self::Postgres => 100,
        };
        let most = power_of_two_at_most(limit.min(32));
        let mut left = rows;
        std::iter::from_fn(move || {
            let size = power_of_two_at_most(left.min(most));
            left -= size;
            (size > 0).then_some(size)
        })
    }
}

/// The largest power of two not above `n`; 0 for 0.
fn power_of_two_at_most(n: usize) -> usize {
    n.checked_ilog2().map_or(0, |log| 1 << log)
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
                    // In WAL mode NORMAL syncs at checkpoints, not at every commit: a row a
                    // call adds costs no fsync. A process that dies loses nothing committed;
                    // only a power loss or kernel crash can lose the last commits, never
                    // the file's consistency (see docs/architecture.md, "Durability").
                    conn.execute("PRAGMA synchronous = NORMAL").await?;
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

/// Opens the SQLite file at `path` (creating it and its directory if needed) and brings it
/// up to date with `migrator`, with no other process doing the same at the same time: two
/// `mcp-host` commands started at once on a new data folder raced to create the file, switch
/// it to WAL and apply the first migration, and one failed ("database is locked", or a disk
/// I/O error from the journal the other had just removed). An exclusive lock on
/// `PATH.lock` is held from before the file is opened until it is migrated.
pub async fn open_migrated(
    path: &Path,
    migrator: &sqlx::migrate::Migrator,
) -> Result<AnyPool, StoreError> {
    let open_err = |e: std::io::Error| StoreError::Open {
        path: path.display().to_string(),
        source: sqlx::Error::Io(e),
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(open_err)?;
    }
    let mut lock_path = path.as_os_str().to_owned();
    lock_path.push(".lock");
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(open_err)?;
    // Blocking until the other process has migrated (a short wait); off the async threads.
    let lock = tokio::task::spawn_blocking(move || lock.lock().map(|()| lock))
        .await
        .map_err(|e| open_err(std::io::Error::other(e)))?
        .map_err(open_err)?;
    let pool = open_sqlite(path).await?;
    migrator.run(&pool).await?;
    drop(lock);
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
    connect(&url, Backend::Sqlite, 1).await.map_err(open_err)
}
