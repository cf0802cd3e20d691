//! Conversations, messages and tool calls against real SQLite files.

use mcp_host_store::{ConversationId, Store, StoreError, ToolCallRow};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

async fn open(dir: &tempfile::TempDir) -> Store {
    Store::open(&dir.path().join("data/store.sqlite"))
        .await
        .unwrap()
}

/// `updated_at` has millisecond resolution: waits until the wall clock has moved past the
/// current millisecond, so the next write lands in a later one.
async fn next_millisecond() {
    let millis = || {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_millis()
    };
    let start = millis();
    while millis() <= start {
        tokio::task::yield_now().await;
    }
}

#[tokio::test]
async fn messages_round_trip_across_turns_and_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let id = store
        .create_conversation("model-a", "/work/p")
        .await
        .unwrap();
    let turn0 = vec![
        json!({"role": "user", "text": "hi"}),
        json!({"role": "assistant"}),
    ];
    let turn1 = vec![json!({"role": "user", "text": "ünïcode ✓", "n": [1, 2.5, null]})];
    store.append_messages(&id, 0, &turn0).await.unwrap();
    store.append_messages(&id, 1, &turn1).await.unwrap();
    store
        .append_messages(&id, 1, &[] as &[Value])
        .await
        .unwrap();
    drop(store);

    let store = open(&dir).await;
    let loaded = store.load_messages(&id).await.unwrap();
    let expected: Vec<(u32, Value)> = vec![
        (0, turn0[0].clone()),
        (0, turn0[1].clone()),
        (1, turn1[0].clone()),
    ];
    assert_eq!(loaded, expected);
    store
        .append_messages(&id, 2, &[json!("after reopening")])
        .await
        .unwrap();
    let loaded = store.load_messages(&id).await.unwrap();
    assert_eq!(loaded.len(), 4);
    assert_eq!(loaded[3], (2, json!("after reopening")));

    let summary = store.conversation(&id).await.unwrap();
    assert_eq!(summary.id, id);
    assert_eq!(summary.model, "model-a");
    assert_eq!(summary.workdir, "/work/p");
    assert_eq!(summary.messages, 4);
    assert_eq!(summary.title, None);
}

#[tokio::test]
async fn latest_conversation_is_the_newest_for_that_workdir() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    assert_eq!(store.latest_conversation("/a").await.unwrap(), None);

    let first = store.create_conversation("m", "/a").await.unwrap();
    next_millisecond().await;
    let second = store.create_conversation("m", "/a").await.unwrap();
    next_millisecond().await;
    let elsewhere = store.create_conversation("m", "/b").await.unwrap();
    assert_eq!(
        store.latest_conversation("/a").await.unwrap().unwrap().id,
        second
    );

    // Activity, not creation, decides: the older conversation becomes the latest.
    next_millisecond().await;
    store
        .append_messages(&first, 0, &[json!("more")])
        .await
        .unwrap();
    let latest = store.latest_conversation("/a").await.unwrap().unwrap();
    assert_eq!(latest.id, first);
    assert_eq!(latest.messages, 1);
    assert!(latest.updated_at > latest.created_at);
    assert_eq!(
        store.latest_conversation("/b").await.unwrap().unwrap().id,
        elsewhere
    );
    assert_eq!(store.latest_conversation("/a/sub").await.unwrap(), None);

    let listed: Vec<ConversationId> = store
        .list_conversations(10)
        .await
        .unwrap()
        .into_iter()
        .map(|s| s.id)
        .collect();
    assert_eq!(listed, vec![first.clone(), elsewhere, second]);
    assert_eq!(store.list_conversations(1).await.unwrap()[0].id, first);
}

#[tokio::test]
async fn replace_messages_rewrites_the_whole_history() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let id = store.create_conversation("m", "/w").await.unwrap();
    let other = store.create_conversation("m", "/w").await.unwrap();
    store
        .append_messages(&id, 0, &[json!(1), json!(2), json!(3)])
        .await
        .unwrap();
    store
        .append_messages(&other, 0, &[json!("untouched")])
        .await
        .unwrap();

    let compacted = vec![(0, json!({"summary": "1..3"})), (4, json!("kept"))];
    store
        .replace_messages(&id, compacted.clone())
        .await
        .unwrap();
    assert_eq!(store.load_messages(&id).await.unwrap(), compacted);
    // Appending continues after the rewritten history.
    store
        .append_messages(&id, 5, &[json!("new")])
        .await
        .unwrap();
    assert_eq!(
        store.load_messages(&id).await.unwrap().last(),
        Some(&(5, json!("new")))
    );
    // Long histories go in several statements and come back in order, appends after them.
    let long: Vec<(u32, serde_json::Value)> = (0..250).map(|i| (i / 7, json!(i))).collect();
    store.replace_messages(&id, long.clone()).await.unwrap();
    let more: Vec<serde_json::Value> = (250..460).map(|i| json!(i)).collect();
    store.append_messages(&id, 40, &more).await.unwrap();
    let expected: Vec<(u32, serde_json::Value)> = (long.iter().cloned())
        .chain(more.iter().map(|m| (40, m.clone())))
        .collect();
    assert_eq!(store.load_messages(&id).await.unwrap(), expected);
    store
        .replace_messages(&id, [] as [(u32, Value); 0])
        .await
        .unwrap();
    assert!(store.load_messages(&id).await.unwrap().is_empty());
    assert_eq!(
        store.load_messages(&other).await.unwrap(),
        vec![(0, json!("untouched"))]
    );
}

#[tokio::test]
async fn unknown_conversation_is_reported_as_such() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let known = store.create_conversation("m", "/w").await.unwrap();
    let unknown: ConversationId = "0123456789abcdef0123456789abcdef".parse().unwrap();
    assert_ne!(known, unknown);

    let is_missing = |r: Result<(), StoreError>| {
        assert!(
            matches!(&r, Err(StoreError::NoConversation(id)) if *id == unknown.to_string()),
            "{r:?}"
        );
    };
    is_missing(store.load_messages(&unknown).await.map(drop));
    is_missing(store.append_messages(&unknown, 0, &[json!(1)]).await);
    is_missing(store.replace_messages(&unknown, [(0, json!(1))]).await);
    is_missing(store.set_title(&unknown, "t").await);
    is_missing(store.conversation(&unknown).await.map(drop));
    is_missing(store.load_tool_calls(&unknown).await.map(drop));
    is_missing(store.record_tool_call(&call(&unknown, "c1")).await);
    // A turn's calls are written together: one of them for a conversation that is gone
    // leaves none of them behind.
    let batch = [call(&known, "c1"), call(&unknown, "c2"), call(&known, "c3")];
    is_missing(store.record_tool_calls(&batch).await);
    assert!(store.load_tool_calls(&known).await.unwrap().is_empty());
    // A failed append leaves nothing behind.
    assert!(store.load_messages(&known).await.unwrap().is_empty());
}

#[tokio::test]
async fn titles_show_in_listings() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let id = store.create_conversation("m", "/w").await.unwrap();
    store.set_title(&id, "Fixing the parser").await.unwrap();
    let listed = store.list_conversations(5).await.unwrap();
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0].title.as_deref(), Some("Fixing the parser"));
}

#[tokio::test]
async fn ids_are_unique_and_sortable() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let mut seen = HashSet::new();
    let mut previous: Option<ConversationId> = None;
    for i in 0..500 {
        let id = store.create_conversation("m", "/w").await.unwrap();
        assert_eq!(id.as_str().len(), 32);
        assert_eq!(id.to_string().parse::<ConversationId>().unwrap(), id);
        assert!(seen.insert(id.clone()), "duplicate id {id}");
        if i % 100 == 0 {
            // Ids made in a later millisecond sort after earlier ones.
            if let Some(prev) = previous {
                assert!(id > prev, "{id} should sort after {prev}");
            }
            previous = Some(id);
            next_millisecond().await;
        }
    }
    assert_eq!(store.list_conversations(1000).await.unwrap().len(), 500);
}

#[test]
fn conversation_ids_from_garbage_are_refused() {
    for bad in [
        "",
        "latest",
        "0123456789abcdef0123456789abcde",   // 31 digits
        "0123456789abcdef0123456789abcdef0", // 33 digits
        "0123456789abcdef0123456789abcdeg",
        " 0123456789abcdef0123456789abcde",
        "../../../../etc/passwd",
        "0123456789abcdef0123456789abcdé",
    ] {
        let refused = bad.parse::<ConversationId>();
        assert!(
            matches!(refused, Err(StoreError::BadConversationId(_))),
            "{bad:?} gave {refused:?}"
        );
        assert!(ConversationId::new(bad).is_err());
    }
    let huge = "x".repeat(1_000_000);
    let err = ConversationId::new(&huge).unwrap_err().to_string();
    assert!(err.len() < 300, "the error echoes only the start: {err}");
    // Copied in upper case, still the same id.
    let id = ConversationId::new("0123456789ABCDEF0123456789abcdef").unwrap();
    assert_eq!(id.as_str(), "0123456789abcdef0123456789abcdef");
}

fn call(id: &ConversationId, call_id: &str) -> ToolCallRow {
    ToolCallRow {
        conversation_id: id.clone(),
        turn: 3,
        call_id: call_id.into(),
        name: "files__read".into(),
        server: "files".into(),
        tool: "read".into(),
        arguments: json!({"path": "/tmp/x", "deep": {"n": 1}}),
        verdict: "ask".into(),
        decided_by: None,
        is_error: false,
        refused: None,
        result_handle: None,
        started_at: UNIX_EPOCH + Duration::from_millis(1_796_000_000_123),
        took_ms: None,
        background: false,
    }
}

#[tokio::test]
async fn tool_calls_are_recorded_and_updated() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let id = store.create_conversation("m", "/w").await.unwrap();
    let started = call(&id, "c1");
    store.record_tool_call(&started).await.unwrap();
    let other = ToolCallRow {
        call_id: "c2".into(),
        verdict: "deny".into(),
        decided_by: Some(json!({"rule": "deny files__write"})),
        refused: Some("denied by rule".into()),
        background: true,
        // Sub-millisecond precision is not kept.
        started_at: SystemTime::now(),
        ..call(&id, "c2")
    };
    store.record_tool_call(&other).await.unwrap();
    let finished = ToolCallRow {
        verdict: "allow".into(),
        decided_by: Some(json!({"user": "once"})),
        is_error: true,
        result_handle: Some("00112233445566778899aabbccddeeff".into()),
        took_ms: Some(1234),
        ..started.clone()
    };
    store.record_tool_call(&finished).await.unwrap();
    drop(store);

    let store = open(&dir).await;
    let rows = store.load_tool_calls(&id).await.unwrap();
    assert_eq!(rows.len(), 2, "recording c1 again updated it");
    assert_eq!(rows[0], finished);
    let millis = |t: SystemTime| t.duration_since(UNIX_EPOCH).unwrap().as_millis();
    assert_eq!(millis(rows[1].started_at), millis(other.started_at));
    assert_eq!(
        rows[1],
        ToolCallRow {
            started_at: rows[1].started_at,
            ..other.clone()
        }
    );
    // The same three records written as one turn's batch, in order, end the same way.
    let again = store.create_conversation("m", "/w").await.unwrap();
    let batch = [&started, &other, &finished].map(|r| ToolCallRow {
        conversation_id: again.clone(),
        ..r.clone()
    });
    store.record_tool_calls(&batch).await.unwrap();
    let batched = store.load_tool_calls(&again).await.unwrap();
    let by_id = |rows: &[ToolCallRow]| -> Vec<(String, String, bool)> {
        (rows.iter())
            .map(|r| (r.call_id.clone(), r.verdict.clone(), r.is_error))
            .collect()
    };
    assert_eq!(by_id(&batched), by_id(&rows));
    // A long turn's calls span several statements and keep their order, after what was
    // recorded before.
    let many: Vec<ToolCallRow> = (0..250)
        .map(|i| call(&again, &format!("m{i:03}")))
        .collect();
    store.record_tool_calls(&many).await.unwrap();
    let all = store.load_tool_calls(&again).await.unwrap();
    let ids: Vec<&str> = all.iter().map(|r| r.call_id.as_str()).collect();
    let expected: Vec<String> = ["c1", "c2"]
        .map(String::from)
        .into_iter()
        .chain(many.iter().map(|r| r.call_id.clone()))
        .collect();
    assert_eq!(ids, expected);
}

#[tokio::test]
async fn concurrent_appends_keep_every_message() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    // A second handle on the same file, as a second process would have.
    let other = open(&dir).await;
    let id = store.create_conversation("m", "/w").await.unwrap();
    let mut tasks = Vec::new();
    for (writer, s) in [store.clone(), store.clone(), other]
        .into_iter()
        .enumerate()
    {
        let id = id.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..20 {
                s.append_messages(&id, 0, &[json!([writer, i]), json!("pair")])
                    .await
                    .unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    let loaded = store.load_messages(&id).await.unwrap();
    assert_eq!(loaded.len(), 120);
    // Each append stayed together: every message is followed by its pair.
    for pair in loaded.chunks(2) {
        assert!(pair[0].1.is_array(), "{pair:?}");
        assert_eq!(pair[1].1, json!("pair"));
    }
}

/// A turn's call rows written while another connection holds the file's write lock wait their
/// turn (the busy timeout) instead of failing with "database is locked": the transaction
/// takes the write lock before it reads, so SQLite never has to upgrade a read to a write.
#[tokio::test]
async fn tool_calls_wait_for_another_writer() {
    use mcp_host_store::db::{Backend, connect, sqlite_url};
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let id = store.create_conversation("m", "/w").await.unwrap();
    let url = sqlite_url(&dir.path().join("data/store.sqlite")).unwrap();
    let other = connect(&url, Backend::Sqlite, 1).await.unwrap();
    let mut writer = other.begin().await.unwrap();
    sqlx::query("UPDATE histories SET title = title")
        .execute(&mut *writer)
        .await
        .unwrap();

    let calls = [call(&id, "c1"), call(&id, "c2")];
    let record = store.record_tool_calls(&calls);
    tokio::pin!(record);
    // Held until the write is seen waiting (or ended, which it must not while locked out).
    if let Ok(ended) = tokio::time::timeout(Duration::from_millis(500), &mut record).await {
        panic!("ended while another connection held the write lock: {ended:?}");
    }
    writer.commit().await.unwrap();
    record.await.unwrap();
    assert_eq!(store.load_tool_calls(&id).await.unwrap().len(), 2);
}

/// A batch of any length is written whole and in order, however it is cut into statements
/// (of 32 rows, then the rest by powers of two).
#[tokio::test]
async fn long_batches_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = open(&dir).await;
    let id = store.create_conversation("m", "/w").await.unwrap();
    for (turn, n) in [(0, 301), (1, 1), (2, 63)] {
        let messages: Vec<Value> = (0..n).map(|i| json!([turn, i])).collect();
        store.append_messages(&id, turn, &messages).await.unwrap();
    }
    let loaded = store.load_messages(&id).await.unwrap();
    let want: Vec<(u32, Value)> = [(0, 301), (1, 1), (2, 63)]
        .into_iter()
        .flat_map(|(turn, n)| (0..n).map(move |i| (turn, json!([turn, i]))))
        .collect();
    assert_eq!(loaded, want);
    let calls: Vec<ToolCallRow> = (0..151).map(|i| call(&id, &format!("c{i}"))).collect();
    store.record_tool_calls(&calls).await.unwrap();
    store.record_tool_calls(&calls[..45]).await.unwrap();
    let ids: Vec<String> = (store.load_tool_calls(&id).await.unwrap().into_iter())
        .map(|c| c.call_id)
        .collect();
    let want: Vec<String> = (0..151).map(|i| format!("c{i}")).collect();
    assert_eq!(ids, want, "recorded again, a call keeps its first place");
}
