//! Tool-definition pins on disk: [`PinStore`] keeps one pin per (server, tool), its hash
//! and canonical definition text, in a small SQLite file of its own (`pins.sqlite` in the
//! user's data dir) with its own migrations (`pin_migrations/`). It only keeps them: what
//! a pin is and when a definition drifted from it is the registry's
//! (`mcp_host_registry::pins`), over the [`PinRecords`] seam this implements. In a service
//! database the pins are a table beside the store's, one user's in each scope
//! ([`PinStore::scoped`]).

use crate::{OWN_FILE, StoreError, now};
use mcp_host_core::pins::{PinRecord, PinRecords, PinnedHashes};
use sqlx::{AnyPool, AssertSqlSafe};
use std::collections::HashSet;
use std::path::Path;
use std::sync::Arc;

/// A pin as read: server, tool, hash, and the rules its schema compiled under.
type PinRow = (String, String, String, Option<String>);

/// Servers whose pins one query reads (and tools one query forgets): far below either
/// database's limit on parameters.
const SERVERS_PER_READ: usize = 256;

/// The pins file's own migrations (`pin_migrations/`).
pub(crate) const PIN_MIGRATIONS: &[crate::migrations::Embedded] = crate::embed_migrations!("pin_migrations":
    "20261129000001_tool_pins.sql",
    "20261201000001_scoped.sql",
    "20261206000001_schema_checked.sql",
);

#[derive(Debug, thiserror::Error)]
pub enum PinError {
    #[error(transparent)]
    Open(#[from] StoreError),
    #[error("cannot migrate the pin store: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("pin store query failed: {0}")]
    Query(#[from] sqlx::Error),
}

#[derive(Clone, Debug)]
pub struct PinStore {
    pool: AnyPool,
    scope: Arc<str>,
}

impl PinStore {
    /// A person's own pin file at `path`, created or brought up to date.
    pub async fn open(path: &Path) -> Result<Self, PinError> {
        let migrator = crate::migrations::migrator(PIN_MIGRATIONS)?;
        let pool = crate::db::open_migrated(path, &migrator).await?;
        Ok(Self::scoped(pool, OWN_FILE))
    }

    /// The pins of `scope` (a user id) in a database that [`crate::Store::migrate_shared`]
    /// made.
    pub fn scoped(pool: AnyPool, scope: impl Into<Arc<str>>) -> Self {
        Self {
            pool,
            scope: scope.into(),
        }
    }
}

/// A pinned definition whose input schema compiled: (server, tool, definition hash).
pub type CheckedSchema<'a> = (&'a str, &'a str, &'a str);

impl PinStore {
    /// The pins of `servers` in this scope, and the hashes among them whose input schema
    /// compiled under `checker` (`mcp_host_registry::schema::CHECKER`): what a catalogue
    /// snapshot of those servers needs of the pins, in one read. Only theirs: the store keeps
    /// the pins of every server ever connected, and reading them all made a start's cost
    /// grow with the user's history (10 k instructions a pin).
    pub async fn hashes_and_verdicts(
        &self,
        checker: &str,
        servers: &[&str],
    ) -> Result<(PinnedHashes, HashSet<String>), PinError> {
        let mut hashes = PinnedHashes::new();
        let mut checked = HashSet::new();
        for some in servers.chunks(SERVERS_PER_READ) {
            for (server, tool, hash, verdict) in self.pins_of(some).await? {
                if verdict.as_deref() == Some(checker) {
                    checked.insert(hash.clone());
                }
                hashes.entry(server).or_default().insert(tool, hash);
            }
        }
        Ok((hashes, checked))
    }

    /// The pins of `servers` (at most [`SERVERS_PER_READ`]) in this scope: server, tool,
    /// hash, and the rules its schema compiled under.
    async fn pins_of(&self, servers: &[&str]) -> Result<Vec<PinRow>, PinError> {
        let marks: Vec<String> = (0..servers.len()).map(|i| format!("${}", i + 2)).collect();
        let sql = format!(
            "SELECT server, tool, hash, schema_checked FROM tool_pins
             WHERE scope = $1 AND server IN ({})",
            marks.join(", ")
        );
        // Audited: the text is constant but for the count of placeholders; names are bound.
        let mut query = sqlx::query_as(AssertSqlSafe(sql)).bind(&*self.scope);
        for server in servers {
            query = query.bind(*server);
        }
        Ok(query.fetch_all(&self.pool).await?)
    }

    /// Every pin of this scope: server, tool, hash, and the rules its schema compiled under.
    async fn all_pins(&self) -> Result<Vec<PinRow>, PinError> {
        Ok(sqlx::query_as(
            "SELECT server, tool, hash, schema_checked FROM tool_pins WHERE scope = $1",
        )
        .bind(&*self.scope)
        .fetch_all(&self.pool)
        .await?)
    }

    /// Keeps with each pin that its definition's input schema compiled under `checker`; a
    /// pin whose hash is no longer the one given (re-pinned since) is left as it is.
    pub async fn note_schemas_checked(
        &self,
        checked: &[CheckedSchema<'_>],
        checker: &str,
    ) -> Result<(), PinError> {
        let mut tx = self.pool.begin().await?;
        for (server, tool, hash) in checked {
            sqlx::query(
                "UPDATE tool_pins SET schema_checked = $1
                 WHERE scope = $2 AND server = $3 AND tool = $4 AND hash = $5",
            )
            .bind(checker)
            .bind(&*self.scope)
            .bind(*server)
            .bind(*tool)
            .bind(*hash)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

impl PinRecords for PinStore {
    type Error = PinError;

    async fn pinned(&self, server: &str, tool: &str) -> Result<Option<PinRecord>, PinError> {
        let row: Option<(String, String)> = sqlx::query_as(
            "SELECT hash, definition FROM tool_pins WHERE scope = $1 AND server = $2
                 AND tool = $3",
        )
        .bind(&*self.scope)
        .bind(server)
        .bind(tool)
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.map(|(hash, definition)| PinRecord { hash, definition }))
    }

    async fn hashes(&self) -> Result<PinnedHashes, PinError> {
        let mut hashes = PinnedHashes::new();
        for (server, tool, hash, _) in self.all_pins().await? {
            hashes.entry(server).or_default().insert(tool, hash);
        }
        Ok(hashes)
    }

    async fn pin(&self, server: &str, tool: &str, record: &PinRecord) -> Result<(), PinError> {
        sqlx::query(
            "INSERT INTO tool_pins (scope, server, tool, hash, definition, pinned_at)
             VALUES ($1, $2, $3, $4, $5, $6)
             ON CONFLICT (scope, server, tool) DO UPDATE SET hash = excluded.hash,
                 definition = excluded.definition, pinned_at = excluded.pinned_at,
                 schema_checked = NULL",
        )
        .bind(&*self.scope)
        .bind(server)
        .bind(tool)
        .bind(&record.hash)
        .bind(&record.definition)
        .bind(now())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    async fn forget_unlisted(&self, server: &str, listed: &[&str]) -> Result<(), PinError> {
        let pinned: Vec<(String,)> =
            sqlx::query_as("SELECT tool FROM tool_pins WHERE scope = $1 AND server = $2")
                .bind(&*self.scope)
                .bind(server)
                .fetch_all(&self.pool)
                .await?;
        let listed: HashSet<&str> = listed.iter().copied().collect();
        let gone: Vec<&str> = (pinned.iter())
            .map(|(tool,)| tool.as_str())
            .filter(|tool| !listed.contains(tool))
            .collect();
        let mut tx = self.pool.begin().await?;
        for some in gone.chunks(SERVERS_PER_READ) {
            let marks: Vec<String> = (0..some.len()).map(|i| format!("${}", i + 3)).collect();
            let sql = format!(
                "DELETE FROM tool_pins WHERE scope = $1 AND server = $2 AND tool IN ({})",
                marks.join(", ")
            );
            // Audited: constant but for the count of placeholders; names are bound.
            let mut query = sqlx::query(AssertSqlSafe(sql))
                .bind(&*self.scope)
                .bind(server);
            for tool in some {
                query = query.bind(*tool);
            }
            query.execute(&mut *tx).await?;
        }
        tx.commit().await?;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn record(hash: &str) -> PinRecord {
        PinRecord {
            hash: hash.into(),
            definition: format!(r#"{{"name":"echo","v":"{hash}"}}"#),
        }
    }

    #[tokio::test]
    async fn pins_persist_per_server_and_tool_and_are_replaced() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("data/pins.sqlite");
        let store = PinStore::open(&path).await.unwrap();
        assert_eq!(store.pinned("s", "echo").await.unwrap(), None);
        store.pin("s", "echo", &record("h1")).await.unwrap();
        drop(store);
        // A new process sees the same pins in the same file.
        let store = PinStore::open(&path).await.unwrap();
        assert_eq!(store.pinned("s", "echo").await.unwrap(), Some(record("h1")));
        assert_eq!(store.pinned("other", "echo").await.unwrap(), None);
        assert_eq!(store.pinned("s", "other").await.unwrap(), None);
        store.pin("s", "echo", &record("h2")).await.unwrap();
        assert_eq!(store.pinned("s", "echo").await.unwrap(), Some(record("h2")));
        store.pin("t", "echo", &record("h3")).await.unwrap();
        let hashes = store.hashes().await.unwrap();
        assert_eq!(hashes.len(), 2);
        assert_eq!(hashes["s"]["echo"], "h2");
        assert_eq!(hashes["t"]["echo"], "h3");
        let other = PinStore::scoped(store.pool.clone(), "someone else");
        assert!(other.hashes().await.unwrap().is_empty());
    }

    /// A snapshot reads the pins of the servers it is of, not of every server ever pinned;
    /// many servers are read in more than one query.
    #[tokio::test]
    async fn forgetting_unlisted_pins_touches_one_server_of_one_scope() {
        let dir = tempfile::tempdir().unwrap();
        let store = PinStore::open(&dir.path().join("pins.sqlite"))
            .await
            .unwrap();
        let other = PinStore::scoped(store.pool.clone(), "someone else");
        // More than one query's worth of tools to forget.
        for n in 0..600 {
            store
                .pin("s", &format!("t{n}"), &record("h"))
                .await
                .unwrap();
        }
        store.pin("u", "t1", &record("h")).await.unwrap();
        other.pin("s", "t1", &record("h")).await.unwrap();
        other.pin("s", "t7", &record("h")).await.unwrap();
        store
            .forget_unlisted("s", &["t1", "t599", "absent"])
            .await
            .unwrap();
        let mine = store.hashes().await.unwrap();
        let mut left: Vec<&String> = mine["s"].keys().collect();
        left.sort();
        assert_eq!(left, ["t1", "t599"]);
        assert_eq!(mine["u"].len(), 1);
        assert_eq!(other.hashes().await.unwrap()["s"].len(), 2);
    }

    #[tokio::test]
    async fn a_snapshot_reads_only_its_servers_pins() {
        let dir = tempfile::tempdir().unwrap();
        let store = PinStore::open(&dir.path().join("pins.sqlite"))
            .await
            .unwrap();
        let names: Vec<String> = (0..SERVERS_PER_READ + 3).map(|i| format!("s{i}")).collect();
        for name in &names {
            store.pin(name, "echo", &record(name)).await.unwrap();
        }
        store.pin("elsewhere", "echo", &record("h")).await.unwrap();
        let (hashes, _) = store
            .hashes_and_verdicts("rules", &["s1", "s2"])
            .await
            .unwrap();
        let mut read: Vec<&String> = hashes.keys().collect();
        read.sort();
        assert_eq!(read, ["s1", "s2"]);
        assert_eq!(hashes["s2"]["echo"], "s2");
        let all: Vec<&str> = names.iter().map(String::as_str).collect();
        let (hashes, _) = store.hashes_and_verdicts("rules", &all).await.unwrap();
        assert_eq!(hashes.len(), names.len());
        assert!(!hashes.contains_key("elsewhere"));
        let (none, _) = store.hashes_and_verdicts("rules", &[]).await.unwrap();
        assert!(none.is_empty());
    }

    /// A schema verdict is kept with the pin of the definition it was made on: not for a
    /// hash the pin no longer has, not under other rules, not for another scope.
    #[tokio::test]
    async fn schema_verdicts_belong_to_the_pinned_definition() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pins.sqlite");
        let store = PinStore::open(&path).await.unwrap();
        store.pin("s", "a", &record("h1")).await.unwrap();
        store.pin("s", "b", &record("h2")).await.unwrap();
        store
            .note_schemas_checked(&[("s", "a", "h1"), ("s", "b", "stale")], "rules-1")
            .await
            .unwrap();
        drop(store);
        let store = PinStore::open(&path).await.unwrap();
        let checked = |store: PinStore, rules: &'static str| async move {
            store.hashes_and_verdicts(rules, &["s"]).await.unwrap().1
        };
        assert_eq!(
            checked(store.clone(), "rules-1").await,
            HashSet::from(["h1".to_string()])
        );
        assert!(checked(store.clone(), "rules-2").await.is_empty());
        let other = PinStore::scoped(store.pool.clone(), "someone else");
        assert!(checked(other, "rules-1").await.is_empty());
        // Re-pinned (an accepted change): the old verdict does not carry over.
        store.pin("s", "a", &record("h3")).await.unwrap();
        assert!(checked(store.clone(), "rules-1").await.is_empty());
    }
}
