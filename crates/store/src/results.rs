//! Large tool results, spilled out of the prompt and kept whole so they can be read back on
//! request. Content-addressed: the handle is derived from the text, so storing the same
//! result twice keeps one copy, and a handle names exactly one content.

use crate::{Store, StoreError, excerpt, hex, is_lower_hex};
use sha2::{Digest, Sha256};

/// Hex digits in a handle: 16 bytes of SHA-256 are plenty to never collide by chance, and
/// short enough to quote to a model.
const HANDLE_LEN: usize = 32;

/// The handle `put_result` files `text` under: the first 16 bytes of its SHA-256, in
/// lowercase hex.
pub fn result_handle(text: &str) -> String {
    hex(&Sha256::digest(text.as_bytes())[..HANDLE_LEN / 2])
}

/// Handles come back from models and users; check the shape before it reaches a query.
fn check_handle(handle: &str) -> Result<(), StoreError> {
    if is_lower_hex(handle, HANDLE_LEN) {
        Ok(())
    } else {
        Err(StoreError::BadHandle(excerpt(handle)))
    }
}

impl Store {
    /// Stores `text` (once, however often it is put) and returns its handle.
    pub async fn put_result(&self, text: &str) -> Result<String, StoreError> {
        let handle = result_handle(text);
        let bytes = i64::try_from(text.len()).unwrap_or(i64::MAX);
        sqlx::query(
            "INSERT INTO results (handle, body, bytes) VALUES (?, ?, ?)
             ON CONFLICT (handle) DO NOTHING",
        )
        .bind(&handle)
        .bind(text.as_bytes())
        .bind(bytes)
        .execute(&self.pool)
        .await?;
        Ok(handle)
    }

    /// The text stored under `handle`, or `None` when there is none. A handle of the wrong
    /// shape is an error, not an absence, so a mangled handle is told apart from a lost one.
    pub async fn get_result(&self, handle: &str) -> Result<Option<String>, StoreError> {
        check_handle(handle)?;
        let body: Option<Vec<u8>> = sqlx::query_scalar("SELECT body FROM results WHERE handle = ?")
            .bind(handle)
            .fetch_optional(&self.pool)
            .await?;
        body.map(|b| {
            String::from_utf8(b)
                .map_err(|_| StoreError::Corrupt(format!("result {handle} is not UTF-8")))
        })
        .transpose()
    }

    /// Bytes `[offset, offset + length)` of the result under `handle` (fewer at the end) and
    /// its total size, read by SQLite without loading the rest: paging through a 20 MB
    /// result costs each page, not the whole. `None` when there is no such result.
    pub async fn get_result_range(
        &self,
        handle: &str,
        offset: u64,
        length: u64,
    ) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        check_handle(handle)?;
        let start = i64::try_from(offset).unwrap_or(i64::MAX).saturating_add(1);
        let length = i64::try_from(length).unwrap_or(i64::MAX);
        // `substr` on a BLOB counts bytes, from 1.
        let row: Option<(i64, Vec<u8>)> =
            sqlx::query_as("SELECT length(body), substr(body, ?, ?) FROM results WHERE handle = ?")
                .bind(start)
                .bind(length)
                .bind(handle)
                .fetch_optional(&self.pool)
                .await?;
        Ok(row.map(|(total, bytes)| (bytes, u64::try_from(total).unwrap_or(0))))
    }
}
