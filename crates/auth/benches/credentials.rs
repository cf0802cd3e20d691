//! What the credential broker costs: reading and writing one credential in the vault (0600
//! files, and the OS keyring when this runs inside a Secret Service session, as
//! `scripts/with-keyring.sh` sets up), and the first token from an expired stored credential
//! against a local authorization server (metadata discovery, expiry check, cross-process
//! lock, refresh request over loopback HTTP, save of the rotated token). Run: `scripts/bench.sh` (release build).

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark: a panic is the report.

use futures::future::BoxFuture;
use mcp_host_auth::{
    AuthSettings, AuthorizationResponse, Authorizer, CredentialKey, CredentialStore,
    CredentialVault, Grant, OAuth, OAuthError, OsKeyring, StoredCredentials, VaultChoice,
    VaultCredentialStore,
};
use mcp_host_testkit::oauth_server::LocalAuthServer;
use serde_json::json;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Median and 99th percentile in microseconds.
fn summary(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let at = |q: f64| samples[((samples.len() - 1) as f64 * q) as usize].as_secs_f64() * 1e6;
    (at(0.5), at(0.99))
}

fn row(what: &str, samples: Vec<Duration>) {
    let n = samples.len();
    let (median, p99) = summary(samples);
    println!("| {what} | {n} | {median:.1} | {p99:.1} |");
}

fn time(n: usize, mut f: impl FnMut()) -> Vec<Duration> {
    (0..n)
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed()
        })
        .collect()
}

/// A credential of realistic size (a JWT access token and a refresh token).
fn credential_json() -> serde_json::Value {
    json!({
        "resource": "https://mcp.example/mcp",
        "credentials": {"client_id": "c", "token_response": {
            "access_token": "x".repeat(1200), "token_type": "Bearer", "expires_in": 3600,
            "refresh_token": "r".repeat(64)}, "granted_scopes": ["read"], "token_received_at": 1},
    })
}

fn vault_rows(label: &str, vault: &CredentialVault) {
    // Files and the keyring do their work inside the call; no runtime is needed to poll it.
    use futures::executor::block_on;
    let key = CredentialKey {
        issuer: String::new(),
        resource: format!("https://bench.example/{label}"),
    };
    let value = credential_json();
    row(
        &format!("{label}: save"),
        time(200, || block_on(vault.save(&key, &value)).unwrap()),
    );
    row(
        &format!("{label}: load"),
        time(2000, || {
            block_on(vault.load(&key)).unwrap().unwrap();
        }),
    );
    block_on(vault.clear(&key)).unwrap();
}

/// What rmcp pays before every request: the store's `load` of a live credential.
fn per_request_row(label: &str, vault: &CredentialVault, runtime: &tokio::runtime::Runtime) {
    let store = VaultCredentialStore::new(vault.clone(), "https://bench.example/live").unwrap();
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = serde_json::from_value(json!({"access_token": "x".repeat(1200),
        "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r"}))
    .unwrap();
    runtime
        .block_on(store.save(StoredCredentials::new(
            "c".into(),
            Some(token),
            vec![],
            Some(now),
        )))
        .unwrap();
    row(
        &format!("{label}: the store's load before each request"),
        time(2000, || {
            runtime.block_on(store.load()).unwrap().unwrap();
        }),
    );
    runtime.block_on(store.clear()).unwrap();
}

struct NoLogin;

impl Authorizer for NoLogin {
    fn authorize<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>> {
        Box::pin(async { Err(OAuthError::Authorization("benchmark".into())) })
    }
}

fn main() {
    println!("| operation | runs | median (µs) | p99 (µs) |");
    println!("|---|---|---|---|");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let files = CredentialVault::new(dir.path().join("files"));
    vault_rows("files", &files);
    per_request_row("files", &files, &runtime);
    let probe = Instant::now();
    match OsKeyring::probe() {
        Ok(_) => {
            row(
                "keyring: probe (connect, canary write/read/delete)",
                vec![probe.elapsed()],
            );
            let vault = CredentialVault::choosing(dir.path().join("keyring"), VaultChoice::Keyring);
            vault_rows("keyring", &vault);
            per_request_row("keyring", &vault, &runtime);
        }
        Err(e) => println!("\n(keyring not measured: {e})\n"),
    }

    // A whole refresh: each round stores an expired credential and asks for a token.
    let server = LocalAuthServer::start(&["/mcp"], Duration::ZERO);
    let url = server.url("/mcp");
    let vault = CredentialVault::new(dir.path().join("refresh"));
    let mut samples = Vec::new();
    for _ in 0..100 {
        let store = VaultCredentialStore::new(vault.clone(), &url).unwrap();
        let refresh = server.state().current_refresh.clone();
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let token = serde_json::from_value(json!({"access_token": "old", "token_type": "Bearer",
            "expires_in": 3600, "refresh_token": refresh}))
        .unwrap();
        let expired = StoredCredentials::new("c".into(), Some(token), vec![], Some(now - 7200))
            .with_issuer(Some(server.base.clone()));
        runtime.block_on(store.save(expired)).unwrap();
        let settings = AuthSettings::new(
            "http://127.0.0.1/callback",
            Grant::AuthorizationCode(Arc::new(NoLogin)),
        );
        let oauth = runtime
            .block_on(OAuth::with_store(&url, settings, Arc::new(store)))
            .unwrap();
        let t = Instant::now();
        runtime.block_on(oauth.access_token()).unwrap();
        samples.push(t.elapsed());
    }
    row(
        "first token from an expired stored credential (discovery, lock, refresh, save)",
        samples,
    );
}
