//! Users' OAuth credentials for remote MCP servers in the service database, so a sign-in
//! made through one replica is used by every other: [`UserCredentials`] is the auth crate's
//! [`CredentialRows`] for one user, over `oauth_credentials` (keyed by user, server and
//! issuer; the vault seals every value before it gets here) and `credential_leases` (the
//! refresh lock among replicas). Every replica must seal with the same key:
//! [`Db::check_sealing_key`] refuses to start one that does not.

use crate::db::{Db, DbError, now_ms};
use mcp_host_auth::{CredentialError, CredentialKey, CredentialRows, SealingKey};
use sqlx::AnyPool;
use std::time::Duration;

/// One user's rows.
#[derive(Clone, Debug)]
pub struct UserCredentials {
    pub(crate) pool: AnyPool,
    pub(crate) user: String,
}

const KEY_CHECK: &str = "credential_key_check";
/// What the check value is bound to, so no credential can stand in for it.
const KEY_CHECK_CONTEXT: &str = "mcp-host credential key check";

impl Db {
    /// Refuses `key` unless it is the key this database's credentials are sealed with (the
    /// first replica to start records a value sealed with its key; every later one must
    /// open it).
    pub async fn check_sealing_key(&self, key: &SealingKey) -> Result<(), DbError> {
        let check = key
            .seal(b"mcp-host", KEY_CHECK_CONTEXT)
            .map_err(|e| DbError::Conflict(e.to_string()))?;
        sqlx::query(
            "INSERT INTO service_settings (name, value) VALUES ($1, $2)
             ON CONFLICT (name) DO NOTHING",
        )
        .bind(KEY_CHECK)
        .bind(check)
        .execute(&self.pool)
        .await?;
        let recorded: String =
            sqlx::query_scalar("SELECT value FROM service_settings WHERE name = $1")
                .bind(KEY_CHECK)
                .fetch_one(&self.pool)
                .await?;
        key.open(&recorded, KEY_CHECK_CONTEXT)
            .map(|_| ())
            .map_err(|_| {
                DbError::Conflict(
                    "this credential key is not the one the database's credentials are sealed \
                 with: give every replica the same key (--credential-key-file or \
                 MCP_HOST_CREDENTIAL_KEY)"
                        .into(),
                )
            })
    }
}

fn failed(e: sqlx::Error) -> CredentialError {
    CredentialError::Rows(e.to_string())
}

#[async_trait::async_trait]
impl CredentialRows for UserCredentials {
    async fn load(&self, key: &CredentialKey) -> Result<Option<String>, CredentialError> {
        sqlx::query_scalar(
            "SELECT sealed FROM oauth_credentials WHERE user_id = $1 AND server = $2 AND issuer = $3",
        )
        .bind(&self.user)
        .bind(&key.resource)
        .bind(&key.issuer)
        .fetch_optional(&self.pool)
        .await
        .map_err(failed)
    }

    async fn save(&self, key: &CredentialKey, sealed: &str) -> Result<(), CredentialError> {
        sqlx::query(
            "INSERT INTO oauth_credentials (user_id, server, issuer, sealed, updated_ms)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (user_id, server, issuer) DO UPDATE SET sealed = excluded.sealed,
                 updated_ms = excluded.updated_ms",
        )
        .bind(&self.user)
        .bind(&key.resource)
        .bind(&key.issuer)
        .bind(sealed)
        .bind(now_ms())
        .execute(&self.pool)
        .await
        .map_err(failed)?;
        Ok(())
    }

    async fn clear(&self, key: &CredentialKey) -> Result<(), CredentialError> {
        sqlx::query(
            "DELETE FROM oauth_credentials WHERE user_id = $1 AND server = $2 AND issuer = $3",
        )
        .bind(&self.user)
        .bind(&key.resource)
        .bind(&key.issuer)
        .execute(&self.pool)
        .await
        .map_err(failed)?;
        Ok(())
    }

    async fn try_lease(
        &self,
        key: &CredentialKey,
        holder: &str,
        ttl: Duration,
    ) -> Result<bool, CredentialError> {
        let now = now_ms();
        let until = now.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX));
        // One statement: a free key is inserted, a lease that ran out is taken over, a live
        // one is left alone (and nothing is affected).
        let done = sqlx::query(
            "INSERT INTO credential_leases (user_id, server, issuer, holder, until_ms)
             VALUES ($1, $2, $3, $4, $5)
             ON CONFLICT (user_id, server, issuer) DO UPDATE SET holder = excluded.holder,
                 until_ms = excluded.until_ms
             WHERE credential_leases.until_ms < $6",
        )
        .bind(&self.user)
        .bind(&key.resource)
        .bind(&key.issuer)
        .bind(holder)
        .bind(until)
        .bind(now)
        .execute(&self.pool)
        .await
        .map_err(failed)?;
        Ok(done.rows_affected() == 1)
    }

    async fn release(&self, key: &CredentialKey, holder: &str) -> Result<(), CredentialError> {
        sqlx::query(
            "DELETE FROM credential_leases WHERE user_id = $1 AND server = $2 AND issuer = $3
                 AND holder = $4",
        )
        .bind(&self.user)
        .bind(&key.resource)
        .bind(&key.issuer)
        .bind(holder)
        .execute(&self.pool)
        .await
        .map_err(failed)?;
        Ok(())
    }
}
