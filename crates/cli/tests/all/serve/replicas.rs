//! Two replicas against one PostgreSQL: a turn started on one is followed from the other, a
//! client that drops mid-turn resumes on the other with `Last-Event-ID` and gets every later
//! event exactly once, an approval given through the other reaches the turn, the
//! conversation goes on from the other with its whole history, a sign-in to a remote server
//! made through one is used by the other, and a replica killed mid-turn leaves the turn
//! marked interrupted once its lease runs out.

use super::stream::consecutive;
use super::*;
use crate::common::{Sandbox, signal};
use mcp_host_testkit::oauth_server::LocalAuthServer;
use serde_json::json;

/// Two replicas' setups sharing `database` and the credential key, each with its own data
/// folder.
fn replicas<'a>(
    sb: &'a Sandbox,
    cat: &'a Path,
    model: &'a Model,
    database: &str,
) -> [Setup<'a>; 2] {
    let key = sb.path().join("credential.key");
    std::fs::write(&key, mcp_host_auth::SealingKey::generate().unwrap()).unwrap();
    ["r1", "r2"].map(|name| {
        let mut s = Setup::new(sb, cat, model);
        s.data = Some(sb.path().join(name));
        s.database_url = Some(database.to_string());
        // Polls too rare to matter within a test: what one replica writes reaches the other
        // through the database's notifications.
        s.extra = [
            "--replica",
            name,
            "--lease-ms",
            "1000",
            "--poll-ms",
            "600000",
        ]
        .map(String::from)
        .to_vec();
        s.extra.push("--credential-key-file".into());
        s.extra.push(key.display().to_string());
        s
    })
}

#[test]
fn a_turn_on_one_replica_is_followed_resumed_and_answered_from_the_other() {
    let Some(database) = postgres("serve_follow") else {
        return;
    };
    let sb = Sandbox::new();
    let model = Model::start(40);
    let cat = catalogue(&sb, json!({"f": fake_entry(&[], true)}));
    let [one, two] = replicas(&sb, &cat, &model, &database);
    let token = one.add_user("alice", false);
    one.grant("f", "*");
    let (r1, r2) = (one.start(), two.start());
    let (on1, on2) = (Api::new(&r1, &token), Api::new(&r2, &token));
    on1.enable("f");
    let conv = on1.conversation();
    let mut followed = on2.events(&conv, None);
    assert_eq!(
        on1.turn(&conv, "call f__echo {\"message\": \"across\"}")
            .status,
        202
    );
    let asked = followed.until("approval_requested");
    let call_id = asked.last().unwrap().call_id();
    // The client drops; the approval goes in through the replica that is not running the turn.
    drop(followed);
    let last = asked.last().unwrap().id.unwrap();
    assert_eq!(on2.approve(&conv, &call_id, true).status, 202);
    let rest = on2.events(&conv, Some(last)).until("turn_ended");
    consecutive(&asked, 1);
    consecutive(&rest, last + 1);
    assert!(
        rest.iter()
            .any(|e| e.event == "call_ended" && e.data["preview"] == "across"),
        "{rest:#?}"
    );
    // Both replicas tell the same story.
    let whole = on1.events(&conv, None).until("turn_ended");
    let ids = |v: &[Sse]| {
        v.iter()
            .map(|e| (e.id, e.event.clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(ids(&whole), ids(&[asked, rest].concat()));
    // The conversation goes on from the other replica (which has a session of its own) with
    // the whole history: the model is sent the first turn's messages.
    let next = on2.turn(&conv, "recall");
    assert_eq!(next.status, 202, "{next:?}");
    let more = on1
        .events(&conv, Some(whole.last().unwrap().id.unwrap()))
        .until("turn_ended");
    assert_eq!(more.last().unwrap().data["report"]["end"], "finished");
    let said: String = more
        .iter()
        .filter(|e| e.event == "text_delta")
        .map(|e| e.data["text"].as_str().unwrap())
        .collect();
    assert_eq!(said, "Earlier: call f__echo {\"message\": \"across\"}");
}

#[test]
fn a_replica_killed_mid_turn_leaves_the_turn_interrupted_never_half_written() {
    let Some(database) = postgres("serve_kill") else {
        return;
    };
    let sb = Sandbox::new();
    let model = Model::start(0);
    let marker = "replica-killed-marker";
    let cat = catalogue(
        &sb,
        json!({"f": fake_entry(&["--instructions", marker], false)}),
    );
    let [one, two] = replicas(&sb, &cat, &model, &database);
    let token = one.add_user("alice", false);
    one.grant("f", "*");
    let (mut r1, r2) = (one.start(), two.start());
    let (on1, on2) = (Api::new(&r1, &token), Api::new(&r2, &token));
    on1.enable("f");
    let conv = on1.conversation();
    let mut followed = on2.events(&conv, None);
    assert_eq!(on1.turn(&conv, "call f__slow {\"ms\": 120000}").status, 202);
    followed.until("call_begun");
    signal(r1.child.id(), nix::sys::signal::Signal::SIGKILL);
    r1.child.wait().unwrap();
    let after = followed.until("turn_interrupted");
    assert_eq!(
        after.len(),
        1,
        "nothing half-written after the kill: {after:#?}"
    );
    let row = on2.get(&format!("/api/conversations/{conv}")).json();
    assert_eq!(row["turns"][0]["state"], "interrupted");
    // The dead replica's server went with it (its supervisor watches the host).
    wait_for("the killed replica's server to end", || {
        !process_with(marker)
    });
    // The conversation is free again.
    assert_eq!(on2.turn(&conv, "still there?").status, 202);
}

#[test]
fn a_remote_sign_in_through_one_replica_is_used_by_the_other() {
    let Some(database) = postgres("serve_remote") else {
        return;
    };
    let auth = LocalAuthServer::start(&["/mcp"], Duration::ZERO);
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = super::remote::remote_catalogue(&sb, &auth);
    let [one, two] = replicas(&sb, &cat, &model, &database);
    let token = one.add_user("alice", false);
    one.grant("remote", "*");
    let (r1, r2) = (one.start(), two.start());
    let (on1, on2) = (Api::new(&r1, &token), Api::new(&r2, &token));
    on1.enable("remote");
    super::remote::finish_sign_in(&on1, &auth);
    // The other replica has never seen this user: its session finds the credential in the
    // shared database.
    let conv = on2.conversation();
    super::remote::call_whoami_until_answered(&on2, &conv, &auth.url("/mcp"));
    assert_eq!(
        auth.state().code_grants,
        1,
        "one sign-in, not one per replica"
    );
}

#[test]
fn a_replica_with_another_credential_key_refuses_to_start() {
    let Some(database) = postgres("serve_key") else {
        return;
    };
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(&sb, json!({}));
    let [one, mut two] = replicas(&sb, &cat, &model, &database);
    let _first = one.start();
    // Its own key (made in its data folder), not the one the database was first used with.
    two.extra.truncate(two.extra.len() - 2);
    let said = two.start_refused();
    assert!(
        said.contains("not the one the database's credentials are sealed with"),
        "{said}"
    );
}
