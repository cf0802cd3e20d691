//! `private_key_jwt` client assertions (RFC 7523, SEP-1046), signed with ring. rmcp's own
//! implementation sits behind a feature that pulls in aws-lc, which this project avoids.

use super::{JwtAlgorithm, OAuthError};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use ring::rand::SystemRandom;
use ring::signature::{
    ECDSA_P256_SHA256_FIXED_SIGNING, ECDSA_P384_SHA384_FIXED_SIGNING, EcdsaKeyPair,
    RSA_PKCS1_SHA256, RsaKeyPair,
};
use serde_json::json;
use std::time::{SystemTime, UNIX_EPOCH};

/// How long an assertion is valid.
const LIFETIME_SECS: u64 = 300;

/// A signed assertion naming `client_id` as issuer and subject, for the token endpoint of
/// the authorization server `audience` (its issuer identifier).
pub(crate) fn client_assertion(
    client_id: &str,
    audience: &str,
    private_key_pem: &str,
    algorithm: JwtAlgorithm,
) -> Result<String, OAuthError> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let header = json!({"alg": algorithm.as_str(), "typ": "client-authentication+jwt"});
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": audience,
        "iat": now,
        "exp": now + LIFETIME_SECS,
        "jti": format!("{:032x}", rand::random::<u128>()),
    });
    let signing_input = format!(
        "{}.{}",
        URL_SAFE_NO_PAD.encode(header.to_string()),
        URL_SAFE_NO_PAD.encode(claims.to_string())
    );
    let der = pkcs8_der(private_key_pem)?;
    let signature = sign(&der, algorithm, signing_input.as_bytes())?;
    Ok(format!(
        "{signing_input}.{}",
        URL_SAFE_NO_PAD.encode(signature)
    ))
}

fn sign(der: &[u8], algorithm: JwtAlgorithm, message: &[u8]) -> Result<Vec<u8>, OAuthError> {
    let rng = SystemRandom::new();
    let bad_key = |e: ring::error::KeyRejected| {
        OAuthError::Config(format!(
            "the private key does not fit {}: {e}",
            algorithm.as_str()
        ))
    };
    let failed = |_| OAuthError::Other("signing the client assertion failed".into());
    match algorithm {
        JwtAlgorithm::Es256 | JwtAlgorithm::Es384 => {
            let alg = if algorithm == JwtAlgorithm::Es256 {
                &ECDSA_P256_SHA256_FIXED_SIGNING
            } else {
                &ECDSA_P384_SHA384_FIXED_SIGNING
            };
            let key = EcdsaKeyPair::from_pkcs8(alg, der, &rng).map_err(bad_key)?;
            Ok(key.sign(&rng, message).map_err(failed)?.as_ref().to_vec())
        }
        JwtAlgorithm::Rs256 => {
            let key = RsaKeyPair::from_pkcs8(der).map_err(bad_key)?;
            let mut out = vec![0; key.public().modulus_len()];
            key.sign(&RSA_PKCS1_SHA256, &rng, message, &mut out)
                .map_err(failed)?;
            Ok(out)
        }
    }
}

/// The DER inside a PKCS#8 PEM block (`BEGIN PRIVATE KEY`).
fn pkcs8_der(pem: &str) -> Result<Vec<u8>, OAuthError> {
    const BEGIN: &str = "-----BEGIN PRIVATE KEY-----";
    const END: &str = "-----END PRIVATE KEY-----";
    let body = pem
        .split_once(BEGIN)
        .and_then(|(_, rest)| rest.split_once(END))
        .map(|(body, _)| body)
        .ok_or_else(|| {
            OAuthError::Config("the private key is not a PKCS#8 PEM (BEGIN PRIVATE KEY)".into())
        })?;
    let compact: String = body.chars().filter(|c| !c.is_whitespace()).collect();
    STANDARD
        .decode(compact)
        .map_err(|e| OAuthError::Config(format!("the private key PEM is not base64: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ring::signature::{ECDSA_P256_SHA256_FIXED, KeyPair, UnparsedPublicKey};

    #[test]
    fn es256_assertion_verifies() {
        let rng = SystemRandom::new();
        let doc = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &rng).unwrap();
        let pem = format!(
            "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
            STANDARD.encode(doc.as_ref())
        );
        let jwt = client_assertion("me", "http://as", &pem, JwtAlgorithm::Es256).unwrap();
        let parts: Vec<&str> = jwt.split('.').collect();
        assert_eq!(parts.len(), 3);
        let claims: serde_json::Value =
            serde_json::from_slice(&URL_SAFE_NO_PAD.decode(parts[1]).unwrap()).unwrap();
        assert_eq!(claims["iss"], "me");
        assert_eq!(claims["sub"], "me");
        assert_eq!(claims["aud"], "http://as");
        let key =
            EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, doc.as_ref(), &rng).unwrap();
        let public = UnparsedPublicKey::new(&ECDSA_P256_SHA256_FIXED, key.public_key().as_ref());
        let signed = format!("{}.{}", parts[0], parts[1]);
        public
            .verify(
                signed.as_bytes(),
                &URL_SAFE_NO_PAD.decode(parts[2]).unwrap(),
            )
            .unwrap();
    }

    #[test]
    fn a_non_pkcs8_key_is_refused() {
        let err = client_assertion("me", "a", "junk", JwtAlgorithm::Es256).unwrap_err();
        assert!(matches!(err, OAuthError::Config(_)));
    }
}
