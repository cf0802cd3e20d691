//! A DPoP proof checked as an authorization server or a resource server must check it
//! (RFC 9449 §4.3), for the test servers: the JWT's shape, its ES256 signature under the
//! key in its own header, the request it names, its age, the access token it is for and
//! the server's nonce. Written from the RFC, not from the host's code, so a host that signs
//! wrongly is caught.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::signature::{ECDSA_P256_SHA256_FIXED, UnparsedPublicKey};
use serde_json::Value;
use sha2::Digest as _;
use std::time::{SystemTime, UNIX_EPOCH};

/// What a valid proof proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Proven {
    /// The RFC 7638 thumbprint of the proof's key (what `cnf.jkt` binds a token to).
    pub jkt: String,
    pub jti: String,
    pub nonce: Option<String>,
}

fn b64_json(part: &str) -> Result<Value, String> {
    let bytes = URL_SAFE_NO_PAD
        .decode(part)
        .map_err(|e| format!("not base64url: {e}"))?;
    serde_json::from_slice(&bytes).map_err(|e| format!("not JSON: {e}"))
}

/// Checks `proof` for a `method` request to `url` (compared without query and fragment),
/// carrying `access_token` if given. The nonce is returned, not judged.
pub fn verify(
    proof: &str,
    method: &str,
    url: &str,
    access_token: Option<&str>,
) -> Result<Proven, String> {
    let parts: Vec<&str> = proof.split('.').collect();
    let [header, claims, signature] = parts[..] else {
        return Err("not a compact JWT".into());
    };
    let h = b64_json(header)?;
    let c = b64_json(claims)?;
    if h["typ"] != "dpop+jwt" || h["alg"] != "ES256" {
        return Err(format!("typ {} alg {}", h["typ"], h["alg"]));
    }
    let jwk = &h["jwk"];
    if jwk.get("d").is_some() {
        return Err("the jwk holds a private key".into());
    }
    let coordinate = |k: &str| {
        jwk[k]
            .as_str()
            .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
            .filter(|b| b.len() == 32)
            .ok_or_else(|| format!("jwk {k}"))
    };
    if jwk["kty"] != "EC" || jwk["crv"] != "P-256" {
        return Err("not a P-256 jwk".into());
    }
    let point = [vec![4u8], coordinate("x")?, coordinate("y")?].concat();
    let signature = URL_SAFE_NO_PAD
        .decode(signature)
        .map_err(|_| "signature not base64url")?;
    UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, &point)
        .verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| "the signature does not verify")?;
    if c["htm"] != method {
        return Err(format!("htm {} for a {method}", c["htm"]));
    }
    let bare = |u: &str| u.split(['?', '#']).next().unwrap_or_default().to_string();
    let htu = c["htu"].as_str().unwrap_or_default();
    if htu.contains(['?', '#']) || bare(htu) != bare(url) {
        return Err(format!("htu {htu} for {url}"));
    }
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    if c["iat"].as_u64().is_none_or(|iat| now.abs_diff(iat) > 300) {
        return Err("iat outside five minutes".into());
    }
    if let Some(token) = access_token {
        let ath = URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(token.as_bytes()));
        if c["ath"] != ath.as_str() {
            return Err("ath is not the token's hash".into());
        }
    }
    let jti = c["jti"].as_str().ok_or("no jti")?.to_string();
    let canonical = format!(
        r#"{{"crv":"P-256","kty":"EC","x":"{}","y":"{}"}}"#,
        jwk["x"].as_str().unwrap_or_default(),
        jwk["y"].as_str().unwrap_or_default()
    );
    Ok(Proven {
        jkt: URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(canonical.as_bytes())),
        jti,
        nonce: c["nonce"].as_str().map(str::to_string),
    })
}
