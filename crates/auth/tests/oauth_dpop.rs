//! DPoP (RFC 9449) against the local authorization server in its DPoP mode, which checks
//! every proof from the RFC: a sign-in gets a token bound to a key of the host's, every
//! request presents it with a fresh proof of that request, both servers' nonces are used,
//! a bound token is refreshed with a proof of its own key, and a bound token is never sent
//! as a Bearer token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::future::BoxFuture;
use mcp_host_auth::{
    AuthSettings, AuthorizationResponse, Authorizer, CredentialStore, Grant,
    InMemoryCredentialStore, OAuth, OAuthError,
};
use mcp_host_testkit::oauth_server::LocalAuthServer;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{StreamableHttpClient, StreamableHttpPostResponse};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

/// Approves at once, as a person clicking "allow": follows the authorization server's
/// redirect and reads the code from it.
struct Approve;

impl Authorizer for Approve {
    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async move {
            let http = reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap();
            let answer = http.get(url).send().await.unwrap();
            let location = answer.headers()["location"].to_str().unwrap().to_string();
            AuthorizationResponse::from_redirect(&location)
        })
    }
}

async fn connect(
    server: &LocalAuthServer,
    store: Arc<InMemoryCredentialStore>,
) -> mcp_host_auth::AuthorizingClient {
    let settings = AuthSettings::new(
        "http://127.0.0.1/callback",
        Grant::AuthorizationCode(Arc::new(Approve)),
    );
    let oauth = OAuth::with_store(&server.url("/mcp"), settings, store)
        .await
        .unwrap();
    oauth.client(reqwest::Client::new())
}

/// One `tools/call` of the server's `whoami`: the resource it says the token was for.
async fn whoami(
    client: &mcp_host_auth::AuthorizingClient,
    server: &LocalAuthServer,
    id: u32,
) -> String {
    let message: ClientJsonRpcMessage = serde_json::from_value(json!({
        "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": "whoami", "arguments": {}},
    }))
    .unwrap();
    let answer = client
        .post_message(
            server.url("/mcp").into(),
            message,
            None,
            None,
            HashMap::new(),
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "call failed: {e}; refusals {:?}",
                server.state().dpop_refusals
            )
        });
    let StreamableHttpPostResponse::Json(reply, _) = answer else {
        panic!("not a JSON answer");
    };
    let reply = serde_json::to_value(reply).unwrap();
    reply["result"]["content"][0]["text"]
        .as_str()
        .unwrap_or_else(|| panic!("{reply}"))
        .to_string()
}

fn dpop_server(nonce: Option<&str>) -> LocalAuthServer {
    let server = LocalAuthServer::start(&["/mcp"], Duration::ZERO);
    let mut state = server.state();
    state.dpop = true;
    state.dpop_nonce = nonce.map(str::to_string);
    drop(state);
    server
}

/// The thumbprints of the keys that proved requests at `place`.
fn keys_at(server: &LocalAuthServer, place: &str) -> Vec<String> {
    keys_at_locked(&server.state(), place)
}

#[tokio::test]
async fn a_sign_in_binds_the_token_and_every_request_proves_it_afresh() {
    let server = dpop_server(None);
    let client = connect(&server, Arc::new(InMemoryCredentialStore::new())).await;
    let url = server.url("/mcp");
    assert_eq!(whoami(&client, &server, 1).await, url);
    assert_eq!(whoami(&client, &server, 2).await, url);

    let state = server.state();
    assert!(state.dpop_refusals.is_empty(), "{:?}", state.dpop_refusals);
    assert_eq!(state.code_grants, 1);
    // The token was asked for with a proof, and bound to that key.
    let token_keys: Vec<String> = keys_at_locked(&state, "/token");
    assert_eq!(token_keys.len(), 1);
    assert_eq!(state.bound.get("access-1"), Some(&token_keys[0]));
    // Each call presented it as DPoP, with a proof of the same key and its own jti.
    let at_mcp: Vec<_> = state.proofs.iter().filter(|(p, _)| p == "/mcp").collect();
    assert_eq!(at_mcp.len(), 2);
    assert!(at_mcp.iter().all(|(_, p)| p.jkt == token_keys[0]));
    let jtis: HashSet<_> = at_mcp.iter().map(|(_, p)| p.jti.clone()).collect();
    assert_eq!(jtis.len(), 2, "a proof was reused");
    let sent: Vec<&String> = state
        .seen_at_resources
        .iter()
        .map(|(_, a)| a)
        .filter(|a| !a.is_empty())
        .collect();
    assert!(sent.iter().all(|a| *a == "DPoP access-1"), "{sent:?}");
}

fn keys_at_locked(
    state: &mcp_host_testkit::oauth_server::AuthServerState,
    place: &str,
) -> Vec<String> {
    state
        .proofs
        .iter()
        .filter(|(p, _)| p == place)
        .map(|(_, proven)| proven.jkt.clone())
        .collect()
}

#[tokio::test]
async fn the_nonces_both_servers_ask_for_are_used() {
    let server = dpop_server(Some("nonce-7"));
    let client = connect(&server, Arc::new(InMemoryCredentialStore::new())).await;
    assert_eq!(whoami(&client, &server, 1).await, server.url("/mcp"));
    // A second call uses the nonce it already has: no refusal first.
    let seen_before = server.state().seen_at_resources.len();
    assert_eq!(whoami(&client, &server, 2).await, server.url("/mcp"));
    assert_eq!(server.state().seen_at_resources.len(), seen_before + 1);
    let state = server.state();
    assert!(state.dpop_refusals.is_empty(), "{:?}", state.dpop_refusals);
    // One proof at the token endpoint and one per call were taken, each with the nonce.
    assert_eq!(keys_at_locked(&state, "/token").len(), 1);
    assert_eq!(keys_at_locked(&state, "/mcp").len(), 2);
    assert!(
        state
            .proofs
            .iter()
            .all(|(_, p)| p.nonce.as_deref() == Some("nonce-7")),
        "every accepted proof carried the nonce"
    );
    assert_eq!(state.code_grants, 1);
}

#[tokio::test]
async fn an_expired_bound_token_is_refreshed_with_a_proof_of_its_own_key() {
    let server = dpop_server(None);
    let store = Arc::new(InMemoryCredentialStore::new());
    let client = connect(&server, store.clone()).await;
    whoami(&client, &server, 1).await;
    let key = keys_at(&server, "/token")[0].clone();

    // An hour later, in a new process with the same store.
    let mut stored = store.load().await.unwrap().unwrap();
    stored.token_received_at = stored.token_received_at.map(|t| t - 7200);
    store.save(stored).await.unwrap();
    let client = connect(&server, store.clone()).await;
    whoami(&client, &server, 2).await;

    let state = server.state();
    assert!(state.dpop_refusals.is_empty(), "{:?}", state.dpop_refusals);
    assert_eq!(state.refresh_requests.len(), 1);
    assert_eq!(state.code_grants, 1, "refreshed, not signed in again");
    // The refresh and the new token are bound to the key of the sign-in.
    assert_eq!(
        keys_at_locked(&state, "/token"),
        vec![key.clone(), key.clone()]
    );
    assert_eq!(state.bound.get("access-2"), Some(&key));
    let last = state.seen_at_resources.last().unwrap();
    assert_eq!(last.1, "DPoP access-2");
}

#[tokio::test]
async fn a_bound_token_without_its_key_is_never_sent_as_bearer() {
    let server = dpop_server(None);
    let store = Arc::new(InMemoryCredentialStore::new());
    let client = connect(&server, store.clone()).await;
    whoami(&client, &server, 1).await;
    // The key is lost (a store that dropped a field): the token cannot be presented.
    let stored = store.load().await.unwrap().unwrap();
    let mut token = serde_json::to_value(stored.token_response.clone().unwrap()).unwrap();
    token
        .as_object_mut()
        .unwrap()
        .retain(|k, _| !k.contains("dpop"));
    let mut keyless = stored;
    keyless.token_response = Some(serde_json::from_value(token).unwrap());
    store.save(keyless).await.unwrap();
    let client = connect(&server, store.clone()).await;
    whoami(&client, &server, 2).await;

    let state = server.state();
    assert!(state.dpop_refusals.is_empty(), "{:?}", state.dpop_refusals);
    assert!(
        !state
            .seen_at_resources
            .iter()
            .any(|(_, a)| a.starts_with("Bearer")),
        "{:?}",
        state.seen_at_resources
    );
    // It signed in again instead, and got a new bound token.
    assert_eq!(state.code_grants, 2);
    assert_eq!(state.seen_at_resources.last().unwrap().1, "DPoP access-2");
}
