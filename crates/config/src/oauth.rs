//! The `oauth` block of an http server: as written ([`RawOAuth`]), and checked with its
//! variables expanded ([`OAuthConfig`]), with the grant it names made exact
//! ([`OAuthGrant`]) so that nothing downstream re-reads strings. Every mistake names its key.

use crate::server::SpecError;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// The `oauth` block as written (`${VAR}` allowed in secrets, tokens and paths).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawOAuth {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// HTTPS URL of this client's metadata document (used as `client_id` when the
    /// authorization server supports it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_metadata_url: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// `authorization_code` (default: a person logs in), `client_credentials`,
    /// `identity_assertion` (SEP-990, with `identityProvider`), or `workload_identity`
    /// (SEP-1933, with `assertionFile`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant: Option<String>,
    /// `client_credentials` with `private_key_jwt`: a PKCS#8 PEM file holding the key that
    /// signs the client assertion, instead of a client secret.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub private_key_file: Option<String>,
    /// The assertion's algorithm: `ES256` (default), `ES384` or `RS256`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signing_algorithm: Option<String>,
    /// `identity_assertion`: the enterprise identity provider that vouches for the user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub identity_provider: Option<RawIdentityProvider>,
    /// `workload_identity`: a file holding the workload's JWT (a Kubernetes projected
    /// token, a CI job's OIDC token), read at every exchange because its issuer rotates it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assertion_file: Option<String>,
}

/// `oauth.identityProvider` as written.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawIdentityProvider {
    pub token_endpoint: Option<String>,
    pub client_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The ID token itself (normally `${VAR}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token: Option<String>,
    /// A file holding the ID token, read at every exchange (a workload identity that its
    /// issuer refreshes on disk).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id_token_file: Option<String>,
}

/// The algorithms `oauth.signingAlgorithm` accepts.
pub const SIGNING_ALGORITHMS: [&str; 3] = ["ES256", "ES384", "RS256"];

/// OAuth settings with variables expanded. (`Debug` leaves out the secrets.)
#[derive(Clone, Default, PartialEq, Eq)]
pub struct OAuthConfig {
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub client_metadata_url: Option<String>,
    pub scopes: Vec<String>,
    pub grant: OAuthGrant,
}

/// How tokens are obtained.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum OAuthGrant {
    /// A person signs in (`mcp-host auth login`).
    #[default]
    AuthorizationCode,
    /// `client_credentials` with the client secret.
    ClientSecret,
    /// `client_credentials` with an assertion signed by the key in `key_file`.
    PrivateKeyJwt {
        key_file: PathBuf,
        /// One of [`SIGNING_ALGORITHMS`].
        algorithm: String,
    },
    /// SEP-990: an ID token exchanged at the identity provider, then a JWT-bearer grant.
    IdentityAssertion(IdentityProviderConfig),
    /// SEP-1933 workload identity: the JWT in this file, presented in a JWT-bearer grant.
    WorkloadIdentity { assertion_file: PathBuf },
}

impl OAuthConfig {
    /// Whether tokens come without a person (no `auth login` needed).
    pub fn is_machine(&self) -> bool {
        self.grant != OAuthGrant::AuthorizationCode
    }
}

/// `oauth.identityProvider`, expanded. (`Debug` leaves out the secrets.)
#[derive(Clone, PartialEq, Eq)]
pub struct IdentityProviderConfig {
    pub token_endpoint: String,
    pub client_id: String,
    pub client_secret: Option<String>,
    pub id_token: IdToken,
}

#[derive(Clone, PartialEq, Eq)]
pub enum IdToken {
    Value(String),
    File(PathBuf),
}

fn redacted(secret: &Option<String>) -> Option<&'static str> {
    secret.as_ref().map(|_| "REDACTED")
}

impl std::fmt::Debug for OAuthConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuthConfig")
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(&self.client_secret))
            .field("client_metadata_url", &self.client_metadata_url)
            .field("scopes", &self.scopes)
            .field("grant", &self.grant)
            .finish()
    }
}

impl std::fmt::Debug for IdentityProviderConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IdentityProviderConfig")
            .field("token_endpoint", &self.token_endpoint)
            .field("client_id", &self.client_id)
            .field("client_secret", &redacted(&self.client_secret))
            .field("id_token", &self.id_token)
            .finish()
    }
}

impl std::fmt::Debug for IdToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Value(_) => f.write_str("Value(REDACTED)"),
            Self::File(path) => write!(f, "File({})", path.display()),
        }
    }
}

type Expand<'a> = &'a dyn Fn(&str, &str) -> Result<String, SpecError>;

fn absolute_file(key: &str, path: &str, exp: Expand<'_>) -> Result<PathBuf, SpecError> {
    let path = PathBuf::from(exp(key, path)?);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err(SpecError::new(key, "the file must be an absolute path"))
    }
}

/// Checks and expands an `oauth` block. `exp` expands `${VAR}` for the named key.
pub(crate) fn oauth_config(raw: &RawOAuth, exp: Expand<'_>) -> Result<OAuthConfig, SpecError> {
    let grant = grant(raw, exp)?;
    if grant != OAuthGrant::AuthorizationCode && raw.client_id.is_none() {
        return Err(SpecError::new(
            "oauth.clientId",
            "a machine grant needs a pre-registered clientId",
        ));
    }
    if let Some(url) = &raw.client_metadata_url
        && !url.starts_with("https://")
    {
        return Err(SpecError::new(
            "oauth.clientMetadataUrl",
            "a client metadata document must be an https URL",
        ));
    }
    Ok(OAuthConfig {
        grant,
        client_id: raw.client_id.clone(),
        client_secret: (raw.client_secret.as_deref())
            .map(|s| exp("oauth.clientSecret", s))
            .transpose()?,
        client_metadata_url: raw.client_metadata_url.clone(),
        scopes: raw.scopes.clone(),
    })
}

fn grant(raw: &RawOAuth, exp: Expand<'_>) -> Result<OAuthGrant, SpecError> {
    let name = raw.grant.as_deref().unwrap_or("authorization_code");
    let misplaced = |key: &str, needs: &str| {
        SpecError::new(key, format!("`{key}` only goes with grant `{needs}`"))
    };
    if raw.identity_provider.is_some() && name != "identity_assertion" {
        return Err(misplaced("oauth.identityProvider", "identity_assertion"));
    }
    if raw.assertion_file.is_some() && name != "workload_identity" {
        return Err(misplaced("oauth.assertionFile", "workload_identity"));
    }
    if raw.private_key_file.is_some() && name != "client_credentials" {
        return Err(misplaced("oauth.privateKeyFile", "client_credentials"));
    }
    if raw.signing_algorithm.is_some() && raw.private_key_file.is_none() {
        return Err(SpecError::new(
            "oauth.signingAlgorithm",
            "a signing algorithm needs `privateKeyFile`",
        ));
    }
    match name {
        "authorization_code" => Ok(OAuthGrant::AuthorizationCode),
        "client_credentials" => {
            let Some(file) = &raw.private_key_file else {
                return Ok(OAuthGrant::ClientSecret);
            };
            if raw.client_secret.is_some() {
                return Err(SpecError::new(
                    "oauth.privateKeyFile",
                    "give either `clientSecret` or `privateKeyFile`, not both",
                ));
            }
            let algorithm = raw.signing_algorithm.as_deref().unwrap_or("ES256");
            if !SIGNING_ALGORITHMS.contains(&algorithm) {
                return Err(SpecError::new(
                    "oauth.signingAlgorithm",
                    format!(
                        "unsupported algorithm `{algorithm}` (expected one of {})",
                        SIGNING_ALGORITHMS.join(", ")
                    ),
                ));
            }
            Ok(OAuthGrant::PrivateKeyJwt {
                key_file: absolute_file("oauth.privateKeyFile", file, exp)?,
                algorithm: algorithm.to_string(),
            })
        }
        "identity_assertion" => {
            let idp = raw.identity_provider.as_ref().ok_or_else(|| {
                SpecError::new(
                    "oauth.identityProvider",
                    "grant identity_assertion needs `identityProvider`",
                )
            })?;
            identity_provider(idp, exp).map(OAuthGrant::IdentityAssertion)
        }
        "workload_identity" => {
            let file = raw.assertion_file.as_ref().ok_or_else(|| {
                SpecError::new(
                    "oauth.assertionFile",
                    "grant workload_identity needs `assertionFile`",
                )
            })?;
            if raw.client_id.is_none() {
                return Err(SpecError::new(
                    "oauth.clientId",
                    "grant workload_identity needs `clientId`",
                ));
            }
            Ok(OAuthGrant::WorkloadIdentity {
                assertion_file: absolute_file("oauth.assertionFile", file, exp)?,
            })
        }
        other => Err(SpecError::new(
            "oauth.grant",
            format!(
                "unknown grant `{other}` (expected authorization_code, client_credentials, identity_assertion or workload_identity)"
            ),
        )),
    }
}

fn identity_provider(
    raw: &RawIdentityProvider,
    exp: Expand<'_>,
) -> Result<IdentityProviderConfig, SpecError> {
    const KEY: &str = "oauth.identityProvider";
    let required = |field: &str, value: &Option<String>| {
        value.clone().ok_or_else(|| {
            SpecError::new(&format!("{KEY}.{field}"), format!("`{field}` is required"))
        })
    };
    let token_endpoint = required("tokenEndpoint", &raw.token_endpoint)?;
    if !(token_endpoint.starts_with("https://") || token_endpoint.starts_with("http://")) {
        return Err(SpecError::new(
            &format!("{KEY}.tokenEndpoint"),
            "the token endpoint must be an http(s) URL",
        ));
    }
    let id_token = match (&raw.id_token, &raw.id_token_file) {
        (Some(token), None) => IdToken::Value(exp(&format!("{KEY}.idToken"), token)?),
        (None, Some(file)) => {
            IdToken::File(absolute_file(&format!("{KEY}.idTokenFile"), file, exp)?)
        }
        _ => {
            return Err(SpecError::new(
                KEY,
                "give exactly one of `idToken` and `idTokenFile`",
            ));
        }
    };
    Ok(IdentityProviderConfig {
        token_endpoint,
        client_id: required("clientId", &raw.client_id)?,
        client_secret: (raw.client_secret.as_deref())
            .map(|s| exp(&format!("{KEY}.clientSecret"), s))
            .transpose()?,
        id_token,
    })
}
