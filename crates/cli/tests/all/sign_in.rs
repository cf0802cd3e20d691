//! A sign-in a stored credential needs, put to the person inside a session (a chat): a
//! server that answers a call with 403 `insufficient_scope` gets a step-up the person
//! agrees to (asked with the scope, before anything is registered), approves in the
//! browser, and the same call then completes; a person who says no is told the command for
//! later, and nothing was registered with the authorization server.

use crate::common::*;
use mcp_host_auth::{CredentialStore, CredentialVault, StoredCredentials, VaultCredentialStore};
use mcp_host_client::{
    ElicitationAsk, ElicitationKind, ElicitationReply, Manager, ServerSetup, ToolCaller,
};
use mcp_host_config::{RawServer, Scope};
use mcp_host_core::{ServerId, ServerState, TransportKind};
use mcp_host_testkit::oauth_server::LocalAuthServer;
use serde_json::json;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

fn http_setup(url: &str) -> ServerSetup {
    let raw = RawServer {
        kind: Some("http".into()),
        url: Some(url.into()),
        ..RawServer::default()
    };
    ServerSetup {
        id: ServerId::new("r"),
        transport: TransportKind::Http,
        spec: Some(raw.to_spec("r", Scope::Flag, &|_| None).unwrap()),
        initial: ServerState::Starting,
    }
}

/// A server whose calls need `files:write`, and a stored sign-in (by another process, as
/// `mcp-host auth login` leaves it) whose token lacks it.
async fn signed_in_without_the_scope(dir: &std::path::Path) -> LocalAuthServer {
    signed_in(dir, None).await
}

/// The same, with the sign-in's issuer `issuer` (the server's by default).
async fn signed_in(dir: &std::path::Path, issuer: Option<&str>) -> LocalAuthServer {
    let server = LocalAuthServer::start(&["/mcp"], Duration::ZERO);
    let url = server.url("/mcp");
    {
        let mut s = server.state();
        s.required_scope = Some("files:write".into());
        s.issued.insert("access-0".into(), url.clone());
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = serde_json::from_value(json!({
        "access_token": "access-0", "token_type": "Bearer", "expires_in": 3600,
    }))
    .unwrap();
    let stored = StoredCredentials::new("elsewhere".into(), Some(token), vec![], Some(now))
        .with_issuer(Some(issuer.unwrap_or(&server.base).to_string()));
    VaultCredentialStore::new(CredentialVault::new(dir), &url)
        .unwrap()
        .save(stored)
        .await
        .unwrap();
    server
}

/// The manager over the server at `url`, with a person who answers as `yes` says; ready.
async fn start(
    dir: &std::path::Path,
    url: &str,
    yes: bool,
) -> (
    Manager,
    ToolCaller,
    tokio::task::JoinHandle<Vec<ElicitationKind>>,
) {
    let (asks, questions) = mpsc::unbounded_channel();
    let answering = tokio::spawn(person(questions, yes));
    let mut opts = manager_options(Duration::from_millis(20), Duration::from_millis(50));
    opts.ask_person = Some(asks);
    opts.sign_in_here = true;
    opts.credentials = Some(CredentialVault::new(dir));
    let (m, calls) = Manager::start(vec![http_setup(url)], opts);
    wait_status(&m, "r", |s| s.state == ServerState::Ready).await;
    (m, calls, answering)
}

/// The person: says `yes` to every question, and when the answer opens the sign-in page,
/// is the browser that approves it (following the authorization server's redirect to the
/// host's loopback listener). Returns what was asked.
async fn person(
    mut questions: mpsc::UnboundedReceiver<ElicitationAsk>,
    yes: bool,
) -> Vec<ElicitationKind> {
    // The test's own HTTP client may be built before the host has installed the process's
    // TLS provider.
    mcp_host_auth::install_crypto_provider();
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let mut asked = Vec::new();
    while let Some(ask) = questions.recv().await {
        asked.push(ask.kind.clone());
        let reply = if yes {
            ElicitationReply::Accept(json!({}))
        } else {
            ElicitationReply::Decline
        };
        ask.reply.send(reply).unwrap();
        if let (true, ElicitationKind::Url { url, .. }) = (yes, &ask.kind) {
            let at_server = browser.get(url).send().await.unwrap();
            let back = at_server.headers()["location"]
                .to_str()
                .unwrap()
                .to_string();
            let page = browser
                .get(&back)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(page.contains("authorized"), "{page}");
        }
    }
    asked
}

/// The server's `whoami`, then the manager stopped (which ends the person's questions).
async fn whoami_then_stop(
    m: Manager,
    calls: ToolCaller,
) -> Result<mcp_host_core::CallOutcome, mcp_host_client::CallError> {
    let outcome = calls
        .call(
            &ServerId::new("r"),
            "whoami",
            None,
            &CancellationToken::new(),
        )
        .await;
    m.shutdown().await;
    drop((m, calls));
    outcome
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_up_is_put_to_the_person_and_the_call_then_completes() {
    let dir = tempfile::tempdir().unwrap();
    let server = signed_in_without_the_scope(dir.path()).await;
    let (m, calls, answering) = start(dir.path(), &server.url("/mcp"), true).await;

    let outcome = whoami_then_stop(m, calls).await.unwrap();
    assert!(!outcome.is_error, "{outcome:?}");

    let asked = answering.await.unwrap();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert!(
        matches!(&asked[0], ElicitationKind::Form { message, .. } if message.contains("files:write")),
        "{asked:?}"
    );
    assert!(
        matches!(&asked[1], ElicitationKind::Url { .. }),
        "{asked:?}"
    );
    let state = server.state();
    // Registered anew (the stored client named another process's redirect URI), one code
    // traded, and the call retried with the new token, which has the scope.
    assert_eq!(state.registrations, 1);
    assert_eq!(state.code_grants, 1);
    let calls: Vec<&String> = state.seen_at_resources.iter().map(|(_, a)| a).collect();
    assert_eq!(calls.last().map(|a| a.as_str()), Some("Bearer access-1"));
    assert!(state.granted["access-1"].contains(&"files:write".to_string()));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_who_says_no_is_told_how_to_sign_in_later_and_nothing_is_registered() {
    let dir = tempfile::tempdir().unwrap();
    let server = signed_in_without_the_scope(dir.path()).await;
    let (m, calls, answering) = start(dir.path(), &server.url("/mcp"), false).await;

    let failed = whoami_then_stop(m, calls).await.unwrap_err();
    assert!(
        failed.to_string().contains("mcp-host auth login r"),
        "{failed}"
    );
    assert_eq!(answering.await.unwrap().len(), 1, "asked once");
    let state = server.state();
    assert_eq!(state.registrations, 0);
    assert_eq!(state.code_grants, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_moved_to_another_authorization_server_asks_before_registering_there() {
    let dir = tempfile::tempdir().unwrap();
    // Signed in at an authorization server the server no longer names.
    let server = signed_in(dir.path(), Some("http://127.0.0.1:9/old-as")).await;
    server.state().required_scope = None;
    let (m, calls, answering) = start(dir.path(), &server.url("/mcp"), true).await;
    let outcome = whoami_then_stop(m, calls).await.unwrap();
    assert!(!outcome.is_error, "{outcome:?}");
    let asked = answering.await.unwrap();
    assert!(
        matches!(&asked[0], ElicitationKind::Form { message, .. }
            if message.contains("moved to another authorization server")
                && message.contains("http://127.0.0.1:9/old-as")),
        "{asked:?}"
    );
    let state = server.state();
    assert_eq!((state.registrations, state.code_grants), (1, 1));
}
