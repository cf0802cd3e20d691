//! Large results against a real SQLite file: byte-exact round trips, one copy per content,
//! handle shapes.

use mcp_host_store::{Store, StoreError, result_handle};

async fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("store.sqlite")).await.unwrap()
}

async fn rows(path: &std::path::Path) -> i64 {
    let pool = mcp_host_store::open_sqlite(path).await.unwrap();
    let n = sqlx::query_scalar("SELECT COUNT(*) FROM results")
        .fetch_one(&pool)
        .await
        .unwrap();
    pool.close().await;
    n
}

#[tokio::test]
async fn a_20_mb_result_round_trips_and_is_stored_once() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    // Varied, multi-byte content, so a truncation or re-encoding would show.
    let mut text = String::with_capacity(21_000_000);
    let mut i: u64 = 0;
    while text.len() < 20_000_000 {
        text.push_str(&format!("{i:x} ✓ line\n"));
        i = i
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
    }
    let handle = store.put_result(&text).await.unwrap();
    assert_eq!(handle.len(), 32);
    assert!(
        handle
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    );
    assert_eq!(handle, result_handle(&text));
    assert_eq!(store.put_result(&text).await.unwrap(), handle);
    drop(store);

    let store = open(&dir).await;
    let back = store.get_result(&handle).await.unwrap().unwrap();
    assert!(back == text, "the result came back changed");
    let small = store.put_result("small").await.unwrap();
    assert_ne!(small, handle);
    assert_eq!(
        store.get_result(&small).await.unwrap().as_deref(),
        Some("small")
    );
    drop(store);
    assert_eq!(rows(&dir.path().join("store.sqlite")).await, 2);
}

#[tokio::test]
async fn handles_are_checked_and_absence_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let empty = store.put_result("").await.unwrap();
    assert_eq!(store.get_result(&empty).await.unwrap().as_deref(), Some(""));
    // SHA-256 of nothing starts e3b0c442…
    assert_eq!(empty, "e3b0c44298fc1c149afbf4c8996fb924");
    assert_eq!(
        store
            .get_result("00000000000000000000000000000000")
            .await
            .unwrap(),
        None
    );
    for bad in [
        "",
        "e3b0c442",
        "E3B0C44298FC1C149AFBF4C8996FB924",
        "e3b0c44298fc1c149afbf4c8996fb9240",
        "e3b0c44298fc1c149afbf4c8996fb92g",
        "' OR 1=1 --",
        "e3b0c44298fc1c149afbf4c8996fb92€",
    ] {
        let got = store.get_result(bad).await;
        assert!(
            matches!(got, Err(StoreError::BadHandle(_))),
            "{bad:?} gave {got:?}"
        );
    }
}

#[tokio::test]
async fn ranges_are_exact_across_chunk_boundaries_and_at_the_ends() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let text: String = (0..200_000).map(|i| format!("{i:07}\n")).collect();
    let handle = store.put_result(&text).await.unwrap();
    let bytes = text.as_bytes();
    let total = bytes.len() as u64;
    // Inside one chunk, across the first boundary (256 KiB), across several, the tail, and
    // past the end.
    for (offset, length) in [
        (0, 10),
        (262_140, 10),
        (100_000, 700_000),
        (total - 5, 100),
        (total + 10, 5),
        (0, u64::MAX),
    ] {
        let (got, size) = store
            .get_result_range(&handle, offset, length)
            .await
            .unwrap()
            .unwrap();
        assert_eq!(size, total);
        let start = offset.min(total) as usize;
        let end = offset.saturating_add(length).min(total) as usize;
        assert_eq!(got, &bytes[start..end], "offset {offset}, length {length}");
    }
    assert!(
        store
            .get_result_range(&"0".repeat(32), 0, 1)
            .await
            .unwrap()
            .is_none()
    );
}
