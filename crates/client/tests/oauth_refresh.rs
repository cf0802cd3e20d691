//! Token refresh from persisted credentials, against a local authorization server: one
//! refresh across processes, rotated refresh tokens on disk, audience separation, and what a
//! rejected refresh token does to the store.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use futures::future::BoxFuture;
use mcp_host_client::oauth::{
    AuthSettings, AuthorizationResponse, Authorizer, CredentialStore, FileCredentialStore, Grant,
    OAuth, OAuthError, StoredCredentials,
};
use mcp_host_store::CredentialFiles;
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const CLIENT_ID: &str = "test-client";

/// What the token endpoint has seen and will answer.
#[derive(Default)]
struct AsState {
    /// The refresh token it accepts now (rotated on every refresh).
    current_refresh: String,
    generation: u32,
    refresh_requests: u32,
    /// Answer `invalid_grant` to every refresh.
    reject: bool,
}

/// An authorization server (and the resource's metadata) on 127.0.0.1: protected resource
/// metadata, authorization server metadata, and a token endpoint that only does
/// `refresh_token`, slowly, rotating the refresh token each time.
struct AuthServer {
    base: String,
    state: Arc<Mutex<AsState>>,
}

impl AuthServer {
    fn start(token_delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        let state = Arc::new(Mutex::new(AsState {
            current_refresh: "refresh-0".into(),
            ..AsState::default()
        }));
        let (b, s) = (base.clone(), state.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (b, s) = (b.clone(), s.clone());
                std::thread::spawn(move || serve(stream, &b, &s, token_delay));
            }
        });
        Self { base, state }
    }

    fn mcp_url(&self) -> String {
        format!("{}/mcp", self.base)
    }

    fn refresh_requests(&self) -> u32 {
        self.state.lock().unwrap().refresh_requests
    }
}

fn respond(mut stream: TcpStream, status: &str, body: &Value) {
    let body = body.to_string();
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
}

fn serve(stream: TcpStream, base: &str, state: &Mutex<AsState>, token_delay: Duration) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut length = 0;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).unwrap();
    let mut parts = request_line.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    match (method, path) {
        ("GET", "/.well-known/oauth-protected-resource/mcp")
        | ("GET", "/.well-known/oauth-protected-resource") => respond(
            stream,
            "200 OK",
            &json!({"resource": format!("{base}/mcp"), "authorization_servers": [base]}),
        ),
        ("GET", "/.well-known/oauth-authorization-server") => respond(
            stream,
            "200 OK",
            &json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            }),
        ),
        ("POST", "/token") => {
            let form: Vec<(String, String)> =
                url::form_urlencoded::parse(&body).into_owned().collect();
            let field = |k: &str| {
                form.iter()
                    .find(|(name, _)| name == k)
                    .map(|(_, v)| v.clone())
                    .unwrap_or_default()
            };
            if field("grant_type") != "refresh_token" {
                return respond(
                    stream,
                    "400 Bad Request",
                    &json!({"error": "unsupported_grant_type"}),
                );
            }
            state.lock().unwrap().refresh_requests += 1;
            // Slow, so that concurrent refreshes would overlap.
            std::thread::sleep(token_delay);
            let mut s = state.lock().unwrap();
            if s.reject || field("refresh_token") != s.current_refresh {
                drop(s);
                return respond(
                    stream,
                    "400 Bad Request",
                    &json!({"error": "invalid_grant"}),
                );
            }
            s.generation += 1;
            s.current_refresh = format!("refresh-{}", s.generation);
            let answer = json!({
                "access_token": format!("access-{}", s.generation),
                "token_type": "Bearer",
                "expires_in": 3600,
                "refresh_token": s.current_refresh,
            });
            drop(s);
            respond(stream, "200 OK", &answer);
        }
        _ => respond(stream, "404 Not Found", &json!({"error": "not_found"})),
    }
}

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

fn store(dir: &Path, server_url: &str) -> FileCredentialStore {
    FileCredentialStore::new(dir, server_url).unwrap()
}

/// The file's JSON, read past the store.
fn file_json(dir: &Path, store: &FileCredentialStore) -> Option<Value> {
    CredentialFiles::new(dir)
        .load(&store.credential_key())
        .unwrap()
}

fn stored_refresh_token(dir: &Path, store: &FileCredentialStore) -> Option<String> {
    file_json(dir, store)?["credentials"]["token_response"]["refresh_token"]
        .as_str()
        .map(str::to_string)
}

async fn token_through_oauth(
    server_url: &str,
    store: FileCredentialStore,
) -> Result<String, OAuthError> {
    let oauth = OAuth::with_store(server_url, settings(), Arc::new(store))
        .await
        .unwrap();
    oauth.access_token().await
}

/// Set in the environment of the child processes the concurrent-refresh test starts.
const CHILD_DIR: &str = "MCP_HOST_TEST_REFRESH_DIR";
const CHILD_URL: &str = "MCP_HOST_TEST_REFRESH_URL";
const CHILD_START: &str = "MCP_HOST_TEST_REFRESH_START_MS";

/// Not a test on its own: the body of each child process of
/// `two_processes_refresh_an_expired_token_once` (it returns at once without its
/// environment). It waits for the agreed start instant, asks for a token, and prints it.
#[test]
fn refresh_child_process() {
    let (Ok(dir), Ok(url), Ok(start)) = (
        std::env::var(CHILD_DIR),
        std::env::var(CHILD_URL),
        std::env::var(CHILD_START),
    ) else {
        return;
    };
    let start: u64 = start.parse().unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let token = runtime.block_on(async {
        let oauth = OAuth::with_store(&url, settings(), Arc::new(store(Path::new(&dir), &url)))
            .await
            .unwrap();
        // Both children start their request at the same instant, so they overlap; the
        // assertion in the parent holds whatever the overlap, which only makes it bite.
        let wait = start.saturating_sub(now_ms());
        tokio::time::sleep(Duration::from_millis(wait)).await;
        oauth.access_token().await.unwrap()
    });
    println!("TOKEN={token}");
}

fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

#[test]
fn two_processes_refresh_an_expired_token_once() {
    let server = AuthServer::start(Duration::from_millis(300));
    let dir = tempfile::tempdir().unwrap();
    let url = server.mcp_url();
    let seed = store(dir.path(), &url);
    futures::executor::block_on(seed.save(expired(&server.base, "access-0", "refresh-0"))).unwrap();

    // Two real processes (this test binary, running only `refresh_child_process`), each
    // with its own OAuth state and its own credential store on the same directory.
    let start = now_ms() + 1_500;
    let children: Vec<_> = (0..2)
        .map(|_| {
            std::process::Command::new(std::env::current_exe().unwrap())
                .args([
                    "--exact",
                    "refresh_child_process",
                    "--nocapture",
                    "--test-threads=1",
                ])
                .env(CHILD_DIR, dir.path())
                .env(CHILD_URL, &url)
                .env(CHILD_START, start.to_string())
                .stdout(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    let tokens: Vec<String> = children
        .into_iter()
        .map(|c| {
            let out = c.wait_with_output().unwrap();
            assert!(out.status.success(), "a child failed");
            String::from_utf8_lossy(&out.stdout)
                .lines()
                // libtest may print "test … " on the same line before the child's output.
                .find_map(|l| l.split_once("TOKEN=").map(|(_, t)| t.trim().to_string()))
                .expect("a child printed no token")
        })
        .collect();

    assert_eq!(server.refresh_requests(), 1, "exactly one refresh request");
    assert_eq!(tokens, ["access-1", "access-1"]);
    assert_eq!(
        stored_refresh_token(dir.path(), &seed).as_deref(),
        Some("refresh-1")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rotated_refresh_token_is_on_disk_and_is_what_the_next_refresh_uses() {
    let server = AuthServer::start(Duration::from_millis(10));
    let dir = tempfile::tempdir().unwrap();
    let url = server.mcp_url();
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
    assert_eq!(server.refresh_requests(), 1);
    // The secret a confidential client needs after a restart stays with the credential.
    assert_eq!(
        first.stored_client_secret().unwrap().as_deref(),
        Some("s3cret")
    );

    // After a "restart", with the access token expired again, the refresh goes out with the
    // rotated token from the file (the server no longer accepts refresh-0).
    let mut value = file_json(dir.path(), &first).unwrap();
    value["credentials"]["token_received_at"] = json!(now() - 7200);
    CredentialFiles::new(dir.path())
        .save(&first.credential_key(), &value)
        .unwrap();
    let restarted = store(dir.path(), &url);
    assert_eq!(
        token_through_oauth(&url, restarted.clone()).await.unwrap(),
        "access-2"
    );
    assert_eq!(server.refresh_requests(), 2);
    assert_eq!(
        stored_refresh_token(dir.path(), &restarted).as_deref(),
        Some("refresh-2")
    );
    // A store without a secret of its own keeps the one stored for the same client.
    assert_eq!(
        restarted.stored_client_secret().unwrap().as_deref(),
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
    CredentialFiles::new(&creds_dir)
        .save(&b.credential_key(), &a_content)
        .unwrap();
    assert!(b.load().await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rejected_refresh_token_is_forgotten_and_login_is_required() {
    let server = AuthServer::start(Duration::from_millis(10));
    server.state.lock().unwrap().reject = true;
    let dir = tempfile::tempdir().unwrap();
    let url = server.mcp_url();
    let s = store(dir.path(), &url);
    s.save(expired(&server.base, "access-0", "refresh-0"))
        .await
        .unwrap();

    let err = token_through_oauth(&url, s.clone()).await.unwrap_err();
    assert!(matches!(err, OAuthError::Authorization(_)), "{err:?}");
    assert_eq!(server.refresh_requests(), 1);
    assert!(file_json(dir.path(), &s).is_none());
    // And the next attempt goes straight to login, without another refresh.
    let err = token_through_oauth(&url, store(dir.path(), &url))
        .await
        .unwrap_err();
    assert!(matches!(err, OAuthError::Authorization(_)), "{err:?}");
    assert_eq!(server.refresh_requests(), 1);
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
