//! Token refresh from persisted credentials, against a local authorization server: rotated
//! refresh tokens on disk, audience separation, and what a rejected refresh token does to the
//! store. (One refresh across two host processes is `crates/cli/tests/all/oauth.rs`.)
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::future::BoxFuture;
use mcp_host_auth::{
    AuthSettings, AuthorizationResponse, Authorizer, CredentialStore, CredentialVault, Grant,
    OAuth, OAuthError, StoredCredentials, VaultCredentialStore,
};
use mcp_host_testkit::oauth_server::LocalAuthServer;
use serde_json::{Value, json};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const CLIENT_ID: &str = "test-client";

/// Nobody is asked to log in in these tests.
struct NoLogin;

impl Authorizer for NoLogin {
    fn authorize<'a>(
        &'a self,
        _url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async { Err(OAuthError::Authorization("no login in this test".into())) })
    }
}

fn settings() -> AuthSettings {
    AuthSettings::new(
        "http://127.0.0.1/callback",
        Grant::AuthorizationCode(Arc::new(NoLogin)),
    )
}

fn now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

/// A credential whose access token expired an hour ago.
fn expired(issuer: &str, access: &str, refresh: &str) -> StoredCredentials {
    let token = serde_json::from_value(json!({
        "access_token": access,
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": refresh,
    }))
    .unwrap();
    StoredCredentials::new(CLIENT_ID.into(), Some(token), vec![], Some(now() - 7200))
        .with_issuer(Some(issuer.to_string()))
}

fn store(dir: &Path, server_url: &str) -> VaultCredentialStore {
    VaultCredentialStore::new(CredentialVault::new(dir), server_url).unwrap()
}

/// The file's JSON, read past the store.
fn file_json(dir: &Path, store: &VaultCredentialStore) -> Option<Value> {
    // Files need no runtime to be read.
    futures::executor::block_on(CredentialVault::new(dir).load(&store.credential_key())).unwrap()
}

fn stored_refresh_token(dir: &Path, store: &VaultCredentialStore) -> Option<String> {
    file_json(dir, store)?["credentials"]["token_response"]["refresh_token"]
        .as_str()
        .map(str::to_string)
}

async fn token_through_oauth(
    server_url: &str,
    store: VaultCredentialStore,
) -> Result<String, OAuthError> {
    let oauth = OAuth::with_store(server_url, settings(), Arc::new(store))
        .await
        .unwrap();
    oauth.access_token().await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_refresh_token_is_on_disk_and_is_what_the_next_refresh_uses() {
    let server = LocalAuthServer::start(&["/mcp"], Duration::from_millis(10));
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/mcp");
    let first = store(dir.path(), &url).with_client_secret(Some("s3cret".into()));
    first
        .save(expired(&server.base, "access-0", "refresh-0"))
        .await
        .unwrap();

    let oauth = OAuth::with_store(&url, settings(), Arc::new(first.clone()))
        .await
        .unwrap();
    assert_eq!(oauth.access_token().await.unwrap(), "access-1");
    assert_eq!(
        stored_refresh_token(dir.path(), &first).as_deref(),
        Some("refresh-1")
    );
    // The fresh token is used as is.
    assert_eq!(oauth.access_token().await.unwrap(), "access-1");
    assert_eq!(server.refresh_count(), 1);
    // The secret a confidential client needs after a restart stays with the credential.
    assert_eq!(
        first.stored_client_secret().await.unwrap().as_deref(),
        Some("s3cret")
    );

    // After a "restart", with the access token expired again, the refresh goes out with the
    // rotated token from the file (the server no longer accepts refresh-0).
    let mut value = file_json(dir.path(), &first).unwrap();
    value["credentials"]["token_received_at"] = json!(now() - 7200);
    CredentialVault::new(dir.path())
        .save(&first.credential_key(), &value)
        .await
        .unwrap();
    let restarted = store(dir.path(), &url);
    assert_eq!(
        token_through_oauth(&url, restarted.clone()).await.unwrap(),
        "access-2"
    );
    assert_eq!(server.refresh_count(), 2);
    assert_eq!(
        stored_refresh_token(dir.path(), &restarted).as_deref(),
        Some("refresh-2")
    );
    // A store without a secret of its own keeps the one stored for the same client.
    assert_eq!(
        restarted.stored_client_secret().await.unwrap().as_deref(),
        Some("s3cret")
    );
}

#[tokio::test]
async fn a_credential_is_only_loaded_for_its_own_resource() {
    let dir = tempfile::tempdir().unwrap();
    let creds_dir = dir.path().join("credentials");
    let a = store(&creds_dir, "https://a.example/mcp");
    let b = store(&creds_dir, "https://b.example/mcp");
    a.save(expired("https://as.example", "access-a", "refresh-a"))
        .await
        .unwrap();
    assert!(a.load().await.unwrap().is_some());
    assert!(b.load().await.unwrap().is_none());

    let files: Vec<_> = std::fs::read_dir(&creds_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(files.len(), 1);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&creds_dir), 0o700);

    // Even A's file under B's name is not B's credential: the file records its resource.
    let a_content = file_json(&creds_dir, &a).unwrap();
    CredentialVault::new(&creds_dir)
        .save(&b.credential_key(), &a_content)
        .await
        .unwrap();
    assert!(b.load().await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_refresh_token_is_forgotten_and_login_is_required() {
    let server = LocalAuthServer::start(&["/mcp"], Duration::from_millis(10));
    server.state().reject = true;
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/mcp");
    let s = store(dir.path(), &url);
    s.save(expired(&server.base, "access-0", "refresh-0"))
        .await
        .unwrap();

    let err = token_through_oauth(&url, s.clone()).await.unwrap_err();
    assert!(matches!(err, OAuthError::Authorization(_)), "{err:?}");
    assert_eq!(server.refresh_count(), 1);
    assert!(file_json(dir.path(), &s).is_none());
    // And the next attempt goes straight to login, without another refresh.
    let err = token_through_oauth(&url, store(dir.path(), &url))
        .await
        .unwrap_err();
    assert!(matches!(err, OAuthError::Authorization(_)), "{err:?}");
    assert_eq!(server.refresh_count(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_secret_in_the_store_outlives_logins_and_rejected_refreshes() {
    let server = LocalAuthServer::start(&["/mcp"], Duration::from_millis(10));
    server.state().reject = true;
    let dir = tempfile::tempdir().unwrap();
    let url = server.url("/mcp");
    let s = store(dir.path(), &url);
    // `mcp-host auth set-secret`: a secret alone, for the configured client.
    s.store_client_secret(CLIENT_ID, "s3cret").await.unwrap();
    assert_eq!(
        s.stored_client_secret_for(CLIENT_ID)
            .await
            .unwrap()
            .as_deref(),
        Some("s3cret")
    );
    assert_eq!(
        s.stored_client_secret_for("another-client").await.unwrap(),
        None
    );
    // It is what settings without a configured secret use.
    let mut configured = settings();
    configured.client_id = Some(CLIENT_ID.into());
    let configured = configured.with_stored_secret(&s).await.unwrap();
    assert_eq!(configured.client_secret.as_deref(), Some("s3cret"));
    // A login saves tokens beside it; setting the secret again keeps the tokens.
    s.save(expired(&server.base, "access-0", "refresh-0"))
        .await
        .unwrap();
    s.store_client_secret(CLIENT_ID, "rotated-secret")
        .await
        .unwrap();
    assert_eq!(
        stored_refresh_token(dir.path(), &s).as_deref(),
        Some("refresh-0")
    );
    // A rejected refresh forgets the tokens, not the client's own secret.
    token_through_oauth(&url, s.clone()).await.unwrap_err();
    assert_eq!(server.refresh_count(), 1);
    let left = file_json(dir.path(), &s).unwrap();
    assert_eq!(left["credentials"]["token_response"], Value::Null);
    assert_eq!(left["client_secret"], "rotated-secret");
    assert_eq!(
        s.stored_client_secret_for(CLIENT_ID)
            .await
            .unwrap()
            .as_deref(),
        Some("rotated-secret")
    );
}

#[tokio::test]
async fn a_rejection_does_not_clear_a_credential_saved_since() {
    let dir = tempfile::tempdir().unwrap();
    let s = store(dir.path(), "https://a.example/mcp");
    s.save(expired("https://as.example", "access-0", "refresh-0"))
        .await
        .unwrap();
    let attempted = file_json(dir.path(), &s).unwrap();
    let attempted: StoredCredentials =
        serde_json::from_value(attempted["credentials"].clone()).unwrap();

    // Another process refreshed (or logged in again) meanwhile.
    s.save(expired("https://as.example", "access-1", "refresh-1"))
        .await
        .unwrap();
    s.on_refresh_token_rejected(&attempted).await.unwrap();
    assert_eq!(
        stored_refresh_token(dir.path(), &s).as_deref(),
        Some("refresh-1")
    );

    // The rejected token is the current one: forgotten.
    let current = s.load().await.unwrap().unwrap();
    s.on_refresh_token_rejected(&current).await.unwrap();
    assert!(file_json(dir.path(), &s).is_none());
}
