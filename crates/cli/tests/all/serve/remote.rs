//! A user signs in to a remote MCP server from the web page: the authorization server's
//! redirect comes back to the host's own callback, the credential lands in that user's
//! sealed vault only, the user's next turn calls the server with it, and another user
//! cannot use it. A callback from a browser that did not start the sign-in is refused.

use super::*;
use crate::common::Sandbox;
use mcp_host_testkit::oauth_server::LocalAuthServer;
use serde_json::json;

/// Every file under `dir`, as text.
fn files_under(dir: &Path) -> Vec<String> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        if e.path().is_dir() {
            out.extend(files_under(&e.path()));
        } else {
            out.push(String::from_utf8_lossy(&std::fs::read(e.path()).unwrap()).into_owned());
        }
    }
    out
}

#[test]
fn a_remote_sign_in_from_the_page_is_the_users_own_and_sealed() {
    let auth = LocalAuthServer::start(&["/mcp"], Duration::ZERO);
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = remote_catalogue(&sb, &auth);
    let setup = Setup::new(&sb, &cat, &model);
    let alice_token = setup.add_user("alice", false);
    let bob_token = setup.add_user("bob", false);
    setup.grant("remote", "*");
    let service = setup.start();
    let (alice, bob) = (
        Api::new(&service, &alice_token),
        Api::new(&service, &bob_token),
    );
    alice.enable("remote");
    bob.enable("remote");

    // A sign-in started by Alice, its callback arriving without her browser's binding: refused.
    let first = alice.send("POST", "/api/servers/remote/signin", json!({}));
    assert_eq!(first.status, 200, "{first:?}");
    let at_server = get_url(first.json()["url"].as_str().unwrap(), None);
    let callback = at_server.header("location").unwrap().to_string();
    assert_eq!(
        get_url(&callback, None).status,
        403,
        "a callback from another browser"
    );

    // Started again, and finished in her browser.
    finish_sign_in(&alice, &auth);
    // Her next turn calls the remote server with her credential.
    let conv = alice.conversation();
    call_whoami_until_answered(&alice, &conv, &auth.url("/mcp"));
    // Bob's session has no credential: the server is not his to call.
    let bobs = bob.conversation();
    let mut bob_events = bob.events(&bobs, None);
    assert_eq!(bob.turn(&bobs, "call remote__whoami {}").status, 202);
    let bob_turn = bob_events.until("turn_ended");
    assert!(
        !bob_turn.iter().any(|e| e.event == "call_begun"),
        "{bob_turn:#?}"
    );
    // On disk the tokens are sealed: no file of the service holds one in plain.
    let issued: Vec<String> = auth.state().issued.keys().cloned().collect();
    let stored = files_under(&sb.path().join("serve"));
    for token in issued.iter().chain([&auth.state().current_refresh]) {
        assert!(
            !stored.iter().any(|f| f.contains(token.as_str())),
            "{token} is in a file in plain"
        );
    }
}

/// Signs `api`'s user in to the server `remote` the way the page does (the authorization
/// server's redirect followed in the same browser), and waits for the code to be traded.
pub(super) fn finish_sign_in(api: &Api, auth: &LocalAuthServer) {
    let grants = auth.state().code_grants;
    let start = api.send("POST", "/api/servers/remote/signin", json!({}));
    assert_eq!(start.status, 200, "{start:?}");
    let binding = cookie_of(&start, "mh_remote").expect("the sign-in is bound to the browser");
    let at_server = get_url(start.json()["url"].as_str().unwrap(), None);
    assert_eq!(at_server.status, 302, "{at_server:?}");
    let done = get_url(at_server.header("location").unwrap(), Some(&binding));
    assert_eq!(done.status, 200, "{done:?}");
    wait_for("the code to be traded for tokens", || {
        auth.state().code_grants == grants + 1
    });
}

/// Turns in `conv` calling `remote__whoami` (approved) until one is answered with
/// `expected`: the session may still be connecting with the new credential at first.
pub(super) fn call_whoami_until_answered(api: &Api, conv: &str, expected: &str) {
    let mut events = api.events(conv, None);
    wait_for("the session to connect with the credential", || {
        assert_eq!(api.turn(conv, "call remote__whoami {}").status, 202);
        let mut seen = Vec::new();
        while let Some(e) = events.next() {
            let kind = e.event.clone();
            if kind == "approval_requested" {
                let call_id = e.call_id();
                assert_eq!(api.approve(conv, &call_id, true).status, 202);
            }
            seen.push(e);
            if kind == "turn_ended" {
                break;
            }
        }
        seen.iter()
            .any(|e| e.event == "call_ended" && e.data["preview"] == expected)
    });
}

/// A catalogue of one server, `remote`, behind `auth`'s OAuth.
pub(super) fn remote_catalogue(sb: &Sandbox, auth: &LocalAuthServer) -> PathBuf {
    catalogue(
        sb,
        json!({"remote": {"type": "http", "url": auth.url("/mcp")}}),
    )
}
