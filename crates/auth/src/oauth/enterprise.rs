//! Enterprise-managed authorization (SEP-990, the Identity Assertion Authorization Grant):
//! no person signs in to the MCP server's authorization server. The host holds an ID token
//! from the enterprise's identity provider (an SSO sign-in or a workload identity), trades
//! it at the IdP for an ID-JAG, a short-lived assertion addressed to the authorization
//! server and naming this resource (RFC 8693 token exchange), then presents that to the
//! authorization server in a JWT-bearer grant (RFC 7523), authenticated as its pre-registered
//! client. The IdP decides whether the user may use the server at all; revoking them there
//! cuts access off at the next exchange.

use super::store::CredentialStore;
use super::token::{TokenRequest, listed, save_token};
use super::{IdTokenSource, OAuthError};
use rmcp::transport::auth::{AuthError, AuthorizationMetadata};
use serde_json::Value;

pub(crate) const TOKEN_EXCHANGE: &str = "urn:ietf:params:oauth:grant-type:token-exchange";
pub(crate) const JWT_BEARER: &str = "urn:ietf:params:oauth:grant-type:jwt-bearer";
const ID_TOKEN_TYPE: &str = "urn:ietf:params:oauth:token-type:id_token";
const ID_JAG_TYPE: &str = "urn:ietf:params:oauth:token-type:id-jag";

/// Where the ID token comes from and who the host is to the IdP.
#[derive(Clone)]
pub struct IdentityProvider {
    /// The IdP's token endpoint (the exchange goes there).
    pub token_endpoint: String,
    /// The host's client at the IdP.
    pub client_id: String,
    /// Its secret, for a confidential IdP client (`client_secret_basic`).
    pub client_secret: Option<String>,
    pub id_token: IdTokenSource,
}

impl std::fmt::Debug for IdentityProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProvider")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "REDACTED"),
            )
            .field("id_token", &self.id_token)
            .finish()
    }
}

fn failed(message: String) -> AuthError {
    AuthError::TokenExchangeFailed(message)
}

/// What the exchange needs from the flow.
pub(crate) struct Exchange<'a> {
    pub(crate) http: &'a reqwest::Client,
    pub(crate) resource: &'a str,
    pub(crate) metadata: &'a AuthorizationMetadata,
    /// Where the assertion comes from: an ID-JAG from the identity provider (SEP-990), or
    /// the workload's own JWT (SEP-1933).
    pub(crate) assertion: Assertion<'a>,
    /// The host's pre-registered client at the authorization server.
    pub(crate) client_id: &'a str,
    pub(crate) client_secret: Option<&'a str>,
    pub(crate) scopes: &'a [String],
    pub(crate) store: &'a dyn CredentialStore,
}

/// The JWT a JWT-bearer grant presents.
pub(crate) enum Assertion<'a> {
    IdJag(&'a IdentityProvider),
    Workload(&'a IdTokenSource),
}

impl<'a> Assertion<'a> {
    /// Where `grant` gets its assertion, if it is an assertion grant.
    pub(crate) fn of(grant: &'a super::Grant) -> Option<Self> {
        match grant {
            super::Grant::IdentityAssertion(idp) => Some(Self::IdJag(idp)),
            super::Grant::WorkloadIdentity(source) => Some(Self::Workload(source)),
            _ => None,
        }
    }
}

impl Exchange<'_> {
    /// The JWT-bearer grant (after the exchange at the identity provider, for an ID-JAG);
    /// the access token is saved in the store. A refused grant is not retried, nor another
    /// grant tried: the error says why.
    pub(crate) async fn run(self) -> Result<(), AuthError> {
        if !listed(self.metadata, "grant_types_supported", JWT_BEARER) {
            return Err(failed(
                "the authorization server does not accept JWT-bearer grants".into(),
            ));
        }
        let assertion = match self.assertion {
            Assertion::IdJag(idp) => {
                let issuer = self.metadata.issuer.as_deref().ok_or_else(|| {
                    failed("the authorization server metadata names no issuer".into())
                })?;
                self.id_jag(idp, issuer).await?
            }
            Assertion::Workload(source) => source.read().map_err(AuthError::from)?,
        };
        let mut form = vec![
            ("grant_type", JWT_BEARER.to_string()),
            ("assertion", assertion),
            ("resource", self.resource.to_string()),
        ];
        if !self.scopes.is_empty() {
            form.push(("scope", self.scopes.join(" ")));
        }
        let json = TokenRequest {
            http: self.http,
            resource: self.resource,
            endpoint: &self.metadata.token_endpoint,
            basic: self.client_secret.map(|s| (self.client_id, s)),
            form: if self.client_secret.is_some() {
                form
            } else {
                // A public client names itself in the form.
                [form, vec![("client_id", self.client_id.to_string())]].concat()
            },
            error: failed,
            dpop: None,
        }
        .send()
        .await?;
        save_token(
            self.store,
            self.metadata,
            self.client_id,
            json,
            self.scopes,
            failed,
        )
        .await
    }

    /// The RFC 8693 leg at the IdP: the ID token for an ID-JAG addressed to `audience`.
    async fn id_jag(&self, idp: &IdentityProvider, audience: &str) -> Result<String, AuthError> {
        let id_token = idp.id_token.read().map_err(AuthError::from)?;
        let mut form = vec![
            ("grant_type", TOKEN_EXCHANGE.to_string()),
            ("requested_token_type", ID_JAG_TYPE.to_string()),
            ("audience", audience.to_string()),
            ("resource", self.resource.to_string()),
            ("subject_token", id_token),
            ("subject_token_type", ID_TOKEN_TYPE.to_string()),
        ];
        if !self.scopes.is_empty() {
            form.push(("scope", self.scopes.join(" ")));
        }
        if idp.client_secret.is_none() {
            form.push(("client_id", idp.client_id.clone()));
        }
        let json = TokenRequest {
            http: self.http,
            resource: self.resource,
            endpoint: &idp.token_endpoint,
            basic: (idp.client_secret.as_deref()).map(|s| (idp.client_id.as_str(), s)),
            form,
            error: failed,
            dpop: None,
        }
        .send()
        .await?;
        let issued = json.get("issued_token_type").and_then(Value::as_str);
        if issued != Some(ID_JAG_TYPE) {
            return Err(failed(format!(
                "the identity provider issued {} instead of an ID-JAG",
                issued.unwrap_or("an untyped token")
            )));
        }
        json.get("access_token")
            .and_then(Value::as_str)
            .map(str::to_string)
            .ok_or_else(|| failed("the identity provider's answer holds no token".into()))
    }
}

impl IdTokenSource {
    /// The ID token now: a file is read at every exchange, so a token that its issuer
    /// rotates on disk (a projected workload identity) is always the current one.
    pub(crate) fn read(&self) -> Result<String, OAuthError> {
        match self {
            Self::Value(token) => Ok(token.clone()),
            Self::File(path) => std::fs::read_to_string(path)
                .map(|t| t.trim().to_string())
                .map_err(|e| OAuthError::Config(format!("ID token file {}: {e}", path.display()))),
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::oauth::InMemoryCredentialStore;
    use std::io::{Read, Write};

    /// A token endpoint on 127.0.0.1 that answers every request with `answer` and reports
    /// each request's body.
    fn token_endpoint(answer: Value) -> (String, std::sync::mpsc::Receiver<String>) {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/token", listener.local_addr().unwrap());
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for mut s in listener.incoming().flatten() {
                let mut buf = vec![0; 65536];
                let n = s.read(&mut buf).unwrap();
                let request = String::from_utf8_lossy(&buf[..n]).to_string();
                let body = request.split("\r\n\r\n").nth(1).unwrap_or_default();
                tx.send(body.to_string()).unwrap();
                let answer = answer.to_string();
                let _ = write!(
                    s,
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                );
            }
        });
        (url, rx)
    }

    fn idp(token_endpoint: &str) -> IdentityProvider {
        IdentityProvider {
            token_endpoint: token_endpoint.into(),
            client_id: "host-at-idp".into(),
            client_secret: None,
            id_token: IdTokenSource::Value("the-id-token".into()),
        }
    }

    fn metadata(token_endpoint: &str) -> AuthorizationMetadata {
        let mut m = AuthorizationMetadata::default();
        m.issuer = Some("http://127.0.0.1:9/as".into());
        m.token_endpoint = token_endpoint.into();
        m
    }

    fn test_client() -> reqwest::Client {
        crate::install_crypto_provider();
        reqwest::Client::builder()
            .connect_timeout(std::time::Duration::from_secs(5))
            .build()
            .unwrap()
    }

    async fn run(
        idp: &IdentityProvider,
        metadata: &AuthorizationMetadata,
        resource: &str,
    ) -> Result<(), AuthError> {
        let store = InMemoryCredentialStore::new();
        Exchange {
            http: &test_client(),
            resource,
            metadata,
            assertion: Assertion::IdJag(idp),
            client_id: "host-at-as",
            client_secret: Some("s"),
            scopes: &[],
            store: &store,
        }
        .run()
        .await
    }

    #[tokio::test]
    async fn the_id_token_is_exchanged_for_an_id_jag_addressed_to_the_authorization_server() {
        let (idp_url, idp_seen) = token_endpoint(serde_json::json!({
            "access_token": "not-an-id-jag", "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
            "token_type": "Bearer"}));
        let err = run(
            &idp(&idp_url),
            &metadata("http://127.0.0.1:9/token"),
            "http://127.0.0.1:8/mcp",
        )
        .await
        .unwrap_err();
        // A token of another type is not passed on as an assertion.
        assert!(err.to_string().contains("instead of an ID-JAG"), "{err}");
        let form: std::collections::HashMap<String, String> =
            url::form_urlencoded::parse(idp_seen.recv().unwrap().as_bytes())
                .into_owned()
                .collect();
        assert_eq!(form["grant_type"], TOKEN_EXCHANGE);
        assert_eq!(form["requested_token_type"], ID_JAG_TYPE);
        assert_eq!(form["subject_token_type"], ID_TOKEN_TYPE);
        assert_eq!(form["subject_token"], "the-id-token");
        assert_eq!(form["audience"], "http://127.0.0.1:9/as");
        assert_eq!(form["resource"], "http://127.0.0.1:8/mcp");
        assert_eq!(form["client_id"], "host-at-idp");
    }

    #[tokio::test]
    async fn the_id_token_goes_only_to_an_https_identity_provider() {
        // Plain HTTP off loopback: refused before anything is sent.
        let err = run(
            &idp("http://idp.example/token"),
            &metadata("https://as.example/token"),
            "https://mcp.example/mcp",
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("HTTPS is required"), "{err}");
        // An authorization server that does not take JWT-bearer grants is not tried.
        let mut m = metadata("https://as.example/token");
        m.additional_fields.insert(
            "grant_types_supported".into(),
            serde_json::json!(["authorization_code"]),
        );
        let err = run(
            &idp("https://idp.example/token"),
            &m,
            "https://mcp.example/mcp",
        )
        .await
        .unwrap_err();
        assert!(err.to_string().contains("JWT-bearer"), "{err}");
    }

    #[tokio::test]
    async fn a_workload_presents_its_own_jwt_read_from_its_file_at_every_exchange() {
        let answer =
            serde_json::json!({"access_token": "t", "token_type": "Bearer", "expires_in": 60});
        let (as_url, seen) = token_endpoint(answer);
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("workload.jwt");
        let source = IdTokenSource::File(file.clone());
        let store = InMemoryCredentialStore::new();
        for jwt in ["first.jwt.value", "rotated.jwt.value"] {
            std::fs::write(&file, format!("{jwt}\n")).unwrap();
            Exchange {
                http: &test_client(),
                resource: "http://127.0.0.1:8/mcp",
                metadata: &metadata(&as_url),
                assertion: Assertion::Workload(&source),
                client_id: "workload",
                client_secret: None,
                scopes: &[],
                store: &store,
            }
            .run()
            .await
            .unwrap();
            let form: std::collections::HashMap<String, String> =
                url::form_urlencoded::parse(seen.recv().unwrap().as_bytes())
                    .into_owned()
                    .collect();
            assert_eq!(form["grant_type"], JWT_BEARER);
            assert_eq!(form["assertion"], jwt, "the file as it is now, trimmed");
            assert_eq!(
                form["client_id"], "workload",
                "a public client names itself"
            );
            assert_eq!(form["resource"], "http://127.0.0.1:8/mcp");
        }
        assert!(
            seen.try_recv().is_err(),
            "one request per exchange, nothing at an IdP"
        );
    }
}
