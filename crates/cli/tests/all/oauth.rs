//! OAuth through the real `mcp-host` binary against a local authorization server and the
//! MCP servers it protects (`mcp_host_testkit::oauth_server`): two host processes that find
//! the same expired credential refresh it once between them, and a token never reaches a
//! server it was not issued for, even on the same origin and authorization server.

use crate::common::*;
use mcp_host_auth::{
    CredentialStore, CredentialVault, StoredCredentials, VaultChoice, VaultCredentialStore,
};
use mcp_host_testkit::oauth_server::LocalAuthServer;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Where `mcp-host` run in `sb` keeps its credentials.
fn credentials_dir(sb: &Sandbox) -> PathBuf {
    sb.path().join("data/mcp-host/credentials")
}

/// The vault `mcp-host` in `sb` uses: files, or with `keyring` the OS keyring (this process
/// must then be in the keyring test's D-Bus session).
fn vault(sb: &Sandbox, keyring: bool) -> CredentialVault {
    let choice = if keyring {
        VaultChoice::Keyring
    } else {
        VaultChoice::Files
    };
    CredentialVault::choosing(credentials_dir(sb), choice)
}

/// Stores, as `mcp-host auth login` would have, a credential for `server_url` whose access
/// token expired an hour ago and whose refresh token is `refresh-0`.
fn store_expired_credential(vault: CredentialVault, issuer: &str, server_url: &str) {
    store_credential(vault, issuer, server_url, 7200);
}

/// The same, received `age` seconds ago (one-hour tokens).
fn store_credential(vault: CredentialVault, issuer: &str, server_url: &str, age: u64) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let token = serde_json::from_value(json!({
        "access_token": "access-0",
        "token_type": "Bearer",
        "expires_in": 3600,
        "refresh_token": "refresh-0",
    }))
    .unwrap();
    let credential =
        StoredCredentials::new("test-client".into(), Some(token), vec![], Some(now - age))
            .with_issuer(Some(issuer.to_string()));
    let store = VaultCredentialStore::new(vault, server_url).unwrap();
    futures::executor::block_on(store.save(credential)).unwrap();
}

fn http_server(url: &str) -> Value {
    json!({"type": "http", "url": url})
}

/// The refresh token now stored for `server_url`.
fn stored_refresh_token(vault: CredentialVault, server_url: &str) -> Option<String> {
    let store = VaultCredentialStore::new(vault, server_url).unwrap();
    let credential = futures::executor::block_on(store.load()).unwrap()?;
    let token = serde_json::to_value(credential.token_response?).unwrap();
    token["refresh_token"].as_str().map(str::to_string)
}

#[test]
fn two_host_processes_refresh_one_expired_credential_once() {
    let sb = Sandbox::new();
    two_processes_refresh_once(&sb, false, &[]);
}

#[test]
#[ignore = "needs a Secret Service: scripts/keyring-test.sh"]
fn two_host_processes_refresh_one_credential_in_the_os_keyring_once() {
    let bus = std::env::var("DBUS_SESSION_BUS_ADDRESS").expect("run in a D-Bus session");
    let sb = Sandbox::new();
    let env = [
        ("MCP_HOST_CREDENTIAL_STORE", "keyring"),
        ("DBUS_SESSION_BUS_ADDRESS", bus.as_str()),
    ];
    let url = two_processes_refresh_once(&sb, true, &env);
    // The credential never touched the disk; `auth status` says where it is.
    let file = CredentialVault::new(credentials_dir(&sb)).path(
        &VaultCredentialStore::new(vault(&sb, false), &url)
            .unwrap()
            .credential_key(),
    );
    assert!(!file.exists(), "{}", file.display());
    let cfg = sb.config("c.json", json!({"protected": http_server(&url)}));
    let status = sb.run_with_env(&["auth", "status"], &cfg, &env);
    assert_eq!(
        stdout(&status).lines().collect::<Vec<_>>()[..2],
        [
            "credentials: OS keyring (Secret Service)",
            &format!(
                "protected: signed in, issuer {}",
                url.trim_end_matches("/mcp")
            ),
        ],
        "{}",
        stderr(&status)
    );
    let out = sb.run_with_env(&["auth", "logout", "protected"], &cfg, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stored_refresh_token(vault(&sb, true), &url), None);
}

/// Waits (at most 20 s) until `ready` holds.
fn wait_until(what: &str, ready: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !ready() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// Two `mcp-host servers` (with `env`) find the credential expired while a refresh is in
/// flight: the first one's refresh is held at the authorization server until the second
/// has said (in its debug log) that it waits for that refresh. The authorization server
/// then sees one refresh in all. Returns the server's URL.
fn two_processes_refresh_once(sb: &Sandbox, keyring: bool, env: &[(&str, &str)]) -> String {
    let server = LocalAuthServer::start(&["/mcp"], Duration::ZERO);
    server.state().hold_refreshes = true;
    let url = server.url("/mcp");
    store_expired_credential(vault(sb, keyring), &server.base, &url);
    let cfg = sb.config("c.json", json!({"protected": http_server(&url)}));
    let log = sb.path().join("second.log");
    let start = |stderr: std::process::Stdio| {
        sb.command(sb.path())
            .args(["servers", "--json", "--strict-mcp-config", "--mcp-config"])
            .arg(&cfg)
            .envs(env.iter().copied())
            .env("MCP_HOST_LOG", "mcp_host_client=debug,mcp_host_auth=debug")
            .stdout(std::process::Stdio::piped())
            .stderr(stderr)
            .spawn()
            .unwrap()
    };
    let first = start(std::process::Stdio::piped());
    wait_until("the first process asks for a refresh", || {
        server.refresh_count() == 1
    });
    let second = start(std::fs::File::create(&log).unwrap().into());
    wait_until("the second process waits for that refresh", || {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains("waiting for another process's refresh")
    });
    server.state().hold_refreshes = false;
    for child in [first, second] {
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success(), "stderr: {}", stderr(&out));
        let rows: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
        let r = row(&rows, "protected");
        assert_eq!(r["state"], "ready", "{r}");
        assert_eq!(r["tools"], 1, "{r}");
    }

    let state = server.state();
    assert_eq!(
        state.refresh_requests,
        std::slice::from_ref(&url),
        "exactly one refresh request, for the server's resource"
    );
    // Both processes used the one refreshed token, and the expired one was never sent.
    // (Requests without a token are discovery's unauthenticated probes.)
    let tokens = server_tokens(&state.seen_at_resources, "/mcp");
    let sent: Vec<&String> = tokens.iter().filter(|t| !t.is_empty()).collect();
    assert!(sent.len() >= 2, "{tokens:?}");
    assert!(sent.iter().all(|t| *t == "Bearer access-1"), "{tokens:?}");
    drop(state);
    // The rotated refresh token is what is stored now.
    assert_eq!(
        stored_refresh_token(vault(sb, keyring), &url).as_deref(),
        Some("refresh-1")
    );
    url
}

fn server_tokens(seen: &[(String, String)], path: &str) -> Vec<String> {
    seen.iter()
        .filter(|(p, _)| p == path)
        .map(|(_, a)| a.clone())
        .collect()
}

#[test]
fn a_token_is_refused_to_a_server_of_another_audience() {
    // Two MCP servers on one origin behind one authorization server: the person signed in to
    // `/mcp` only.
    let server = LocalAuthServer::start(&["/mcp", "/other"], Duration::from_millis(10));
    let (mine, other) = (server.url("/mcp"), server.url("/other"));
    let sb = Sandbox::new();
    store_expired_credential(vault(&sb, false), &server.base, &mine);
    let cfg = sb.config(
        "c.json",
        json!({"mine": http_server(&mine), "other": http_server(&other)}),
    );

    let rows = sb.servers_json(&cfg);
    assert_eq!(row(&rows, "mine")["state"], "ready", "{rows:?}");
    let r = row(&rows, "other");
    assert_eq!(r["state"], "needs_auth", "{r}");
    assert!(
        r["error"]
            .as_str()
            .unwrap_or_default()
            .contains("mcp-host auth login other"),
        "the state names the command that fixes it: {r}"
    );

    // `/other` was asked, and answered 401, without any token: not the one issued for
    // `/mcp`, and no refresh was made on its behalf.
    let at_other = server.authorizations_at("/other");
    assert!(!at_other.is_empty());
    assert!(at_other.iter().all(String::is_empty), "{at_other:?}");
    assert_eq!(server.state().refresh_requests, std::slice::from_ref(&mine));
    assert_eq!(
        server.state().registrations,
        0,
        "no registration behind the user's back"
    );

    // A credential file copied under the other server's name is still refused to it: the
    // file records the resource it was issued for.
    let files = CredentialVault::new(credentials_dir(&sb));
    let file_of = |url: &str| {
        files.path(
            &VaultCredentialStore::new(CredentialVault::new(credentials_dir(&sb)), url)
                .unwrap()
                .credential_key(),
        )
    };
    std::fs::copy(file_of(&mine), file_of(&other)).unwrap();
    let rows = sb.servers_json(&cfg);
    assert_eq!(row(&rows, "other")["state"], "needs_auth", "{rows:?}");
    let at_other = server.authorizations_at("/other");
    assert!(at_other.iter().all(String::is_empty), "{at_other:?}");
}

#[test]
fn a_client_secret_is_kept_in_the_credential_store_not_the_config() {
    let sb = Sandbox::new();
    let url = "https://mcp.example/mcp";
    let cfg = sb.config(
        "c.json",
        json!({
            "bare": http_server("https://bare.example/mcp"),
            "s": {"type": "http", "url": url, "oauth": {"clientId": "my-app"}},
        }),
    );
    let set_secret = |server: &str, stdin: &str| {
        sb.run_with_stdin(&["auth", "set-secret", server], &cfg, stdin.as_bytes())
    };
    let out = set_secret("bare", "x\n");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no pre-registered client"),
        "{}",
        stderr(&out)
    );
    let out = set_secret("s", "\n");
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("no secret was given"),
        "{}",
        stderr(&out)
    );

    let out = set_secret("s", "t0p-secret\n");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).starts_with("kept the client secret for `s` in private files (0600)"),
        "{}",
        stdout(&out)
    );
    let store = VaultCredentialStore::new(vault(&sb, false), url).unwrap();
    assert_eq!(
        futures::executor::block_on(store.stored_client_secret_for("my-app"))
            .unwrap()
            .as_deref(),
        Some("t0p-secret")
    );
    let status = sb.run_with(&["auth", "status", "s"], &cfg);
    assert!(
        stdout(&status).contains("s: not signed in, client secret kept (mcp-host auth login s)"),
        "{}",
        stdout(&status)
    );
    // The secret is in no output and no log line.
    assert!(!stdout(&out).contains("t0p") && !stderr(&out).contains("t0p"));
}

/// A server that withdraws the token in the middle of a session: the host refreshes once
/// and goes on; when the refresh is refused too, it stops and names the command that fixes it.
#[test]
fn a_token_revoked_mid_session_is_refreshed_once_then_login_is_asked_for() {
    for refresh_refused in [false, true] {
        let server = LocalAuthServer::start(&["/mcp"], Duration::from_millis(10));
        let url = server.url("/mcp");
        let sb = Sandbox::new();
        // A live token: the session starts without any refresh.
        store_credential(vault(&sb, false), &server.base, &url, 60);
        {
            let mut s = server.state();
            s.issued.insert("access-0".into(), url.clone());
            s.revoke_at_first_call = true;
            s.reject = refresh_refused;
        }
        let cfg = sb.config("c.json", json!({"protected": http_server(&url)}));
        let out = sb.run_with(&["call", "protected", "whoami", "--args", "{}"], &cfg);
        assert_eq!(
            server.refresh_count(),
            1,
            "one refresh, refused: {refresh_refused}"
        );
        let tokens = server.authorizations_at("/mcp");
        if refresh_refused {
            assert!(!out.status.success());
            assert!(
                stderr(&out).contains("mcp-host auth login protected"),
                "{}",
                stderr(&out)
            );
            // Nobody was there to sign in, so nothing was registered on their behalf.
            assert_eq!(server.state().registrations, 0);
        } else {
            assert!(out.status.success(), "{}", stderr(&out));
            assert!(stdout(&out).contains(&url), "{}", stdout(&out));
            // The revoked token was used up to the call, the new one for the retried call.
            assert_eq!(
                tokens.last().map(String::as_str),
                Some("Bearer access-1"),
                "{tokens:?}"
            );
            assert!(tokens.iter().any(|t| t == "Bearer access-0"), "{tokens:?}");
        }
    }
}
