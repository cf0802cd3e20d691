//! Conversations, turns and their events in the service database, which is what lets any
//! replica serve any user's stream: every event a turn produces is a numbered row
//! (`events.seq`, the SSE id), a running turn holds a lease its replica renews, a turn whose
//! lease ran out is marked interrupted (with an event saying so) by whichever replica sees it
//! first, and answers for a turn on another replica wait in that replica's inbox.

use crate::db::{Backend, Db, DbError, new_id, now_ms};
use crate::users::User;
use sqlx::Row;

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ConversationRow {
    pub id: String,
    pub title: String,
    pub created_ms: i64,
    #[serde(skip)]
    pub engine_id: Option<String>,
}

/// One stored event: its number in the conversation, its kind and its JSON body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredEvent {
    pub seq: i64,
    pub turn_id: Option<String>,
    pub kind: String,
    pub body: String,
    /// When it was written (set by the database layer; ignored when appending).
    pub at_ms: i64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TurnState {
    Running,
    Finished,
    Failed,
    Cancelled,
    /// Its replica stopped renewing the lease (it died, or drained past its deadline).
    Interrupted,
}

impl TurnState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "running",
            Self::Finished => "finished",
            Self::Failed => "failed",
            Self::Cancelled => "cancelled",
            Self::Interrupted => "interrupted",
        }
    }
}

/// A running turn as another replica sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunningTurn {
    pub id: String,
    pub replica: String,
}

/// The kind and body of the event a swept turn gets.
pub const INTERRUPTED_KIND: &str = "turn_interrupted";

fn conversation_from(r: &sqlx::any::AnyRow) -> Result<ConversationRow, DbError> {
    Ok(ConversationRow {
        id: r.try_get("id")?,
        title: r.try_get("title")?,
        created_ms: r.try_get("created_ms")?,
        engine_id: r.try_get("engine_id")?,
    })
}

impl Db {
    pub async fn create_conversation(
        &self,
        user: &User,
        title: &str,
    ) -> Result<ConversationRow, DbError> {
        let row = ConversationRow {
            id: new_id(),
            title: title.to_string(),
            created_ms: now_ms(),
            engine_id: None,
        };
        sqlx::query(
            "INSERT INTO conversations (id, user_id, engine_id, title, created_ms) VALUES ($1, $2, NULL, $3, $4)",
        )
        .bind(&row.id)
        .bind(&user.id)
        .bind(&row.title)
        .bind(row.created_ms)
        .execute(&self.pool)
        .await?;
        Ok(row)
    }

    /// `user`'s conversation `id`; `None` when there is none *for this user*, whoever else
    /// may own that id (the caller answers 404 either way, so ids cannot be probed).
    pub async fn conversation(
        &self,
        user: &User,
        id: &str,
    ) -> Result<Option<ConversationRow>, DbError> {
        let row = sqlx::query("SELECT * FROM conversations WHERE id = $1 AND user_id = $2")
            .bind(id)
            .bind(&user.id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(conversation_from).transpose()
    }

    pub async fn conversations(&self, user: &User) -> Result<Vec<ConversationRow>, DbError> {
        let rows = sqlx::query(
            "SELECT * FROM conversations WHERE user_id = $1 ORDER BY created_ms DESC, id",
        )
        .bind(&user.id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(conversation_from).collect()
    }

    pub async fn set_engine_id(&self, conversation: &str, engine_id: &str) -> Result<(), DbError> {
        sqlx::query("UPDATE conversations SET engine_id = $1 WHERE id = $2")
            .bind(engine_id)
            .bind(conversation)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn set_title(&self, conversation: &str, title: &str) -> Result<(), DbError> {
        sqlx::query("UPDATE conversations SET title = $1 WHERE id = $2")
            .bind(title)
            .bind(conversation)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Starts a turn on `replica` holding a lease until `lease_until`; a conflict when the
    /// conversation already has a running turn (on any replica).
    pub async fn start_turn(
        &self,
        user: &User,
        conversation: &str,
        replica: &str,
        lease_until: i64,
    ) -> Result<String, DbError> {
        let id = new_id();
        let done = sqlx::query(
            "INSERT INTO turns (id, conversation_id, user_id, replica, state, lease_ms, started_ms, ended_ms)
             VALUES ($1, $2, $3, $4, 'running', $5, $6, NULL)",
        )
        .bind(&id)
        .bind(conversation)
        .bind(&user.id)
        .bind(replica)
        .bind(lease_until)
        .bind(now_ms())
        .execute(&self.pool)
        .await;
        match done {
            Ok(_) => Ok(id),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => Err(DbError::Conflict(
                "a turn is already running in this conversation".into(),
            )),
            Err(e) => Err(e.into()),
        }
    }

    /// Renews the leases of `replica`'s running turns.
    pub async fn renew_leases(&self, replica: &str, until: i64) -> Result<u64, DbError> {
        let done =
            sqlx::query("UPDATE turns SET lease_ms = $1 WHERE replica = $2 AND state = 'running'")
                .bind(until)
                .bind(replica)
                .execute(&self.pool)
                .await?;
        Ok(done.rows_affected())
    }

    /// Ends a running turn; `false` when it was no longer running (swept as interrupted).
    pub async fn end_turn(&self, turn: &str, state: TurnState) -> Result<bool, DbError> {
        let done = sqlx::query(
            "UPDATE turns SET state = $1, ended_ms = $2 WHERE id = $3 AND state = 'running'",
        )
        .bind(state.as_str())
        .bind(now_ms())
        .bind(turn)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    pub async fn running_turn(&self, conversation: &str) -> Result<Option<RunningTurn>, DbError> {
        let row = sqlx::query(
            "SELECT id, replica FROM turns WHERE conversation_id = $1 AND state = 'running'",
        )
        .bind(conversation)
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(r) => Ok(Some(RunningTurn {
                id: r.try_get("id")?,
                replica: r.try_get("replica")?,
            })),
            None => Ok(None),
        }
    }

    /// A conversation's turns, oldest first: id and state.
    pub async fn turns(&self, conversation: &str) -> Result<Vec<(String, String)>, DbError> {
        let rows = sqlx::query(
            "SELECT id, state FROM turns WHERE conversation_id = $1 ORDER BY started_ms, id",
        )
        .bind(conversation)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| Ok((r.try_get("id")?, r.try_get("state")?)))
            .collect()
    }

    pub async fn turn_state(&self, turn: &str) -> Result<Option<String>, DbError> {
        let row = sqlx::query("SELECT state FROM turns WHERE id = $1")
            .bind(turn)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| r.try_get("state").map_err(DbError::from))
            .transpose()
    }

    /// The number of the conversation's last event (0 when it has none).
    pub async fn last_seq(&self, conversation: &str) -> Result<i64, DbError> {
        let row = sqlx::query(
            "SELECT COALESCE(MAX(seq), 0) AS last FROM events WHERE conversation_id = $1",
        )
        .bind(conversation)
        .fetch_one(&self.pool)
        .await?;
        Ok(row.try_get("last")?)
    }

    /// Stores event `seq`; a conflict when that number is taken (another writer took the
    /// conversation over: this one must stop writing).
    pub async fn append_event(
        &self,
        conversation: &str,
        event: &StoredEvent,
    ) -> Result<(), DbError> {
        // On PostgreSQL the same statement rings every replica's doorbell (see `bells.rs`).
        let sql = match self.backend {
            Backend::Sqlite => {
                "INSERT INTO events (conversation_id, seq, turn_id, kind, body, at_ms)
                 VALUES ($1, $2, $3, $4, $5, $6)"
            }
            Backend::Postgres => {
                "WITH added AS (INSERT INTO events (conversation_id, seq, turn_id, kind, body, at_ms)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING conversation_id)
                 SELECT pg_notify('mcp_host_events', conversation_id) FROM added"
            }
        };
        let done = sqlx::query(sql)
            .bind(conversation)
            .bind(event.seq)
            .bind(event.turn_id.clone())
            .bind(&event.kind)
            .bind(&event.body)
            .bind(now_ms())
            .execute(&self.pool)
            .await;
        match done {
            Ok(_) => Ok(()),
            Err(sqlx::Error::Database(e)) if e.is_unique_violation() => {
                Err(DbError::Conflict(format!(
                    "event {} of the conversation was written by another replica",
                    event.seq
                )))
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Up to `limit` events after `after`, in order.
    pub async fn events_after(
        &self,
        conversation: &str,
        after: i64,
        limit: i64,
    ) -> Result<Vec<StoredEvent>, DbError> {
        let rows = sqlx::query(
            "SELECT seq, turn_id, kind, body, at_ms FROM events WHERE conversation_id = $1 AND seq > $2
             ORDER BY seq LIMIT $3",
        )
        .bind(conversation)
        .bind(after)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(StoredEvent {
                    seq: r.try_get("seq")?,
                    turn_id: r.try_get("turn_id")?,
                    kind: r.try_get("kind")?,
                    body: r.try_get("body")?,
                    at_ms: r.try_get("at_ms")?,
                })
            })
            .collect()
    }

    /// Marks every running turn whose lease ran out before `now` as interrupted, with an
    /// event saying so at the end of its conversation. Only one replica wins each turn (the
    /// conditional update); returns the conversations that got an event.
    pub async fn sweep_expired(&self, now: i64) -> Result<Vec<String>, DbError> {
        self.sweep(now, "").await
    }

    /// [`Db::sweep_expired`] for every replica but `me`: this replica's own turns are alive
    /// while it runs (it renews them), however late a renewal came through a slow database.
    pub async fn sweep_others(&self, now: i64, me: &str) -> Result<Vec<String>, DbError> {
        self.sweep(now, me).await
    }

    async fn sweep(&self, now: i64, except: &str) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query(
            "SELECT id FROM turns WHERE state = 'running' AND lease_ms < $1 AND replica <> $2",
        )
        .bind(now)
        .bind(except)
        .fetch_all(&self.pool)
        .await?;
        let mut swept = Vec::new();
        for r in rows {
            let turn: String = r.try_get("id")?;
            // One turn that cannot be marked now is tried again at the next sweep; the
            // others are not held up by it.
            match self.mark_interrupted(&turn, now).await {
                Ok(Some(conversation)) => swept.push(conversation),
                Ok(None) => {}
                Err(e) => {
                    tracing::warn!(%turn, "cannot mark a dead replica's turn interrupted yet: {e}")
                }
            }
        }
        Ok(swept)
    }

    /// Marks every turn still `running` under `replica` interrupted, whatever its lease: for a
    /// replica starting up, whose name a previous process (the same host and pid after a
    /// container restart) may have left turns under. Their conversations.
    pub async fn interrupt_replica_turns(&self, replica: &str) -> Result<Vec<String>, DbError> {
        let rows = sqlx::query("SELECT id FROM turns WHERE state = 'running' AND replica = $1")
            .bind(replica)
            .fetch_all(&self.pool)
            .await?;
        let mut out = Vec::new();
        for r in rows {
            let turn: String = r.try_get("id")?;
            if let Some(c) = self.mark_interrupted(&turn, i64::MAX).await? {
                out.push(c);
            }
        }
        Ok(out)
    }

    /// Marks a running turn interrupted now, whatever its lease (its session ended, or the
    /// drain deadline passed); `false` when it had already ended.
    pub async fn interrupt_turn(&self, turn: &str) -> Result<bool, DbError> {
        Ok(self.mark_interrupted(turn, i64::MAX).await?.is_some())
    }

    /// Ends `turn` as interrupted if it is running with a lease before `expired_before`,
    /// and appends the event that says so, in one transaction; its conversation if it did.
    async fn mark_interrupted(
        &self,
        turn: &str,
        expired_before: i64,
    ) -> Result<Option<String>, DbError> {
        // The turn's own replica, late, may write the next event number between this
        // transaction's read of the last one and its insert. SQLite serializes writers, so
        // only PostgreSQL sees it, as a unique violation that rolls the transaction back
        // whole (the turn still running): then it is tried again, after that event.
        let mut attempts = 0;
        loop {
            match self.try_mark_interrupted(turn, expired_before).await {
                Err(DbError::Query(sqlx::Error::Database(e)))
                    if e.is_unique_violation() && attempts < 5 =>
                {
                    attempts += 1;
                }
                done => return done,
            }
        }
    }

    async fn try_mark_interrupted(
        &self,
        turn: &str,
        expired_before: i64,
    ) -> Result<Option<String>, DbError> {
        let now = now_ms();
        let mut tx = self.pool.begin().await?;
        let won = sqlx::query(
            "UPDATE turns SET state = 'interrupted', ended_ms = $1 WHERE id = $2 AND state = 'running' AND lease_ms < $3",
        )
        .bind(now)
        .bind(turn)
        .bind(expired_before)
        .execute(&mut *tx)
        .await?;
        if won.rows_affected() != 1 {
            return Ok(None);
        }
        let conversation: String = sqlx::query("SELECT conversation_id FROM turns WHERE id = $1")
            .bind(turn)
            .fetch_one(&mut *tx)
            .await?
            .try_get("conversation_id")?;
        let last: i64 = sqlx::query(
            "SELECT COALESCE(MAX(seq), 0) AS last FROM events WHERE conversation_id = $1",
        )
        .bind(&conversation)
        .fetch_one(&mut *tx)
        .await?
        .try_get("last")?;
        let body = serde_json::json!({
            "type": INTERRUPTED_KIND,
            "turn_id": turn,
            "reason": "the replica running this turn stopped before the turn ended",
        });
        sqlx::query(
            "INSERT INTO events (conversation_id, seq, turn_id, kind, body, at_ms) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&conversation)
        .bind(last + 1)
        .bind(turn)
        .bind(INTERRUPTED_KIND)
        .bind(body.to_string())
        .bind(now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(Some(conversation))
    }

    /// Leaves an answer for a turn running on `replica`.
    pub async fn post_to_inbox(
        &self,
        replica: &str,
        turn: &str,
        body: &str,
    ) -> Result<(), DbError> {
        let sql = match self.backend {
            Backend::Sqlite => {
                "INSERT INTO inbox (id, replica, turn_id, body, at_ms) VALUES ($1, $2, $3, $4, $5)"
            }
            Backend::Postgres => {
                "WITH added AS (INSERT INTO inbox (id, replica, turn_id, body, at_ms)
                     VALUES ($1, $2, $3, $4, $5) RETURNING replica)
                 SELECT pg_notify('mcp_host_inbox', replica) FROM added"
            }
        };
        sqlx::query(sql)
            .bind(new_id())
            .bind(replica)
            .bind(turn)
            .bind(body)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Takes `replica`'s waiting answers, oldest first: (turn, body).
    pub async fn take_inbox(&self, replica: &str) -> Result<Vec<(String, String)>, DbError> {
        let rows = sqlx::query(
            "SELECT id, turn_id, body FROM inbox WHERE replica = $1 ORDER BY at_ms, id",
        )
        .bind(replica)
        .fetch_all(&self.pool)
        .await?;
        let mut out = Vec::new();
        for r in rows {
            let id: String = r.try_get("id")?;
            let taken = sqlx::query("DELETE FROM inbox WHERE id = $1")
                .bind(&id)
                .execute(&self.pool)
                .await?;
            // Another task of this replica took it first.
            if taken.rows_affected() == 1 {
                out.push((r.try_get("turn_id")?, r.try_get("body")?));
            }
        }
        Ok(out)
    }
}
