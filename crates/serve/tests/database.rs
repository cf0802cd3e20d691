//! The service database's API against both of its backends: every test body below is one
//! async fn taking a `Db`, run once on a fresh SQLite file (`sqlite::<name>`) and once on a
//! fresh PostgreSQL database (`postgres::<name>`) when `MCP_HOST_TEST_POSTGRES_URL` names a
//! server (scripts/test.sh starts one; in CI its absence is a failure, not a skip).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

use mcp_host_auth::{CredentialKey, SealingKey};
use mcp_host_core::pins::{PinRecord, PinRecords};
use mcp_host_policy::{MemoryKey, Verdict};
use mcp_host_serve::db::{Backend, Db, DbError, now_ms};
use mcp_host_serve::journal::{INTERRUPTED_KIND, StoredEvent, TurnState};
use mcp_host_serve::users::{self, NarrowList, User};
use mcp_host_store::{ConversationId, StoreError, ToolCallRow};
use std::time::Duration;

/// Runs each named body on both backends: `sqlite::<name>` and `postgres::<name>`.
macro_rules! on_both_backends {
    ($($name:ident),* $(,)?) => {
        mod sqlite {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    let dir = tempfile::tempdir().unwrap();
                    let db = super::open_sqlite(dir.path()).await;
                    super::$name(db).await;
                }
            )*
        }
        mod postgres {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
                async fn $name() {
                    if let Some(db) = super::open_postgres().await {
                        super::$name(db).await;
                    }
                }
            )*
        }
    };
}

on_both_backends!(
    users_are_upserted_and_found,
    identity_provider_subjects_get_their_own_user,
    tokens_are_hashed_listed_and_revoked,
    web_sessions_carry_a_csrf_token_and_end,
    login_states_are_taken_once_while_live,
    grants_decide_who_may_enable_a_server,
    enabled_servers_and_user_rules_are_per_user,
    refusals_are_logged_newest_first,
    conversations_belong_to_their_user,
    one_running_turn_per_conversation,
    an_expired_turn_is_swept_once_with_an_event,
    concurrent_sweeps_interrupt_a_turn_exactly_once,
    interrupt_turn_ends_a_live_turn,
    an_interrupt_racing_the_turns_late_writer_still_lands,
    events_are_numbered_ordered_and_unique,
    the_inbox_is_taken_once_per_replica,
    concurrent_first_sign_ins_make_one_user,
    expired_tokens_stop_working_and_old_rows_are_pruned,
    each_users_engine_store_is_their_own,
    a_history_appended_from_two_replicas_keeps_every_message_once,
    credential_rows_are_per_user_and_leases_exclusive_until_they_run_out,
    every_replica_must_seal_with_the_first_ones_key,
);

async fn open_sqlite(dir: &std::path::Path) -> Db {
    let db = Db::open(None, &dir.join("service.db")).await.unwrap();
    assert_eq!(db.backend, Backend::Sqlite);
    db
}

async fn open_postgres() -> Option<Db> {
    let Some(url) = mcp_host_testkit::postgres::fresh_database("serve_db") else {
        #[allow(clippy::print_stderr)] // Says why the test did nothing.
        {
            eprintln!("skipped on PostgreSQL: MCP_HOST_TEST_POSTGRES_URL is not set");
        }
        return None;
    };
    let db = Db::open(Some(&url), std::path::Path::new("/nonexistent/unused.db"))
        .await
        .unwrap();
    assert_eq!(db.backend, Backend::Postgres);
    Some(db)
}

/// A second replica (or a restart) opens the same database: the migrations are already
/// applied (sqlx's `_sqlx_migrations` table on either backend), and both see the same rows.
async fn a_second_opener_shares_the_schema_and_rows(first: Db, second: Db) {
    let alice = user(&first, "alice").await;
    assert_eq!(second.user_by_name("alice").await.unwrap(), Some(alice));
    let conv = second
        .create_conversation(&second.user_by_name("alice").await.unwrap().unwrap(), "c")
        .await
        .unwrap();
    assert_eq!(first.last_seq(&conv.id).await.unwrap(), 0);
}

#[tokio::test]
async fn sqlite_a_second_opener_shares_the_schema_and_rows() {
    let dir = tempfile::tempdir().unwrap();
    let first = open_sqlite(dir.path()).await;
    let second = open_sqlite(dir.path()).await;
    a_second_opener_shares_the_schema_and_rows(first, second).await;
}

#[tokio::test]
async fn postgres_a_second_opener_shares_the_schema_and_rows() {
    let Some(url) = mcp_host_testkit::postgres::fresh_database("serve_db") else {
        return;
    };
    let unused = std::path::Path::new("/nonexistent/unused.db");
    // Three replicas starting at once on a new database: sqlx's migration lock (an advisory
    // lock on PostgreSQL) lets one migrate while the others wait, then find nothing to do.
    // The `postgresql://` spelling of the scheme is accepted too.
    let long = url.replacen("postgres://", "postgresql://", 1);
    let (first, second, third) = tokio::join!(
        Db::open(Some(&url), unused),
        Db::open(Some(&long), unused),
        Db::open(Some(&url), unused)
    );
    let (first, second) = (first.unwrap(), second.unwrap());
    assert_eq!(second.backend, Backend::Postgres);
    drop(third.unwrap());
    a_second_opener_shares_the_schema_and_rows(first, second).await;
}

/// Makes the next `now_ms()` differ from the last one, for rows ordered by time.
async fn next_ms() {
    tokio::time::sleep(Duration::from_millis(3)).await;
}

async fn user(db: &Db, name: &str) -> User {
    db.upsert_user(name, false, &[]).await.unwrap()
}

async fn users_are_upserted_and_found(db: Db) {
    let bob = db
        .upsert_user("bob", false, &["eng".to_string(), "ops".to_string()])
        .await
        .unwrap();
    assert_eq!(bob.name, "bob");
    assert!(!bob.admin);
    assert_eq!(bob.groups, ["eng", "ops"]);
    assert_eq!(bob.id.len(), 32);

    // Same name: same user, role and groups updated.
    let bob2 = db.upsert_user("bob", true, &[]).await.unwrap();
    assert_eq!(bob2.id, bob.id);
    assert!(bob2.admin);
    assert!(bob2.groups.is_empty());

    let alice = db.upsert_user("alice", false, &[]).await.unwrap();
    assert_eq!(db.user(&alice.id).await.unwrap(), Some(alice.clone()));
    assert_eq!(db.user("no-such-id").await.unwrap(), None);
    assert_eq!(db.user_by_name("carol").await.unwrap(), None);
    let names: Vec<String> = db
        .users()
        .await
        .unwrap()
        .into_iter()
        .map(|u| u.name)
        .collect();
    assert_eq!(names, ["alice", "bob"]);
}

async fn identity_provider_subjects_get_their_own_user(db: Db) {
    // A local user already has the name the provider suggests.
    let local = user(&db, "dana").await;
    let groups = vec!["staff".to_string()];
    let sso = db
        .user_for_subject("https://idp.example", "sub-1", "dana", &groups)
        .await
        .unwrap();
    assert_ne!(sso.id, local.id);
    assert_eq!(sso.name, "dana-2");
    assert_eq!(sso.groups, ["staff"]);
    assert!(!sso.admin);

    // Signing in again: the same user, with the provider's groups of now.
    let again = db
        .user_for_subject(
            "https://idp.example",
            "sub-1",
            "renamed",
            &["staff".to_string(), "admins".to_string()],
        )
        .await
        .unwrap();
    assert_eq!(again.id, sso.id);
    assert_eq!(again.name, "dana-2");
    assert_eq!(again.groups, ["staff", "admins"]);

    // Same subject at another issuer: another person.
    let other = db
        .user_for_subject("https://other.example", "sub-1", "dana", &[])
        .await
        .unwrap();
    assert_ne!(other.id, sso.id);
    assert_eq!(other.name, "dana-3");
}

async fn tokens_are_hashed_listed_and_revoked(db: Db) {
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let (id1, token1) = db.create_token(&alice, "laptop", None).await.unwrap();
    next_ms().await;
    let hour = Some(Duration::from_secs(3600));
    let (id2, token2) = db.create_token(&alice, "ci", hour).await.unwrap();
    assert!(token1.starts_with("mhk_"));
    assert_ne!(token1, token2);

    assert_eq!(
        db.user_for_token(&token1).await.unwrap(),
        Some(alice.clone())
    );
    assert_eq!(db.user_for_token("mhk_forged").await.unwrap(), None);

    let listed = db.tokens(&alice).await.unwrap();
    assert_eq!(listed.len(), 2);
    assert_eq!(listed[0]["id"], id1.as_str());
    assert_eq!(listed[0]["label"], "laptop");
    assert!(listed[0]["created_ms"].as_i64().unwrap() > 0);
    assert!(listed[0]["revoked_ms"].is_null());
    assert!(listed[0]["expires_ms"].is_null());
    assert_eq!(listed[1]["id"], id2.as_str());
    assert!(listed[1]["expires_ms"].as_i64().unwrap() > listed[1]["created_ms"].as_i64().unwrap());
    // Never the token or its hash.
    let text = serde_json::to_string(&listed).unwrap();
    assert!(!text.contains(&token1) && !text.contains("hash"));
    assert!(db.tokens(&bob).await.unwrap().is_empty());

    // Another user cannot revoke it; its owner can, once.
    assert!(!db.revoke_token(&bob, &id1).await.unwrap());
    assert!(db.user_for_token(&token1).await.unwrap().is_some());
    assert!(db.revoke_token(&alice, &id1).await.unwrap());
    assert!(!db.revoke_token(&alice, &id1).await.unwrap());
    assert_eq!(db.user_for_token(&token1).await.unwrap(), None);
    assert_eq!(
        db.user_for_token(&token2).await.unwrap(),
        Some(alice.clone())
    );
    let listed = db.tokens(&alice).await.unwrap();
    assert!(listed[0]["revoked_ms"].as_i64().unwrap() > 0);
    assert!(listed[1]["revoked_ms"].is_null());
}

async fn web_sessions_carry_a_csrf_token_and_end(db: Db) {
    let alice = user(&db, "alice").await;
    let (cookie, csrf) = db.create_web_session(&alice).await.unwrap();
    let (cookie2, csrf2) = db.create_web_session(&alice).await.unwrap();
    assert_ne!(cookie, csrf);
    assert_ne!(cookie, cookie2);
    assert_ne!(csrf, csrf2);
    assert_eq!(
        db.web_session(&cookie).await.unwrap(),
        Some((alice.clone(), csrf.clone()))
    );
    assert_eq!(db.web_session("forged").await.unwrap(), None);
    // The cookie is not its own key: only its hash is stored.
    assert_eq!(db.web_session(&csrf).await.unwrap(), None);

    db.end_web_session(&cookie).await.unwrap();
    assert_eq!(db.web_session(&cookie).await.unwrap(), None);
    // Ending one sign-in leaves the others; ending twice is harmless.
    db.end_web_session(&cookie).await.unwrap();
    assert_eq!(
        db.web_session(&cookie2).await.unwrap(),
        Some((alice, csrf2))
    );
}

async fn login_states_are_taken_once_while_live(db: Db) {
    let live = now_ms() + 600_000;
    db.put_login_state("state-1", "verifier-1", "nonce-1", live)
        .await
        .unwrap();
    db.put_login_state("state-2", "verifier-2", "nonce-2", now_ms() - 1)
        .await
        .unwrap();
    assert_eq!(
        db.take_login_state("state-1").await.unwrap(),
        Some(("verifier-1".to_string(), "nonce-1".to_string()))
    );
    // A replayed state, an expired one, an unknown one: nothing.
    assert_eq!(db.take_login_state("state-1").await.unwrap(), None);
    assert_eq!(db.take_login_state("state-2").await.unwrap(), None);
    assert_eq!(db.take_login_state("state-3").await.unwrap(), None);
    // The same state twice is refused (its primary key).
    db.put_login_state("state-4", "v", "n", live).await.unwrap();
    db.put_login_state("state-4", "v", "n", live)
        .await
        .unwrap_err();

    // Callbacks racing with one state: one of them gets it.
    db.put_login_state("state-5", "verifier-5", "nonce-5", live)
        .await
        .unwrap();
    let takers: Vec<_> = (0..6)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { db.take_login_state("state-5").await })
        })
        .collect();
    let mut won = 0;
    for t in takers {
        won += usize::from(t.await.unwrap().unwrap().is_some());
    }
    assert_eq!(won, 1);
}

async fn grants_decide_who_may_enable_a_server(db: Db) {
    let alice = db
        .upsert_user("alice", false, &["eng".to_string()])
        .await
        .unwrap();
    let bob = db
        .upsert_user("bob", false, &["sales".to_string()])
        .await
        .unwrap();

    assert!(!db.may_enable(&alice, "git").await.unwrap());
    db.grant("git", "user:alice").await.unwrap();
    // Granting twice is no error (ON CONFLICT DO NOTHING) and keeps one row.
    db.grant("git", "user:alice").await.unwrap();
    // Stored by id: the grant stays with alice whoever takes a name later.
    assert_eq!(
        db.access("git").await.unwrap(),
        [format!("user:{}", alice.id)]
    );
    assert!(db.may_enable(&alice, "git").await.unwrap());
    assert!(!db.may_enable(&bob, "git").await.unwrap());

    db.grant("docs", "group:sales").await.unwrap();
    assert!(db.may_enable(&bob, "docs").await.unwrap());
    assert!(!db.may_enable(&alice, "docs").await.unwrap());
    // A grant names a user who exists (an id is not a name), and a group is not a user.
    assert!(matches!(
        db.grant("wiki", &format!("user:{}", alice.id)).await,
        Err(DbError::Conflict(_))
    ));
    assert!(matches!(
        db.grant("wiki", "user:eng").await,
        Err(DbError::Conflict(_))
    ));
    assert!(matches!(
        db.grant("wiki", "alice").await,
        Err(DbError::Conflict(_))
    ));
    assert!(!db.may_enable(&alice, "wiki").await.unwrap());

    db.grant("time", "*").await.unwrap();
    assert!(db.may_enable(&alice, "time").await.unwrap());
    assert!(db.may_enable(&bob, "time").await.unwrap());
    // The listing agrees with the one-by-one answer.
    let listed = |u: &User| {
        let db = db.clone();
        let u = u.clone();
        async move {
            db.enableable(&u)
                .await
                .unwrap()
                .into_iter()
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(listed(&alice).await, ["git", "time"]);
    assert_eq!(listed(&bob).await, ["docs", "time"]);

    // set_access replaces the whole list, in one transaction.
    db.set_access("git", &["group:sales".to_string(), "*".to_string()])
        .await
        .unwrap();
    assert_eq!(db.access("git").await.unwrap(), ["*", "group:sales"]);
    db.set_access("git", &[]).await.unwrap();
    assert!(db.access("git").await.unwrap().is_empty());
    assert!(!db.may_enable(&alice, "git").await.unwrap());
    // A list naming a user who does not exist is refused whole and leaves the old list.
    db.set_access("docs", &["*".to_string(), "user:nobody".to_string()])
        .await
        .unwrap_err();
    assert_eq!(db.access("docs").await.unwrap(), ["group:sales"]);
}

async fn enabled_servers_and_user_rules_are_per_user(db: Db) {
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    db.set_enabled(&alice, "time", true).await.unwrap();
    db.set_enabled(&alice, "git", true).await.unwrap();
    db.set_enabled(&alice, "git", true).await.unwrap();
    db.set_enabled(&bob, "fetch", true).await.unwrap();
    assert_eq!(db.enabled_servers(&alice).await.unwrap(), ["git", "time"]);
    assert_eq!(db.enabled_servers(&bob).await.unwrap(), ["fetch"]);
    db.set_enabled(&alice, "git", false).await.unwrap();
    db.set_enabled(&alice, "never-enabled", false)
        .await
        .unwrap();
    assert_eq!(db.enabled_servers(&alice).await.unwrap(), ["time"]);

    db.add_user_rule(&alice, NarrowList::Deny, "git/*")
        .await
        .unwrap();
    db.add_user_rule(&alice, NarrowList::Deny, "git/*")
        .await
        .unwrap();
    db.add_user_rule(&alice, NarrowList::Ask, "fetch/fetch")
        .await
        .unwrap();
    db.add_user_rule(&bob, NarrowList::Ask, "time/*")
        .await
        .unwrap();
    assert_eq!(
        db.user_rules(&alice).await.unwrap(),
        [
            (NarrowList::Ask, "fetch/fetch".to_string()),
            (NarrowList::Deny, "git/*".to_string()),
        ]
    );
    assert_eq!(
        db.user_rules(&bob).await.unwrap(),
        [(NarrowList::Ask, "time/*".to_string())]
    );
}

async fn refusals_are_logged_newest_first(db: Db) {
    let alice = user(&db, "alice").await;
    db.log_refusal(
        Some(&alice),
        "GET",
        "/api/conversations/x",
        404,
        "not yours",
    )
    .await
    .unwrap();
    next_ms().await;
    db.log_refusal(None, "POST", "/api/turns", 403, "no CSRF token")
        .await
        .unwrap();
    let all = db.refusals(10).await.unwrap();
    assert_eq!(all.len(), 2);
    assert_eq!(all[0]["user"], serde_json::Value::Null);
    assert_eq!(all[0]["method"], "POST");
    assert_eq!(all[0]["status"], 403);
    assert_eq!(all[0]["why"], "no CSRF token");
    assert_eq!(all[1]["user"], "alice");
    assert_eq!(all[1]["path"], "/api/conversations/x");
    assert_eq!(all[1]["status"], 404);
    assert!(all[1]["at_ms"].as_i64().unwrap() <= all[0]["at_ms"].as_i64().unwrap());
    let latest = db.refusals(1).await.unwrap();
    assert_eq!(latest.len(), 1);
    assert_eq!(latest[0]["method"], "POST");
}

async fn conversations_belong_to_their_user(db: Db) {
    let alice = user(&db, "alice").await;
    let bob = user(&db, "bob").await;
    let first = db.create_conversation(&alice, "first").await.unwrap();
    next_ms().await;
    let second = db.create_conversation(&alice, "second").await.unwrap();
    assert_eq!(first.engine_id, None);

    assert_eq!(
        db.conversation(&alice, &first.id).await.unwrap(),
        Some(first.clone())
    );
    // Bob cannot see Alice's conversation, and cannot tell it from a missing one.
    assert_eq!(db.conversation(&bob, &first.id).await.unwrap(), None);
    assert_eq!(db.conversation(&bob, "no-such-id").await.unwrap(), None);
    assert!(db.conversations(&bob).await.unwrap().is_empty());

    let listed = db.conversations(&alice).await.unwrap();
    assert_eq!(listed, [second.clone(), first.clone()]);

    db.set_engine_id(&first.id, "engine-42").await.unwrap();
    db.set_title(&first.id, "renamed").await.unwrap();
    let got = db.conversation(&alice, &first.id).await.unwrap().unwrap();
    assert_eq!(got.engine_id.as_deref(), Some("engine-42"));
    assert_eq!(got.title, "renamed");
    assert_eq!(got.created_ms, first.created_ms);
}

async fn one_running_turn_per_conversation(db: Db) {
    let alice = user(&db, "alice").await;
    let conv = db.create_conversation(&alice, "c").await.unwrap();
    let other = db.create_conversation(&alice, "d").await.unwrap();
    let lease = now_ms() + 60_000;

    let t1 = db.start_turn(&alice, &conv.id, "r1", lease).await.unwrap();
    // A second running turn in the same conversation, from any replica: refused by the
    // partial unique index.
    for replica in ["r1", "r2"] {
        let err = db
            .start_turn(&alice, &conv.id, replica, lease)
            .await
            .unwrap_err();
        assert!(matches!(err, DbError::Conflict(_)), "{err:?}");
    }
    // Another conversation is independent.
    let t2 = db.start_turn(&alice, &other.id, "r2", lease).await.unwrap();

    let running = db.running_turn(&conv.id).await.unwrap().unwrap();
    assert_eq!(
        (running.id.as_str(), running.replica.as_str()),
        (t1.as_str(), "r1")
    );
    assert_eq!(
        db.turn_state(&t1).await.unwrap().as_deref(),
        Some("running")
    );
    assert_eq!(db.turn_state("no-such-turn").await.unwrap(), None);

    // Leases: only the replica's running turns.
    assert_eq!(db.renew_leases("r1", lease + 1000).await.unwrap(), 1);
    assert_eq!(db.renew_leases("r2", lease + 1000).await.unwrap(), 1);
    assert_eq!(db.renew_leases("r3", lease + 1000).await.unwrap(), 0);

    assert!(db.end_turn(&t1, TurnState::Finished).await.unwrap());
    assert!(!db.end_turn(&t1, TurnState::Failed).await.unwrap());
    assert_eq!(
        db.turn_state(&t1).await.unwrap().as_deref(),
        Some("finished")
    );
    assert_eq!(db.running_turn(&conv.id).await.unwrap(), None);
    assert_eq!(db.renew_leases("r1", lease + 2000).await.unwrap(), 0);

    // The index covers running turns only: the next turn starts.
    next_ms().await;
    let t3 = db.start_turn(&alice, &conv.id, "r2", lease).await.unwrap();
    assert!(db.end_turn(&t3, TurnState::Cancelled).await.unwrap());
    assert_eq!(
        db.turns(&conv.id).await.unwrap(),
        [
            (t1.clone(), "finished".to_string()),
            (t3.clone(), "cancelled".to_string())
        ]
    );
    assert!(db.end_turn(&t2, TurnState::Failed).await.unwrap());
    assert_eq!(db.turn_state(&t2).await.unwrap().as_deref(), Some("failed"));

    // A turn in a conversation that does not exist is refused (foreign key), not a conflict.
    let err = db
        .start_turn(&alice, "no-such-conversation", "r1", lease)
        .await
        .unwrap_err();
    assert!(matches!(err, DbError::Query(_)), "{err:?}");
}

async fn an_expired_turn_is_swept_once_with_an_event(db: Db) {
    let alice = user(&db, "alice").await;
    let with_events = db.create_conversation(&alice, "a").await.unwrap();
    let empty = db.create_conversation(&alice, "b").await.unwrap();
    let live = db.create_conversation(&alice, "c").await.unwrap();
    let now = now_ms();

    let dead1 = db
        .start_turn(&alice, &with_events.id, "gone", now - 5_000)
        .await
        .unwrap();
    let dead2 = db
        .start_turn(&alice, &empty.id, "gone", now - 1)
        .await
        .unwrap();
    let alive = db
        .start_turn(&alice, &live.id, "here", now + 60_000)
        .await
        .unwrap();
    for seq in 1..=3 {
        db.append_event(&with_events.id, &event(seq, Some(&dead1), "text"))
            .await
            .unwrap();
    }

    let mut swept = db.sweep_expired(now).await.unwrap();
    swept.sort();
    let mut expected = vec![with_events.id.clone(), empty.id.clone()];
    expected.sort();
    assert_eq!(swept, expected);

    assert_eq!(
        db.turn_state(&dead1).await.unwrap().as_deref(),
        Some("interrupted")
    );
    assert_eq!(
        db.turn_state(&dead2).await.unwrap().as_deref(),
        Some("interrupted")
    );
    assert_eq!(
        db.turn_state(&alive).await.unwrap().as_deref(),
        Some("running")
    );

    // The event is numbered after the last one (1 in an empty conversation).
    let events = db.events_after(&with_events.id, 0, 100).await.unwrap();
    assert_eq!(events.len(), 4);
    let last = &events[3];
    assert_eq!(last.seq, 4);
    assert_eq!(last.kind, INTERRUPTED_KIND);
    assert_eq!(last.turn_id.as_deref(), Some(dead1.as_str()));
    let body: serde_json::Value = serde_json::from_str(&last.body).unwrap();
    assert_eq!(body["type"], INTERRUPTED_KIND);
    assert_eq!(body["turn_id"], dead1.as_str());
    let events = db.events_after(&empty.id, 0, 100).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(events[0].seq, 1);
    assert_eq!(db.last_seq(&empty.id).await.unwrap(), 1);

    // Once only: a second sweep finds nothing, and the replica that comes back cannot end
    // or renew the turn any more.
    assert!(db.sweep_expired(now).await.unwrap().is_empty());
    assert!(db.sweep_expired(now_ms() + 1).await.unwrap().is_empty());
    assert_eq!(db.last_seq(&with_events.id).await.unwrap(), 4);
    assert!(!db.end_turn(&dead1, TurnState::Finished).await.unwrap());
    assert_eq!(db.renew_leases("gone", now + 60_000).await.unwrap(), 0);
    assert_eq!(
        db.turn_state(&dead1).await.unwrap().as_deref(),
        Some("interrupted")
    );
    // And the conversation takes a new turn.
    db.start_turn(&alice, &with_events.id, "here", now + 60_000)
        .await
        .unwrap();
}

async fn concurrent_sweeps_interrupt_a_turn_exactly_once(db: Db) {
    let alice = user(&db, "alice").await;
    let now = now_ms();
    let mut conversations = Vec::new();
    for i in 0..4 {
        let conv = db
            .create_conversation(&alice, &format!("c{i}"))
            .await
            .unwrap();
        db.start_turn(&alice, &conv.id, "gone", now - 10)
            .await
            .unwrap();
        db.append_event(&conv.id, &event(1, None, "text"))
            .await
            .unwrap();
        conversations.push(conv.id);
    }
    // Eight replicas sweep at once: each turn is won by one of them.
    let sweeps: Vec<_> = (0..8)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { db.sweep_expired(now).await })
        })
        .collect();
    let mut won = Vec::new();
    for sweep in sweeps {
        won.extend(sweep.await.unwrap().unwrap());
    }
    won.sort();
    conversations.sort();
    assert_eq!(won, conversations);
    for conv in &conversations {
        let events = db.events_after(conv, 0, 100).await.unwrap();
        let kinds: Vec<&str> = events.iter().map(|e| e.kind.as_str()).collect();
        assert_eq!(kinds, ["text", INTERRUPTED_KIND]);
        assert_eq!(events[1].seq, 2);
    }
}

async fn interrupt_turn_ends_a_live_turn(db: Db) {
    let alice = user(&db, "alice").await;
    let conv = db.create_conversation(&alice, "c").await.unwrap();
    let turn = db
        .start_turn(&alice, &conv.id, "r1", now_ms() + 60_000)
        .await
        .unwrap();
    db.append_event(&conv.id, &event(1, Some(&turn), "text"))
        .await
        .unwrap();
    // A live lease is no protection against an explicit interrupt.
    assert!(db.sweep_expired(now_ms()).await.unwrap().is_empty());
    assert!(db.interrupt_turn(&turn).await.unwrap());
    assert!(!db.interrupt_turn(&turn).await.unwrap());
    assert!(!db.interrupt_turn("no-such-turn").await.unwrap());
    assert_eq!(
        db.turn_state(&turn).await.unwrap().as_deref(),
        Some("interrupted")
    );
    let events = db.events_after(&conv.id, 1, 100).await.unwrap();
    assert_eq!(events.len(), 1);
    assert_eq!(
        (events[0].seq, events[0].kind.as_str()),
        (2, INTERRUPTED_KIND)
    );
    // An ended turn is not interrupted.
    let next = db
        .start_turn(&alice, &conv.id, "r1", now_ms() + 60_000)
        .await
        .unwrap();
    assert!(db.end_turn(&next, TurnState::Finished).await.unwrap());
    assert!(!db.interrupt_turn(&next).await.unwrap());
    assert_eq!(db.last_seq(&conv.id).await.unwrap(), 2);
}

/// The turn's replica, late, writes its next event while another replica interrupts the
/// turn: whichever commits first takes the number, and the interrupt always lands after it
/// (on PostgreSQL the interrupt's transaction then meets a unique violation and is retried).
async fn an_interrupt_racing_the_turns_late_writer_still_lands(db: Db) {
    let alice = user(&db, "alice").await;
    for _ in 0..50 {
        let conv = db.create_conversation(&alice, "c").await.unwrap();
        let turn = db
            .start_turn(&alice, &conv.id, "late", now_ms() - 10)
            .await
            .unwrap();
        let writer = {
            let (db, conv, turn) = (db.clone(), conv.id.clone(), turn.clone());
            tokio::spawn(
                async move { db.append_event(&conv, &event(1, Some(&turn), "text")).await },
            )
        };
        assert!(db.interrupt_turn(&turn).await.unwrap());
        let wrote = match writer.await.unwrap() {
            Ok(()) => true,
            Err(DbError::Conflict(_)) => false,
            Err(e) => panic!("the late writer failed otherwise: {e}"),
        };
        let kinds: Vec<(i64, String)> = db
            .events_after(&conv.id, 0, 10)
            .await
            .unwrap()
            .into_iter()
            .map(|e| (e.seq, e.kind))
            .collect();
        if wrote {
            assert_eq!(kinds, [(1, "text".into()), (2, INTERRUPTED_KIND.into())]);
        } else {
            assert_eq!(kinds, [(1, INTERRUPTED_KIND.to_string())]);
        }
    }
}

fn event(seq: i64, turn: Option<&str>, kind: &str) -> StoredEvent {
    StoredEvent {
        seq,
        turn_id: turn.map(str::to_string),
        kind: kind.to_string(),
        body: serde_json::json!({"type": kind, "n": seq}).to_string(),
        at_ms: 0, // Set by the database layer.
    }
}

async fn events_are_numbered_ordered_and_unique(db: Db) {
    let alice = user(&db, "alice").await;
    let conv = db.create_conversation(&alice, "c").await.unwrap();
    let other = db.create_conversation(&alice, "d").await.unwrap();
    assert_eq!(db.last_seq(&conv.id).await.unwrap(), 0);
    assert!(db.events_after(&conv.id, 0, 10).await.unwrap().is_empty());

    let turn = db
        .start_turn(&alice, &conv.id, "r1", now_ms() + 60_000)
        .await
        .unwrap();
    // Out of order on purpose, and past 9 (numbers, not text, decide the order).
    let mut written = Vec::new();
    for seq in [3, 1, 2, 12, 10, 11, 4, 5, 6, 7, 8, 9] {
        let e = event(seq, (seq % 2 == 0).then_some(turn.as_str()), "text");
        db.append_event(&conv.id, &e).await.unwrap();
        written.push(e);
    }
    written.sort_by_key(|e| e.seq);
    // The same numbers in another conversation are free.
    db.append_event(&other.id, &event(1, None, "text"))
        .await
        .unwrap();

    // A number already taken: another writer owns the conversation now.
    let err = db
        .append_event(&conv.id, &event(2, None, "late"))
        .await
        .unwrap_err();
    assert!(matches!(err, DbError::Conflict(_)), "{err:?}");
    // Events of a conversation that does not exist are refused, not a conflict.
    let err = db
        .append_event("no-such-conversation", &event(1, None, "x"))
        .await
        .unwrap_err();
    assert!(matches!(err, DbError::Query(_)), "{err:?}");

    assert_eq!(db.last_seq(&conv.id).await.unwrap(), 12);
    assert_eq!(db.last_seq(&other.id).await.unwrap(), 1);
    // Read back as written, with the time the database layer gave each.
    let before = now_ms();
    let read: Vec<StoredEvent> = db
        .events_after(&conv.id, 0, 100)
        .await
        .unwrap()
        .into_iter()
        .map(|e| {
            assert!(e.at_ms > 0 && e.at_ms <= before, "{e:?}");
            StoredEvent { at_ms: 0, ..e }
        })
        .collect();
    assert_eq!(read, written);
    let page = db.events_after(&conv.id, 2, 3).await.unwrap();
    assert_eq!(page.iter().map(|e| e.seq).collect::<Vec<_>>(), [3, 4, 5]);
    assert_eq!(page[0].turn_id, None);
    assert_eq!(page[1].turn_id.as_deref(), Some(turn.as_str()));
    assert_eq!(page[0].body, written[2].body);
    assert!(db.events_after(&conv.id, 12, 10).await.unwrap().is_empty());
    assert_eq!(db.events_after(&conv.id, 11, 10).await.unwrap().len(), 1);
}

async fn the_inbox_is_taken_once_per_replica(db: Db) {
    assert!(db.take_inbox("r1").await.unwrap().is_empty());
    db.post_to_inbox("r1", "t1", r#"{"approve":true}"#)
        .await
        .unwrap();
    next_ms().await;
    db.post_to_inbox("r2", "t2", r#"{"interrupt":true}"#)
        .await
        .unwrap();
    next_ms().await;
    db.post_to_inbox("r1", "t3", r#"{"answer":"yes"}"#)
        .await
        .unwrap();

    assert_eq!(
        db.take_inbox("r1").await.unwrap(),
        [
            ("t1".to_string(), r#"{"approve":true}"#.to_string()),
            ("t3".to_string(), r#"{"answer":"yes"}"#.to_string()),
        ]
    );
    assert!(db.take_inbox("r1").await.unwrap().is_empty());
    assert_eq!(
        db.take_inbox("r2").await.unwrap(),
        [("t2".to_string(), r#"{"interrupt":true}"#.to_string())]
    );

    // Several takers of one replica at once: every answer is taken exactly once.
    for i in 0..20 {
        db.post_to_inbox("r3", &format!("t{i}"), "{}")
            .await
            .unwrap();
    }
    let takers: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move { db.take_inbox("r3").await })
        })
        .collect();
    let mut taken = Vec::new();
    for t in takers {
        taken.extend(t.await.unwrap().unwrap().into_iter().map(|(turn, _)| turn));
    }
    taken.sort();
    let mut expected: Vec<String> = (0..20).map(|i| format!("t{i}")).collect();
    expected.sort();
    assert_eq!(taken, expected);
}

async fn concurrent_first_sign_ins_make_one_user(db: Db) {
    // Eight first sign-ins of one person at once (tabs, replicas): one user, the same for all.
    let signing_in: Vec<_> = (0..8)
        .map(|_| {
            let db = db.clone();
            tokio::spawn(async move {
                db.user_for_subject("https://idp", "sub-1", "ada", &["staff".to_string()])
                    .await
            })
        })
        .collect();
    let mut ids = Vec::new();
    for s in signing_in {
        ids.push(s.await.unwrap().expect("every sign-in gets the user").id);
    }
    ids.dedup();
    assert_eq!(ids.len(), 1, "{ids:?}");
    let users = db.users().await.unwrap();
    assert_eq!(users.len(), 1, "{users:?}");
    assert_eq!(users[0].name, "ada");
}

/// `sslmode=require` is honoured: the connection is encrypted (the test cluster offers TLS
/// with a self-signed certificate, which `require` does not verify).
#[tokio::test]
async fn postgres_over_tls_when_the_url_asks() {
    let Some(url) = mcp_host_testkit::postgres::fresh_database("serve_tls") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let plain_url = format!("{url}?sslmode=disable");
    let plain = Db::open(Some(&plain_url), &dir.path().join("unused.sqlite"))
        .await
        .unwrap();
    assert_eq!(plain.describe().await.unwrap(), "PostgreSQL (no TLS)");
    let tls_url = format!("{url}?sslmode=require");
    let tls = Db::open(Some(&tls_url), &dir.path().join("unused.sqlite"))
        .await
        .unwrap();
    assert_eq!(tls.describe().await.unwrap(), "PostgreSQL over TLS");
}

fn tool_call(conversation: &ConversationId, call_id: &str) -> ToolCallRow {
    ToolCallRow {
        conversation_id: conversation.clone(),
        turn: 0,
        call_id: call_id.into(),
        name: "f__echo".into(),
        server: "f".into(),
        tool: "echo".into(),
        arguments: serde_json::json!({"message": "hi"}),
        verdict: "allow".into(),
        decided_by: None,
        is_error: false,
        refused: None,
        result_handle: None,
        started_at: std::time::SystemTime::now(),
        took_ms: Some(3),
        background: false,
    }
}

/// Users' engine stores share the tables and nothing else: histories, messages, tool calls,
/// remembered answers, large results and pins are each seen in their own scope only, and
/// naming another user's history or result by id finds nothing.
async fn each_users_engine_store_is_their_own(db: Db) {
    let (alice, bob) = (db.user_data("alice").store, db.user_data("bob").store);
    let history = alice.create_conversation("m", "/w").await.unwrap();
    alice
        .append_messages(
            &history,
            0,
            &[serde_json::json!({"role": "user", "text": "secret"})],
        )
        .await
        .unwrap();
    alice
        .record_tool_call(&tool_call(&history, "c1"))
        .await
        .unwrap();
    assert_eq!(alice.load_messages(&history).await.unwrap().len(), 1);
    assert_eq!(alice.load_tool_calls(&history).await.unwrap().len(), 1);
    assert!(matches!(
        bob.load_messages(&history).await,
        Err(StoreError::NoConversation(_))
    ));
    assert!(matches!(
        bob.load_tool_calls(&history).await,
        Err(StoreError::NoConversation(_))
    ));
    assert!(matches!(
        bob.append_messages(&history, 1, &[serde_json::json!({})])
            .await,
        Err(StoreError::NoConversation(_))
    ));
    let recorded = bob.record_tool_call(&tool_call(&history, "c2")).await;
    assert!(
        matches!(recorded, Err(StoreError::NoConversation(_))),
        "{recorded:?}"
    );
    assert!(matches!(
        bob.set_title(&history, "mine now").await,
        Err(StoreError::NoConversation(_))
    ));
    assert!(bob.list_conversations(10).await.unwrap().is_empty());
    assert_eq!(alice.list_conversations(10).await.unwrap().len(), 1);
    // Nothing Bob tried reached Alice's history.
    assert_eq!(alice.load_messages(&history).await.unwrap().len(), 1);
    assert_eq!(alice.load_tool_calls(&history).await.unwrap().len(), 1);

    let key = MemoryKey {
        server: "f".into(),
        tool: "echo".into(),
        definition_hash: "h".into(),
    };
    alice.remember(&key, Verdict::Allow).await.unwrap();
    bob.remember(&key, Verdict::Deny).await.unwrap();
    assert_eq!(
        alice.remembered().await.unwrap().answers.get(&key),
        Some(&Verdict::Allow)
    );
    assert_eq!(
        bob.remembered().await.unwrap().answers.get(&key),
        Some(&Verdict::Deny)
    );
    assert_eq!(bob.forget(None, None).await.unwrap(), 1);
    assert_eq!(alice.remembered().await.unwrap().answers.len(), 1);

    let handle = alice.put_result("alice's large result").await.unwrap();
    assert_eq!(bob.get_result(&handle).await.unwrap(), None);
    // The same content put by both is kept for each (the handle alone reaches nobody's).
    let shared = "the same text";
    let (a, b) = (
        alice.put_result(shared).await.unwrap(),
        bob.put_result(shared).await.unwrap(),
    );
    assert_eq!(a, b);
    assert_eq!(bob.get_result(&b).await.unwrap().as_deref(), Some(shared));
    assert_eq!(
        alice.get_result(&handle).await.unwrap().as_deref(),
        Some("alice's large result")
    );

    let alice_pins = db.session_user_data("alice").pins;
    let bob_pins = db.session_user_data("bob").pins;
    let pin = PinRecord {
        hash: "h1".into(),
        definition: "{}".into(),
    };
    alice_pins.pin("f", "echo", &pin).await.unwrap();
    assert_eq!(alice_pins.pinned("f", "echo").await.unwrap(), Some(pin));
    assert_eq!(bob_pins.pinned("f", "echo").await.unwrap(), None);
    assert_eq!(alice_pins.hashes().await.unwrap()["f"]["echo"], "h1");
    assert!(bob_pins.hashes().await.unwrap().is_empty());
    // Which schemas compiled is kept with each user's own pins.
    let checked = [("f", "echo", "h1")];
    alice_pins
        .note_schemas_checked(&checked, "rules")
        .await
        .unwrap();
    bob_pins
        .note_schemas_checked(&checked, "rules")
        .await
        .unwrap();
    let alice_checked = (alice_pins
        .hashes_and_verdicts("rules", &["f"])
        .await
        .unwrap())
    .1;
    assert_eq!(alice_checked.into_iter().collect::<Vec<_>>(), ["h1"]);
    // Only the servers asked for are read (in one statement of as many parameters).
    let (others, checked) = (alice_pins.hashes_and_verdicts("rules", &["g", "h"]).await).unwrap();
    assert!(others.is_empty() && checked.is_empty());
    assert!(
        bob_pins
            .hashes_and_verdicts("rules", &["f"])
            .await
            .unwrap()
            .1
            .is_empty()
    );
}

/// Two replicas appending to one history at once (a turn's end racing a compaction, say)
/// neither lose nor duplicate a message: the write lock is taken before the next seq is read.
async fn a_history_appended_from_two_replicas_keeps_every_message_once(db: Db) {
    let store = db.user_data("alice").store;
    let other = db.session_user_data("alice").store;
    let history = store.create_conversation("m", "/w").await.unwrap();
    let append = |store: mcp_host_store::Store, from: &'static str| {
        let history = history.clone();
        tokio::spawn(async move {
            for i in 0..20 {
                let message = serde_json::json!({"from": from, "i": i});
                store
                    .append_messages(&history, i, &[message])
                    .await
                    .unwrap();
            }
        })
    };
    let (a, b) = (append(store.clone(), "a"), append(other, "b"));
    a.await.unwrap();
    b.await.unwrap();
    let messages = store.load_messages(&history).await.unwrap();
    assert_eq!(messages.len(), 40);
    for from in ["a", "b"] {
        let mine: Vec<_> = messages
            .iter()
            .filter(|(_, m)| m["from"] == from)
            .map(|(_, m)| m["i"].as_u64().unwrap())
            .collect();
        assert_eq!(
            mine,
            (0..20).collect::<Vec<_>>(),
            "{from}'s messages in order, once"
        );
    }
}

/// Sealed credential rows are each user's own, and a refresh lease is held by one holder
/// at a time until it is given back or runs out (a replica that died mid-refresh).
async fn credential_rows_are_per_user_and_leases_exclusive_until_they_run_out(db: Db) {
    let alice = db.user_data(&user(&db, "alice").await.id).credentials;
    let bob = db.user_data(&user(&db, "bob").await.id).credentials;
    let key = CredentialKey {
        issuer: "https://as.example".into(),
        resource: "https://mcp.example/mcp".into(),
    };
    alice.save(&key, "sealed-1").await.unwrap();
    alice.save(&key, "sealed-2").await.unwrap();
    assert_eq!(alice.load(&key).await.unwrap().as_deref(), Some("sealed-2"));
    assert_eq!(bob.load(&key).await.unwrap(), None);
    bob.clear(&key).await.unwrap();
    assert_eq!(alice.load(&key).await.unwrap().as_deref(), Some("sealed-2"));

    let long = Duration::from_secs(60);
    assert!(alice.try_lease(&key, "h1", long).await.unwrap());
    assert!(
        !alice.try_lease(&key, "h2", long).await.unwrap(),
        "held by h1"
    );
    assert!(
        bob.try_lease(&key, "b1", long).await.unwrap(),
        "Bob's lease is his own"
    );
    alice.release(&key, "h2").await.unwrap();
    assert!(
        !alice.try_lease(&key, "h2", long).await.unwrap(),
        "only h1 gives it back"
    );
    alice.release(&key, "h1").await.unwrap();
    assert!(alice.try_lease(&key, "h2", Duration::ZERO).await.unwrap());
    // h2's lease ran out at once: the next millisecond, anyone may take it over.
    next_ms().await;
    assert!(alice.try_lease(&key, "h3", long).await.unwrap());
    assert!(!alice.try_lease(&key, "h4", long).await.unwrap());
    alice.clear(&key).await.unwrap();
    assert_eq!(alice.load(&key).await.unwrap(), None);
}

async fn every_replica_must_seal_with_the_first_ones_key(db: Db) {
    let key = |text: &str| SealingKey::from_base64(text).unwrap();
    let (first, other) = (
        SealingKey::generate().unwrap(),
        SealingKey::generate().unwrap(),
    );
    db.check_sealing_key(&key(&first)).await.unwrap();
    db.check_sealing_key(&key(&first)).await.unwrap();
    assert!(matches!(
        db.check_sealing_key(&key(&other)).await,
        Err(DbError::Conflict(_))
    ));
}

/// A token past its expiry is refused at once; pruning removes expired sessions and old
/// refusals, and tokens a month after they stopped working, but nothing still in use.
async fn expired_tokens_stop_working_and_old_rows_are_pruned(db: Db) {
    let alice = user(&db, "alice").await;
    let (_, lapsed) = db
        .create_token(&alice, "lapsed", Some(Duration::ZERO))
        .await
        .unwrap();
    let (_, live) = db.create_token(&alice, "live", None).await.unwrap();
    assert_eq!(db.user_for_token(&lapsed).await.unwrap(), None);
    assert_eq!(db.user_for_token(&live).await.unwrap(), Some(alice.clone()));
    let (cookie, _) = db.create_web_session(&alice).await.unwrap();
    db.log_refusal(Some(&alice), "GET", "/api/x", 404, "not yours")
        .await
        .unwrap();

    let now = now_ms();
    db.prune(now).await.unwrap();
    // Within the month: the lapsed token is still listed, the session and refusal kept.
    assert_eq!(db.tokens(&alice).await.unwrap().len(), 2);
    assert!(db.web_session(&cookie).await.unwrap().is_some());
    assert_eq!(db.refusals(10).await.unwrap().len(), 1);

    let later = now + i64::try_from(users::KEPT_FOR.as_millis()).unwrap() + 1;
    assert!(db.prune(later).await.unwrap() >= 3);
    let left = db.tokens(&alice).await.unwrap();
    assert_eq!(left.len(), 1);
    assert_eq!(left[0]["label"], "live");
    assert!(db.refusals(10).await.unwrap().is_empty());
    assert_eq!(db.user_for_token(&live).await.unwrap(), Some(alice));
}
