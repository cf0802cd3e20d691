//! The authorization rounds, on rmcp's `AuthorizationManager`: discovery from the server's
//! challenge (protected resource metadata, authorization server metadata with its issuer
//! check, resource match), client identity (pre-registered, else a metadata document when
//! the server supports it, else dynamic registration, once per authorization server), scope
//! choice, the authorization-code round with PKCE and `resource`, the step-up on 403, and
//! the machine grants (client credentials, and SEP-990's identity assertion in
//! `enterprise.rs`). One round runs at a time per server.

use super::dpop::{self, Nonce};
use super::enterprise::{Assertion, Exchange};
use super::store::{CredentialStore, Shared as SharedStore};
use super::token::{MAX_TOKEN_RESPONSE, TokenRequest, listed, save_token};
use super::{AuthSettings, Authorizer, Grant, JwtAlgorithm, OAuthError, jwt};
use rmcp::transport::auth::{
    AuthClient, AuthError, AuthorizationManager, AuthorizationMetadata, ClientCredentialsConfig,
    InMemoryStateStore, OAuthClientConfig,
};
use serde_json::Value;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::Mutex;

/// What the server said when it refused a request.
pub(crate) enum Challenge<'a> {
    /// 401: no token, or one it no longer accepts.
    Unauthorized(&'a str),
    /// 403 `insufficient_scope`, with the scope the server wants, if it said.
    InsufficientScope {
        header: &'a str,
        scope: Option<&'a str>,
    },
}

/// What the request should do after a challenge was dealt with.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Next {
    /// Send it again: there is a new token.
    Retry,
    /// Hand the refusal back: authorizing again would not change the answer.
    GiveUp,
}

/// A client registered dynamically, remembered per authorization server.
struct Registration {
    issuer: Option<String>,
    config: OAuthClientConfig,
}

#[derive(Default)]
struct FlowState {
    registered: Option<Registration>,
    /// The manager holds a configured client (after a round, or from stored credentials).
    configured: bool,
}

pub(crate) struct Shared {
    pub(crate) server_url: String,
    /// The canonical URI of the server, for client-credentials `resource`.
    pub(crate) resource: String,
    settings: AuthSettings,
    /// rmcp's token-attaching client around a placeholder; each transport clones it with its
    /// own HTTP client. Its manager is the one all rounds work on.
    pub(crate) template: AuthClient<reqwest::Client>,
    pub(crate) store: SharedStore,
    /// The rounds' PKCE and issuer state, which rmcp saves here and a DPoP exchange reads.
    pub(crate) states: InMemoryStateStore,
    /// The authorization server's metadata from the latest discovery.
    metadata: std::sync::Mutex<Option<AuthorizationMetadata>>,
    /// The latest DPoP nonces of the authorization server and of the server itself.
    pub(crate) as_nonce: Nonce,
    pub(crate) resource_nonce: Nonce,
    /// One refresh of a bound token at a time.
    pub(crate) refreshing: Mutex<()>,
    /// The issuer of the credential the store held at start, to tell a sign-in to a moved
    /// authorization server from a renewed one.
    stored_issuer: std::sync::Mutex<Option<String>>,
    /// Held for the whole of a round, so concurrent refusals cause one round.
    state: Mutex<FlowState>,
    /// Rounds completed; a request that saw an older value only needs to retry.
    generation: AtomicU64,
    loaded: AtomicBool,
    /// No-redirect client for the token requests we make ourselves (`private_key_jwt`).
    pub(crate) token_http: reqwest::Client,
}

fn config_error(m: impl Into<String>) -> OAuthError {
    OAuthError::Config(m.into())
}

impl Shared {
    pub(crate) async fn new(
        server_url: &str,
        settings: AuthSettings,
        store: Arc<dyn CredentialStore>,
    ) -> Result<Self, OAuthError> {
        crate::install_crypto_provider();
        let mut base = reqwest::Url::parse(server_url)
            .map_err(|e| config_error(format!("server URL {server_url:?}: {e}")))?;
        base.set_fragment(None);
        match &settings.grant {
            Grant::AuthorizationCode(_) => {
                reqwest::Url::parse(&settings.redirect_uri)
                    .map_err(|e| config_error(format!("redirect URI: {e}")))?;
            }
            Grant::ClientSecret
                if settings.client_id.is_none() || settings.client_secret.is_none() =>
            {
                return Err(config_error(
                    "client_credentials with a secret needs a client id and a client secret",
                ));
            }
            Grant::PrivateKeyJwt { .. } if settings.client_id.is_none() => {
                return Err(config_error("private_key_jwt needs a client id"));
            }
            _ => {}
        }
        if settings.client_secret.is_some() && settings.client_id.is_none() {
            return Err(config_error(
                "a client secret was given without a client id",
            ));
        }
        if let Some(url) = &settings.client_metadata_url {
            let ok = reqwest::Url::parse(url)
                .is_ok_and(|u| u.scheme() == "https" && u.path() != "/" && u.has_host());
            if !ok {
                return Err(config_error(format!(
                    "client metadata URL {url:?} must be an https URL with a path"
                )));
            }
        }
        let mut manager = if settings.allow_private_addresses {
            AuthorizationManager::new_allowing_private_addresses(base.as_str()).await
        } else {
            AuthorizationManager::new(base.as_str()).await
        }
        .map_err(|e| OAuthError::from(&e))?;
        let store = SharedStore(store);
        manager.set_credential_store(store.clone());
        let states = InMemoryStateStore::new();
        manager.set_state_store(states.clone());
        let build = |redirect| {
            reqwest::Client::builder()
                .redirect(redirect)
                .timeout(Duration::from_secs(30))
                .build()
                .map_err(|e| OAuthError::Other(format!("HTTP client: {e}")))
        };
        let placeholder = build(reqwest::redirect::Policy::default())?;
        Ok(Self {
            server_url: server_url.to_string(),
            resource: base.to_string(),
            settings,
            template: AuthClient::new(placeholder, manager),
            store,
            states,
            metadata: std::sync::Mutex::new(None),
            as_nonce: Nonce::default(),
            resource_nonce: Nonce::default(),
            refreshing: Mutex::new(()),
            stored_issuer: std::sync::Mutex::new(None),
            state: Mutex::new(FlowState::default()),
            generation: AtomicU64::new(0),
            loaded: AtomicBool::new(false),
            token_http: build(reqwest::redirect::Policy::none())?,
        })
    }

    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    pub(crate) async fn granted_scopes(&self) -> Vec<String> {
        self.template
            .auth_manager
            .lock()
            .await
            .get_current_scopes()
            .await
    }

    /// Before the first request: credentials a persistent store already holds are bound to
    /// the server's current authorization server (discarded if it changed) so that they can
    /// be refreshed. Best effort: if that fails, the server's 401 starts a normal round.
    pub(crate) async fn load_stored(&self) {
        if self.loaded.load(Ordering::SeqCst) {
            return;
        }
        let mut state = self.state.lock().await;
        if self.loaded.swap(true, Ordering::SeqCst) {
            return;
        }
        let client_id = match self.store.load().await {
            Ok(Some(c)) => {
                if let Ok(mut issuer) = self.stored_issuer.lock() {
                    issuer.clone_from(&c.issuer);
                }
                c.token_response.as_ref().map(|_| c.client_id.clone())
            }
            Ok(None) => None,
            Err(e) => {
                tracing::warn!(server = %self.server_url, error = %e, "credential store unreadable");
                None
            }
        };
        if client_id.is_none() {
            return;
        }
        let mut manager = self.template.auth_manager.lock().await;
        match manager.initialize_from_store().await {
            Ok(configured) => state.configured = configured,
            Err(e) => {
                tracing::warn!(server = %self.server_url, error = %e, "stored credentials not usable")
            }
        }
        // rmcp restores only the client id; a confidential client also needs its secret to
        // refresh after a restart (the configured one, for the same client).
        if state.configured
            && let (Some(id), Some(secret)) = (&client_id, &self.settings.client_secret)
            && self.settings.client_id.as_ref() == Some(id)
        {
            let config = OAuthClientConfig::new(id.clone(), self.settings.redirect_uri.clone())
                .with_client_secret(secret.clone());
            if let Err(e) = manager.configure_client(config) {
                tracing::warn!(server = %self.server_url, error = %e, "client secret not applied");
            }
        }
    }

    /// Deals with a refusal that a request saw while the round counter read `seen`.
    pub(crate) async fn on_challenge(
        &self,
        challenge: Challenge<'_>,
        seen: u64,
    ) -> Result<Next, AuthError> {
        let mut state = self.state.lock().await;
        if self.generation() != seen {
            // Another request completed a round while this one waited.
            return Ok(Next::Retry);
        }
        if let Grant::AuthorizationCode(authorizer) = &self.settings.grant
            && let Some(why) = authorizer.unavailable()
        {
            // A step-up names the scope to sign in with: what the grant has and what the
            // server asked for.
            let why = match challenge {
                Challenge::InsufficientScope {
                    scope: Some(required),
                    ..
                } if state.configured => {
                    let mut scopes = (self.template.auth_manager.lock().await)
                        .get_current_scopes()
                        .await;
                    // rmcp does not restore a stored grant's scopes with its token.
                    if scopes.is_empty()
                        && let Ok(Some(stored)) = self.store.load().await
                    {
                        scopes = stored.granted_scopes;
                    }
                    for s in required.split_whitespace() {
                        if !scopes.iter().any(|g| g == s) {
                            scopes.push(s.to_string());
                        }
                    }
                    authorizer
                        .step_up_unavailable(&scopes.join(" "))
                        .unwrap_or(why)
                }
                _ => why,
            };
            return Err(OAuthError::Authorization(why).into());
        }
        let next = match (&self.settings.grant, challenge) {
            (Grant::AuthorizationCode(authorizer), Challenge::Unauthorized(header)) => {
                self.authorize(&mut state, authorizer.as_ref(), header, None)
                    .await?
            }
            (
                Grant::AuthorizationCode(authorizer),
                Challenge::InsufficientScope { header, scope },
            ) => {
                self.step_up(&mut state, authorizer.as_ref(), header, scope)
                    .await?
            }
            (_, Challenge::Unauthorized(header)) => self.machine_grant(header).await?,
            // A machine client gets what it was given; it does not negotiate for more.
            (_, Challenge::InsufficientScope { .. }) => Next::GiveUp,
        };
        if next == Next::Retry {
            state.configured = true;
            self.generation.fetch_add(1, Ordering::SeqCst);
        }
        Ok(next)
    }

    /// The authorization server's metadata, found from the server's challenge (protected
    /// resource metadata, then metadata at the server's origin, then the 2025-03-26 default
    /// endpoints).
    ///
    /// 2025-03-26 compatibility: a server without protected resource metadata was its own
    /// authorization server, and its root metadata may name an issuer with a path
    /// (`https://h/oauth`), which the RFC 8414 issuer check refuses. That document is
    /// accepted when every endpoint it names is on the server's own origin: it then points
    /// nowhere the server could not have pointed anyway.
    async fn discover(
        &self,
        manager: &AuthorizationManager,
        challenge: &str,
    ) -> Result<AuthorizationMetadata, AuthError> {
        match manager
            .resolve_metadata_from_challenge(Some(challenge))
            .await
        {
            Ok(resolution) => Ok(resolution.metadata),
            Err(AuthError::AuthorizationServerMismatch {
                expected_issuer,
                received_issuer,
            }) if self.is_own_root(&expected_issuer) => self
                .own_root_metadata(&received_issuer)
                .await?
                .ok_or(AuthError::AuthorizationServerMismatch {
                    expected_issuer,
                    received_issuer,
                }),
            Err(e) => Err(e),
        }
    }

    fn is_own_root(&self, issuer: &str) -> bool {
        let (Ok(server), Ok(issuer)) = (
            reqwest::Url::parse(&self.resource),
            reqwest::Url::parse(issuer),
        ) else {
            return false;
        };
        same_origin(&server, &issuer) && matches!(issuer.path(), "" | "/")
    }

    /// The metadata document at the server's origin, if it names `issuer` and keeps every
    /// endpoint on that origin.
    async fn own_root_metadata(
        &self,
        issuer: &str,
    ) -> Result<Option<AuthorizationMetadata>, AuthError> {
        let mut url = reqwest::Url::parse(&self.resource)?;
        url.set_path("/.well-known/oauth-authorization-server");
        url.set_query(None);
        let response = self.token_http.get(url.clone()).send().await?;
        if !response.status().is_success() {
            return Ok(None);
        }
        let Some(body) = crate::capped::read_capped(response, MAX_TOKEN_RESPONSE).await? else {
            return Ok(None);
        };
        let Ok(metadata) = serde_json::from_slice::<AuthorizationMetadata>(&body) else {
            return Ok(None);
        };
        let endpoints = [
            Some(&metadata.authorization_endpoint),
            Some(&metadata.token_endpoint),
            metadata.registration_endpoint.as_ref(),
        ];
        let all_own = endpoints
            .into_iter()
            .flatten()
            .all(|e| reqwest::Url::parse(e).is_ok_and(|e| same_origin(&url, &e)));
        if metadata.issuer.as_deref() != Some(issuer) || !all_own {
            return Ok(None);
        }
        tracing::debug!(server = %self.server_url, %issuer, "using the server's own 2025-03-26 metadata");
        Ok(Some(metadata))
    }

    /// A full authorization-code round, discovering from the 401's challenge, for `wanted`
    /// scopes if given (a step-up's union), else the configured or discovered ones.
    async fn authorize(
        &self,
        state: &mut FlowState,
        authorizer: &dyn Authorizer,
        challenge: &str,
        wanted: Option<Vec<String>>,
    ) -> Result<Next, AuthError> {
        let mut manager = self.template.auth_manager.lock().await;
        let metadata = self.discover(&manager, challenge).await?;
        manager.set_metadata(metadata.clone());
        self.remember(&metadata);
        let moved_from = self
            .stored_issuer
            .lock()
            .ok()
            .and_then(|i| i.clone())
            .filter(|old| metadata.issuer.as_ref() != Some(old));
        let reason = match (&wanted, moved_from) {
            (Some(scopes), _) => format!(
                "{} asks for more access ({}); sign in again to grant it",
                self.server_url,
                scopes.join(" ")
            ),
            (None, Some(old)) => format!(
                "{} moved to another authorization server, {} (it was {old}); signing in registers mcp-host there",
                self.server_url,
                metadata.issuer.as_deref().unwrap_or("(no issuer)")
            ),
            (None, None) => format!(
                "the sign-in to {} no longer works; sign in again",
                self.server_url
            ),
        };
        authorizer.consent(&reason).await.map_err(AuthError::from)?;
        let scopes = match (wanted, &self.settings.scopes) {
            (Some(scopes), _) => with_offline_access(scopes, &metadata),
            (None, Some(scopes)) => with_offline_access(scopes.clone(), &metadata),
            (None, None) => manager.select_initial_scopes(&[]).await,
        };
        let config = self
            .client_config(state, &mut manager, &metadata, &scopes)
            .await?;
        let secret = config.client_secret.clone();
        manager.configure_client(config)?;
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let url = manager.get_authorization_url(&refs).await?;
        self.redeem(&manager, authorizer, &url, &metadata, secret.as_deref())
            .await?;
        Ok(Next::Retry)
    }

    /// Who this client is to the authorization server: pre-registered, else its metadata
    /// document when the server takes those, else a dynamic registration (kept for as long
    /// as the server's issuer stays the same).
    async fn client_config(
        &self,
        state: &mut FlowState,
        manager: &mut AuthorizationManager,
        metadata: &AuthorizationMetadata,
        scopes: &[String],
    ) -> Result<OAuthClientConfig, AuthError> {
        let s = &self.settings;
        if let Some(id) = &s.client_id {
            let mut config = OAuthClientConfig::new(id.clone(), s.redirect_uri.clone());
            if let Some(secret) = &s.client_secret {
                config = config.with_client_secret(secret.clone());
            }
            return Ok(config);
        }
        let cimd = metadata
            .additional_fields
            .get("client_id_metadata_document_supported")
            .and_then(Value::as_bool)
            .unwrap_or(false);
        if cimd && let Some(url) = &s.client_metadata_url {
            return Ok(OAuthClientConfig::new(url.clone(), s.redirect_uri.clone()));
        }
        if let Some(r) = &state.registered
            && r.issuer == metadata.issuer
        {
            return Ok(r.config.clone());
        }
        let refs: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let config = manager
            .register_client(&s.client_name, &s.redirect_uri, &refs)
            .await?;
        state.registered = Some(Registration {
            issuer: metadata.issuer.clone(),
            config: config.clone(),
        });
        Ok(config)
    }

    /// 403 `insufficient_scope`: authorize again for the union of the granted scopes and the
    /// challenged ones, unless the grant already covers them (then asking again is a loop).
    async fn step_up(
        &self,
        state: &mut FlowState,
        authorizer: &dyn Authorizer,
        header: &str,
        scope: Option<&str>,
    ) -> Result<Next, AuthError> {
        let Some(required) = scope.filter(|s| !s.trim().is_empty()) else {
            return Ok(Next::GiveUp);
        };
        if !state.configured {
            // Refused before any round: discover and authorize from this challenge.
            return self.authorize(state, authorizer, header, None).await;
        }
        let manager = self.template.auth_manager.lock().await;
        let mut granted = manager.get_current_scopes().await;
        // rmcp does not see the scopes of a grant it did not exchange itself (a bound
        // one, or one restored from the store): the stored grant says.
        if granted.is_empty()
            && let Ok(Some(stored)) = self.store.load().await
        {
            granted = stored.granted_scopes;
        }
        if required
            .split_whitespace()
            .all(|s| granted.iter().any(|g| g == s))
        {
            return Ok(Next::GiveUp);
        }
        drop(manager);
        for s in required.split_whitespace() {
            if !granted.iter().any(|g| g == s) {
                granted.push(s.to_string());
            }
        }
        // A client another process registered (`mcp-host auth login`) names that process's
        // redirect URI, not this one's: a new round registers again.
        let registered_elsewhere = state.registered.is_none()
            && self.settings.client_id.is_none()
            && self.settings.client_metadata_url.is_none();
        if registered_elsewhere {
            return self
                .authorize(state, authorizer, header, Some(granted))
                .await;
        }
        let metadata = self.known_metadata().await?;
        let reason = format!(
            "{} asks for more access ({required}); sign in again to grant it",
            self.server_url
        );
        authorizer.consent(&reason).await.map_err(AuthError::from)?;
        let manager = self.template.auth_manager.lock().await;
        let url = if dpop::offered(&metadata) {
            let refs: Vec<&str> = granted.iter().map(String::as_str).collect();
            manager.get_authorization_url(&refs).await?
        } else {
            manager.request_scope_upgrade(required).await?
        };
        let secret = self.client_secret(state, &metadata);
        self.redeem(&manager, authorizer, &url, &metadata, secret.as_deref())
            .await?;
        Ok(Next::Retry)
    }

    /// 401 for a machine client: a `client_credentials` or identity-assertion token.
    async fn machine_grant(&self, challenge: &str) -> Result<Next, AuthError> {
        let mut manager = self.template.auth_manager.lock().await;
        let metadata = self.discover(&manager, challenge).await?;
        manager.set_metadata(metadata.clone());
        self.remember(&metadata);
        let scopes: Vec<String> = match &self.settings.scopes {
            Some(scopes) => scopes.clone(),
            None => manager
                .select_initial_scopes(&[])
                .await
                .into_iter()
                .filter(|s| s != "offline_access")
                .collect(),
        };
        let (Some(client_id), secret) = (&self.settings.client_id, &self.settings.client_secret)
        else {
            return Err(config_error("a machine grant needs a client id").into());
        };
        match &self.settings.grant {
            Grant::ClientSecret => {
                let config = ClientCredentialsConfig::ClientSecret {
                    client_id: client_id.clone(),
                    client_secret: secret.clone().unwrap_or_default(),
                    scopes,
                    resource: Some(self.resource.clone()),
                };
                manager.validate_client_credentials_metadata(&config)?;
                manager.configure_client_credentials(&config)?;
                manager.exchange_client_credentials(&config).await?;
            }
            Grant::PrivateKeyJwt {
                private_key_pem,
                algorithm,
            } => {
                // Lets an expired token end in "authorization required" (a new exchange)
                // rather than in a refresh attempt without a client.
                manager.configure_client_id(client_id)?;
                drop(manager);
                self.jwt_exchange(&metadata, client_id, private_key_pem, *algorithm, &scopes)
                    .await?;
            }
            grant => {
                // A person's grant has no assertion: nothing to do without them.
                let Some(assertion) = Assertion::of(grant) else {
                    return Ok(Next::GiveUp);
                };
                manager.configure_client_id(client_id)?;
                drop(manager);
                Exchange {
                    http: &self.token_http,
                    resource: &self.resource,
                    metadata: &metadata,
                    assertion,
                    client_id,
                    client_secret: secret.as_deref(),
                    scopes: &scopes,
                    store: &self.store,
                }
                .run()
                .await?;
            }
        }
        Ok(Next::Retry)
    }

    /// Runs the person's part of a round and redeems the code: for a token bound to a
    /// proof key when the authorization server takes DPoP proofs, else through rmcp.
    async fn redeem(
        &self,
        manager: &AuthorizationManager,
        authorizer: &dyn Authorizer,
        url: &str,
        metadata: &AuthorizationMetadata,
        client_secret: Option<&str>,
    ) -> Result<(), AuthError> {
        let response = authorizer.authorize(url).await.map_err(AuthError::from)?;
        if dpop::offered(metadata) {
            return self
                .redeem_bound(metadata, url, response, client_secret)
                .await;
        }
        manager
            .exchange_code_for_token_with_issuer(
                &response.code,
                &response.state,
                response.iss.as_deref(),
            )
            .await?;
        Ok(())
    }

    fn remember(&self, metadata: &AuthorizationMetadata) {
        if let Ok(mut slot) = self.metadata.lock() {
            *slot = Some(metadata.clone());
        }
    }

    /// The authorization server's metadata: from this run's latest discovery, else
    /// discovered now (a credential restored from the store).
    pub(crate) async fn known_metadata(&self) -> Result<AuthorizationMetadata, AuthError> {
        if let Some(known) = self.metadata.lock().ok().and_then(|m| m.clone()) {
            return Ok(known);
        }
        let resolution = (self.template.auth_manager.lock().await)
            .resolve_metadata()
            .await?;
        self.remember(&resolution.metadata);
        Ok(resolution.metadata)
    }

    /// The secret of the client a round runs as: the one registered with this issuer,
    /// else the configured one.
    fn client_secret(&self, state: &FlowState, metadata: &AuthorizationMetadata) -> Option<String> {
        match &state.registered {
            Some(r) if r.issuer == metadata.issuer && self.settings.client_id.is_none() => {
                r.config.client_secret.clone()
            }
            _ => self.settings.client_secret.clone(),
        }
    }

    /// The configured secret, if `client_id` is the configured client.
    pub(crate) fn settings_secret_for(&self, client_id: &str) -> Option<&str> {
        (self.settings.client_id.as_deref() == Some(client_id))
            .then_some(self.settings.client_secret.as_deref())
            .flatten()
    }

    /// `client_credentials` authenticated by a signed assertion (RFC 7523 §2.2).
    async fn jwt_exchange(
        &self,
        metadata: &AuthorizationMetadata,
        client_id: &str,
        private_key_pem: &str,
        algorithm: JwtAlgorithm,
        scopes: &[String],
    ) -> Result<(), AuthError> {
        let cc_error = AuthError::ClientCredentialsError;
        if !listed(
            metadata,
            "token_endpoint_auth_methods_supported",
            "private_key_jwt",
        ) {
            return Err(cc_error(
                "the authorization server does not accept private_key_jwt".into(),
            ));
        }
        if !listed(
            metadata,
            "token_endpoint_auth_signing_alg_values_supported",
            algorithm.as_str(),
        ) {
            return Err(cc_error(format!(
                "the authorization server does not accept {} assertions",
                algorithm.as_str()
            )));
        }
        let audience = metadata
            .issuer
            .as_deref()
            .ok_or_else(|| cc_error("the authorization server metadata names no issuer".into()))?;
        let assertion = jwt::client_assertion(client_id, audience, private_key_pem, algorithm)
            .map_err(AuthError::from)?;
        let mut form = vec![
            ("grant_type", "client_credentials".to_string()),
            (
                "client_assertion_type",
                "urn:ietf:params:oauth:client-assertion-type:jwt-bearer".to_string(),
            ),
            ("client_assertion", assertion),
        ];
        if !scopes.is_empty() {
            form.push(("scope", scopes.join(" ")));
        }
        form.push(("resource", self.resource.clone()));
        let json = TokenRequest {
            http: &self.token_http,
            resource: &self.resource,
            endpoint: &metadata.token_endpoint,
            basic: None,
            form,
            error: cc_error,
            dpop: None,
        }
        .send()
        .await?;
        save_token(&self.store, metadata, client_id, json, scopes, cc_error).await
    }
}

/// SEP-2207: ask for `offline_access` (a refresh token) when the server lists it.
fn with_offline_access(mut scopes: Vec<String>, metadata: &AuthorizationMetadata) -> Vec<String> {
    let listed = metadata
        .scopes_supported
        .as_ref()
        .is_some_and(|s| s.iter().any(|s| s == "offline_access"));
    if listed && !scopes.is_empty() && !scopes.iter().any(|s| s == "offline_access") {
        scopes.push("offline_access".into());
    }
    scopes
}

fn same_origin(a: &reqwest::Url, b: &reqwest::Url) -> bool {
    a.scheme() == b.scheme()
        && a.host_str()
            .zip(b.host_str())
            .is_some_and(|(a, b)| a.eq_ignore_ascii_case(b))
        && a.port_or_known_default() == b.port_or_known_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn offline_access_only_when_listed() {
        let mut m = AuthorizationMetadata::default();
        assert_eq!(with_offline_access(vec!["a".into()], &m), vec!["a"]);
        m.scopes_supported = Some(vec!["a".into(), "offline_access".into()]);
        assert_eq!(
            with_offline_access(vec!["a".into()], &m),
            vec!["a", "offline_access"]
        );
        assert!(with_offline_access(vec![], &m).is_empty());
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let u = |s: &str| reqwest::Url::parse(s).unwrap();
        assert!(same_origin(
            &u("http://LocalHost:80/mcp"),
            &u("http://localhost/oauth")
        ));
        assert!(!same_origin(
            &u("http://localhost:1/"),
            &u("http://localhost:2/")
        ));
        assert!(!same_origin(&u("https://h/"), &u("http://h/")));
    }
}
