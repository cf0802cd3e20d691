//! Every secret of mcp-host, in one crate for security review: OAuth 2.1 for remote servers
//! and the vault its credentials persist in. This file owns the crate's public face; the
//! parts live in:
//!
//! * `oauth/`: the flows (`flow.rs`: discovery, registration, the authorization-code round
//!   with PKCE, step-up, the machine grants), `private_key_jwt` assertions (`jwt.rs`),
//!   SEP-990's identity assertion grant (`enterprise.rs`), the token requests made here
//!   (`token.rs`), the credential store over the vault with its refresh coordination
//!   (`persist.rs`), the HTTP client an authorized transport sends through (`client.rs`),
//!   and OAuth for background connections, where nobody may be asked (`unattended.rs`:
//!   `OAuth::for_server`).
//! * `credentials.rs`: [`CredentialVault`], where credentials persist (the OS keyring when
//!   one works, else 0600 files written atomically) and the cross-process refresh lock;
//!   `credential_rows.rs`: [`CredentialRows`], a service's shared store for them (sealed
//!   rows, a refresh lease).
//! * `keyring.rs`: [`OsKeyring`], the freedesktop Secret Service over D-Bus.
//! * `capped.rs`: [`read_capped`], an answer's body read up to a cap (the token and
//!   metadata answers here, the identity provider's in the hosted mode).
//!
//! rmcp is used only in `oauth/`: its `transport::auth` module (`AuthorizationManager` and
//! `AuthClient` in `flow.rs` and `client.rs`; `AuthError`, `AuthorizationMetadata` and the
//! token types in `mod.rs`, `token.rs` and `enterprise.rs`; the `CredentialStore` contract and
//! `StoredCredentials`, re-exported by `oauth/store.rs` and implemented in `persist.rs`), and
//! its `transport::streamable_http_client` module, whose `StreamableHttpClient` trait
//! [`AuthorizingClient`] implements (`client.rs`) and whose 403 error `mod.rs` reads. The
//! rmcp types this crate exports are that credential-store contract and
//! [`AuthorizingClient`]'s trait; the vault (`credentials.rs`, `keyring.rs`) has no rmcp.
//! Nothing here logs a token or a secret.

mod capped;
mod credential_rows;
mod credentials;
mod keyring;
pub mod oauth;
mod sealed;

pub use capped::read_capped;
pub use credential_rows::CredentialRows;
pub use credentials::{
    CredentialError, CredentialKey, CredentialVault, Protection, RefreshLock, VaultChoice,
};
pub use keyring::{KeyringUnavailable, OsKeyring};
pub use oauth::{
    AuthSettings, AuthorizationResponse, Authorizer, AuthorizingClient, CredentialStore,
    DEFAULT_LOCK_WAIT, FreshSignIn, Grant, ISSUER_IN_FILE, IdTokenSource, IdentityProvider,
    InMemoryCredentialStore, JwtAlgorithm, MAX_AUTHORIZATION_ROUNDS, OAuth, OAuthError, Person,
    RedirectListener, StoredCredentials, VaultCredentialStore, auth_failure,
};
pub use sealed::{SealError, SealingKey};

/// Installs ring as rustls' process-wide crypto provider (we avoid aws-lc's C build), before
/// any HTTPS client is built: the authorization requests made here, and every transport in
/// `mcp-host-client`. Idempotent; a provider installed earlier by the embedding program wins.
pub fn install_crypto_provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}
