//! mcp-host persistence. This file owns the [`Store`] handle (a pool and the scope its rows
//! belong to), opening a person's own SQLite file ([`Store::open`]) or a scope of a service
//! database ([`Store::migrate_shared`], [`Store::scoped`]), the [`StoreError`] type, and the
//! approval answers a user chose to remember "always". (Answers for "once" and "this
//! session" live in the engine's memory.) Those are keyed by server id, tool and definition
//! hash, so a changed definition is asked about again.
//!
//! The store also keeps conversation histories and their messages (`conversations.rs`), the
//! audit trail of tool calls (`tool_calls.rs`) and large tool results spilled out of the
//! prompt (`results.rs`). For one person they live in one file and one migration sequence
//! (`migrations/`); tool-definition pins have a file and migrations of their own (`pins.rs`:
//! `pins.sqlite`, `pin_migrations/`). In a service database (the hosted mode: SQLite or
//! PostgreSQL, shared by its replicas) all of them are tables of that database
//! (`shared_migrations/`, tracked apart from the service's own), every row in the scope of
//! one user, and every query names its scope: one user's store never reads another's
//! rows. The tables and queries are the same in both; `db.rs` opens either. No secret is
//! kept here: OAuth credentials live in `mcp-host-auth`'s vault, so a copy of the store
//! carries no secret.

mod conversations;
pub mod db;
pub mod migrations;
pub mod pins;
mod results;
mod tool_calls;

pub use conversations::{ConversationId, ConversationSummary};
pub use results::result_handle;
pub use tool_calls::ToolCallRow;

pub use db::open_sqlite;

// Lowercase hex, for ids and handles.
use mcp_host_core::hex::lower as hex;
use mcp_host_core::time::rfc3339;
use mcp_host_policy::{MemoryKey, Remembered, Verdict};
use sqlx::AnyPool;
use std::path::Path;
use std::sync::Arc;
use std::time::SystemTime;

/// A person's own store file (`migrations/`).
const OWN_MIGRATIONS: &[migrations::Embedded] = embed_migrations!("migrations":
    "20261129000002_remembered_answers.sql",
    "20261129000003_conversations.sql",
    "20261201000001_scoped.sql",
    "20261203000001_tool_call_position.sql",
);

/// The store's tables in a service database (`shared_migrations/`).
const SHARED_MIGRATIONS: &[migrations::Embedded] = embed_migrations!("shared_migrations":
    "20261201000001_store.sql",
    "20261203000001_tool_call_position.sql",
    "20261206000001_pin_schema_checked.sql",
);

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

/// One user's store: a pool and the scope every row it reads and writes is in.
#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    scope: Arc<str>,
    backend: db::Backend,
}

/// The scope of a person's own files: they hold one user's rows only.
const OWN_FILE: &str = "";

/// Where the service database records which of the store's migrations it has run: apart
/// from the service's own, so neither sequence sees the other's as unknown.
const SHARED_MIGRATIONS_TABLE: &str = "_mcp_host_store_migrations";

/// Now, as stored: UTC, RFC 3339, milliseconds, so text order is time order.
fn now() -> String {
    rfc3339(SystemTime::now())
}

fn verdict_text(v: Verdict) -> Option<&'static str> {
    match v {
        Verdict::Allow => Some("allow"),
        Verdict::Deny => Some("deny"),
        // "Ask" is the absence of an answer.
        Verdict::Ask => None,
    }
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

impl Store {
    /// A person's own store file at `path`, created or brought up to date.
    pub async fn open(path: &Path) -> Result<Self, StoreError> {
        let pool = db::open_migrated(path, &migrations::migrator(OWN_MIGRATIONS)?).await?;
        Ok(Self::scoped(pool, OWN_FILE))
    }

    /// Creates or brings up to date the store's tables (pins included) in a service
    /// database, beside the service's own.
    pub async fn migrate_shared(pool: &AnyPool) -> Result<(), StoreError> {
        let mut migrator = migrations::migrator(SHARED_MIGRATIONS)?;
        migrator.dangerous_set_table_name(SHARED_MIGRATIONS_TABLE);
        migrator.run(pool).await?;
        Ok(())
    }

    /// The store of `scope` (a user id) in a database whose tables
    /// [`Store::migrate_shared`] made.
    pub fn scoped(pool: AnyPool, scope: impl Into<Arc<str>>) -> Self {
        Self {
            backend: db::Backend::of(&pool),
            pool,
            scope: scope.into(),
        }
    }

    /// The scope this store reads and writes.
    pub fn scope(&self) -> &str {
        &self.scope
    }

    pub(crate) fn pool(&self) -> &AnyPool {
        &self.pool
    }

    pub(crate) fn backend(&self) -> db::Backend {
        self.backend
    }

    /// Remembers an answer for this exact definition (replacing an earlier one).
    pub async fn remember(&self, key: &MemoryKey, verdict: Verdict) -> Result<(), StoreError> {
        let Some(text) = verdict_text(verdict) else {
            return Ok(());
        };
        sqlx::query(
            "INSERT INTO remembered_answers (scope, server, tool, definition_hash, verdict,
                 answered_at) VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (scope, server, tool, definition_hash) DO UPDATE SET
                 verdict = excluded.verdict, answered_at = excluded.answered_at",
        )
        .bind(&*self.scope)
        .bind(&key.server)
        .bind(&key.tool)
        .bind(&key.definition_hash)
        .bind(text)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn remembered(&self) -> Result<Remembered, StoreError> {
        let rows: Vec<(String, String, String, String)> = sqlx::query_as(
            "SELECT server, tool, definition_hash, verdict FROM remembered_answers
                 WHERE scope = $1",
        )
        .bind(&*self.scope)
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
            "DELETE FROM remembered_answers WHERE scope = $1
                 AND (CAST($2 AS TEXT) IS NULL OR server = $2)
                 AND (CAST($3 AS TEXT) IS NULL OR tool = $3)",
        )
        .bind(&*self.scope)
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
