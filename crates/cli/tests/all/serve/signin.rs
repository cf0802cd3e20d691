//! Signing in with OpenID Connect against a local provider: the code flow with PKCE lands a
//! session for the provider's person (admin by group), the same person again is the same
//! user, and every way an ID token or a callback can lie (nonce, audience, issuer, expiry,
//! `alg: none`, an unpublished key, a replayed code, a callback from another browser) is
//! refused without a session.

use super::*;
use crate::common::Sandbox;
use mcp_host_testkit::oidc_provider::{IdTokenFault, LocalOidcProvider};
use serde_json::json;

/// A browser's sign-in: login → provider → callback. The callback's reply, and the
/// callback URL (to replay it).
fn browser_sign_in(service: &Service, binding: bool) -> (Reply, String) {
    let start = request(&service.addr, "GET", "/auth/login", &[], None);
    assert_eq!(start.status, 303, "{start:?}");
    let login = cookie_of(&start, "mh_login").expect("the sign-in is bound to the browser");
    let at_provider = get_url(start.header("location").unwrap(), None);
    assert_eq!(at_provider.status, 302, "{at_provider:?}");
    let callback = at_provider.header("location").unwrap().to_string();
    let reply = get_url(&callback, binding.then_some(login.as_str()));
    (reply, callback)
}

fn start_service(sb: &Sandbox, provider: &LocalOidcProvider) -> (Service, Model) {
    start_service_with(sb, provider, &[])
}

fn start_service_with(
    sb: &Sandbox,
    provider: &LocalOidcProvider,
    more: &[&str],
) -> (Service, Model) {
    let model = Model::start(0);
    let cat = catalogue(sb, json!({}));
    let mut setup = Setup::new(sb, &cat, &model);
    setup.extra = [
        "--oidc-issuer",
        &provider.issuer,
        "--oidc-client-id",
        "app",
        "--oidc-admin-group",
        "admins",
    ]
    .map(String::from)
    .to_vec();
    setup.extra.extend(more.iter().map(|m| m.to_string()));
    (setup.start(), model)
}

#[test]
fn the_code_flow_with_pkce_signs_the_providers_person_in() {
    let sb = Sandbox::new();
    let provider = LocalOidcProvider::start("alice", &["staff", "admins"]);
    let (service, _model) = start_service(&sb, &provider);
    let (reply, callback) = browser_sign_in(&service, true);
    assert_eq!(reply.status, 303, "{reply:?}");
    let session = cookie_of(&reply, "__Host-mh_session").expect("a session cookie");
    let who = me(&service.addr, &session);
    assert_eq!(who["name"], "alice");
    assert_eq!(who["admin"], true, "a member of the admin group");
    assert_eq!(who["groups"], json!(["staff", "admins"]));
    // The code is single-use: replaying the callback signs nobody in.
    let replay = get_url(&callback, None);
    assert_eq!(replay.status, 403);
    assert!(cookie_of(&replay, "__Host-mh_session").is_none());
    // The same person again is the same user.
    let (again, _) = browser_sign_in(&service, true);
    let session2 = cookie_of(&again, "__Host-mh_session").unwrap();
    let users = request(
        &service.addr,
        "GET",
        "/api/admin/users",
        &[("Cookie", &session2)],
        None,
    )
    .json();
    assert_eq!(users.as_array().unwrap().len(), 1, "{users}");
    // Her name is hers: an admin's add-user cannot take the account over or mint its token.
    let taken = sb
        .command(sb.path())
        .args(["serve", "--data-dir"])
        .arg(sb.path().join("serve"))
        .args(["add-user", "alice", "--admin"])
        .output()
        .unwrap();
    assert!(
        !taken.status.success(),
        "add-user took over a provider's person"
    );
    assert!(String::from_utf8_lossy(&taken.stderr).contains("identity provider"));
    // Out of the admin group at the provider, out of the admin role at her next sign-in; a
    // group name that would forge another group (a comma) is dropped.
    provider.state().groups = vec!["staff".into(), "x,admins".into()];
    let (demoted, _) = browser_sign_in(&service, true);
    let session3 = cookie_of(&demoted, "__Host-mh_session").unwrap();
    let who = me(&service.addr, &session3);
    assert_eq!(who["admin"], false, "{who}");
    assert_eq!(who["groups"], json!(["staff"]));
    assert!(
        provider.state().refused.is_empty(),
        "{:?}",
        provider.state().refused
    );
}

#[test]
fn a_lying_id_token_or_a_foreign_callback_gets_no_session() {
    let sb = Sandbox::new();
    let provider = LocalOidcProvider::start("mallory", &[]);
    let (service, _model) = start_service(&sb, &provider);
    // A callback that did not start in this browser (login CSRF): refused.
    let (unbound, _) = browser_sign_in(&service, false);
    assert_eq!(unbound.status, 403, "{unbound:?}");
    assert!(cookie_of(&unbound, "__Host-mh_session").is_none());
    for fault in [
        IdTokenFault::WrongNonce,
        IdTokenFault::WrongAudience,
        IdTokenFault::WrongIssuer,
        IdTokenFault::Expired,
        IdTokenFault::AlgNone,
        IdTokenFault::UnpublishedKey,
    ] {
        provider.state().fault = Some(fault);
        let (reply, _) = browser_sign_in(&service, true);
        assert_eq!(reply.status, 403, "{fault:?}: {reply:?}");
        assert!(
            cookie_of(&reply, "__Host-mh_session").is_none(),
            "{fault:?}"
        );
    }
    // Put right, the same provider signs its person in (as a plain user).
    provider.state().fault = None;
    let (ok, _) = browser_sign_in(&service, true);
    let session = cookie_of(&ok, "__Host-mh_session").unwrap();
    let who = me(&service.addr, &session);
    assert_eq!(who["name"], "mallory");
    assert_eq!(who["admin"], false);
}

#[test]
fn only_the_allowed_group_gets_in_when_one_is_set() {
    let sb = Sandbox::new();
    let provider = LocalOidcProvider::start("eve", &["visitors"]);
    let (service, _model) = start_service_with(&sb, &provider, &["--oidc-allowed-group", "staff"]);
    let (outside, _) = browser_sign_in(&service, true);
    assert_eq!(outside.status, 403, "{outside:?}");
    assert!(cookie_of(&outside, "__Host-mh_session").is_none());
    provider.state().groups = vec!["staff".into()];
    let (inside, _) = browser_sign_in(&service, true);
    let session = cookie_of(&inside, "__Host-mh_session").expect("a member signs in");
    let who = me(&service.addr, &session);
    assert_eq!(who["name"], "eve");
}
