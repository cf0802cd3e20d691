//! DPoP (RFC 9449, the MCP DPoP extension SEP-1932): sender-constrained tokens. This module
//! owns the proof key, the proofs and the nonces; `exchange.rs` asks for bound tokens and
//! `client.rs` presents them.
//!
//! When DPoP is used: the authorization server lists ES256 in
//! `dpop_signing_alg_values_supported` (the one algorithm this host signs with). A token is
//! presented as DPoP only when its token response says `token_type: DPoP`; a server that
//! answers a proof with a Bearer token gets the token as Bearer.
//!
//! The key: one P-256 key per sign-in, generated when the sign-in starts, kept inside the
//! stored token response under [`KEY_FIELD`] so that a token and the key it is bound to are
//! saved, loaded, refreshed and cleared together by every credential store (the files of
//! `auth login`, the hosted service's rows, memory), and cannot be separated. A field of
//! that name in an authorization server's answer is dropped before ours is set.
//!
//! Nonces (RFC 9449 §8, §9): the authorization server's and the resource server's are kept
//! apart, each the latest the server sent, and used in every later proof to that server.

use super::OAuthError;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair, KeyPair};
use rmcp::transport::auth::{AuthorizationMetadata, OAuthTokenResponse};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// Where a bound token's key lives in its stored token response.
pub(crate) const KEY_FIELD: &str = "mcp_host_dpop_key";

/// The one algorithm this host signs proofs with.
const ALGORITHM: &str = "ES256";

/// Whether the authorization server takes ES256 proofs.
pub(crate) fn offered(metadata: &AuthorizationMetadata) -> bool {
    metadata
        .additional_fields
        .get("dpop_signing_alg_values_supported")
        .and_then(Value::as_array)
        .is_some_and(|algs| algs.iter().any(|a| a.as_str() == Some(ALGORITHM)))
}

/// A proof key: a P-256 key pair and its public JWK.
pub(crate) struct DpopKey {
    pair: EcdsaKeyPair,
    pkcs8: Vec<u8>,
    jwk: Value,
}

impl std::fmt::Debug for DpopKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DpopKey")
            .field("thumbprint", &self.thumbprint())
            .finish_non_exhaustive()
    }
}

fn key_error<E: std::fmt::Display>(e: E) -> OAuthError {
    OAuthError::Other(format!("DPoP key: {e}"))
}

impl DpopKey {
    pub(crate) fn generate() -> Result<Self, OAuthError> {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng)
            .map_err(key_error)?;
        Self::from_der(doc.as_ref().to_vec())
    }

    /// A key as [`Self::encoded`] wrote it.
    pub(crate) fn decode(encoded: &str) -> Result<Self, OAuthError> {
        Self::from_der(URL_SAFE_NO_PAD.decode(encoded).map_err(key_error)?)
    }

    fn from_der(pkcs8: Vec<u8>) -> Result<Self, OAuthError> {
        let rng = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &pkcs8, &rng)
            .map_err(key_error)?;
        // An uncompressed P-256 point: 0x04, then x and y of 32 bytes each.
        let point = pair.public_key().as_ref();
        if point.len() != 65 || point[0] != 4 {
            return Err(key_error("not an uncompressed P-256 public key"));
        }
        let jwk = json!({
            "crv": "P-256",
            "kty": "EC",
            "x": URL_SAFE_NO_PAD.encode(&point[1..33]),
            "y": URL_SAFE_NO_PAD.encode(&point[33..]),
        });
        Ok(Self { pair, pkcs8, jwk })
    }

    /// The private key, for the stored token response.
    pub(crate) fn encoded(&self) -> String {
        URL_SAFE_NO_PAD.encode(&self.pkcs8)
    }

    /// RFC 7638: SHA-256 over the required members in lexicographic order, no whitespace
    /// (what an authorization server puts in the token's `cnf.jkt`).
    pub(crate) fn thumbprint(&self) -> String {
        let canonical = format!(
            r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
            self.jwk["x"].as_str().unwrap_or_default(),
            self.jwk["y"].as_str().unwrap_or_default()
        );
        URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
    }

    /// A fresh proof (RFC 9449 §4.2) for one request: `method` to `url` (its query and
    /// fragment left out), with `ath` when it carries `access_token`, and the server's
    /// `nonce` if it gave one.
    pub(crate) fn proof(
        &self,
        method: &str,
        url: &str,
        access_token: Option<&str>,
        nonce: Option<&str>,
    ) -> Result<String, OAuthError> {
        let mut htu = reqwest::Url::parse(url).map_err(key_error)?;
        htu.set_query(None);
        htu.set_fragment(None);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or_default();
        let header = json!({"typ": "dpop+jwt", "alg": ALGORITHM, "jwk": self.jwk});
        let mut claims = json!({
            "jti": format!("{:032x}", rand::random::<u128>()),
            "htm": method,
            "htu": htu.as_str(),
            "iat": now,
        });
        if let Some(token) = access_token {
            claims["ath"] = URL_SAFE_NO_PAD
                .encode(Sha256::digest(token.as_bytes()))
                .into();
        }
        if let Some(nonce) = nonce {
            claims["nonce"] = nonce.into();
        }
        let signing_input = format!(
            "{}.{}",
            URL_SAFE_NO_PAD.encode(header.to_string()),
            URL_SAFE_NO_PAD.encode(claims.to_string())
        );
        let signature = self
            .pair
            .sign(&SystemRandom::new(), signing_input.as_bytes())
            .map_err(key_error)?;
        Ok(format!(
            "{signing_input}.{}",
            URL_SAFE_NO_PAD.encode(signature.as_ref())
        ))
    }
}

/// A token that must be presented with proofs, and its key.
pub(crate) struct Bound {
    pub(crate) access_token: String,
    pub(crate) key: DpopKey,
}

/// The bound token in a stored token response, if it is one. A DPoP token whose key is
/// missing or unreadable is unusable (it cannot be presented): `Err`, so it is signed in
/// again rather than sent as Bearer. Read on every request: a Bearer token costs one
/// comparison.
pub(crate) fn bound(token: &OAuthTokenResponse) -> Result<Option<Bound>, OAuthError> {
    use oauth2::TokenResponse as _;
    let is_dpop = matches!(
        token.token_type(),
        oauth2::basic::BasicTokenType::Extension(t) if t.eq_ignore_ascii_case("dpop")
    );
    if !is_dpop {
        return Ok(None);
    }
    let key = token
        .extra_fields()
        .0
        .get(KEY_FIELD)
        .and_then(Value::as_str)
        .ok_or_else(|| key_error("a DPoP-bound token is stored without its key"))?;
    Ok(Some(Bound {
        access_token: token.access_token().secret().clone(),
        key: DpopKey::decode(key)?,
    }))
}

/// A token endpoint's answer with `key` kept in it (when the token is bound to it) and no
/// key field of the server's own.
pub(crate) fn keep_key(mut answer: Value, key: &DpopKey) -> Value {
    if let Some(fields) = answer.as_object_mut() {
        fields.remove(KEY_FIELD);
        let is_dpop = fields
            .get("token_type")
            .and_then(Value::as_str)
            .is_some_and(|t| t.eq_ignore_ascii_case("dpop"));
        if is_dpop {
            fields.insert(KEY_FIELD.into(), key.encoded().into());
        }
    }
    answer
}

/// The latest nonce one server gave.
#[derive(Default)]
pub(crate) struct Nonce(Mutex<Option<String>>);

impl Nonce {
    pub(crate) fn get(&self) -> Option<String> {
        self.0.lock().map(|n| n.clone()).unwrap_or_default()
    }

    /// Keeps the `DPoP-Nonce` of a response, if it has one; whether it did.
    pub(crate) fn take_from(&self, headers: &reqwest::header::HeaderMap) -> bool {
        let Some(nonce) = headers
            .get("dpop-nonce")
            .and_then(|v| v.to_str().ok())
            // RFC 9449 §8.1: NQCHAR, and a nonce is short.
            .filter(|n| {
                !n.is_empty() && n.len() <= 512 && n.bytes().all(|b| (0x21..0x7f).contains(&b))
            })
        else {
            return false;
        };
        if let Ok(mut slot) = self.0.lock() {
            *slot = Some(nonce.to_string());
        }
        true
    }
}

/// Whether a challenge or an error answer asks for a nonce (`use_dpop_nonce`).
pub(crate) fn wants_nonce(text: &str) -> bool {
    text.contains("use_dpop_nonce")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};

    fn parts(jwt: &str) -> (Value, Value, Vec<u8>, String) {
        let p: Vec<&str> = jwt.split('.').collect();
        let dec = |s: &str| serde_json::from_slice(&URL_SAFE_NO_PAD.decode(s).unwrap()).unwrap();
        (
            dec(p[0]),
            dec(p[1]),
            URL_SAFE_NO_PAD.decode(p[2]).unwrap(),
            format!("{}.{}", p[0], p[1]),
        )
    }

    #[test]
    fn a_proof_verifies_with_its_own_jwk_and_binds_the_request() {
        let key = DpopKey::generate().unwrap();
        let proof = key
            .proof(
                "POST",
                "http://127.0.0.1:9/mcp?x=1#f",
                Some("tok"),
                Some("n1"),
            )
            .unwrap();
        let (header, claims, signature, signed) = parts(&proof);
        assert_eq!(header["typ"], "dpop+jwt");
        assert_eq!(header["alg"], "ES256");
        assert!(header["jwk"].get("d").is_none(), "no private part");
        assert_eq!(claims["htm"], "POST");
        assert_eq!(claims["htu"], "http://127.0.0.1:9/mcp");
        assert_eq!(claims["nonce"], "n1");
        assert_eq!(
            claims["ath"],
            URL_SAFE_NO_PAD.encode(Sha256::digest(b"tok")).as_str()
        );
        let x = URL_SAFE_NO_PAD
            .decode(header["jwk"]["x"].as_str().unwrap())
            .unwrap();
        let y = URL_SAFE_NO_PAD
            .decode(header["jwk"]["y"].as_str().unwrap())
            .unwrap();
        let point = [&[4u8][..], &x, &y].concat();
        UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, point)
            .verify(signed.as_bytes(), &signature)
            .unwrap();
        // Every proof is fresh.
        let again = key
            .proof("POST", "http://127.0.0.1:9/mcp", None, None)
            .unwrap();
        assert_ne!(parts(&again).1["jti"], claims["jti"]);
        assert!(parts(&again).1.get("ath").is_none());
    }

    #[test]
    fn the_thumbprint_is_rfc_7638() {
        // RFC 7638 §3.1 computes over exactly these members; recompute from the JWK.
        let key = DpopKey::generate().unwrap();
        let jwk = &key.jwk;
        let canonical = serde_json::to_string(&json!({
            "crv": jwk["crv"], "kty": jwk["kty"], "x": jwk["x"], "y": jwk["y"],
        }))
        .unwrap();
        assert_eq!(
            key.thumbprint(),
            URL_SAFE_NO_PAD.encode(Sha256::digest(canonical.as_bytes()))
        );
        let round_trip = DpopKey::decode(&key.encoded()).unwrap();
        assert_eq!(round_trip.thumbprint(), key.thumbprint());
    }

    #[test]
    fn only_a_dpop_token_keeps_the_key_and_a_servers_key_field_is_dropped() {
        let key = DpopKey::generate().unwrap();
        let planted = json!({"access_token": "a", "token_type": "Bearer", KEY_FIELD: "evil"});
        assert!(keep_key(planted, &key).get(KEY_FIELD).is_none());
        let answer = keep_key(
            json!({"access_token": "a", "token_type": "DPoP", KEY_FIELD: "evil"}),
            &key,
        );
        let token: OAuthTokenResponse = serde_json::from_value(answer).unwrap();
        let found = bound(&token).unwrap().unwrap();
        assert_eq!(found.access_token, "a");
        assert_eq!(found.key.thumbprint(), key.thumbprint());
        // A DPoP token without its key cannot be presented at all.
        let keyless: OAuthTokenResponse =
            serde_json::from_value(json!({"access_token": "a", "token_type": "DPoP"})).unwrap();
        assert!(bound(&keyless).is_err());
    }

    #[test]
    fn nonces_are_checked_before_they_are_kept() {
        let nonce = Nonce::default();
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("dpop-nonce", "bad nonce".parse().unwrap());
        assert!(!nonce.take_from(&headers));
        headers.insert("dpop-nonce", "n-2".parse().unwrap());
        assert!(nonce.take_from(&headers));
        assert_eq!(nonce.get().as_deref(), Some("n-2"));
    }
}
