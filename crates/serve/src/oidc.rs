//! Signing people in with OpenID Connect: the service is a relying party using the
//! authorization code flow with PKCE (S256), a `state` bound to the browser that started the
//! sign-in (a cookie), and a `nonce` bound to the ID token. The ID token is checked before
//! anything of it is believed: its signature (RS256 or ES256 only: `none` and HMAC are
//! refused) against the provider's published keys, `iss` against the configured issuer,
//! `aud` (and `azp`) against this client, `exp`/`iat` with a small skew, and the nonce.
//! Everything from the provider is bounded (response sizes, a deadline per request).

use crate::db::{Db, DbError, new_secret, now_ms, secret_hash};
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{self, UnparsedPublicKey};
use serde_json::Value;
use sha2::{Digest, Sha256};
use std::time::Duration;
use tokio::sync::Mutex;

/// How the service signs people in.
#[derive(Clone, Debug)]
pub struct OidcSettings {
    pub issuer: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    /// Members of this group (the `groups` claim) get the admin role.
    pub admin_group: Option<String>,
    /// Only members of this group may sign in (and get an account); anyone the provider
    /// vouches for when unset.
    pub allowed_group: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum OidcError {
    #[error("the identity provider could not be reached: {0}")]
    Unreachable(String),
    #[error("the identity provider answered something unusable: {0}")]
    Provider(String),
    #[error("the sign-in was refused: {0}")]
    Refused(String),
    #[error("the ID token was not accepted: {0}")]
    Token(String),
    #[error(transparent)]
    Db(#[from] DbError),
}

/// What the provider's discovery document says.
#[derive(Clone, Debug)]
struct Provider {
    issuer: String,
    authorization_endpoint: String,
    token_endpoint: String,
    jwks_uri: String,
}

/// The largest answer read from the provider.
const MAX_ANSWER: usize = 256 * 1024;
/// Clock skew allowed on `exp` and `iat`.
const SKEW_MS: i64 = 60_000;
/// How long a sign-in may take from start to callback.
const LOGIN_MS: i64 = 10 * 60 * 1000;

pub struct Oidc {
    settings: OidcSettings,
    http: reqwest::Client,
    provider: Mutex<Option<Provider>>,
    keys: Mutex<Vec<Value>>,
}

/// Where to send the browser, and the cookie that binds the sign-in to it.
pub struct Start {
    pub location: String,
    pub binding: String,
}

/// A person the provider vouched for.
#[derive(Debug, PartialEq, Eq)]
pub struct Person {
    pub issuer: String,
    pub subject: String,
    pub name: String,
    pub groups: Vec<String>,
}

fn pkce_challenge(verifier: &str) -> String {
    URL_SAFE_NO_PAD.encode(Sha256::digest(verifier.as_bytes()))
}

impl Oidc {
    pub fn new(settings: OidcSettings, http: reqwest::Client) -> Self {
        Self {
            settings,
            http,
            provider: Mutex::new(None),
            keys: Mutex::new(Vec::new()),
        }
    }

    pub fn admin_group(&self) -> Option<&str> {
        self.settings.admin_group.as_deref()
    }

    /// Whether `person` may have an account here.
    pub fn admits(&self, person: &Person) -> bool {
        (self.settings.allowed_group.as_deref())
            .is_none_or(|g| person.groups.iter().any(|x| x == g))
    }

    async fn get_json(&self, url: &str) -> Result<Value, OidcError> {
        let answer = self
            .http
            .get(url)
            .timeout(Duration::from_secs(10))
            .send()
            .await
            .map_err(|e| OidcError::Unreachable(e.without_url().to_string()))?;
        read_json(answer).await
    }

    async fn provider(&self) -> Result<Provider, OidcError> {
        let mut cached = self.provider.lock().await;
        if let Some(p) = cached.as_ref() {
            return Ok(p.clone());
        }
        let base = self.settings.issuer.trim_end_matches('/');
        let doc = self
            .get_json(&format!("{base}/.well-known/openid-configuration"))
            .await?;
        let field = |k: &str| {
            doc[k]
                .as_str()
                .map(str::to_string)
                .ok_or_else(|| OidcError::Provider(format!("discovery has no `{k}`")))
        };
        let provider = Provider {
            issuer: field("issuer")?,
            authorization_endpoint: field("authorization_endpoint")?,
            token_endpoint: field("token_endpoint")?,
            jwks_uri: field("jwks_uri")?,
        };
        // OpenID Connect Discovery §4.3: the document must name the issuer it was asked for.
        if provider.issuer.trim_end_matches('/') != base {
            return Err(OidcError::Provider(format!(
                "discovery names issuer {} instead of {base}",
                provider.issuer
            )));
        }
        *cached = Some(provider.clone());
        Ok(provider)
    }

    /// Starts a sign-in: the provider's authorization URL and the browser binding.
    pub async fn start(&self, db: &Db, redirect_uri: &str) -> Result<Start, OidcError> {
        let provider = self.provider().await?;
        let state = new_secret();
        let verifier = new_secret();
        let nonce = new_secret();
        db.put_login_state(&secret_hash(&state), &verifier, &nonce, now_ms() + LOGIN_MS)
            .await?;
        let mut url = url::Url::parse(&provider.authorization_endpoint)
            .map_err(|e| OidcError::Provider(format!("authorization_endpoint: {e}")))?;
        url.query_pairs_mut()
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.settings.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", "openid profile email groups")
            .append_pair("state", &state)
            .append_pair("nonce", &nonce)
            .append_pair("code_challenge", &pkce_challenge(&verifier))
            .append_pair("code_challenge_method", "S256");
        Ok(Start {
            location: url.into(),
            binding: state,
        })
    }

    /// Finishes a sign-in from the callback's `code` and `state` and the browser's binding.
    pub async fn finish(
        &self,
        db: &Db,
        redirect_uri: &str,
        code: &str,
        state: &str,
        binding: Option<&str>,
    ) -> Result<Person, OidcError> {
        if binding != Some(state) {
            return Err(OidcError::Refused(
                "the sign-in was not started in this browser".into(),
            ));
        }
        let Some((verifier, nonce)) = db.take_login_state(&secret_hash(state)).await? else {
            return Err(OidcError::Refused(
                "the sign-in expired or was used already".into(),
            ));
        };
        let provider = self.provider().await?;
        let mut form = vec![
            ("grant_type", "authorization_code"),
            ("code", code),
            ("redirect_uri", redirect_uri),
            ("client_id", self.settings.client_id.as_str()),
            ("code_verifier", verifier.as_str()),
        ];
        if let Some(secret) = &self.settings.client_secret {
            form.push(("client_secret", secret));
        }
        let answer = self
            .http
            .post(&provider.token_endpoint)
            .timeout(Duration::from_secs(10))
            .form(&form)
            .send()
            .await
            .map_err(|e| OidcError::Unreachable(e.without_url().to_string()))?;
        let tokens = read_json(answer).await?;
        let id_token = tokens["id_token"]
            .as_str()
            .ok_or_else(|| OidcError::Provider("the token answer has no id_token".into()))?;
        let claims = self.verify(&provider, id_token).await?;
        check_claims(
            &claims,
            &provider.issuer,
            &self.settings.client_id,
            &nonce,
            now_ms(),
        )?;
        let subject = claims["sub"].as_str().unwrap_or_default().to_string();
        let name = ["preferred_username", "email"]
            .iter()
            .find_map(|k| claims[*k].as_str())
            .unwrap_or(&subject);
        let name: String = name
            .chars()
            .filter(|c| c.is_ascii_alphanumeric() || "-_.@".contains(*c))
            .take(64)
            .collect();
        // Group names are stored joined by commas: one with a comma (or a control character, or
        // absurdly long) could forge another group, so it is dropped.
        let groups = claims["groups"]
            .as_array()
            .map(|g| {
                g.iter()
                    .filter_map(Value::as_str)
                    .filter(|g| !g.is_empty() && g.len() <= 128)
                    .filter(|g| !g.chars().any(|c| c == ',' || c.is_control()))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        Ok(Person {
            issuer: provider.issuer,
            subject,
            name: if name.is_empty() { "user".into() } else { name },
            groups,
        })
    }

    /// The token's claims once its signature checks out against the provider's keys (fetched
    /// again once when the token names a key not seen yet: keys rotate).
    async fn verify(&self, provider: &Provider, token: &str) -> Result<Value, OidcError> {
        let parts: Vec<&str> = token.split('.').collect();
        let [head, body, sig] = parts[..] else {
            return Err(OidcError::Token("not a JWS compact token".into()));
        };
        let decode = |s: &str| {
            URL_SAFE_NO_PAD
                .decode(s)
                .map_err(|_| OidcError::Token("not base64url".into()))
        };
        let header: Value = serde_json::from_slice(&decode(head)?)
            .map_err(|_| OidcError::Token("the header is not JSON".into()))?;
        let alg = header["alg"].as_str().unwrap_or_default();
        if !matches!(alg, "RS256" | "ES256") {
            return Err(OidcError::Token(format!(
                "algorithm {alg:?} is not accepted"
            )));
        }
        let kid = header["kid"].as_str();
        let signature = decode(sig)?;
        let signed = format!("{head}.{body}");
        for refetch in [false, true] {
            let mut keys = self.keys.lock().await;
            if refetch || keys.is_empty() {
                let jwks = self.get_json(&provider.jwks_uri).await?;
                *keys = jwks["keys"].as_array().cloned().unwrap_or_default();
            }
            let candidates = keys
                .iter()
                .filter(|k| kid.is_none() || k["kid"].as_str() == kid);
            for key in candidates {
                if verifies(key, alg, signed.as_bytes(), &signature) {
                    return serde_json::from_slice(&decode(body)?)
                        .map_err(|_| OidcError::Token("the claims are not JSON".into()));
                }
            }
            if kid.is_none() {
                break;
            }
        }
        Err(OidcError::Token(
            "no key of the provider verifies its signature".into(),
        ))
    }
}

async fn read_json(answer: reqwest::Response) -> Result<Value, OidcError> {
    let status = answer.status();
    // Read piece by piece, so a provider that streams without end is cut at the cap.
    let bytes = mcp_host_auth::read_capped(answer, MAX_ANSWER)
        .await
        .map_err(|e| OidcError::Unreachable(e.without_url().to_string()))?
        .ok_or_else(|| OidcError::Provider("the answer is too large".into()))?;
    if !status.is_success() {
        return Err(OidcError::Refused(format!(
            "the provider answered {status}"
        )));
    }
    serde_json::from_slice(&bytes).map_err(|_| OidcError::Provider("the answer is not JSON".into()))
}

/// Whether `key` (a JWK) of algorithm `alg` made `signature` over `message`.
fn verifies(key: &Value, alg: &str, message: &[u8], signature: &[u8]) -> bool {
    let b64 = |k: &str| key[k].as_str().and_then(|v| URL_SAFE_NO_PAD.decode(v).ok());
    match (alg, key["kty"].as_str()) {
        ("RS256", Some("RSA")) => match (b64("n"), b64("e")) {
            (Some(n), Some(e)) => signature::RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, signature)
                .is_ok(),
            _ => false,
        },
        ("ES256", Some("EC")) if key["crv"] == "P-256" => match (b64("x"), b64("y")) {
            (Some(x), Some(y)) if x.len() == 32 && y.len() == 32 => {
                let point = [&[4u8][..], &x, &y].concat();
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, signature)
                    .is_ok()
            }
            _ => false,
        },
        _ => false,
    }
}

/// The ID token's claims, checked (OpenID Connect Core §3.1.3.7).
pub fn check_claims(
    claims: &Value,
    issuer: &str,
    client_id: &str,
    nonce: &str,
    now: i64,
) -> Result<(), OidcError> {
    let bad = |why: &str| Err(OidcError::Token(why.into()));
    if claims["iss"].as_str() != Some(issuer) {
        return bad("it was issued by another issuer");
    }
    let audiences: Vec<&str> = match &claims["aud"] {
        Value::String(a) => vec![a.as_str()],
        Value::Array(a) => a.iter().filter_map(Value::as_str).collect(),
        _ => Vec::new(),
    };
    if !audiences.contains(&client_id) {
        return bad("it is not for this client");
    }
    if audiences.len() > 1 && claims["azp"].as_str() != Some(client_id) {
        return bad("it has several audiences and this client is not its authorized party");
    }
    let secs = |k: &str| claims[k].as_i64().map(|s| s.saturating_mul(1000));
    match secs("exp") {
        Some(exp) if exp + SKEW_MS > now => {}
        _ => return bad("it has expired"),
    }
    if secs("iat").is_none_or(|iat| iat - SKEW_MS > now) {
        return bad("it was issued in the future");
    }
    if !claims["nonce"]
        .as_str()
        .is_some_and(|n| crate::access::same_secret(n, nonce))
    {
        return bad("its nonce is not this sign-in's");
    }
    if claims["sub"].as_str().is_none_or(str::is_empty) {
        return bad("it names no subject");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn good(now_s: i64) -> Value {
        json!({"iss": "https://idp", "aud": "app", "exp": now_s + 300, "iat": now_s, "nonce": "n1", "sub": "42"})
    }

    #[test]
    fn every_claim_is_checked() {
        let now_s = 1_800_000_000;
        let now = now_s * 1000;
        let check = |c: &Value| check_claims(c, "https://idp", "app", "n1", now);
        assert!(check(&good(now_s)).is_ok());
        let mut bad_cases = Vec::new();
        for (k, v) in [
            ("iss", json!("https://other")),
            ("aud", json!("someone-else")),
            ("aud", json!(["app", "other"])),
            ("exp", json!(now_s - 120)),
            ("iat", json!(now_s + 600)),
            ("nonce", json!("replayed")),
            ("sub", json!("")),
        ] {
            let mut c = good(now_s);
            c[k] = v;
            bad_cases.push((k, check(&c).is_err()));
        }
        assert!(
            bad_cases.iter().all(|(_, refused)| *refused),
            "{bad_cases:?}"
        );
        let mut azp = good(now_s);
        azp["aud"] = json!(["app", "other"]);
        azp["azp"] = json!("app");
        assert!(check(&azp).is_ok());
    }

    #[test]
    fn pkce_uses_s256_of_the_verifier() {
        // RFC 7636, appendix B.
        assert_eq!(
            pkce_challenge("dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"),
            "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM"
        );
    }
}
