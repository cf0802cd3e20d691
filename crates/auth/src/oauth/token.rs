//! The token-endpoint requests this crate makes itself (rmcp makes the others): the
//! `private_key_jwt` client-credentials exchange, both legs of SEP-990's identity assertion
//! grant, and the code exchange and refresh of a DPoP-bound token. One form POST with a
//! size-capped JSON answer, only over HTTPS (or between loopback addresses), with OAuth
//! error answers turned into messages that name the endpoint's complaint but never echo a
//! token; and the token saved as rmcp saves its own.

use super::dpop::{self, DpopKey, Nonce};
use super::store::{CredentialStore, StoredCredentials};
use rmcp::transport::auth::{AuthError, AuthorizationMetadata, OAuthTokenResponse};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// Largest token response accepted from an authorization server or identity provider.
pub(crate) const MAX_TOKEN_RESPONSE: usize = 1024 * 1024;

/// One POST to a token endpoint.
pub(crate) struct TokenRequest<'a> {
    pub(crate) http: &'a reqwest::Client,
    /// Any server URL the request is made on behalf of: the loopback exemption from HTTPS
    /// holds only when that server is on loopback too.
    pub(crate) resource: &'a str,
    pub(crate) endpoint: &'a str,
    /// `client_secret_basic` credentials, if the client authenticates that way.
    pub(crate) basic: Option<(&'a str, &'a str)>,
    pub(crate) form: Vec<(&'static str, String)>,
    /// Turns a message into the caller's error kind.
    pub(crate) error: fn(String) -> AuthError,
    /// The proof key and the authorization server's nonce, when the token is to be bound.
    pub(crate) dpop: Option<(&'a DpopKey, &'a Nonce)>,
}

impl TokenRequest<'_> {
    /// Sends the form; the JSON answer of a 2xx, else an error with the endpoint's `error`
    /// and `error_description`. With a proof key, every attempt carries a fresh proof, and
    /// one `use_dpop_nonce` refusal is answered by sending again with the server's nonce.
    pub(crate) async fn send(self) -> Result<Value, AuthError> {
        let fail = self.error;
        let url = reqwest::Url::parse(self.endpoint)?;
        if !secure_token_endpoint(self.resource, &url) {
            return Err(fail(format!(
                "refusing to send credentials to {url}: HTTPS is required"
            )));
        }
        let mut nonce_retried = false;
        loop {
            let (status, headers, json) = self.attempt(&url).await?;
            if let Some((_, nonces)) = self.dpop {
                let fresh = nonces.take_from(&headers);
                let field = json
                    .get("error")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                if status == reqwest::StatusCode::BAD_REQUEST
                    && dpop::wants_nonce(field)
                    && fresh
                    && !nonce_retried
                {
                    nonce_retried = true;
                    continue;
                }
            }
            if !status.is_success() {
                let field = |k: &str| json.get(k).and_then(Value::as_str).unwrap_or_default();
                return Err(fail(
                    format!(
                        "{status}: {} {}",
                        field("error"),
                        field("error_description")
                    )
                    .trim_end()
                    .to_string(),
                ));
            }
            return Ok(json);
        }
    }

    /// One POST of the form: the answer's status, headers and JSON body.
    async fn attempt(
        &self,
        url: &reqwest::Url,
    ) -> Result<(reqwest::StatusCode, reqwest::header::HeaderMap, Value), AuthError> {
        let fail = self.error;
        let body = {
            let mut form = url::form_urlencoded::Serializer::new(String::new());
            for (k, v) in &self.form {
                form.append_pair(k, v);
            }
            form.finish()
        };
        let mut request = self
            .http
            .post(url.clone())
            .header(
                reqwest::header::CONTENT_TYPE,
                "application/x-www-form-urlencoded",
            )
            .header(reqwest::header::ACCEPT, "application/json")
            .body(body);
        if let Some((id, secret)) = self.basic {
            // RFC 6749 §2.3.1: both parts form-urlencoded before base64.
            let enc =
                |s: &str| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
            request = request.basic_auth(enc(id), Some(enc(secret)));
        }
        if let Some((key, nonces)) = self.dpop {
            let proof = key
                .proof("POST", url.as_str(), None, nonces.get().as_deref())
                .map_err(AuthError::from)?;
            request = request.header("DPoP", proof);
        }
        let response = request.send().await?;
        let status = response.status();
        let headers = response.headers().clone();
        let Some(body) = crate::capped::read_capped(response, MAX_TOKEN_RESPONSE).await? else {
            return Err(fail("token response too large".into()));
        };
        let json: Value = serde_json::from_slice(&body)
            .map_err(|e| fail(format!("token response is not JSON ({status}): {e}")))?;
        Ok((status, headers, json))
    }
}

/// Saves the access-token answer of a machine grant for `client_id` as rmcp saves its own,
/// so rmcp uses it. Scopes: the answer's, else those asked.
///
/// A refresh token in the answer is dropped: rmcp would refresh with only the client id (it
/// does not hold the secret or the signing key of these grants), be refused, and fail every
/// call until a restart; without one, an expired token ends in a new exchange.
pub(crate) async fn save_token(
    store: &dyn CredentialStore,
    metadata: &AuthorizationMetadata,
    client_id: &str,
    mut json: Value,
    asked: &[String],
    error: fn(String) -> AuthError,
) -> Result<(), AuthError> {
    if let Some(answer) = json.as_object_mut() {
        answer.remove("refresh_token");
    }
    let granted = match json.get("scope").and_then(Value::as_str) {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => asked.to_vec(),
    };
    // No serde detail in the message: it could quote a token.
    let token: OAuthTokenResponse = serde_json::from_value(json)
        .map_err(|_| error("the token response is not a usable access token".into()))?;
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default();
    let stored = StoredCredentials::new(client_id.to_string(), Some(token), granted, Some(now))
        .with_issuer(metadata.issuer.clone());
    store.save(stored).await
}

/// Credentials go only over HTTPS, or over plain HTTP between loopback addresses.
pub(crate) fn secure_token_endpoint(resource: &str, token_url: &reqwest::Url) -> bool {
    let loopback = |u: &reqwest::Url| match u.host() {
        Some(url::Host::Domain(d)) => d.eq_ignore_ascii_case("localhost"),
        Some(url::Host::Ipv4(a)) => a.is_loopback(),
        Some(url::Host::Ipv6(a)) => a.is_loopback(),
        None => false,
    };
    token_url.scheme() == "https"
        || (token_url.scheme() == "http"
            && loopback(token_url)
            && reqwest::Url::parse(resource).is_ok_and(|r| loopback(&r)))
}

/// Whether the metadata's list `field` allows `value` (an absent list allows anything).
pub(crate) fn listed(metadata: &AuthorizationMetadata, field: &str, value: &str) -> bool {
    metadata
        .additional_fields
        .get(field)
        .and_then(Value::as_array)
        .is_none_or(|a| a.iter().any(|v| v.as_str() == Some(value)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_need_tls_off_loopback() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(secure_token_endpoint(
            "http://localhost:1/mcp",
            &u("http://127.0.0.1:2/token")
        ));
        assert!(!secure_token_endpoint(
            "https://x.example/mcp",
            &u("http://127.0.0.1/token")
        ));
        assert!(!secure_token_endpoint(
            "http://localhost/mcp",
            &u("http://as.example/token")
        ));
        assert!(secure_token_endpoint(
            "https://x.example/mcp",
            &u("https://as.example/token")
        ));
    }
}
