//! DPoP-bound tokens at the token endpoint and on the way to the server: the code exchange
//! with a proof (rmcp's exchange cannot carry one), the refresh of a bound token with a
//! proof of the same key, and which way the next request presents its credential.
//!
//! rmcp still runs everything around the exchange (discovery, registration, the PKCE
//! challenge and the authorization URL, the state and its RFC 9207 issuer binding): this
//! module reads the state rmcp saved for the round, checks the callback's issuer by the
//! same rule, and redeems the code itself.

use super::dpop::{self, Bound, DpopKey};
use super::flow::Shared;
use super::persist::due_for_refresh;
use super::store::{CredentialStore, StoredCredentials};
use super::token::TokenRequest;
use super::{AuthorizationResponse, OAuthError};
use rmcp::transport::auth::{
    AuthError, AuthorizationMetadata, OAuthTokenResponse, StateStore, StoredAuthorizationState,
};
use serde_json::Value;
use std::time::{SystemTime, UNIX_EPOCH};

/// How the next request carries its credential.
pub(crate) enum Presentation {
    /// rmcp attaches a Bearer token (or none) and refreshes it.
    Bearer,
    /// `Authorization: DPoP` with a fresh proof.
    Bound(Box<Bound>),
    /// Nothing: the stored token cannot be presented, so the server's 401 starts a round.
    Anonymous,
}

fn now_epoch_secs() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or_default()
}

fn field<'a>(json: &'a Value, name: &str) -> Option<&'a str> {
    json.get(name).and_then(Value::as_str)
}

/// The scopes a token answer grants: its `scope`, else what was asked (RFC 6749 §5.1).
fn granted(json: &Value, asked: &[String]) -> Vec<String> {
    match field(json, "scope") {
        Some(s) => s.split_whitespace().map(str::to_string).collect(),
        None => asked.to_vec(),
    }
}

/// RFC 9207 as rmcp applies it: a callback must name the issuer the round was started with
/// when one was recorded, and must name one at all when the server said it would.
fn check_issuer(state: &StoredAuthorizationState, received: Option<&str>) -> Result<(), AuthError> {
    match (state.expected_issuer.as_deref(), received) {
        (None, None) if !state.require_issuer => Ok(()),
        (None, _) => Err(AuthError::AuthorizationFailed(
            "the callback's issuer cannot be checked: no issuer was recorded for the round".into(),
        )),
        (Some(expected), None) if state.require_issuer => {
            Err(AuthError::AuthorizationServerMissingIssuer {
                expected_issuer: expected.to_string(),
            })
        }
        (Some(_), None) => Ok(()),
        (Some(expected), Some(got)) if got != expected => {
            Err(AuthError::AuthorizationServerMismatch {
                expected_issuer: expected.to_string(),
                received_issuer: got.to_string(),
            })
        }
        (Some(_), Some(_)) => Ok(()),
    }
}

/// A query parameter of the authorization URL rmcp built (the client id, redirect URI and
/// resource it named are the ones the exchange must repeat).
fn query_param(url: &reqwest::Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}

impl Shared {
    /// Redeems the code of a round rmcp started (its authorization URL `auth_url`) for a
    /// token bound to a new proof key, and saves it with the key.
    pub(crate) async fn redeem_bound(
        &self,
        metadata: &AuthorizationMetadata,
        auth_url: &str,
        response: AuthorizationResponse,
        client_secret: Option<&str>,
    ) -> Result<(), AuthError> {
        let state =
            self.states.load(&response.state).await?.ok_or_else(|| {
                AuthError::AuthorizationFailed("unknown authorization state".into())
            })?;
        check_issuer(&state, response.iss.as_deref())?;
        // Consumed only once the callback is bound to the issuer (as rmcp does): a forged
        // callback must not spend the legitimate one's verifier.
        self.states.delete(&response.state).await?;
        let url = reqwest::Url::parse(auth_url)?;
        let param = |name| {
            query_param(&url, name).ok_or_else(|| {
                AuthError::InternalError(format!("the authorization URL has no {name}"))
            })
        };
        let client_id = param("client_id")?;
        let key = DpopKey::generate().map_err(AuthError::from)?;
        let mut form = vec![
            ("grant_type", "authorization_code".to_string()),
            ("code", response.code),
            ("redirect_uri", param("redirect_uri")?),
            ("code_verifier", state.pkce_verifier),
            ("resource", param("resource")?),
        ];
        let json = self
            .token_request(metadata, &client_id, client_secret, &key, &mut form)
            .send()
            .await?;
        let granted = granted(&json, &state.requested_scopes);
        self.save_bound(metadata, &client_id, json, &key, granted)
            .await
            .map(drop)
    }

    /// A token request from this client, authenticated as rmcp would (`client_secret_post`
    /// only when the server takes post and not basic), with a proof of `key`.
    fn token_request<'a>(
        &'a self,
        metadata: &'a AuthorizationMetadata,
        client_id: &'a str,
        client_secret: Option<&'a str>,
        key: &'a DpopKey,
        form: &mut Vec<(&'static str, String)>,
    ) -> TokenRequest<'a> {
        let methods = |m: &str| {
            metadata
                .additional_fields
                .get("token_endpoint_auth_methods_supported")
                .and_then(Value::as_array)
                .is_some_and(|a| a.iter().any(|v| v.as_str() == Some(m)))
        };
        let post = methods("client_secret_post") && !methods("client_secret_basic");
        let basic = match client_secret {
            Some(secret) if !post => Some((client_id, secret)),
            Some(secret) => {
                form.push(("client_id", client_id.to_string()));
                form.push(("client_secret", secret.to_string()));
                None
            }
            None => {
                form.push(("client_id", client_id.to_string()));
                None
            }
        };
        TokenRequest {
            http: &self.token_http,
            resource: &self.resource,
            endpoint: &metadata.token_endpoint,
            basic,
            form: std::mem::take(form),
            error: AuthError::TokenExchangeFailed,
            dpop: Some((key, &self.as_nonce)),
        }
    }

    /// Saves a token answer with its key, and returns the token as saved. The refresh token
    /// is kept: this crate refreshes a bound token itself, with the key.
    async fn save_bound(
        &self,
        metadata: &AuthorizationMetadata,
        client_id: &str,
        json: Value,
        key: &DpopKey,
        granted: Vec<String>,
    ) -> Result<OAuthTokenResponse, AuthError> {
        let json = dpop::keep_key(json, key);
        // No serde detail in the message: it could quote a token.
        let token: OAuthTokenResponse = serde_json::from_value(json).map_err(|_| {
            AuthError::TokenExchangeFailed("the token response is not a usable access token".into())
        })?;
        let stored = StoredCredentials::new(
            client_id.to_string(),
            Some(token.clone()),
            granted,
            Some(now_epoch_secs()),
        )
        .with_issuer(metadata.issuer.clone());
        self.store.save(stored).await?;
        Ok(token)
    }

    /// How the next request presents the stored credential; a bound token about to expire
    /// is refreshed first (a refresh that fails leaves the request without a token, so the
    /// server's 401 starts a new round).
    pub(crate) async fn presentation(&self) -> Result<Presentation, AuthError> {
        let Some(stored) = self.store.load().await? else {
            return Ok(Presentation::Bearer);
        };
        let Some(token) = &stored.token_response else {
            return Ok(Presentation::Bearer);
        };
        let bound = match dpop::bound(token) {
            Ok(None) => return Ok(Presentation::Bearer),
            Ok(Some(bound)) => bound,
            Err(e) => {
                tracing::warn!(server = %self.server_url, error = %e, "stored DPoP token unusable");
                return Ok(Presentation::Anonymous);
            }
        };
        if !due_for_refresh(&stored) {
            return Ok(Presentation::Bound(Box::new(bound)));
        }
        match self.refresh_bound(bound.key).await {
            Ok(fresh) => Ok(Presentation::Bound(Box::new(fresh))),
            Err(e) => {
                tracing::warn!(server = %self.server_url, error = %e, "DPoP token refresh failed");
                Ok(Presentation::Anonymous)
            }
        }
    }

    /// Refreshes a bound token with a proof of its key, under the store's refresh guard
    /// (another process may have refreshed meanwhile: then its token is used).
    async fn refresh_bound(&self, key: DpopKey) -> Result<Bound, OAuthError> {
        let _one_at_a_time = self.refreshing.lock().await;
        let guard = self.store.acquire_refresh_guard().await;
        let stored = self
            .store
            .load()
            .await
            .ok()
            .flatten()
            .ok_or_else(|| OAuthError::Token("the credential is gone".into()))?;
        let token = stored
            .token_response
            .as_ref()
            .ok_or_else(|| OAuthError::Token("the credential has no token".into()))?;
        if !due_for_refresh(&stored) {
            return dpop::bound(token)?.ok_or_else(|| OAuthError::Token("no longer bound".into()));
        }
        let json = serde_json::to_value(token).map_err(|e| OAuthError::Token(e.to_string()))?;
        let refresh = field(&json, "refresh_token")
            .ok_or_else(|| OAuthError::Token("no refresh token".into()))?
            .to_string();
        let metadata = self
            .known_metadata()
            .await
            .map_err(|e| OAuthError::from(&e))?;
        let mut form = vec![
            ("grant_type", "refresh_token".to_string()),
            ("refresh_token", refresh.clone()),
            ("resource", self.resource.clone()),
        ];
        let secret = self.settings_secret_for(&stored.client_id);
        let answer = self
            .token_request(&metadata, &stored.client_id, secret, &key, &mut form)
            .send()
            .await
            .map_err(|e| OAuthError::from(&e))?;
        let mut answer = answer;
        // RFC 6749 §6: a refresh may keep the refresh token.
        if field(&answer, "refresh_token").is_none()
            && let Some(fields) = answer.as_object_mut()
        {
            fields.insert("refresh_token".into(), refresh.into());
        }
        let granted = granted(&answer, &stored.granted_scopes);
        let token = self
            .save_bound(&metadata, &stored.client_id, answer, &key, granted)
            .await
            .map_err(|e| OAuthError::from(&e))?;
        drop(guard);
        // A server that answers a proof with a Bearer token unbinds it: signed in again.
        dpop::bound(&token)?
            .ok_or_else(|| OAuthError::Token("the refreshed token is not bound".into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(expected: Option<&str>, require: bool) -> StoredAuthorizationState {
        let mut s: StoredAuthorizationState = serde_json::from_value(serde_json::json!({
            "pkce_verifier": "v", "csrf_token": "c", "created_at": 0,
        }))
        .unwrap();
        s.expected_issuer = expected.map(str::to_string);
        s.require_issuer = require;
        s
    }

    #[test]
    fn the_callbacks_issuer_is_checked_as_rmcp_checks_it() {
        assert!(check_issuer(&state(None, false), None).is_ok());
        assert!(check_issuer(&state(None, false), Some("x")).is_err());
        assert!(check_issuer(&state(Some("https://as"), false), None).is_ok());
        assert!(check_issuer(&state(Some("https://as"), true), None).is_err());
        assert!(check_issuer(&state(Some("https://as"), true), Some("https://as")).is_ok());
        assert!(check_issuer(&state(Some("https://as"), false), Some("https://evil")).is_err());
    }
}
