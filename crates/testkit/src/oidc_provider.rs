//! A local OpenID Connect provider on 127.0.0.1 for tests of the hosted mode's sign-in:
//! discovery, an authorization endpoint that approves at once as the configured person and
//! redirects back with a code, a token endpoint that checks the code (once), the redirect
//! URI, the client and the PKCE verifier, and a JWKS with one P-256 key; ID tokens are
//! ES256-signed. Its faults make the ID token lie in one way each (another nonce, audience,
//! issuer, an expired token, `alg: none`, a key it does not publish), as a hostile or broken
//! provider would. Threads and blocking sockets: no runtime needed.

#![allow(clippy::expect_used)] // Test helper: a panic is the failure report.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// One way the ID token is made wrong.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdTokenFault {
    WrongNonce,
    WrongAudience,
    WrongIssuer,
    Expired,
    AlgNone,
    UnpublishedKey,
}

/// Who signs in, and what the provider saw.
#[derive(Debug, Default)]
pub struct ProviderState {
    pub subject: String,
    pub username: String,
    pub groups: Vec<String>,
    pub fault: Option<IdTokenFault>,
    /// code → (client_id, redirect_uri, code_challenge, nonce)
    codes: HashMap<String, (String, String, String, String)>,
    /// Token requests refused, with why.
    pub refused: Vec<String>,
    pub tokens_issued: usize,
}

pub struct LocalOidcProvider {
    pub issuer: String,
    state: Arc<Mutex<ProviderState>>,
}

struct Keys {
    published: EcdsaKeyPair,
    unpublished: EcdsaKeyPair,
}

fn key() -> EcdsaKeyPair {
    let rng = SystemRandom::new();
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).expect("a key");
    EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, pkcs8.as_ref(), &rng).expect("a key")
}

impl LocalOidcProvider {
    /// A provider that signs in `username` (subject `sub-<username>`) with `groups`.
    pub fn start(username: &str, groups: &[&str]) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let issuer = format!("http://{}", listener.local_addr().expect("an address"));
        let state = Arc::new(Mutex::new(ProviderState {
            subject: format!("sub-{username}"),
            username: username.to_string(),
            groups: groups.iter().map(|g| g.to_string()).collect(),
            ..ProviderState::default()
        }));
        let keys = Arc::new(Keys {
            published: key(),
            unpublished: key(),
        });
        let (shared, iss) = (state.clone(), issuer.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (state, keys, iss) = (shared.clone(), keys.clone(), iss.clone());
                std::thread::spawn(move || serve(stream, &state, &keys, &iss));
            }
        });
        Self { issuer, state }
    }

    pub fn state(&self) -> MutexGuard<'_, ProviderState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

struct Request {
    method: String,
    path: String,
    query: HashMap<String, String>,
    form: HashMap<String, String>,
}

fn params(text: &str) -> HashMap<String, String> {
    url::form_urlencoded::parse(text.as_bytes())
        .into_owned()
        .collect()
}

fn read(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let target = parts.next()?.to_string();
    let mut length = 0;
    loop {
        let mut h = String::new();
        reader.read_line(&mut h).ok()?;
        if h.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = h.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Request {
        method,
        path: path.to_string(),
        query: params(query),
        form: params(&String::from_utf8_lossy(&body)),
    })
}

fn answer(mut stream: TcpStream, status: &str, headers: &[(&str, &str)], body: &str) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    // The client may have gone; that shows in the test's own assertions.
    let _ = write!(stream, "{head}\r\n{body}");
    let _ = stream.flush();
}

fn json_answer(stream: TcpStream, status: &str, body: &Value) {
    answer(
        stream,
        status,
        &[("Content-Type", "application/json")],
        &body.to_string(),
    );
}

fn serve(stream: TcpStream, state: &Mutex<ProviderState>, keys: &Keys, issuer: &str) {
    let Some(req) = read(&stream) else { return };
    let lock = || state.lock().unwrap_or_else(PoisonError::into_inner);
    match (req.method.as_str(), req.path.as_str()) {
        ("GET", "/.well-known/openid-configuration") => json_answer(
            stream,
            "200 OK",
            &json!({
                "issuer": issuer,
                "authorization_endpoint": format!("{issuer}/authorize"),
                "token_endpoint": format!("{issuer}/token"),
                "jwks_uri": format!("{issuer}/jwks"),
                "response_types_supported": ["code"],
                "code_challenge_methods_supported": ["S256"],
                "id_token_signing_alg_values_supported": ["ES256"],
            }),
        ),
        ("GET", "/jwks") => {
            let public = keys.published.public_key().as_ref();
            json_answer(
                stream,
                "200 OK",
                &json!({"keys": [{
                    "kty": "EC", "crv": "P-256", "kid": "k1", "alg": "ES256", "use": "sig",
                    "x": URL_SAFE_NO_PAD.encode(&public[1..33]),
                    "y": URL_SAFE_NO_PAD.encode(&public[33..65]),
                }]}),
            );
        }
        ("GET", "/authorize") => {
            let q = &req.query;
            let get = |k: &str| q.get(k).cloned().unwrap_or_default();
            if get("response_type") != "code" || get("code_challenge_method") != "S256" {
                return answer(stream, "400 Bad Request", &[], "code flow with S256 only");
            }
            let code = format!("code-{:016x}", rand_u64());
            lock().codes.insert(
                code.clone(),
                (
                    get("client_id"),
                    get("redirect_uri"),
                    get("code_challenge"),
                    get("nonce"),
                ),
            );
            let mut to = url::Url::parse(&get("redirect_uri")).expect("a redirect URI");
            to.query_pairs_mut()
                .append_pair("code", &code)
                .append_pair("state", &get("state"));
            answer(stream, "302 Found", &[("Location", to.as_str())], "");
        }
        ("POST", "/token") => {
            let f = &req.form;
            let get = |k: &str| f.get(k).cloned().unwrap_or_default();
            let mut s = lock();
            let Some((client, redirect, challenge, nonce)) = s.codes.remove(&get("code")) else {
                s.refused.push("unknown or used code".into());
                drop(s);
                return json_answer(
                    stream,
                    "400 Bad Request",
                    &json!({"error": "invalid_grant"}),
                );
            };
            let verifier_ok = URL_SAFE_NO_PAD
                .encode(Sha256::digest(get("code_verifier").as_bytes()))
                == challenge;
            let why = if get("grant_type") != "authorization_code" {
                Some("grant type")
            } else if get("client_id") != client {
                Some("client")
            } else if get("redirect_uri") != redirect {
                Some("redirect URI")
            } else if !verifier_ok {
                Some("PKCE verifier")
            } else {
                None
            };
            if let Some(why) = why {
                s.refused.push(why.into());
                drop(s);
                return json_answer(
                    stream,
                    "400 Bad Request",
                    &json!({"error": "invalid_grant"}),
                );
            }
            s.tokens_issued += 1;
            let token = id_token(&s, keys, issuer, &client, &nonce);
            drop(s);
            json_answer(
                stream,
                "200 OK",
                &json!({"access_token": "at", "token_type": "Bearer", "id_token": token}),
            );
        }
        _ => answer(stream, "404 Not Found", &[], ""),
    }
}

fn id_token(s: &ProviderState, keys: &Keys, issuer: &str, client: &str, nonce: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or_default();
    let fault = s.fault;
    let mut claims = json!({
        "iss": if fault == Some(IdTokenFault::WrongIssuer) { "http://impostor.invalid" } else { issuer },
        "sub": s.subject,
        "aud": if fault == Some(IdTokenFault::WrongAudience) { "another-client" } else { client },
        "exp": if fault == Some(IdTokenFault::Expired) { now - 3600 } else { now + 300 },
        "iat": now,
        "nonce": if fault == Some(IdTokenFault::WrongNonce) { "not-the-nonce" } else { nonce },
        "preferred_username": s.username,
        "groups": s.groups,
    });
    if claims["groups"].as_array().is_some_and(Vec::is_empty) {
        claims.as_object_mut().map(|c| c.remove("groups"));
    }
    let alg = if fault == Some(IdTokenFault::AlgNone) {
        "none"
    } else {
        "ES256"
    };
    let header = json!({"alg": alg, "kid": "k1", "typ": "JWT"});
    let input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    if fault == Some(IdTokenFault::AlgNone) {
        return format!("{input}.");
    }
    let signer = if fault == Some(IdTokenFault::UnpublishedKey) {
        &keys.unpublished
    } else {
        &keys.published
    };
    let sig = signer
        .sign(&SystemRandom::new(), input.as_bytes())
        .expect("a signature");
    format!("{input}.{}", URL_SAFE_NO_PAD.encode(sig.as_ref()))
}

fn rand_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default(),
    );
    h.finish()
}
