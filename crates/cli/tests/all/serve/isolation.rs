//! One user can never see or use another's conversation, events, results, tokens, approvals
//! or servers: every such request is a 404 (so ids cannot be probed), logged as a refusal,
//! and changes nothing.

use super::*;
use crate::common::Sandbox;
use serde_json::json;

#[test]
fn another_users_objects_are_not_found_and_each_refusal_is_logged() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(
        &sb,
        json!({
            "shared": fake_entry(&[], false),
            "private": fake_entry(&[], true),
        }),
    );
    let setup = Setup::new(&sb, &cat, &model);
    let alice_token = setup.add_user("alice", true);
    let bob_token = setup.add_user("bob", false);
    setup.grant("shared", "*");
    setup.grant("private", "user:alice");
    let service = setup.start();
    let alice = Api::new(&service, &alice_token);
    let bob = Api::new(&service, &bob_token);
    alice.enable("shared");
    alice.enable("private");
    bob.enable("shared");

    // Alice: a large result (stored, by handle) and a call that waits for her approval.
    let conv = alice.conversation();
    let mut events = alice.events(&conv, None);
    assert_eq!(
        alice
            .turn(&conv, "call shared__big {\"bytes\": 200000}")
            .status,
        202
    );
    let first = events.until("turn_ended");
    let report = &first.last().unwrap().data["report"];
    let handle = report["calls"][0]["result_handle"]
        .as_str()
        .expect("a stored result")
        .to_string();
    assert_eq!(alice.get(&format!("/api/results/{handle}")).status, 200);
    assert_eq!(
        alice
            .turn(&conv, "call private__echo {\"message\": \"mine\"}")
            .status,
        202
    );
    let asked = events.until("approval_requested");
    let call_id = asked.last().unwrap().call_id();
    let alice_tokens = alice.get("/api/tokens").json();
    let token_id = alice_tokens[0]["id"].as_str().unwrap().to_string();

    // Bob, by id, everything of hers.
    let refused = [
        bob.get(&format!("/api/conversations/{conv}")),
        bob.get(&format!("/api/conversations/{conv}/events")),
        bob.turn(&conv, "hello"),
        bob.approve(&conv, &call_id, true),
        bob.send(
            "POST",
            &format!("/api/conversations/{conv}/interrupt"),
            json!({}),
        ),
        bob.get(&format!("/api/results/{handle}")),
        bob.send("DELETE", &format!("/api/tokens/{token_id}"), json!({})),
        bob.send("PUT", "/api/servers/private", json!({"enabled": true})),
    ];
    for r in &refused {
        assert_eq!(r.status, 404, "{r:?}");
        assert!(
            !r.body.contains(&conv) && !r.body.contains("alice"),
            "a refusal tells nothing: {r:?}"
        );
    }
    // Her approval, answered from Bob's own conversation, reaches nothing.
    let bobs = bob.conversation();
    assert_eq!(bob.approve(&bobs, &call_id, true).status, 404);
    // Bob's catalogue does not even list her server, and his model cannot call it.
    let servers = bob.get("/api/servers").json();
    let names: Vec<&str> = servers["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["shared"]);
    let mut bob_events = bob.events(&bobs, None);
    assert_eq!(
        bob.turn(&bobs, "call private__echo {\"message\": \"theirs\"}")
            .status,
        202
    );
    let bob_turn = bob_events.until("turn_ended");
    assert!(
        bob_turn.iter().any(|e| e.event == "call_refused"),
        "{bob_turn:#?}"
    );
    assert!(
        !bob_turn.iter().any(|e| e.event == "call_begun"),
        "{bob_turn:#?}"
    );

    // Searching his tools finds his only; hers finds her server's too, ranked by name.
    let hits = |api: &Api| -> Vec<String> {
        let reply = api.get("/api/tools?q=echo");
        assert_eq!(reply.status, 200, "{:?}", reply.json());
        let found = reply.json();
        found
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["tool"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    // The search reads the live catalogue: a server still starting (the suite's load can
    // make that take a while) has no tools in it yet.
    wait_for("Bob's shared server's tools", || !hits(&bob).is_empty());
    wait_for("Alice's two servers' tools", || {
        let hers = hits(&alice);
        ["private__echo", "shared__echo"]
            .iter()
            .all(|n| hers.iter().any(|h| h == n))
    });
    let his = hits(&bob);
    assert_eq!(
        his.first().map(String::as_str),
        Some("shared__echo"),
        "{his:?}"
    );
    assert!(his.iter().all(|n| n.starts_with("shared__")), "{his:?}");
    let hers = hits(&alice);
    assert!(
        hers.contains(&"private__echo".to_string()) && hers.contains(&"shared__echo".to_string()),
        "{hers:?}"
    );
    // Nothing of hers changed: her approval is still hers to give, her token still works.
    assert_eq!(alice.approve(&conv, &call_id, true).status, 202);
    let done = events.until("turn_ended");
    let ended = done
        .iter()
        .find(|e| e.event == "call_ended")
        .expect("her call ran");
    assert_eq!(ended.data["preview"], "mine");
    assert_eq!(alice.get("/api/me").status, 200);

    // Every refusal is in the log, with who asked and the answer, never a token.
    let log = alice.get("/api/admin/refusals").json();
    let bobs_refusals: Vec<&Value> = log
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["user"] == "bob")
        .collect();
    assert_eq!(bobs_refusals.len(), refused.len() + 1, "{log:#}");
    assert!(bobs_refusals.iter().all(|r| r["status"] == 404));
    assert!(!log.to_string().contains("mhk_"), "no token in the log");
    // The admin log is admin-only.
    assert_eq!(bob.get("/api/admin/refusals").status, 403);
}

#[test]
fn the_services_own_secrets_reach_no_hook_and_no_catalogue_entry() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let seen = sb.path().join("hook-env");
    // A catalogue entry that names the key finds the variable unset.
    let mut leak = fake_entry(&[], true);
    leak["env"] = json!({"K": "${MCP_HOST_CREDENTIAL_KEY}"});
    let cat = sb.write(
        "catalogue.json",
        &json!({
            "mcpServers": {"f": fake_entry(&[], true), "leak": leak},
            "hooks": {"PreToolUse": [{"matcher": "f__.*", "hooks": [
                {"type": "command", "command": format!("env > {}; exit 0", seen.display())}
            ]}]},
        })
        .to_string(),
    );
    let key = mcp_host_auth::SealingKey::generate().unwrap();
    let database = format!(
        "sqlite://{}?mode=rwc",
        sb.path().join("service.db").display()
    );
    let mut setup = Setup::new(&sb, &cat, &model);
    setup.env = vec![
        ("MCP_HOST_CREDENTIAL_KEY".into(), key.clone()),
        ("MCP_HOST_DATABASE_URL".into(), database),
        ("SOMETHING_ELSE".into(), "visible".into()),
    ];
    let token = setup.add_user("alice", false);
    setup.grant("f", "*");
    setup.grant("leak", "*");
    let service = setup.start();
    let alice = Api::new(&service, &token);
    let servers = alice.get("/api/servers").json();
    let leak = (servers["servers"].as_array().unwrap().iter()).find(|s| s["name"] == "leak");
    assert_eq!(
        leak.unwrap()["transport"],
        "unusable (see the service log)",
        "the key was expanded into a catalogue entry: {servers}"
    );
    alice.enable("f");
    let conv = alice.conversation();
    let mut events = alice.events(&conv, None);
    assert_eq!(
        alice
            .turn(&conv, "call f__echo {\"message\": \"x\"}")
            .status,
        202
    );
    let asked = events.until("approval_requested");
    let call_id = asked.last().unwrap().call_id();
    assert_eq!(alice.approve(&conv, &call_id, true).status, 202);
    let turn = events.until("turn_ended");
    assert!(turn.iter().any(|e| e.event == "call_ended"), "{turn:#?}");
    let env = std::fs::read_to_string(&seen).expect("the hook ran");
    assert!(env.contains("SOMETHING_ELSE=visible"), "{env}");
    assert!(!env.contains(&key), "the credential key reached a hook");
    assert!(
        !env.contains("MCP_HOST_DATABASE_URL"),
        "the database URL reached a hook"
    );
}
