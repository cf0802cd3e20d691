//! mcp-host persistence in SQLite. This file owns the [`Store`] handle, opening a SQLite file
//! ([`open_sqlite`]), the [`StoreError`] type, and the approval answers a user chose to
//! remember "always". (Answers for "once" and "this session" live in the engine's memory.)
//! Those are keyed by server id, tool and definition hash, so a changed definition is asked
//! about again.
//!
//! The store also keeps conversations and their messages (`conversations.rs`), the audit
//! trail of tool calls (`tool_calls.rs`) and large tool results spilled out of the prompt
//! (`results.rs`). All these tables live in one file and one migration sequence
//! (`migrations/`); tool-definition pins have a file and migrations of their own
//! (`pins.rs`: `pins.sqlite`, `pin_migrations/`). No secret is kept
//! here: OAuth credentials live in `mcp-host-auth`'s vault, out of the database, so a copy
//! of it carries no secret.

mod conversations;
pub mod pins;
mod results;
mod tool_calls;

pub use conversations::{ConversationId, ConversationSummary};
pub use results::result_handle;
pub use tool_calls::ToolCallRow;

use mcp_host_policy::{MemoryKey, Remembered, Verdict};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions};
use std::path::Path;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cannot open the store {path}: {source}")]
    Open { path: String, source: sqlx::Error },
    #[error("cannot migrate the store: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("store query failed: {0}")]
    Query(#[from] sqlx::Error),
    #[error("no conversation with id {0}")]
    NoConversation(String),
    #[error("not a conversation id: {0:?} (expected 32 hexadecimal digits)")]
    BadConversationId(String),
    #[error("not a result handle: {0:?} (expected 32 lowercase hexadecimal digits)")]
    BadHandle(String),
    #[error("cannot encode or decode stored JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// A row holds something this code never writes (hand edits, a newer version's data).
    #[error("the store holds an unreadable value: {0}")]
    Corrupt(String),
}

#[derive(Clone, Debug)]
pub struct Store {
    pool: SqlitePool,
}

fn verdict_text(v: Verdict) -> Option<&'static str> {
    match v {
        Verdict::Allow => Some("allow"),
        Verdict::Deny => Some("deny"),
        // "Ask" is the absence of an answer.
        Verdict::Ask => None,
    }
}

/// Lowercase hex, for ids and handles.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `text` is exactly `len` lowercase hex digits.
fn is_lower_hex(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// Rejected input is echoed in errors; a model or a user may paste megabytes, so keep a
/// readable start of it only.
fn excerpt(text: &str) -> String {
    const MAX: usize = 80;
    match text.char_indices().nth(MAX) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None => text.to_owned(),
    }
}

/// Opens (creating it and its directory if needed) a SQLite file the way every mcp-host
/// store wants it: WAL, a busy timeout, a small pool. The caller runs its own migrations.
pub async fn open_sqlite(path: &Path) -> Result<SqlitePool, StoreError> {
    let open_err = |source| StoreError::Open {
        path: path.display().to_string(),
        source,
    };
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| open_err(sqlx::Error::Io(e)))?;
    }
    let options = SqliteConnectOptions::new()
        .filename(path)
        .create_if_missing(true)
        .journal_mode(SqliteJournalMode::Wal)
        .busy_timeout(Duration::from_secs(5));
    SqlitePoolOptions::new()
        .max_connections(2)
        .connect_with(options)
        .await
        .map_err(open_err)
}

impl Store {
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let pool = open_sqlite(path).await?;
        sqlx::migrate!("./migrations").run(&pool).await?;
        Ok(Self { pool })
    }

    /// Remembers an answer for this exact definition (replacing an earlier one).
    pub async fn remember(&self, key: &MemoryKey, verdict: Verdict) -> Result<(), StoreError> {
        let Some(text) = verdict_text(verdict) else {
            return Ok(());
        };
        sqlx::query(
            "INSERT INTO remembered_answers (server, tool, definition_hash, verdict) VALUES (?, ?, ?, ?)
             ON CONFLICT (server, tool, definition_hash) DO UPDATE SET verdict = excluded.verdict,
                 answered_at = strftime('%Y-%m-%dT%H:%M:%SZ', 'now')",
        )
        .bind(&key.server)
        .bind(&key.tool)
        .bind(&key.definition_hash)
        .bind(text)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn remembered(&self) -> Result<Remembered, StoreError> {
        let rows: Vec<(String, String, String, String)> =
            sqlx::query_as("SELECT server, tool, definition_hash, verdict FROM remembered_answers")
                .fetch_all(&self.pool)
                .await?;
        let answers = rows
            .into_iter()
            .map(|(server, tool, definition_hash, v)| {
                let verdict = if v == "allow" {
                    Verdict::Allow
                } else {
                    Verdict::Deny
                };
                (
                    MemoryKey {
                        server,
                        tool,
                        definition_hash,
                    },
                    verdict,
                )
            })
            .collect();
        Ok(Remembered { answers })
    }

    /// Forgets the answers for one server's tool, for one server, or all of them.
    /// Returns how many were forgotten.
    pub async fn forget(
        &self,
        server: Option<&str>,
        tool: Option<&str>,
    ) -> Result<u64, StoreError> {
        let done = sqlx::query(
            "DELETE FROM remembered_answers WHERE (?1 IS NULL OR server = ?1) AND (?2 IS NULL OR tool = ?2)",
        )
        .bind(server)
        .bind(tool)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(server: &str, tool: &str, hash: &str) -> MemoryKey {
        MemoryKey {
            server: server.into(),
            tool: tool.into(),
            definition_hash: hash.into(),
        }
    }

    #[tokio::test]
    async fn answers_persist_per_definition_and_can_be_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("store.sqlite");
        let store = Store::open(&path).await.unwrap();
        store
            .remember(&key("a", "t", "h1"), Verdict::Allow)
            .await
            .unwrap();
        store
            .remember(&key("a", "u", "h1"), Verdict::Deny)
            .await
            .unwrap();
        store
            .remember(&key("b", "t", "h1"), Verdict::Allow)
            .await
            .unwrap();
        store
            .remember(&key("b", "t", "h1"), Verdict::Ask)
            .await
            .unwrap();
        drop(store);
        let store = Store::open(&path).await.unwrap();
        let r = store.remembered().await.unwrap();
        assert_eq!(r.answers.get(&key("a", "t", "h1")), Some(&Verdict::Allow));
        assert_eq!(
            r.answers.get(&key("a", "t", "h2")),
            None,
            "another definition is not remembered"
        );
        assert_eq!(r.answers.len(), 3);
        assert_eq!(store.forget(Some("a"), Some("u")).await.unwrap(), 1);
        assert_eq!(store.forget(Some("b"), None).await.unwrap(), 1);
        assert_eq!(store.forget(None, None).await.unwrap(), 1);
        assert!(store.remembered().await.unwrap().answers.is_empty());
    }
}
