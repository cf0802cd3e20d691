//! OAuth 2.1 for remote (Streamable HTTP) servers, on rmcp's implementation. This module owns
//! the public face of it: what a caller configures ([`AuthSettings`], [`Grant`]), how a
//! person (or a headless stand-in) approves an authorization request ([`Authorizer`]), the
//! typed failures ([`OAuthError`]), and the per-server handle ([`OAuth`]) that an
//! `mcp_host_client::Endpoint::Http` carries.
//!
//! Authorization is reactive: requests go out without a token until the server answers 401;
//! then discovery, registration, the authorization round and the token exchange run inside
//! the transport and the request is retried. A 403 `insufficient_scope` steps the grant up.
//! At most [`MAX_AUTHORIZATION_ROUNDS`] authorization rounds are spent on any one request.

mod bound;
mod client;
mod dpop;
mod enterprise;
mod flow;
mod jwt;
mod persist;
mod redirect;
pub mod store;
mod token;
mod unattended;

pub use client::AuthorizingClient;
pub use enterprise::IdentityProvider;
pub use persist::{DEFAULT_LOCK_WAIT, ISSUER_IN_FILE, VaultCredentialStore, canonical_resource};
pub use redirect::RedirectListener;
pub use store::{CredentialStore, FreshSignIn, InMemoryCredentialStore, StoredCredentials};
pub use unattended::Person;

use futures::future::BoxFuture;
use rmcp::transport::auth::{AuthError, ProtectedResourceMetadataInvalidReason};
use rmcp::transport::streamable_http_client::InsufficientScopeError;
use std::sync::Arc;

/// How many authorization rounds (a person approving, or a client-credentials exchange) one
/// request may cause before its 401/403 is handed back to the caller.
pub const MAX_AUTHORIZATION_ROUNDS: u32 = 3;

/// Who this client is to an authorization server, and how it gets a grant.
#[derive(Clone)]
pub struct AuthSettings {
    /// A client id issued out of band (pre-registration). It takes priority over a Client ID
    /// Metadata Document and over dynamic registration; the client-credentials grants need it.
    pub client_id: Option<String>,
    /// The secret paired with `client_id`, for a confidential client.
    pub client_secret: Option<String>,
    /// HTTPS URL of this client's metadata document (SEP-991), used as the client id when the
    /// authorization server advertises `client_id_metadata_document_supported`.
    pub client_metadata_url: Option<String>,
    /// Name sent with dynamic client registration.
    pub client_name: String,
    /// Where the authorization server sends the person back (authorization-code grant).
    pub redirect_uri: String,
    /// Scopes to request instead of the discovered ones (challenge `scope`, else the
    /// resource's `scopes_supported`, else none).
    pub scopes: Option<Vec<String>>,
    /// Let discovered metadata point at private network addresses (a corporate SSO at
    /// `10.x`). Loopback is allowed only for a loopback server either way.
    pub allow_private_addresses: bool,
    pub grant: Grant,
}

impl AuthSettings {
    /// Settings for a client with no pre-registered identity: dynamic registration (or a
    /// metadata document once `client_metadata_url` is set).
    pub fn new(redirect_uri: impl Into<String>, grant: Grant) -> Self {
        Self {
            client_id: None,
            client_secret: None,
            client_metadata_url: None,
            client_name: "mcp-host".into(),
            redirect_uri: redirect_uri.into(),
            scopes: None,
            allow_private_addresses: false,
            grant,
        }
    }
}

impl AuthSettings {
    /// The same settings with a server's `oauth` block from the config applied: its
    /// pre-registered client, metadata document and scopes, and a machine grant
    /// (`client_credentials`, SEP-990 identity assertion) in place of the caller's. A private
    /// key is read here, so a missing or unreadable key file is an error naming it.
    pub fn configured(
        mut self,
        config: Option<&mcp_host_config::OAuthConfig>,
    ) -> Result<Self, OAuthError> {
        let Some(o) = config else {
            return Ok(self);
        };
        self.client_id.clone_from(&o.client_id);
        self.client_secret.clone_from(&o.client_secret);
        self.client_metadata_url.clone_from(&o.client_metadata_url);
        if !o.scopes.is_empty() {
            self.scopes = Some(o.scopes.clone());
        }
        use mcp_host_config::{IdToken, OAuthGrant};
        match &o.grant {
            // The caller's grant: a person's sign-in.
            OAuthGrant::AuthorizationCode => {}
            OAuthGrant::ClientSecret => self.grant = Grant::ClientSecret,
            OAuthGrant::PrivateKeyJwt {
                key_file,
                algorithm,
            } => {
                self.grant = Grant::PrivateKeyJwt {
                    private_key_pem: std::fs::read_to_string(key_file).map_err(|e| {
                        OAuthError::Config(format!("private key file {}: {e}", key_file.display()))
                    })?,
                    algorithm: algorithm.parse()?,
                }
            }
            OAuthGrant::IdentityAssertion(idp) => {
                self.grant = Grant::IdentityAssertion(IdentityProvider {
                    token_endpoint: idp.token_endpoint.clone(),
                    client_id: idp.client_id.clone(),
                    client_secret: idp.client_secret.clone(),
                    id_token: match &idp.id_token {
                        IdToken::Value(t) => IdTokenSource::Value(t.clone()),
                        IdToken::File(f) => IdTokenSource::File(f.clone()),
                    },
                })
            }
            OAuthGrant::WorkloadIdentity { assertion_file } => {
                self.grant = Grant::WorkloadIdentity(IdTokenSource::File(assertion_file.clone()));
            }
        }
        Ok(self)
    }
}

impl AuthSettings {
    /// A pre-registered client without a secret in the config takes the one kept in the
    /// credential store (`mcp-host auth set-secret`), if it is for the same client.
    pub async fn with_stored_secret(
        mut self,
        store: &VaultCredentialStore,
    ) -> Result<Self, OAuthError> {
        if self.client_secret.is_none()
            && let Some(id) = &self.client_id
        {
            self.client_secret = store.stored_client_secret_for(id).await?;
        }
        Ok(self)
    }
}

impl std::fmt::Debug for AuthSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthSettings")
            .field("client_id", &self.client_id)
            .field(
                "client_secret",
                &self.client_secret.as_ref().map(|_| "REDACTED"),
            )
            .field("client_metadata_url", &self.client_metadata_url)
            .field("redirect_uri", &self.redirect_uri)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .finish_non_exhaustive()
    }
}

/// How the client obtains tokens.
#[derive(Clone)]
pub enum Grant {
    /// Authorization code with PKCE: the [`Authorizer`] gets the person's approval.
    AuthorizationCode(Arc<dyn Authorizer>),
    /// `client_credentials` authenticated with `client_id` and `client_secret`
    /// (`client_secret_basic` or `client_secret_post`, whichever the server supports).
    ClientSecret,
    /// `client_credentials` authenticated with an RFC 7523 assertion signed by this key
    /// (`private_key_jwt`); the key is PKCS#8 PEM.
    PrivateKeyJwt {
        private_key_pem: String,
        algorithm: JwtAlgorithm,
    },
    /// Enterprise-managed (SEP-990): an ID token from the identity provider, exchanged there
    /// for an ID-JAG, presented in a JWT-bearer grant as `client_id`/`client_secret`.
    IdentityAssertion(IdentityProvider),
    /// Workload identity (SEP-1933): the workload's own JWT, presented in a JWT-bearer grant
    /// (RFC 7523 §2.1) as `client_id`, with no exchange first.
    WorkloadIdentity(IdTokenSource),
}

/// Where an ID token for [`Grant::IdentityAssertion`] comes from.
#[derive(Clone)]
pub enum IdTokenSource {
    Value(String),
    /// Read at every exchange (a token its issuer keeps fresh on disk).
    File(std::path::PathBuf),
}

impl std::fmt::Debug for IdTokenSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Value(REDACTED)"),
            Self::File(path) => write!(f, "File({})", path.display()),
        }
    }
}

impl std::fmt::Debug for Grant {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::AuthorizationCode(_) => f.write_str("AuthorizationCode"),
            Self::ClientSecret => f.write_str("ClientSecret"),
            Self::PrivateKeyJwt { algorithm, .. } => write!(f, "PrivateKeyJwt({algorithm:?})"),
            Self::IdentityAssertion(idp) => write!(f, "IdentityAssertion({idp:?})"),
            Self::WorkloadIdentity(source) => write!(f, "WorkloadIdentity({source:?})"),
        }
    }
}

/// Signing algorithms for `private_key_jwt`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JwtAlgorithm {
    Es256,
    Es384,
    Rs256,
}

impl JwtAlgorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Es256 => "ES256",
            Self::Es384 => "ES384",
            Self::Rs256 => "RS256",
        }
    }
}

impl std::str::FromStr for JwtAlgorithm {
    type Err = OAuthError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "ES256" => Ok(Self::Es256),
            "ES384" => Ok(Self::Es384),
            "RS256" => Ok(Self::Rs256),
            other => Err(OAuthError::Config(format!(
                "unsupported JWT signing algorithm {other:?} (supported: ES256, ES384, RS256)"
            ))),
        }
    }
}

/// Gets a person's approval for an authorization request: open `url` (a browser, a device
/// prompt, or a headless fetch in tests) and return what the authorization server sent to
/// the redirect URI.
pub trait Authorizer: Send + Sync {
    fn authorize<'a>(
        &'a self,
        url: &'a str,
    ) -> BoxFuture<'a, Result<AuthorizationResponse, OAuthError>>;

    /// Why nobody can approve anything now (a background connection), if so. A round then
    /// stops before it registers a client or builds a request: nothing is done at the
    /// authorization server that a person would not see through.
    fn unavailable(&self) -> Option<String> {
        None
    }

    /// Why nobody can approve a step-up to `scopes` now, saying how to do it later.
    fn step_up_unavailable(&self, _scopes: &str) -> Option<String> {
        self.unavailable()
    }

    /// Whether the person wants a round that the host, not they, started (a sign-in that
    /// stopped working, more scope, a server that moved to another authorization server),
    /// asked with `reason` before anything is registered or opened. A person who ran
    /// `mcp-host auth login` asked already: yes by default.
    fn consent<'a>(&'a self, _reason: &'a str) -> BoxFuture<'a, Result<(), OAuthError>> {
        Box::pin(async { Ok(()) })
    }
}

/// What arrives at the redirect URI after an approval.
#[derive(Clone, PartialEq, Eq)]
pub struct AuthorizationResponse {
    pub code: String,
    pub state: String,
    /// RFC 9207 issuer, compared with the authorization server's before the code is redeemed.
    pub iss: Option<String>,
}

impl std::fmt::Debug for AuthorizationResponse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AuthorizationResponse")
            .field("code", &"REDACTED")
            .field("iss", &self.iss)
            .finish_non_exhaustive()
    }
}

impl AuthorizationResponse {
    /// Reads `code`, `state` and `iss` from the URL the authorization server redirected to.
    /// An `error` there (the person declined) becomes [`OAuthError::Authorization`].
    pub fn from_redirect(location: &str) -> Result<Self, OAuthError> {
        let url = reqwest::Url::parse(location)
            .map_err(|e| OAuthError::Authorization(format!("bad redirect URL: {e}")))?;
        let param = |name: &str| {
            url.query_pairs()
                .find(|(k, _)| k == name)
                .map(|(_, v)| v.into_owned())
        };
        if let Some(error) = param("error") {
            let detail = param("error_description").unwrap_or_default();
            return Err(OAuthError::Authorization(
                format!("the authorization server answered {error} {detail}")
                    .trim_end()
                    .to_string(),
            ));
        }
        let (Some(code), Some(state)) = (param("code"), param("state")) else {
            return Err(OAuthError::Authorization(
                "the redirect carries no code and state".into(),
            ));
        };
        Ok(Self {
            code,
            state,
            iss: param("iss"),
        })
    }
}

/// Why authorization did not happen.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum OAuthError {
    #[error("OAuth settings: {0}")]
    Config(String),
    #[error("OAuth discovery failed: {0}")]
    Discovery(String),
    /// The protected resource metadata describes another resource (RFC 9728 §3.3).
    #[error("refusing to authorize: {0}")]
    ResourceMismatch(String),
    #[error("client registration failed: {0}")]
    Registration(String),
    #[error("authorization was not granted: {0}")]
    Authorization(String),
    #[error("token request failed: {0}")]
    Token(String),
    /// The server keeps asking for a scope the grant cannot provide.
    #[error("the server requires more scope than was granted: {0}")]
    InsufficientScope(String),
    #[error("credential store: {0}")]
    Store(String),
    #[error("OAuth request failed: {0}")]
    Network(String),
    #[error("OAuth: {0}")]
    Other(String),
}

impl OAuthError {
    /// The same failure with its text passed through `f` (to hide secrets in URLs).
    pub fn map_text(self, f: impl FnOnce(&str) -> String) -> Self {
        match self {
            Self::Config(t) => Self::Config(f(&t)),
            Self::Discovery(t) => Self::Discovery(f(&t)),
            Self::ResourceMismatch(t) => Self::ResourceMismatch(f(&t)),
            Self::Registration(t) => Self::Registration(f(&t)),
            Self::Authorization(t) => Self::Authorization(f(&t)),
            Self::Token(t) => Self::Token(f(&t)),
            Self::InsufficientScope(t) => Self::InsufficientScope(f(&t)),
            Self::Store(t) => Self::Store(f(&t)),
            Self::Network(t) => Self::Network(f(&t)),
            Self::Other(t) => Self::Other(f(&t)),
        }
    }
}

impl From<&AuthError> for OAuthError {
    fn from(e: &AuthError) -> Self {
        let text = e.to_string();
        match e {
            AuthError::ProtectedResourceMetadataInvalid { reason, .. }
                if matches!(
                    **reason,
                    ProtectedResourceMetadataInvalidReason::ResourceMismatch { .. }
                ) =>
            {
                Self::ResourceMismatch(text)
            }
            AuthError::ProtectedResourceMetadataInvalid { .. }
            | AuthError::DiscoveryRequestFailed { .. }
            | AuthError::AuthorizationServersUnavailable { .. }
            | AuthError::MetadataError(_)
            | AuthError::NoAuthorizationSupport
            | AuthError::PkceUnsupported
            | AuthError::AuthorizationServerMismatch { .. }
            | AuthError::AuthorizationServerMissingIssuer { .. }
            | AuthError::UrlError(_) => Self::Discovery(text),
            AuthError::RegistrationFailed(_) => Self::Registration(text),
            AuthError::AuthorizationRequired | AuthError::AuthorizationFailed(_) => {
                Self::Authorization(text)
            }
            AuthError::TokenExchangeFailed(_)
            | AuthError::TokenRefreshFailed(_)
            | AuthError::TokenRefreshRejected(_)
            | AuthError::ClientCredentialsError(_)
            | AuthError::InvalidTokenType(_)
            | AuthError::TokenExpired => Self::Token(text),
            AuthError::InvalidScope(_) | AuthError::InsufficientScope { .. } => {
                Self::InsufficientScope(text)
            }
            AuthError::CredentialStoreError(_) => Self::Store(text),
            AuthError::HttpError(_) => Self::Network(text),
            AuthError::OAuthError(_) => Self::Config(text),
            _ => Self::Other(text),
        }
    }
}

impl From<OAuthError> for AuthError {
    /// How our own failures travel through rmcp's transport (which only carries its own
    /// error type); [`auth_failure`] turns them back into [`OAuthError`] at the session.
    fn from(e: OAuthError) -> Self {
        match e {
            OAuthError::Registration(m) => Self::RegistrationFailed(m),
            OAuthError::Authorization(m) => Self::AuthorizationFailed(m),
            OAuthError::Token(m) => Self::TokenExchangeFailed(m),
            OAuthError::Store(m) => Self::CredentialStoreError(m),
            OAuthError::Discovery(m) => Self::MetadataError(m),
            OAuthError::InsufficientScope(m) => Self::InvalidScope(m),
            OAuthError::Config(m) => Self::OAuthError(m),
            other => Self::InternalError(other.to_string()),
        }
    }
}

/// The authorization failure behind a transport error, if that is what it is: a flow that
/// failed (rmcp's `AuthError`, other than "authorization required", which is a plain 401),
/// or a 403 `insufficient_scope` that could not be stepped up.
pub fn auth_failure(err: &(dyn std::error::Error + 'static)) -> Option<OAuthError> {
    let mut cur = Some(err);
    while let Some(e) = cur {
        if let Some(a) = e.downcast_ref::<AuthError>()
            && !matches!(a, AuthError::AuthorizationRequired)
        {
            return Some(OAuthError::from(a));
        }
        if let Some(s) = e.downcast_ref::<InsufficientScopeError>() {
            return Some(OAuthError::InsufficientScope(
                s.required_scope
                    .clone()
                    .unwrap_or_else(|| s.www_authenticate_header.clone()),
            ));
        }
        cur = e.source();
    }
    None
}

/// One server's authorization state, shared by every connection made to it (a legacy
/// fallback opens a fresh connection; it must not authorize again). Cheap to clone.
#[derive(Clone)]
pub struct OAuth {
    shared: Arc<flow::Shared>,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth")
            .field("server", &self.shared.server_url)
            .finish_non_exhaustive()
    }
}

impl OAuth {
    /// Authorization for the MCP server at `server_url`, with credentials kept in memory.
    pub async fn new(server_url: &str, settings: AuthSettings) -> Result<Self, OAuthError> {
        Self::with_store(
            server_url,
            settings,
            Arc::new(InMemoryCredentialStore::new()),
        )
        .await
    }

    /// Like [`OAuth::new`], keeping credentials in `store` (one store per server). Tokens
    /// already there are used (and refreshed) before anyone is asked to authorize again.
    pub async fn with_store(
        server_url: &str,
        settings: AuthSettings,
        store: Arc<dyn CredentialStore>,
    ) -> Result<Self, OAuthError> {
        let shared = flow::Shared::new(server_url, settings, store).await?;
        Ok(Self {
            shared: Arc::new(shared),
        })
    }

    /// The scopes of the current grant (empty before the first authorization).
    pub async fn granted_scopes(&self) -> Vec<String> {
        self.shared.granted_scopes().await
    }

    /// How many authorization rounds have completed so far.
    pub fn rounds(&self) -> u64 {
        self.shared.generation()
    }

    /// A current access token for this server from the stored credentials, refreshed first
    /// if it is about to expire. It never starts an authorization round: with no usable
    /// credential (none stored, or the refresh token was rejected) it fails with
    /// [`OAuthError::Authorization`] and the next request to the server asks for login.
    pub async fn access_token(&self) -> Result<String, OAuthError> {
        self.shared.load_stored().await;
        self.shared
            .template
            .get_access_token()
            .await
            .map_err(|e| OAuthError::from(&e))
    }

    /// The HTTP client a Streamable HTTP transport uses to reach this server: `http`, with
    /// tokens attached and authorization run when the server asks for it.
    pub fn client(&self, http: reqwest::Client) -> AuthorizingClient {
        AuthorizingClient::new(http, self.shared.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redirect_is_read() {
        let r = AuthorizationResponse::from_redirect(
            "http://localhost:3000/callback?code=abc&state=xyz&iss=http%3A%2F%2Fas",
        )
        .unwrap();
        assert_eq!(r.code, "abc");
        assert_eq!(r.state, "xyz");
        assert_eq!(r.iss.as_deref(), Some("http://as"));
    }

    #[test]
    fn a_refusal_is_an_error() {
        let e = AuthorizationResponse::from_redirect(
            "http://localhost:3000/callback?error=access_denied&state=xyz",
        )
        .unwrap_err();
        assert!(matches!(e, OAuthError::Authorization(m) if m.contains("access_denied")));
    }

    #[test]
    fn rmcp_failures_keep_their_kind() {
        let url = reqwest::Url::parse("http://h/.well-known/oauth-protected-resource/mcp").unwrap();
        let mismatch = AuthError::ProtectedResourceMetadataInvalid {
            url,
            reason: Box::new(ProtectedResourceMetadataInvalidReason::ResourceMismatch {
                reference: reqwest::Url::parse("http://h/mcp").unwrap(),
                permitted: reqwest::Url::parse("https://evil.example/mcp").unwrap(),
            }),
        };
        assert!(matches!(
            auth_failure(&mismatch),
            Some(OAuthError::ResourceMismatch(_))
        ));
        // A plain "authorization required" is a 401 to report, not a failed round.
        assert_eq!(auth_failure(&AuthError::AuthorizationRequired), None);
        // Our own failures survive the trip through rmcp's error type.
        let ours = AuthError::from(OAuthError::Authorization("declined".into()));
        assert!(
            matches!(auth_failure(&ours), Some(OAuthError::Authorization(m)) if m.contains("declined"))
        );
    }

    #[test]
    fn algorithms_parse() {
        assert_eq!(
            "ES256".parse::<JwtAlgorithm>().unwrap(),
            JwtAlgorithm::Es256
        );
        assert!("HS256".parse::<JwtAlgorithm>().is_err());
    }
}
