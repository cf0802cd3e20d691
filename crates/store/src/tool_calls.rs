//! The audit trail of tool calls: one row per call with what the model asked for, the
//! server and tool it went to, the policy verdict and who decided it, and how it ended.
//! Rows are keyed by (conversation, turn, call id), so recording a call again updates it.

use crate::conversations::{ensure_exists, multi_row_insert, to_u32, touch};
use crate::db::Backend;
use crate::{ConversationId, Store, StoreError};
use serde_json::Value;
use sqlx::AssertSqlSafe;
use sqlx::Row;
use sqlx::any::AnyRow;
use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// One tool call as recorded. Plain data: the engine fills it from its own types.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCallRow {
    pub conversation_id: ConversationId,
    pub turn: u32,
    /// The provider's id for the call.
    pub call_id: String,
    /// The name the model saw.
    pub name: String,
    /// The host-assigned server id.
    pub server: String,
    /// The server's own name for the tool.
    pub tool: String,
    pub arguments: Value,
    /// The policy outcome, in the engine's words (e.g. "allow", "deny", "ask").
    pub verdict: String,
    /// Who or what decided (a rule, a remembered answer, the user), as the engine's JSON.
    pub decided_by: Option<Value>,
    pub is_error: bool,
    /// Why the call was not made, when it was not.
    pub refused: Option<String>,
    /// Where the full result was spilled (see `Store::put_result`).
    pub result_handle: Option<String>,
    /// Kept to the millisecond.
    pub started_at: SystemTime,
    pub took_ms: Option<u64>,
    pub background: bool,
}

fn unix_millis(t: SystemTime) -> i64 {
    // A time before 1970 or past the year 292 million is a broken clock; clamp it.
    t.duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

fn from_row(row: &AnyRow) -> Result<ToolCallRow, StoreError> {
    let id: String = row.try_get("conversation_id")?;
    let arguments: String = row.try_get("arguments")?;
    let decided_by: Option<String> = row.try_get("decided_by")?;
    let started_ms: i64 = row.try_get("started_ms")?;
    let took_ms: Option<i64> = row.try_get("took_ms")?;
    Ok(ToolCallRow {
        conversation_id: ConversationId::new(&id)
            .map_err(|_| StoreError::Corrupt(format!("conversation id {id}")))?,
        turn: to_u32(row.try_get("turn")?, "turn")?,
        call_id: row.try_get("call_id")?,
        name: row.try_get("name")?,
        server: row.try_get("server")?,
        tool: row.try_get("tool")?,
        arguments: serde_json::from_str(&arguments)?,
        verdict: row.try_get("verdict")?,
        decided_by: decided_by
            .as_deref()
            .map(serde_json::from_str)
            .transpose()?,
        is_error: row.try_get::<i64, _>("is_error")? != 0,
        refused: row.try_get("refused")?,
        result_handle: row.try_get("result_handle")?,
        started_at: UNIX_EPOCH
            + Duration::from_millis(
                u64::try_from(started_ms)
                    .map_err(|_| StoreError::Corrupt(format!("tool call start {started_ms} ms")))?,
            ),
        took_ms: took_ms.map(|ms| u64::try_from(ms).unwrap_or(0)),
        background: row.try_get::<i64, _>("background")? != 0,
    })
}

impl Store {
    /// Records a tool call, replacing an earlier record of the same (conversation, turn,
    /// call id).
    pub async fn record_tool_call(&self, record: &ToolCallRow) -> Result<(), StoreError> {
        self.record_tool_calls(std::slice::from_ref(record)).await
    }

    /// Records tool calls in order, all or none, in one transaction: a turn's calls are
    /// written together, a hundred to a statement (one commit per row was most of the
    /// store's cost of a call). A call recorded twice keeps its first place and its last
    /// record.
    pub async fn record_tool_calls(&self, records: &[ToolCallRow]) -> Result<(), StoreError> {
        let mut latest: Vec<&ToolCallRow> = Vec::new();
        let mut place = HashMap::new();
        for r in records {
            match place.entry((&r.conversation_id, r.turn, r.call_id.as_str())) {
                Entry::Occupied(at) => latest[*at.get()] = r,
                Entry::Vacant(at) => {
                    at.insert(latest.len());
                    latest.push(r);
                }
            }
        }
        // Serialise before taking the write lock, and fail before writing anything.
        let rows = (latest.into_iter())
            .map(|r| {
                let decided_by = r.decided_by.as_ref().map(serde_json::to_string);
                Ok((
                    r,
                    serde_json::to_string(&r.arguments)?,
                    decided_by.transpose()?,
                ))
            })
            .collect::<Result<Vec<_>, StoreError>>()?;
        if rows.is_empty() {
            return Ok(());
        }
        let mut conversations: Vec<&ConversationId> =
            rows.iter().map(|(r, ..)| &r.conversation_id).collect();
        // Sorted, so two writers lock the same histories in the same order (PostgreSQL's row
        // locks); SQLite has one write lock, taken by the first touch.
        conversations.sort_unstable();
        conversations.dedup();
        let mut tx = self.pool().begin().await?;
        // Write before reading: the touch takes the write lock (and finds a history that does
        // not exist) before any position is read.
        for id in &conversations {
            touch(&mut tx, self.scope(), id).await?;
        }
        for id in conversations {
            let mine = rows.iter().filter(|(r, ..)| r.conversation_id == *id);
            let mine: Vec<_> = mine.collect();
            let first: i64 = sqlx::query_scalar(
                "SELECT COALESCE(MAX(position), 0) + 1 FROM tool_calls
                 WHERE scope = $1 AND conversation_id = $2",
            )
            .bind(self.scope())
            .bind(id.as_str())
            .fetch_one(&mut *tx)
            .await?;
            let mut done = 0;
            for size in self
                .backend()
                .insert_chunks(mine.len(), CALL_PARAMETERS + 1)
            {
                let position = first + i64::try_from(done).unwrap_or(i64::MAX);
                let target = (self.backend(), self.scope());
                upsert_calls(&mut tx, target, position, &mine[done..done + size]).await?;
                done += size;
            }
        }
        tx.commit().await?;
        Ok(())
    }

    /// The recorded tool calls of a conversation, in the order they were first recorded.
    pub async fn load_tool_calls(
        &self,
        id: &ConversationId,
    ) -> Result<Vec<ToolCallRow>, StoreError> {
        let mut tx = self.pool().begin().await?;
        ensure_exists(&mut tx, self.scope(), id).await?;
        let rows = sqlx::query(
            "SELECT conversation_id, turn, call_id, name, server, tool, arguments, verdict,
                 decided_by, is_error, refused, result_handle, started_ms, took_ms, background
             FROM tool_calls WHERE scope = $1 AND conversation_id = $2
             ORDER BY position, call_id",
        )
        .bind(self.scope())
        .bind(id.as_str())
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        rows.iter().map(from_row).collect()
    }
}

/// A call as it is written: the row, its arguments and who decided, serialised.
type Serialised<'a> = (&'a ToolCallRow, String, Option<String>);

/// The parameters of a call's row, but for the scope all rows share.
const CALL_PARAMETERS: usize = 16;

/// Inserts or replaces `rows` of one conversation, numbered from `position` on (a replaced
/// row keeps the place it had).
async fn upsert_calls(
    conn: &mut sqlx::AnyConnection,
    (backend, scope): (Backend, &str),
    position: i64,
    rows: &[&Serialised<'_>],
) -> Result<(), sqlx::Error> {
    let head = "INSERT INTO tool_calls (scope, conversation_id, turn, call_id, position, name,
         server, tool, arguments, verdict, decided_by, is_error, refused, result_handle,
         started_ms, took_ms, background)";
    let sql = multi_row_insert(backend, head, 1, CALL_PARAMETERS, rows.len())
        + " ON CONFLICT (scope, conversation_id, turn, call_id) DO UPDATE SET
             name = excluded.name, server = excluded.server, tool = excluded.tool,
             arguments = excluded.arguments, verdict = excluded.verdict,
             decided_by = excluded.decided_by, is_error = excluded.is_error,
             refused = excluded.refused, result_handle = excluded.result_handle,
             started_ms = excluded.started_ms, took_ms = excluded.took_ms,
             background = excluded.background";
    let mut query = sqlx::query(AssertSqlSafe(sql));
    for (n, (record, arguments, decided_by)) in (0..).zip(rows) {
        let took_ms = (record.took_ms).map(|ms| i64::try_from(ms).unwrap_or(i64::MAX));
        if n == 0 || backend.shared_per_row() {
            query = query.bind(scope);
        }
        query = query
            .bind(record.conversation_id.as_str())
            .bind(i64::from(record.turn))
            .bind(&record.call_id)
            .bind(position + n)
            .bind(&record.name)
            .bind(&record.server)
            .bind(&record.tool)
            .bind(arguments)
            .bind(&record.verdict)
            .bind(decided_by)
            .bind(i64::from(record.is_error))
            .bind(&record.refused)
            .bind(&record.result_handle)
            .bind(unix_millis(record.started_at))
            .bind(took_ms)
            .bind(i64::from(record.background));
    }
    query.execute(conn).await?;
    Ok(())
}
