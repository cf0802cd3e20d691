//! People and their credentials in the service database: users (with the admin role and
//! groups), API tokens (hashed, revocable), browser sign-ins (hashed cookie + CSRF token),
//! who may enable which catalogue server, what each user enabled, each user's own narrowing
//! rules, and the log of refused requests.

use crate::db::{Db, DbError, new_id, new_secret, now_ms, secret_hash};
use sqlx::Row;
use std::time::Duration;

/// `n` days, as a token's lifetime.
pub fn days(n: u32) -> Duration {
    Duration::from_secs(u64::from(n) * 86_400)
}

/// How long revoked and expired tokens and logged refusals are kept.
pub const KEPT_FOR: Duration = Duration::from_secs(30 * 86_400);
/// An answer still in an inbox after this long was for a turn that ended long ago.
const INBOX_KEPT_FOR: Duration = Duration::from_secs(86_400);

/// A signed-in person or script, as every handler sees it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct User {
    pub id: String,
    pub name: String,
    pub admin: bool,
    pub groups: Vec<String>,
}

/// How long a browser sign-in lasts.
pub const WEB_SESSION_MS: i64 = 12 * 60 * 60 * 1000;

/// A token's visible prefix: tells a leaked string for what it is (secret scanners key on it).
pub const TOKEN_PREFIX: &str = "mhk_";

fn user_from(row: &sqlx::any::AnyRow) -> Result<User, DbError> {
    let groups: String = row.try_get("groups_list")?;
    Ok(User {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        admin: row.try_get::<i64, _>("admin")? != 0,
        groups: groups_of(&groups),
    })
}

/// The groups a stored `groups_list` names.
fn groups_of(list: &str) -> Vec<String> {
    list.split(',')
        .filter(|g| !g.is_empty())
        .map(str::to_string)
        .collect()
}

/// Whether a stored principal (`*`, `user:<id>`, `group:<name>`) covers `user`.
fn grants(principal: &str, user: &User) -> bool {
    principal == "*"
        || principal.strip_prefix("user:") == Some(user.id.as_str())
        || (principal.strip_prefix("group:")).is_some_and(|g| user.groups.iter().any(|x| x == g))
}

/// What a user may write in a rule of their own: a deny or an ask, never an allow.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum NarrowList {
    Deny,
    Ask,
}

impl NarrowList {
    fn as_str(self) -> &'static str {
        match self {
            Self::Deny => "deny",
            Self::Ask => "ask",
        }
    }
}

impl Db {
    /// Adds a user (or returns the existing one of that name, with the role and groups
    /// updated).
    pub async fn upsert_user(
        &self,
        name: &str,
        admin: bool,
        groups: &[String],
    ) -> Result<User, DbError> {
        let groups = groups.join(",");
        // A person who signs in through the identity provider owns their name: an admin's
        // `add-user` must not take their account over (or hand its token out).
        let owner = sqlx::query("SELECT issuer FROM users WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        if let Some(row) = owner
            && row.try_get::<Option<String>, _>("issuer")?.is_some()
        {
            return Err(DbError::Conflict(format!(
                "the name {name:?} belongs to a person who signs in through the identity provider"
            )));
        }
        if let Some(user) = self.user_by_name(name).await? {
            sqlx::query("UPDATE users SET admin = $1, groups_list = $2 WHERE id = $3")
                .bind(i64::from(admin))
                .bind(&groups)
                .bind(&user.id)
                .execute(&self.pool)
                .await?;
        } else {
            sqlx::query(
                "INSERT INTO users (id, name, issuer, subject, admin, groups_list, created_ms)
                 VALUES ($1, $2, NULL, NULL, $3, $4, $5)",
            )
            .bind(new_id())
            .bind(name)
            .bind(i64::from(admin))
            .bind(&groups)
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        }
        self.user_by_name(name)
            .await?
            .ok_or_else(|| DbError::Corrupt(format!("user {name} vanished after being written")))
    }

    /// The user an identity provider's `(iss, sub)` belongs to, made on first sign-in. The
    /// name is the provider's `preferred_username` (or `sub`), made unique if it is taken.
    /// Two first sign-ins of one person at once (two tabs, two replicas) make one user: the
    /// one that loses the insert finds the other's.
    pub async fn user_for_subject(
        &self,
        issuer: &str,
        subject: &str,
        name: &str,
        groups: &[String],
    ) -> Result<User, DbError> {
        for _ in 0..3 {
            if let Some(user) = self.user_of_subject(issuer, subject, groups).await? {
                return Ok(user);
            }
            match self.insert_subject(issuer, subject, name, groups).await {
                Ok(user) => return Ok(user),
                // The subject (or the name picked) was taken meanwhile: look again.
                Err(DbError::Query(sqlx::Error::Database(e))) if e.is_unique_violation() => {}
                Err(e) => return Err(e),
            }
        }
        Err(DbError::Conflict(format!(
            "could not make a user for {subject} at {issuer}"
        )))
    }

    /// The user of `(iss, sub)`, with the groups the provider gives now.
    async fn user_of_subject(
        &self,
        issuer: &str,
        subject: &str,
        groups: &[String],
    ) -> Result<Option<User>, DbError> {
        let found = sqlx::query("SELECT * FROM users WHERE issuer = $1 AND subject = $2")
            .bind(issuer)
            .bind(subject)
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = found else { return Ok(None) };
        let mut user = user_from(&row)?;
        let list = groups.join(",");
        sqlx::query("UPDATE users SET groups_list = $1 WHERE id = $2")
            .bind(&list)
            .bind(&user.id)
            .execute(&self.pool)
            .await?;
        // What a read of the row would now give, without reading it again.
        user.groups = groups_of(&list);
        Ok(Some(user))
    }

    async fn insert_subject(
        &self,
        issuer: &str,
        subject: &str,
        name: &str,
        groups: &[String],
    ) -> Result<User, DbError> {
        let mut unique = name.to_string();
        let mut n = 2;
        while self.user_by_name(&unique).await?.is_some() {
            unique = format!("{name}-{n}");
            n += 1;
        }
        let id = new_id();
        sqlx::query(
            "INSERT INTO users (id, name, issuer, subject, admin, groups_list, created_ms)
             VALUES ($1, $2, $3, $4, 0, $5, $6)",
        )
        .bind(&id)
        .bind(&unique)
        .bind(issuer)
        .bind(subject)
        .bind(groups.join(","))
        .bind(now_ms())
        .execute(&self.pool)
        .await?;
        self.user(&id)
            .await?
            .ok_or_else(|| DbError::Corrupt(format!("user {id} vanished after being written")))
    }

    /// Sets a user's role and groups (an identity provider's sign-in: its groups now).
    pub async fn set_role(
        &self,
        user: &User,
        admin: bool,
        groups: &[String],
    ) -> Result<User, DbError> {
        sqlx::query("UPDATE users SET admin = $1, groups_list = $2 WHERE id = $3")
            .bind(i64::from(admin))
            .bind(groups.join(","))
            .bind(&user.id)
            .execute(&self.pool)
            .await?;
        self.user(&user.id).await?.ok_or_else(|| {
            DbError::Corrupt(format!("user {} vanished after being written", user.id))
        })
    }

    pub async fn user(&self, id: &str) -> Result<Option<User>, DbError> {
        let row = sqlx::query("SELECT * FROM users WHERE id = $1")
            .bind(id)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(user_from).transpose()
    }

    pub async fn user_by_name(&self, name: &str) -> Result<Option<User>, DbError> {
        let row = sqlx::query("SELECT * FROM users WHERE name = $1")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(user_from).transpose()
    }

    pub async fn users(&self) -> Result<Vec<User>, DbError> {
        let rows = sqlx::query("SELECT * FROM users ORDER BY name")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(user_from).collect()
    }

    /// A new API token for `user`: the token itself is returned once and never stored.
    /// A new API token for `user` that works for `lifetime` (`None`: until revoked).
    pub async fn create_token(
        &self,
        user: &User,
        label: &str,
        lifetime: Option<Duration>,
    ) -> Result<(String, String), DbError> {
        let token = format!("{TOKEN_PREFIX}{}", new_secret());
        let id = new_id();
        let now = now_ms();
        let expires =
            lifetime.map(|l| now.saturating_add(i64::try_from(l.as_millis()).unwrap_or(i64::MAX)));
        sqlx::query(
            "INSERT INTO api_tokens (id, user_id, hash, label, created_ms, revoked_ms, expires_ms)
             VALUES ($1, $2, $3, $4, $5, NULL, $6)",
        )
        .bind(&id)
        .bind(&user.id)
        .bind(secret_hash(&token))
        .bind(label)
        .bind(now)
        .bind(expires)
        .execute(&self.pool)
        .await?;
        Ok((id, token))
    }

    /// The user a presented API token belongs to, if it is known, not revoked and not
    /// expired.
    pub async fn user_for_token(&self, token: &str) -> Result<Option<User>, DbError> {
        let row = sqlx::query(
            "SELECT u.* FROM api_tokens t JOIN users u ON u.id = t.user_id
             WHERE t.hash = $1 AND t.revoked_ms IS NULL
                 AND (t.expires_ms IS NULL OR t.expires_ms > $2)",
        )
        .bind(secret_hash(token))
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        row.as_ref().map(user_from).transpose()
    }

    /// The user's tokens: id, label, created, revoked, expiry (never the token).
    pub async fn tokens(&self, user: &User) -> Result<Vec<serde_json::Value>, DbError> {
        let rows = sqlx::query(
            "SELECT id, label, created_ms, revoked_ms, expires_ms FROM api_tokens
             WHERE user_id = $1 ORDER BY created_ms, id",
        )
        .bind(&user.id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(serde_json::json!({
                    "id": r.try_get::<String, _>("id")?,
                    "label": r.try_get::<String, _>("label")?,
                    "created_ms": r.try_get::<i64, _>("created_ms")?,
                    "revoked_ms": r.try_get::<Option<i64>, _>("revoked_ms")?,
                    "expires_ms": r.try_get::<Option<i64>, _>("expires_ms")?,
                }))
            })
            .collect()
    }

    /// Revokes one of `user`'s tokens; `false` when `user` has no such token.
    pub async fn revoke_token(&self, user: &User, id: &str) -> Result<bool, DbError> {
        let done = sqlx::query(
            "UPDATE api_tokens SET revoked_ms = $1 WHERE id = $2 AND user_id = $3 AND revoked_ms IS NULL",
        )
        .bind(now_ms())
        .bind(id)
        .bind(&user.id)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() == 1)
    }

    /// Deletes what has stopped mattering by `now`: expired browser sessions, sign-ins
    /// and refresh leases at once; tokens revoked or expired, refusals, and answers left in
    /// an inbox after [`KEPT_FOR`] (tokens stay listed that long, so their owner sees why
    /// one stopped working). How many rows went.
    pub async fn prune(&self, now: i64) -> Result<u64, DbError> {
        let kept = now.saturating_sub(i64::try_from(KEPT_FOR.as_millis()).unwrap_or(i64::MAX));
        let inbox_kept =
            now.saturating_sub(i64::try_from(INBOX_KEPT_FOR.as_millis()).unwrap_or(i64::MAX));
        let statements: [(&str, i64); 6] = [
            ("DELETE FROM web_sessions WHERE expires_ms <= $1", now),
            ("DELETE FROM login_states WHERE expires_ms <= $1", now),
            ("DELETE FROM credential_leases WHERE until_ms <= $1", now),
            (
                "DELETE FROM api_tokens WHERE revoked_ms <= $1 OR expires_ms <= $1",
                kept,
            ),
            ("DELETE FROM refusals WHERE at_ms <= $1", kept),
            ("DELETE FROM inbox WHERE at_ms <= $1", inbox_kept),
        ];
        let mut gone = 0;
        for (sql, before) in statements {
            gone += sqlx::query(sql)
                .bind(before)
                .execute(&self.pool)
                .await?
                .rows_affected();
        }
        Ok(gone)
    }

    /// A browser sign-in for `user`: the cookie value and its CSRF token.
    pub async fn create_web_session(&self, user: &User) -> Result<(String, String), DbError> {
        let cookie = new_secret();
        let csrf = new_secret();
        sqlx::query(
            "INSERT INTO web_sessions (hash, user_id, csrf, expires_ms) VALUES ($1, $2, $3, $4)",
        )
        .bind(secret_hash(&cookie))
        .bind(&user.id)
        .bind(&csrf)
        .bind(now_ms() + WEB_SESSION_MS)
        .execute(&self.pool)
        .await?;
        Ok((cookie, csrf))
    }

    /// The user and CSRF token of a live browser sign-in.
    pub async fn web_session(&self, cookie: &str) -> Result<Option<(User, String)>, DbError> {
        let row = sqlx::query(
            "SELECT u.*, s.csrf FROM web_sessions s JOIN users u ON u.id = s.user_id
             WHERE s.hash = $1 AND s.expires_ms > $2",
        )
        .bind(secret_hash(cookie))
        .bind(now_ms())
        .fetch_optional(&self.pool)
        .await?;
        match row {
            Some(r) => Ok(Some((user_from(&r)?, r.try_get("csrf")?))),
            None => Ok(None),
        }
    }

    pub async fn end_web_session(&self, cookie: &str) -> Result<(), DbError> {
        sqlx::query("DELETE FROM web_sessions WHERE hash = $1")
            .bind(secret_hash(cookie))
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Lets `principal` (`*`, `user:<name>`, `group:<name>`) enable `server`.
    /// A principal as it is stored: `*`, `group:<name>`, or `user:<id>` for `user:<name>`
    /// (resolved now, so a grant stays with the person it was made for whatever names are
    /// taken later).
    async fn resolve_principal(&self, principal: &str) -> Result<String, DbError> {
        if principal == "*" || principal.starts_with("group:") {
            return Ok(principal.to_string());
        }
        let Some(name) = principal.strip_prefix("user:") else {
            return Err(DbError::Conflict(format!(
                "{principal:?} is not `*`, `user:<name>` or `group:<name>`"
            )));
        };
        match self.user_by_name(name).await? {
            Some(user) => Ok(format!("user:{}", user.id)),
            None => Err(DbError::Conflict(format!(
                "there is no user named {name:?}"
            ))),
        }
    }

    pub async fn grant(&self, server: &str, principal: &str) -> Result<(), DbError> {
        let principal = self.resolve_principal(principal).await?;
        sqlx::query(
            "INSERT INTO server_access (server, principal) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(server)
        .bind(&principal)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn set_access(&self, server: &str, principals: &[String]) -> Result<(), DbError> {
        let mut resolved = Vec::new();
        for p in principals {
            resolved.push(self.resolve_principal(p).await?);
        }
        let principals = resolved;
        let mut tx = self.pool.begin().await?;
        sqlx::query("DELETE FROM server_access WHERE server = $1")
            .bind(server)
            .execute(&mut *tx)
            .await?;
        for p in &principals {
            sqlx::query("INSERT INTO server_access (server, principal) VALUES ($1, $2) ON CONFLICT DO NOTHING")
                .bind(server)
                .bind(p)
                .execute(&mut *tx)
                .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Who may enable `server`.
    pub async fn access(&self, server: &str) -> Result<Vec<String>, DbError> {
        let rows =
            sqlx::query("SELECT principal FROM server_access WHERE server = $1 ORDER BY principal")
                .bind(server)
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|r| r.try_get("principal").map_err(DbError::from))
            .collect()
    }

    /// Whether `user` may enable `server`: granted to everyone, to the user, or a group of theirs.
    pub async fn may_enable(&self, user: &User, server: &str) -> Result<bool, DbError> {
        let granted = self.access(server).await?;
        Ok(granted.iter().any(|p| grants(p, user)))
    }

    /// Every server `user` may enable, from one read of the grants (a listing would
    /// otherwise ask once per catalogue server).
    pub async fn enableable(
        &self,
        user: &User,
    ) -> Result<std::collections::BTreeSet<String>, DbError> {
        let rows = sqlx::query("SELECT server, principal FROM server_access")
            .fetch_all(&self.pool)
            .await?;
        let mut out = std::collections::BTreeSet::new();
        for r in rows {
            if grants(&r.try_get::<String, _>("principal")?, user) {
                out.insert(r.try_get("server")?);
            }
        }
        Ok(out)
    }

    pub async fn enabled_servers(&self, user: &User) -> Result<Vec<String>, DbError> {
        let rows =
            sqlx::query("SELECT server FROM enabled_servers WHERE user_id = $1 ORDER BY server")
                .bind(&user.id)
                .fetch_all(&self.pool)
                .await?;
        rows.iter()
            .map(|r| r.try_get("server").map_err(DbError::from))
            .collect()
    }

    /// Enables `server` for `user` unless they have `cap` enabled already; `false` when the
    /// cap stopped it. Counting and adding happen under the user's row lock (an update of
    /// it), so concurrent requests cannot each see room for one more.
    pub async fn enable_capped(
        &self,
        user: &User,
        server: &str,
        cap: usize,
    ) -> Result<bool, DbError> {
        let mut tx = self.pool.begin().await?;
        sqlx::query("UPDATE users SET admin = admin WHERE id = $1")
            .bind(&user.id)
            .execute(&mut *tx)
            .await?;
        let row = sqlx::query(
            "SELECT COUNT(*) AS n, COALESCE(SUM(CASE WHEN server = $2 THEN 1 ELSE 0 END), 0) AS mine
             FROM enabled_servers WHERE user_id = $1",
        )
        .bind(&user.id)
        .bind(server)
        .fetch_one(&mut *tx)
        .await?;
        let (n, mine): (i64, i64) = (row.try_get("n")?, row.try_get("mine")?);
        if mine > 0 {
            return Ok(true);
        }
        if usize::try_from(n).unwrap_or(usize::MAX) >= cap {
            return Ok(false);
        }
        sqlx::query("INSERT INTO enabled_servers (user_id, server) VALUES ($1, $2)")
            .bind(&user.id)
            .bind(server)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok(true)
    }

    pub async fn set_enabled(&self, user: &User, server: &str, on: bool) -> Result<(), DbError> {
        let query = if on {
            "INSERT INTO enabled_servers (user_id, server) VALUES ($1, $2) ON CONFLICT DO NOTHING"
        } else {
            "DELETE FROM enabled_servers WHERE user_id = $1 AND server = $2"
        };
        sqlx::query(query)
            .bind(&user.id)
            .bind(server)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    pub async fn add_user_rule(
        &self,
        user: &User,
        list: NarrowList,
        pattern: &str,
    ) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO user_rules (user_id, list, pattern) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
        )
        .bind(&user.id)
        .bind(list.as_str())
        .bind(pattern)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    pub async fn user_rules(&self, user: &User) -> Result<Vec<(NarrowList, String)>, DbError> {
        let rows = sqlx::query(
            "SELECT list, pattern FROM user_rules WHERE user_id = $1 ORDER BY list, pattern",
        )
        .bind(&user.id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                let list = match r.try_get::<String, _>("list")?.as_str() {
                    "deny" => NarrowList::Deny,
                    "ask" => NarrowList::Ask,
                    other => return Err(DbError::Corrupt(format!("user rule list {other:?}"))),
                };
                Ok((list, r.try_get("pattern")?))
            })
            .collect()
    }

    /// Records a refused request (never its body or credentials).
    pub async fn log_refusal(
        &self,
        user: Option<&User>,
        method: &str,
        path: &str,
        status: u16,
        why: &str,
    ) -> Result<(), DbError> {
        sqlx::query(
            "INSERT INTO refusals (at_ms, user_id, method, path, status, why) VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(now_ms())
        .bind(user.map(|u| u.id.clone()))
        .bind(method)
        .bind(path)
        .bind(i64::from(status))
        .bind(why)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The latest refusals, newest first (admin view, tests).
    pub async fn refusals(&self, limit: i64) -> Result<Vec<serde_json::Value>, DbError> {
        let rows = sqlx::query(
            "SELECT r.at_ms, u.name, r.method, r.path, r.status, r.why FROM refusals r
             LEFT JOIN users u ON u.id = r.user_id ORDER BY r.at_ms DESC LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|r| {
                Ok(serde_json::json!({
                    "at_ms": r.try_get::<i64, _>("at_ms")?,
                    "user": r.try_get::<Option<String>, _>("name")?,
                    "method": r.try_get::<String, _>("method")?,
                    "path": r.try_get::<String, _>("path")?,
                    "status": r.try_get::<i64, _>("status")?,
                    "why": r.try_get::<String, _>("why")?,
                }))
            })
            .collect()
    }

    /// Records a sign-in under way (its state is kept hashed).
    pub async fn put_login_state(
        &self,
        state_hash: &str,
        verifier: &str,
        nonce: &str,
        expires_ms: i64,
    ) -> Result<(), DbError> {
        sqlx::query("DELETE FROM login_states WHERE expires_ms < $1")
            .bind(now_ms())
            .execute(&self.pool)
            .await?;
        sqlx::query(
            "INSERT INTO login_states (state, verifier, nonce, expires_ms) VALUES ($1, $2, $3, $4)",
        )
        .bind(state_hash)
        .bind(verifier)
        .bind(nonce)
        .bind(expires_ms)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Takes (once) a live sign-in's PKCE verifier and nonce.
    pub async fn take_login_state(
        &self,
        state_hash: &str,
    ) -> Result<Option<(String, String)>, DbError> {
        let row =
            sqlx::query("SELECT verifier, nonce, expires_ms FROM login_states WHERE state = $1")
                .bind(state_hash)
                .fetch_optional(&self.pool)
                .await?;
        let Some(row) = row else { return Ok(None) };
        let taken = sqlx::query("DELETE FROM login_states WHERE state = $1")
            .bind(state_hash)
            .execute(&self.pool)
            .await?;
        // Another callback took it first: a replayed state.
        if taken.rows_affected() != 1 || row.try_get::<i64, _>("expires_ms")? < now_ms() {
            return Ok(None);
        }
        Ok(Some((row.try_get("verifier")?, row.try_get("nonce")?)))
    }
}
