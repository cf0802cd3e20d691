//! Large tool results, spilled out of the prompt and kept whole so they can be read back on
//! request. Content-addressed: the handle is derived from the text, so storing the same
//! result twice keeps one copy, and a handle names exactly one content.

use crate::{Store, StoreError, excerpt, hex, is_lower_hex, now};
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

/// Bytes per stored chunk: a page read touches one or two chunks.
const CHUNK: usize = 256 * 1024;

impl Store {
    /// Stores `text` (once, however often it is put) and returns its handle.
    pub async fn put_result(&self, text: &str) -> Result<String, StoreError> {
        let handle = result_handle(text);
        let bytes = i64::try_from(text.len()).unwrap_or(i64::MAX);
        let mut tx = self.pool().begin().await?;
        // The insert is the write lock too: a second put of the same text waits for this one
        // and then inserts nothing.
        let inserted = sqlx::query(
            "INSERT INTO results (scope, handle, bytes, created_at) VALUES ($1, $2, $3, $4)
             ON CONFLICT (scope, handle) DO NOTHING",
        )
        .bind(self.scope())
        .bind(&handle)
        .bind(bytes)
        .bind(now())
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if inserted == 1 {
            for (seq, chunk) in (0_i64..).zip(text.as_bytes().chunks(CHUNK)) {
                sqlx::query(
                    "INSERT INTO result_chunks (scope, handle, seq, body) VALUES ($1, $2, $3, $4)",
                )
                .bind(self.scope())
                .bind(&handle)
                .bind(seq)
                .bind(chunk)
                .execute(&mut *tx)
                .await?;
            }
        }
        tx.commit().await?;
        Ok(handle)
    }

    /// The text stored under `handle`, or `None` when there is none. A handle of the wrong
    /// shape is an error, not an absence, so a mangled handle is told apart from a lost one.
    pub async fn get_result(&self, handle: &str) -> Result<Option<String>, StoreError> {
        let Some((bytes, _)) = self.get_result_range(handle, 0, u64::MAX).await? else {
            return Ok(None);
        };
        String::from_utf8(bytes)
            .map(Some)
            .map_err(|_| StoreError::Corrupt(format!("result {handle} is not UTF-8")))
    }

    /// Bytes `[offset, offset + length)` of the result under `handle` (fewer at the end) and
    /// its total size, reading only the chunks that hold them. `None` when there is no such
    /// result.
    pub async fn get_result_range(
        &self,
        handle: &str,
        offset: u64,
        length: u64,
    ) -> Result<Option<(Vec<u8>, u64)>, StoreError> {
        check_handle(handle)?;
        let mut tx = self.pool().begin().await?;
        let total: Option<i64> =
            sqlx::query_scalar("SELECT bytes FROM results WHERE scope = $1 AND handle = $2")
                .bind(self.scope())
                .bind(handle)
                .fetch_optional(&mut *tx)
                .await?;
        let Some(total) = total else {
            return Ok(None);
        };
        let total = u64::try_from(total).unwrap_or(0);
        let start = offset.min(total);
        let end = start.saturating_add(length).min(total);
        if start == end {
            return Ok(Some((Vec::new(), total)));
        }
        let chunk = CHUNK as u64;
        let (first, last) = (start / chunk, (end - 1) / chunk);
        let chunks: Vec<Vec<u8>> = sqlx::query_scalar(
            "SELECT body FROM result_chunks WHERE scope = $1 AND handle = $2
             AND seq BETWEEN $3 AND $4 ORDER BY seq",
        )
        .bind(self.scope())
        .bind(handle)
        .bind(i64::try_from(first).unwrap_or(i64::MAX))
        .bind(i64::try_from(last).unwrap_or(i64::MAX))
        .fetch_all(&mut *tx)
        .await?;
        tx.commit().await?;
        let joined = chunks.concat();
        let skip = usize::try_from(start - first * chunk).unwrap_or(usize::MAX);
        let take = usize::try_from(end - start).unwrap_or(usize::MAX);
        let bytes = joined
            .get(skip..skip.saturating_add(take))
            .ok_or_else(|| StoreError::Corrupt(format!("result {handle} is missing chunks")))?
            .to_vec();
        Ok(Some((bytes, total)))
    }
}
