//! A local OAuth authorization server and the MCP servers it protects, on one 127.0.0.1
//! port, for tests of token refresh and audience: protected-resource metadata (RFC 9728) for
//! each resource path, authorization-server metadata (RFC 8414), a token endpoint that does
//! `refresh_token` (slowly, so concurrent refreshes overlap, and rotating the refresh
//! token each time) and the authorization code its `/authorize` gives out at once (with
//! PKCE checked), a registration endpoint that counts registrations, and at each resource path a minimal stateless Streamable HTTP MCP
//! server with one tool, which accepts only an access token issued for *its* resource.
//!
//! With `required_scope` set, `tools/call` needs that scope (403 `insufficient_scope`
//! otherwise), and a code grant gives the scope its authorization request asked for.
//!
//! With `dpop` set it is a DPoP (RFC 9449) server too: its metadata offers ES256 proofs, a
//! token request with a valid proof gets tokens bound to the proof's key (access and
//! refresh), and a bound token is taken only as `Authorization: DPoP` with a valid proof of
//! that key for the very request; with `dpop_nonce` both the token endpoint and the MCP
//! servers demand that nonce (`use_dpop_nonce`) in every proof.
//!
//! Everything it saw is recorded, so a test can assert what went over the wire: how many
//! refresh requests came, with which `resource`, and which bearer token reached which path.
//! Threads and blocking sockets: it needs no runtime and works from any test.

#![allow(clippy::expect_used)] // Test helper: a panic is the failure report.

use crate::dpop_check::{self, Proven};
use crate::raw_http::{Request, read_request, respond};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

/// What the server has issued and seen.
#[derive(Debug, Default)]
pub struct AuthServerState {
    /// The refresh token it accepts now (rotated on every refresh).
    pub current_refresh: String,
    pub generation: u32,
    /// Every refresh request, as the `resource` parameter it carried ("" when none).
    pub refresh_requests: Vec<String>,
    /// Answer `invalid_grant` to every refresh.
    pub reject: bool,
    /// Access token → the resource it was issued for.
    pub issued: HashMap<String, String>,
    /// (request path, `Authorization` header or "") for every request to a resource path.
    pub seen_at_resources: Vec<(String, String)>,
    /// Revoke the token that comes with the first `tools/call` (answering it 401), as a
    /// server does when a token is withdrawn mid-session.
    pub revoke_at_first_call: bool,
    /// Dynamic client registrations asked for.
    pub registrations: usize,
    /// Authorization codes given out at `/authorize` (approved at once, as a person
    /// clicking "allow"): code → (PKCE challenge, resource).
    pub codes: HashMap<String, (String, String)>,
    /// Authorization-code grants the token endpoint honoured.
    pub code_grants: usize,
    /// Hold every refresh answer until this is set back to false (at most 30 s).
    pub hold_refreshes: bool,
    /// Offer and enforce DPoP.
    pub dpop: bool,
    /// The nonce every proof must carry, if any.
    pub dpop_nonce: Option<String>,
    /// Token (access or refresh) → the thumbprint of the key it is bound to.
    pub bound: HashMap<String, String>,
    /// Every valid proof: where it was presented ("/token" or the resource path) and what
    /// it proved.
    pub proofs: Vec<(String, Proven)>,
    /// Why proofs or bound tokens were refused.
    pub dpop_refusals: Vec<String>,
    /// A scope `tools/call` needs: a token without it is answered 403
    /// `insufficient_scope` (a step-up).
    pub required_scope: Option<String>,
    /// Access token → the scopes granted with it.
    pub granted: HashMap<String, Vec<String>>,
    /// Authorization code → the scope asked for with it.
    pub code_scopes: HashMap<String, String>,
}

/// The running server. It lives as long as the test process (its threads are detached).
pub struct LocalAuthServer {
    pub base: String,
    resources: Vec<String>,
    state: Arc<Mutex<AuthServerState>>,
}

fn locked(state: &Mutex<AuthServerState>) -> MutexGuard<'_, AuthServerState> {
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

impl LocalAuthServer {
    /// Serves MCP at each of `resource_paths` (e.g. `["/mcp"]`); every refresh takes
    /// `token_delay`. The refresh token it accepts first is `refresh-0`.
    pub fn start(resource_paths: &[&str], token_delay: Duration) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let base = format!(
            "http://{}",
            listener
                .local_addr()
                .expect("a bound listener has an address")
        );
        let state = Arc::new(Mutex::new(AuthServerState {
            current_refresh: "refresh-0".into(),
            ..AuthServerState::default()
        }));
        let resources: Vec<String> = resource_paths.iter().map(|p| p.to_string()).collect();
        let server = Self {
            base: base.clone(),
            resources: resources.clone(),
            state: state.clone(),
        };
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (base, state, resources) = (base.clone(), state.clone(), resources.clone());
                std::thread::spawn(move || {
                    serve(stream, &base, &resources, &state, token_delay);
                });
            }
        });
        server
    }

    /// The URL of the MCP server at `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    pub fn state(&self) -> MutexGuard<'_, AuthServerState> {
        locked(&self.state)
    }

    pub fn refresh_count(&self) -> usize {
        self.state().refresh_requests.len()
    }

    /// The `Authorization` headers that reached `path`, in order ("" for none).
    pub fn authorizations_at(&self, path: &str) -> Vec<String> {
        self.state()
            .seen_at_resources
            .iter()
            .filter(|(p, _)| p == path)
            .map(|(_, a)| a.clone())
            .collect()
    }

    pub fn resources(&self) -> &[String] {
        &self.resources
    }
}

fn serve(
    stream: TcpStream,
    base: &str,
    resources: &[String],
    state: &Mutex<AuthServerState>,
    token_delay: Duration,
) {
    let Some(request) = read_request(&stream) else {
        return;
    };
    let path = request.path.as_str();
    if let Some(resource) = path.strip_prefix("/.well-known/oauth-protected-resource")
        && resources.iter().any(|r| r == resource)
    {
        return respond(
            stream,
            "200 OK",
            "",
            &json!({"resource": format!("{base}{resource}"), "authorization_servers": [base]}),
        );
    }
    if resources.iter().any(|r| r == path) {
        return serve_mcp(stream, &request, base, state);
    }
    match (request.method.as_str(), path) {
        ("GET", "/.well-known/oauth-authorization-server") => {
            let mut metadata = json!({
                "issuer": base,
                "authorization_endpoint": format!("{base}/authorize"),
                "token_endpoint": format!("{base}/token"),
                "registration_endpoint": format!("{base}/register"),
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": ["none"],
            });
            if locked(state).dpop {
                metadata["dpop_signing_alg_values_supported"] = json!(["ES256"]);
            }
            respond(stream, "200 OK", "", &metadata)
        }
        ("POST", "/token") => token(stream, &request, base, state, token_delay),
        ("GET", p) if p.starts_with("/authorize?") => authorize(stream, base, p, state),
        ("POST", "/register") => {
            locked(state).registrations += 1;
            let client =
                json!({"client_id": "registered", "redirect_uris": ["http://127.0.0.1/callback"]});
            respond(stream, "201 Created", "", &client)
        }
        _ => respond(stream, "404 Not Found", "", &json!({"error": "not_found"})),
    }
}

/// Approves at once and sends the browser back with a code, `state` and `iss` (RFC 9207).
fn authorize(stream: TcpStream, base: &str, target: &str, state: &Mutex<AuthServerState>) {
    let query = target.split_once('?').map(|(_, q)| q).unwrap_or_default();
    let q: HashMap<String, String> = url::form_urlencoded::parse(query.as_bytes())
        .into_owned()
        .collect();
    let get = |k: &str| q.get(k).cloned().unwrap_or_default();
    let Ok(mut back) = url::Url::parse(&get("redirect_uri")) else {
        return respond(
            stream,
            "400 Bad Request",
            "",
            &json!({"error": "invalid_request"}),
        );
    };
    let mut s = locked(state);
    let code = format!("code-{}", s.codes.len() + s.code_grants);
    s.codes
        .insert(code.clone(), (get("code_challenge"), get("resource")));
    s.code_scopes.insert(code.clone(), get("scope"));
    drop(s);
    back.query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"))
        .append_pair("iss", base);
    respond(
        stream,
        "302 Found",
        &format!("location: {back}\r\n"),
        &Value::Null,
    );
}

/// Trades a code for tokens: once, and only with the verifier of its PKCE challenge.
fn code_grant(
    stream: TcpStream,
    form: &HashMap<String, String>,
    jkt: Option<String>,
    state: &Mutex<AuthServerState>,
) {
    use base64::Engine as _;
    use sha2::Digest as _;
    let field = |k: &str| form.get(k).cloned().unwrap_or_default();
    let mut s = locked(state);
    let Some((challenge, resource)) = s.codes.remove(&field("code")) else {
        drop(s);
        return respond(
            stream,
            "400 Bad Request",
            "",
            &json!({"error": "invalid_grant"}),
        );
    };
    let verifier = sha2::Sha256::digest(field("code_verifier").as_bytes());
    if base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(verifier) != challenge {
        drop(s);
        return respond(
            stream,
            "400 Bad Request",
            "",
            &json!({"error": "invalid_grant"}),
        );
    }
    s.code_grants += 1;
    let resource = if field("resource").is_empty() {
        resource
    } else {
        field("resource")
    };
    let scope = s.code_scopes.remove(&field("code")).unwrap_or_default();
    let mut answer = issue(&mut s, resource, jkt);
    if !scope.is_empty() {
        let access = answer["access_token"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        s.granted.insert(
            access,
            scope.split_whitespace().map(str::to_string).collect(),
        );
        answer["scope"] = scope.into();
    }
    drop(s);
    respond(stream, "200 OK", "", &answer);
}

/// New tokens for `resource`: the access token it will accept there, and a rotated refresh
/// token (the only one it accepts from now on).
/// With `jkt`, both are bound to that key.
fn issue(s: &mut AuthServerState, resource: String, jkt: Option<String>) -> Value {
    s.generation += 1;
    s.current_refresh = format!("refresh-{}", s.generation);
    let access = format!("access-{}", s.generation);
    s.issued.insert(access.clone(), resource);
    let token_type = match jkt {
        Some(jkt) => {
            s.bound.insert(access.clone(), jkt.clone());
            s.bound.insert(s.current_refresh.clone(), jkt);
            "DPoP"
        }
        None => "Bearer",
    };
    json!({
        "access_token": access,
        "token_type": token_type,
        "expires_in": 3600,
        "refresh_token": s.current_refresh,
    })
}

/// The DPoP check of a token request: `Ok(None)` without DPoP (off, or no proof), the
/// proof's key when it is valid and carries the nonce, else the refusal to send.
fn token_proof(
    request: &Request,
    base: &str,
    state: &Mutex<AuthServerState>,
) -> Result<Option<String>, (&'static str, String, Value)> {
    let mut s = locked(state);
    let Some(proof) = request.headers.get("dpop").filter(|_| s.dpop) else {
        return Ok(None);
    };
    let proven = match dpop_check::verify(proof, "POST", &format!("{base}/token"), None) {
        Ok(p) => p,
        Err(why) => {
            s.dpop_refusals.push(format!("/token: {why}"));
            let error = json!({"error": "invalid_dpop_proof", "error_description": why});
            return Err(("400 Bad Request", String::new(), error));
        }
    };
    if let Some(nonce) = s.dpop_nonce.clone()
        && proven.nonce.as_deref() != Some(nonce.as_str())
    {
        let error = json!({"error": "use_dpop_nonce"});
        return Err(("400 Bad Request", format!("dpop-nonce: {nonce}\r\n"), error));
    }
    let jkt = proven.jkt.clone();
    s.proofs.push(("/token".into(), proven));
    Ok(Some(jkt))
}

fn token(
    stream: TcpStream,
    request: &Request,
    base: &str,
    state: &Mutex<AuthServerState>,
    delay: Duration,
) {
    let form: HashMap<String, String> = url::form_urlencoded::parse(&request.body)
        .into_owned()
        .collect();
    let field = |k: &str| form.get(k).cloned().unwrap_or_default();
    let jkt = match token_proof(request, base, state) {
        Ok(jkt) => jkt,
        Err((status, headers, error)) => return respond(stream, status, &headers, &error),
    };
    if field("grant_type") == "authorization_code" {
        return code_grant(stream, &form, jkt, state);
    }
    if field("grant_type") != "refresh_token" {
        let error = json!({"error": "unsupported_grant_type"});
        return respond(stream, "400 Bad Request", "", &error);
    }
    locked(state).refresh_requests.push(field("resource"));
    // Slow, so that concurrent refreshes would overlap; held for as long as the test says.
    std::thread::sleep(delay);
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while locked(state).hold_refreshes && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(5));
    }
    let mut s = locked(state);
    // RFC 9449 §5: a bound refresh token is refreshed only with a proof of its key.
    let bound_to = s.bound.get(&field("refresh_token")).cloned();
    if bound_to.is_some() && bound_to != jkt {
        s.dpop_refusals
            .push("/token: a bound refresh token without its key's proof".into());
        drop(s);
        let error = json!({"error": "invalid_grant"});
        return respond(stream, "400 Bad Request", "", &error);
    }
    if s.reject || field("refresh_token") != s.current_refresh {
        drop(s);
        let error = json!({"error": "invalid_grant"});
        return respond(stream, "400 Bad Request", "", &error);
    }
    let answer = issue(&mut s, field("resource"), jkt);
    drop(s);
    respond(stream, "200 OK", "", &answer);
}

/// A stateless MCP server (JSON responses) with one tool, `whoami`, behind a bearer check:
/// the token must have been issued for this very URL.
fn serve_mcp(stream: TcpStream, request: &Request, base: &str, state: &Mutex<AuthServerState>) {
    let authorization = request
        .headers
        .get("authorization")
        .cloned()
        .unwrap_or_default();
    let resource = format!("{base}{}", request.path);
    let mut s = locked(state);
    s.seen_at_resources
        .push((request.path.clone(), authorization.clone()));
    let token = authorization
        .split_once(' ')
        .map(|(_, t)| t)
        .unwrap_or_default();
    let mut audience = s.issued.get(token).cloned();
    let scheme = if s.dpop { "DPoP" } else { "Bearer" };
    let challenge = format!(
        "www-authenticate: {scheme} resource_metadata=\"{base}/.well-known/oauth-protected-resource{}\"\r\n",
        request.path
    );
    match dpop_presentation(&mut s, request, &resource, authorization.split_once(' ')) {
        Presentation::Fine => {}
        Presentation::Refused => audience = None,
        Presentation::NonceNeeded(nonce) => {
            drop(s);
            let headers = format!(
                "www-authenticate: DPoP error=\"use_dpop_nonce\"\r\ndpop-nonce: {nonce}\r\n"
            );
            let error = json!({"error": "use_dpop_nonce"});
            return respond(stream, "401 Unauthorized", &headers, &error);
        }
    }
    drop(s);
    if audience.as_deref() != Some(resource.as_str()) {
        let error = json!({"error": "invalid_token"});
        return respond(stream, "401 Unauthorized", &challenge, &error);
    }
    if request.method != "POST" {
        return respond(stream, "405 Method Not Allowed", "", &Value::Null);
    }
    let Ok(message) = serde_json::from_slice::<Value>(&request.body) else {
        return respond(stream, "400 Bad Request", "", &Value::Null);
    };
    if message["method"] == "tools/call" {
        let mut s = locked(state);
        if let Some(required) = s.required_scope.clone()
            && !s.granted.get(token).is_some_and(|g| g.contains(&required))
        {
            drop(s);
            let challenge = format!(
                "www-authenticate: Bearer error=\"insufficient_scope\", scope=\"{required}\", resource_metadata=\"{base}/.well-known/oauth-protected-resource{}\"\r\n",
                request.path
            );
            let error = json!({"error": "insufficient_scope"});
            return respond(stream, "403 Forbidden", &challenge, &error);
        }
        if s.revoke_at_first_call {
            s.revoke_at_first_call = false;
            if let Some((_, token)) = authorization.split_once(' ') {
                s.issued.remove(token);
            }
            drop(s);
            let error = json!({"error": "invalid_token", "error_description": "revoked"});
            return respond(stream, "401 Unauthorized", &challenge, &error);
        }
    }
    let Some(id) = message.get("id").cloned() else {
        // A notification.
        return respond(stream, "202 Accepted", "", &Value::Null);
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "protected", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [{
            "name": "whoami",
            "description": "Says which resource the token was for.",
            "inputSchema": {"type": "object"},
        }]}),
        "tools/call" => json!({"content": [{"type": "text", "text": resource}]}),
        "ping" => json!({}),
        other => {
            let error = json!({"jsonrpc": "2.0", "id": id,
                "error": {"code": -32601, "message": format!("no method {other}")}});
            return respond(stream, "200 OK", "", &error);
        }
    };
    respond(
        stream,
        "200 OK",
        "",
        &json!({"jsonrpc": "2.0", "id": id, "result": result}),
    );
}

enum Presentation {
    Fine,
    Refused,
    NonceNeeded(String),
}

/// The DPoP rules for a token presented at a resource: a bound token only under the DPoP
/// scheme with a valid proof of its key for this request (and the nonce, if one is set);
/// an unbound token only as Bearer.
fn dpop_presentation(
    s: &mut AuthServerState,
    request: &Request,
    resource: &str,
    authorization: Option<(&str, &str)>,
) -> Presentation {
    let Some((scheme, token)) = authorization else {
        return Presentation::Fine;
    };
    let Some(jkt) = s.bound.get(token).cloned() else {
        if scheme == "Bearer" {
            return Presentation::Fine;
        }
        s.dpop_refusals
            .push(format!("{}: an unbound token as {scheme}", request.path));
        return Presentation::Refused;
    };
    if scheme != "DPoP" {
        s.dpop_refusals
            .push(format!("{}: a bound token as {scheme}", request.path));
        return Presentation::Refused;
    }
    let Some(proof) = request.headers.get("dpop") else {
        s.dpop_refusals.push(format!("{}: no proof", request.path));
        return Presentation::Refused;
    };
    match dpop_check::verify(proof, &request.method, resource, Some(token)) {
        Ok(proven) if proven.jkt != jkt => {
            s.dpop_refusals
                .push(format!("{}: a proof of another key", request.path));
            Presentation::Refused
        }
        Ok(proven) => {
            if let Some(nonce) = s.dpop_nonce.clone()
                && proven.nonce.as_deref() != Some(nonce.as_str())
            {
                return Presentation::NonceNeeded(nonce);
            }
            s.proofs.push((request.path.clone(), proven));
            Presentation::Fine
        }
        Err(why) => {
            s.dpop_refusals.push(format!("{}: {why}", request.path));
            Presentation::Refused
        }
    }
}
