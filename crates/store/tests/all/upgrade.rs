//! A store file written before rows had scopes (the first two migrations, and the first pin
//! migration) opens with the current code and keeps everything: answers, histories with
//! their messages in order, tool calls in the order recorded with their start times,
//! results, and pins.

use mcp_host_core::pins::{PinRecord, PinRecords};
use mcp_host_policy::{MemoryKey, Verdict};
use mcp_host_store::pins::PinStore;
use mcp_host_store::{ConversationId, Store};
use std::path::Path;
use std::time::{Duration, UNIX_EPOCH};

/// Runs only the migrations in `dir` of the crate's `source` folder whose names start with
/// one of `names` against a new file at `path`: the file as an older version left it.
async fn old_file(path: &Path, source: &str, names: &[&str]) -> sqlx::AnyPool {
    let old = tempfile::tempdir().unwrap();
    let from = Path::new(env!("CARGO_MANIFEST_DIR")).join(source);
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let name = entry.file_name().to_string_lossy().into_owned();
        if names.iter().any(|n| name.starts_with(n)) {
            std::fs::copy(entry.path(), old.path().join(&name)).unwrap();
        }
    }
    let pool = mcp_host_store::open_sqlite(path).await.unwrap();
    let migrator = sqlx::migrate::Migrator::new(old.path()).await.unwrap();
    assert_eq!(migrator.iter().count(), names.len());
    migrator.run(&pool).await.unwrap();
    pool
}

async fn exec(pool: &sqlx::AnyPool, sql: &str) {
    // Test fixtures spelled out in full; nothing here comes from outside.
    sqlx::query(sqlx::AssertSqlSafe(sql.to_string()))
        .execute(pool)
        .await
        .unwrap();
}

#[tokio::test]
async fn a_store_from_before_scopes_keeps_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("store.sqlite");
    let pool = old_file(&path, "migrations", &["20261129000002", "20261129000003"]).await;
    let id = "0193a1b2c3d4e5f60718293a4b5c6d7e";
    exec(&pool, "INSERT INTO remembered_answers (server, tool, definition_hash, verdict) VALUES ('f', 'echo', 'h', 'allow')").await;
    exec(&pool, &format!("INSERT INTO conversations (id, created_at, updated_at, model, workdir, title) VALUES ('{id}', '2026-11-30T10:00:00.000Z', '2026-11-30T10:05:00.000Z', 'm', '/work', 'old one')")).await;
    for (seq, text) in [(0, "first"), (1, "second")] {
        exec(&pool, &format!("INSERT INTO messages (conversation_id, seq, turn, body) VALUES ('{id}', {seq}, 0, '{{\"text\": \"{text}\"}}')")).await;
    }
    // Recorded b then a: the order of recording is kept, not the order of the ids.
    for call in ["b", "a"] {
        exec(&pool, &format!("INSERT INTO tool_calls (conversation_id, turn, call_id, name, server, tool, arguments, verdict, decided_by, is_error, refused, result_handle, started_at, took_ms, background) VALUES ('{id}', 0, '{call}', 'f__echo', 'f', 'echo', '{{}}', 'allow', NULL, 1, NULL, NULL, '2026-11-30T10:01:02.345Z', 7, 0)")).await;
    }
    pool.close().await;
    let before_results = {
        // A result put the old way: through the same file, before the upgrade.
        let pool = mcp_host_store::open_sqlite(&path).await.unwrap();
        let handle = mcp_host_store::result_handle("kept");
        exec(
            &pool,
            &format!("INSERT INTO results (handle, bytes) VALUES ('{handle}', 4)"),
        )
        .await;
        exec(
            &pool,
            &format!(
                "INSERT INTO result_chunks (handle, seq, body) VALUES ('{handle}', 0, X'6b657074')"
            ),
        )
        .await;
        pool.close().await;
        handle
    };

    let store = Store::open(&path).await.unwrap();
    let key = MemoryKey {
        server: "f".into(),
        tool: "echo".into(),
        definition_hash: "h".into(),
    };
    assert_eq!(
        store.remembered().await.unwrap().answers.get(&key),
        Some(&Verdict::Allow)
    );
    let id = ConversationId::new(id).unwrap();
    let listed = store.list_conversations(10).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].title.as_deref(), Some("old one"));
    assert_eq!(listed[0].messages, 2);
    assert_eq!(listed[0].updated_at, "2026-11-30T10:05:00.000Z");
    let texts: Vec<_> = (store.load_messages(&id).await.unwrap())
        .into_iter()
        .map(|(_, m)| m["text"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(texts, ["first", "second"]);
    let calls = store.load_tool_calls(&id).await.unwrap();
    let order: Vec<_> = calls.iter().map(|c| c.call_id.as_str()).collect();
    assert_eq!(order, ["b", "a"]);
    assert!(calls[0].is_error && !calls[0].background);
    assert_eq!(
        calls[0].started_at,
        UNIX_EPOCH + Duration::from_millis(1_796_032_862_345)
    );
    assert_eq!(
        store.get_result(&before_results).await.unwrap().as_deref(),
        Some("kept")
    );
    // And the upgraded file takes new rows as any other.
    store
        .append_messages(&id, 1, &[serde_json::json!({"text": "third"})])
        .await
        .unwrap();
    assert_eq!(store.load_messages(&id).await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_pin_file_from_before_scopes_keeps_its_pins() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("pins.sqlite");
    let pool = old_file(&path, "pin_migrations", &["20261129000001"]).await;
    exec(
        &pool,
        "INSERT INTO tool_pins (server, tool, hash, definition) VALUES ('f', 'echo', 'h1', '{}')",
    )
    .await;
    pool.close().await;
    let pins = PinStore::open(&path).await.unwrap();
    let pinned = PinRecord {
        hash: "h1".into(),
        definition: "{}".into(),
    };
    assert_eq!(pins.pinned("f", "echo").await.unwrap(), Some(pinned));
}
