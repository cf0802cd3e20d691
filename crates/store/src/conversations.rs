//! Conversations and their message history: the ids, creating a conversation, appending,
//! rewriting (after context compaction) and loading its messages, titles, and finding the
//! latest one for a directory (`--continue`). Messages are opaque JSON here: the engine
//! serialises its own message type, so the store does not depend on it. The tables are
//! `histories` and `history_messages`: in a service database, `conversations` is the
//! service's, and the engine's side of one of them is a history.

use crate::db::Backend;
use crate::{Store, StoreError, excerpt, hex, now};
use serde_json::Value;
use sqlx::{AnyConnection, AssertSqlSafe};
use std::fmt;
use std::str::FromStr;
use std::time::{SystemTime, UNIX_EPOCH};

/// A conversation id: 12 hex digits of Unix milliseconds then 20 random hex digits. The time
/// prefix makes ids sort by creation; the 80 random bits make them unguessable, so an id
/// cannot be used to reach someone else's conversation in the hosted mode.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ConversationId(String);

impl ConversationId {
    const LEN: usize = 32;

    /// Checks the shape of an id typed by a user (or read back from the store). Upper-case
    /// hex is accepted and normalised, since ids get copied through terminals and chats.
    pub fn new(text: &str) -> Result<Self, StoreError> {
        let id = text.to_ascii_lowercase();
        if crate::is_lower_hex(&id, Self::LEN) {
            Ok(Self(id))
        } else {
            Err(StoreError::BadConversationId(excerpt(text)))
        }
    }

    fn generate() -> Self {
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
            // A clock before 1970 is broken; the random part still keeps ids unique.
            .unwrap_or(0);
        // 48 bits of milliseconds last until the year 10889.
        let millis = millis & 0xffff_ffff_ffff;
        // `rand`'s thread generator is a CSPRNG seeded from the OS.
        let random: [u8; 10] = rand::random();
        Self(format!("{millis:012x}{}", hex(&random)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for ConversationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl FromStr for ConversationId {
    type Err = StoreError;

    fn from_str(text: &str) -> Result<Self, StoreError> {
        Self::new(text)
    }
}

impl AsRef<str> for ConversationId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

/// One conversation as listed for a user to pick from. Timestamps are UTC ISO-8601 with
/// milliseconds (`2026-11-29T10:00:00.123Z`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConversationSummary {
    pub id: ConversationId,
    pub model: String,
    pub workdir: String,
    pub created_at: String,
    pub updated_at: String,
    pub title: Option<String>,
    pub messages: u64,
}

type SummaryRow = (String, String, String, String, String, Option<String>, i64);

/// The start of every summary query; a macro so `concat!` keeps the SQL a static string.
macro_rules! summary_select {
    () => {
        "SELECT c.id, c.model, c.workdir, c.created_at, c.updated_at, c.title,
            (SELECT COUNT(*) FROM history_messages m
                WHERE m.scope = c.scope AND m.conversation_id = c.id)
        FROM histories c WHERE c.scope = $1"
    };
}

/// Ties in `updated_at` (the same millisecond) go to the newer id, so the order is stable.
macro_rules! newest_first {
    () => {
        " ORDER BY c.updated_at DESC, c.id DESC"
    };
}

fn summary(row: SummaryRow) -> Result<ConversationSummary, StoreError> {
    let (id, model, workdir, created_at, updated_at, title, messages) = row;
    Ok(ConversationSummary {
        id: ConversationId::new(&id)
            .map_err(|_| StoreError::Corrupt(format!("conversation id {}", excerpt(&id))))?,
        model,
        workdir,
        created_at,
        updated_at,
        title,
        messages: u64::try_from(messages).unwrap_or(0),
    })
}

/// Converts a stored turn or seq number back, refusing what this code never writes.
pub(crate) fn to_u32(value: i64, what: &str) -> Result<u32, StoreError> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("{what} {value}")))
}

/// Marks a conversation as just used. Run first in a write transaction: it both takes the
/// write lock and tells whether the conversation exists. A transaction that reads first and
/// writes later asks SQLite to upgrade its read to a write, which fails at once ("database
/// is locked") when another connection holds the write lock, without waiting its turn.
pub(crate) async fn touch(
    conn: &mut AnyConnection,
    scope: &str,
    id: &ConversationId,
) -> Result<(), StoreError> {
    let done = sqlx::query("UPDATE histories SET updated_at = $1 WHERE scope = $2 AND id = $3")
        .bind(now())
        .bind(scope)
        .bind(id.as_str())
        .execute(conn)
        .await?;
    if done.rows_affected() == 0 {
        return Err(StoreError::NoConversation(id.to_string()));
    }
    Ok(())
}

pub(crate) async fn ensure_exists(
    conn: &mut AnyConnection,
    scope: &str,
    id: &ConversationId,
) -> Result<(), StoreError> {
    let found: Option<String> =
        sqlx::query_scalar("SELECT id FROM histories WHERE scope = $1 AND id = $2")
            .bind(scope)
            .bind(id.as_str())
            .fetch_optional(conn)
            .await?;
    match found {
        Some(_) => Ok(()),
        None => Err(StoreError::NoConversation(id.to_string())),
    }
}

/// `INSERT INTO table (columns) VALUES ...` for `rows` rows whose first `shared` values
/// are the same in every row and whose other `per_row` are each row's own. PostgreSQL's are
/// numbered in the order they are bound, the shared ones first and once; SQLite's are
/// anonymous, the shared values bound again ahead of each row's own
/// ([`Backend::shared_per_row`]).
pub(crate) fn multi_row_insert(
    backend: Backend,
    head: &str,
    shared: usize,
    per_row: usize,
    rows: usize,
) -> String {
    use std::fmt::Write;
    let mut sql = format!("{head} VALUES ");
    for row in 0..rows {
        sql.push_str(if row == 0 { "(" } else { ", (" });
        for i in 0..shared + per_row {
            sql.push_str(if i == 0 { "" } else { ", " });
            if backend.shared_per_row() {
                sql.push('?');
            } else {
                let n = if i < shared {
                    i + 1
                } else {
                    shared + 1 + row * per_row + (i - shared)
                };
                // Writing to a String cannot fail.
                let _ = write!(sql, "${n}");
            }
        }
        sql.push(')');
    }
    sql
}

/// Inserts `bodies` (turn, body) as the messages numbered from `seq` on.
async fn insert_messages(
    conn: &mut AnyConnection,
    (backend, scope): (Backend, &str),
    id: &ConversationId,
    mut seq: i64,
    bodies: Vec<(u32, String)>,
) -> Result<(), StoreError> {
    let chunks = backend.insert_chunks(bodies.len(), 5);
    let mut rows = bodies.into_iter();
    for size in chunks {
        let chunk: Vec<(u32, String)> = rows.by_ref().take(size).collect();
        let sql = multi_row_insert(
            backend,
            "INSERT INTO history_messages (scope, conversation_id, seq, turn, body)",
            2,
            3,
            chunk.len(),
        );
        let mut query = sqlx::query(AssertSqlSafe(sql));
        for (row, (turn, body)) in chunk.into_iter().enumerate() {
            if row == 0 || backend.shared_per_row() {
                query = query.bind(scope).bind(id.as_str());
            }
            query = query.bind(seq).bind(i64::from(turn)).bind(body);
            seq += 1;
        }
        query.execute(&mut *conn).await?;
    }
    Ok(())
}

impl Store {
    /// Starts a conversation with `model` in the directory `workdir`.
    pub async fn create_conversation(
        &self,
        model: &str,
        workdir: &str,
    ) -> Result<ConversationId, StoreError> {
        let id = ConversationId::generate();
        let at = now();
        sqlx::query(
            "INSERT INTO histories (scope, id, created_at, updated_at, model, workdir)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(self.scope())
        .bind(id.as_str())
        .bind(&at)
        .bind(&at)
        .bind(model)
        .bind(workdir)
        .execute(self.pool())
        .await?;
        Ok(id)
    }

    /// Appends `messages` of one turn after the last stored one, all or none.
    pub async fn append_messages(
        &self,
        id: &ConversationId,
        turn: u32,
        messages: &[impl serde::Serialize],
    ) -> Result<(), StoreError> {
        // Serialise before taking the write lock, and fail before writing anything.
        let bodies = messages
            .iter()
            .map(serde_json::to_string)
            .collect::<Result<Vec<_>, _>>()?;
        // Touching the history first takes the write lock (SQLite's, or the row's in
        // PostgreSQL) before the last seq is read, so no other writer can take the same seq,
        // and there is no read-to-write upgrade that SQLite could refuse.
        let mut tx = self.pool().begin().await?;
        touch(&mut tx, self.scope(), id).await?;
        let next: i64 = sqlx::query_scalar(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM history_messages
             WHERE scope = $1 AND conversation_id = $2",
        )
        .bind(self.scope())
        .bind(id.as_str())
        .fetch_one(&mut *tx)
        .await?;
        let bodies = bodies.into_iter().map(|body| (turn, body)).collect();
        insert_messages(&mut tx, (self.backend(), self.scope()), id, next, bodies).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Replaces the whole history, all or none (after context compaction rewrote it).
    pub async fn replace_messages(
        &self,
        id: &ConversationId,
        messages: impl IntoIterator<Item = (u32, impl serde::Serialize)>,
    ) -> Result<(), StoreError> {
        let rows = messages
            .into_iter()
            .map(|(turn, m)| serde_json::to_string(&m).map(|body| (turn, body)))
            .collect::<Result<Vec<_>, _>>()?;
        let mut tx = self.pool().begin().await?;
        touch(&mut tx, self.scope(), id).await?;
        sqlx::query("DELETE FROM history_messages WHERE scope = $1 AND conversation_id = $2")
            .bind(self.scope())
            .bind(id.as_str())
            .execute(&mut *tx)
            .await?;
        insert_messages(&mut tx, (self.backend(), self.scope()), id, 0, rows).await?;
        tx.commit().await?;
        Ok(())
    }

    /// The history as (turn, message), oldest first.
    pub async fn load_messages(
        &self,
        id: &ConversationId,
    ) -> Result<Vec<(u32, Value)>, StoreError> {
        // One read transaction, so the existence check and the rows see the same snapshot.
        let mut tx = self.pool().begin().await?;
        ensure_exists(&mut tx, self.scope(), id).await?;
        let rows: Vec<(i64, String)> = sqlx::query_as(
            "SELECT turn, body FROM history_messages WHERE scope = $1 AND conversation_id = $2
             ORDER BY seq",
        )
        .bind(self.scope())
        .bind(id.as_str())
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.into_iter()
            .map(|(turn, body)| Ok((to_u32(turn, "turn")?, serde_json::from_str(&body)?)))
            .collect()
    }

    /// The conversation with this id.
    pub async fn conversation(
        &self,
        id: &ConversationId,
    ) -> Result<ConversationSummary, StoreError> {
        let row: Option<SummaryRow> = sqlx::query_as(concat!(summary_select!(), " AND c.id = $2"))
            .bind(self.scope())
            .bind(id.as_str())
            .fetch_optional(self.pool())
            .await?;
        match row {
            Some(row) => summary(row),
            None => Err(StoreError::NoConversation(id.to_string())),
        }
    }

    /// The most recently updated conversation started in `workdir`, if any.
    pub async fn latest_conversation(
        &self,
        workdir: &str,
    ) -> Result<Option<ConversationSummary>, StoreError> {
        let row: Option<SummaryRow> = sqlx::query_as(concat!(
            summary_select!(),
            " AND c.workdir = $2",
            newest_first!(),
            " LIMIT 1"
        ))
        .bind(self.scope())
        .bind(workdir)
        .fetch_optional(self.pool())
        .await?;
        row.map(summary).transpose()
    }

    /// Up to `limit` conversations, most recently updated first.
    pub async fn list_conversations(
        &self,
        limit: u32,
    ) -> Result<Vec<ConversationSummary>, StoreError> {
        let rows: Vec<SummaryRow> =
            sqlx::query_as(concat!(summary_select!(), newest_first!(), " LIMIT $2"))
                .bind(self.scope())
                .bind(i64::from(limit))
                .fetch_all(self.pool())
                .await?;
        rows.into_iter().map(summary).collect()
    }

    /// Sets the title shown in listings. Not an activity: `updated_at` stays.
    pub async fn set_title(&self, id: &ConversationId, title: &str) -> Result<(), StoreError> {
        let done = sqlx::query("UPDATE histories SET title = $1 WHERE scope = $2 AND id = $3")
            .bind(title)
            .bind(self.scope())
            .bind(id.as_str())
            .execute(self.pool())
            .await?;
        if done.rows_affected() == 0 {
            return Err(StoreError::NoConversation(id.to_string()));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// PostgreSQL's shared parameters come first and are reused in every row; each row's own
    /// follow in the order they are bound. SQLite's are anonymous, bound row by row.
    #[test]
    fn multi_row_inserts_number_their_parameters_in_binding_order() {
        let head = "INSERT INTO t (a, b, c)";
        assert_eq!(
            multi_row_insert(Backend::Sqlite, head, 1, 2, 2),
            "INSERT INTO t (a, b, c) VALUES (?, ?, ?), (?, ?, ?)"
        );
        assert_eq!(
            multi_row_insert(Backend::Postgres, head, 1, 2, 2),
            "INSERT INTO t (a, b, c) VALUES ($1, $2, $3), ($1, $4, $5)"
        );
        let most = |b: Backend, per_row| b.insert_chunks(10_000, per_row).max();
        assert_eq!(most(Backend::Sqlite, 17), Some(32));
        assert_eq!(most(Backend::Sqlite, 40), Some(16));
        assert_eq!(most(Backend::Sqlite, 1000), Some(1));
        assert_eq!(most(Backend::Postgres, 16), Some(32));
        let cut = |rows| Backend::Sqlite.insert_chunks(rows, 5).collect::<Vec<_>>();
        assert_eq!(cut(0), Vec::<usize>::new());
        assert_eq!(
            cut(601),
            [32; 18].into_iter().chain([16, 8, 1]).collect::<Vec<_>>()
        );
        // Every count is cut whole, into at most six shapes.
        for rows in 0..200 {
            let sizes = cut(rows);
            assert_eq!(sizes.iter().sum::<usize>(), rows);
            assert!(
                sizes.iter().all(|s| s.is_power_of_two() && *s <= 32),
                "{sizes:?}"
            );
        }
    }
}
