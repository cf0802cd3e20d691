//! One server's definition: as written in a file (`RawServer`), and validated with variables
//! expanded (`ServerSpec`): the connection settings the connection layer consumes, and the
//! server's facts (core's `ServerFacts`) that the catalogue carries.

use crate::expand::{ExpandError, expand};
use crate::oauth::{OAuthConfig, RawOAuth};
use crate::sandbox::{SandboxSpec, sandbox_spec};
use mcp_host_core::{ServerFacts, ToolFilter};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// Where a server definition came from. Later scopes override earlier ones by name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    User,
    Project,
    Local,
    /// A file named with `--mcp-config`: the user's explicit choice.
    Flag,
}

impl Scope {
    pub fn label(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::Project => "project",
            Self::Local => "local",
            Self::Flag => "flag",
        }
    }
}

/// A server entry exactly as written (before `${VAR}` expansion).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RawServer {
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub headers: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Start-up timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Per-tool-call timeout in milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_timeout: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trust: Option<bool>,
    /// Keep this server's tools visible to the model even in deferred (search) mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub always_load: Option<bool>,
    /// Offer tools whose input schema does not compile, unvalidated, instead of withholding them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_unvalidated: Option<bool>,
    /// When nobody can answer (headless), accept this server's elicitation forms with the
    /// schema's default values instead of declining.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub elicitation_defaults: Option<bool>,
    /// `false`: this server's calls run one at a time, even trusted read-only ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parallel: Option<bool>,
    /// Tokens of one result the model gets inline from this server (default 25,000); a
    /// larger result is stored and previewed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_tokens: Option<u64>,
    /// Per-tool overrides, by the server's own tool name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tools: BTreeMap<String, RawToolOptions>,
    /// Offer only these of the server's tools (by its own names); the rest are not shown to
    /// anyone, the model or a person (Codex's `enabled_tools`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled_tools: Option<Vec<String>>,
    /// Never offer these of the server's tools (Codex's `disabled_tools`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub disabled_tools: Vec<String>,
    /// OAuth for an http server (only needed for a pre-registered client, a client
    /// metadata document, fixed scopes or machine-to-machine use; discovery and dynamic
    /// registration need nothing here).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<RawOAuth>,
    /// A stdio server's confinement: `"strict"` (the default), `"off"`, or an object of
    /// what it may read, write and reach (`sandbox.rs`). Kept as written so that every
    /// mistake in it is located at its own key.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<serde_json::Value>,
}

/// Options for one tool of a server.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawToolOptions {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_result_tokens: Option<u64>,
}

/// How to reach a server, with every variable expanded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Transport {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<PathBuf>,
        /// Boxed: most of a spec's size, and read once per start.
        sandbox: Box<SandboxSpec>,
    },
    Http {
        url: String,
        headers: BTreeMap<String, String>,
        /// `"type": "sse"`: only the legacy HTTP+SSE transport (2024-11-05). Otherwise
        /// Streamable HTTP, falling back to the legacy one when the server refuses it.
        legacy_sse: bool,
    },
}

/// A validated, expanded server definition: how to reach the server, and what the host
/// believes of its tools (`facts`, which travel with the catalogue, not the connection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerSpec {
    pub name: String,
    pub scope: Scope,
    pub transport: Transport,
    pub startup_timeout: Duration,
    pub tool_timeout: Duration,
    /// Hash of the raw definition; approvals are keyed by it.
    pub definition_hash: String,
    pub elicitation_defaults: bool,
    /// OAuth settings (http servers only; boxed, as most servers have none).
    pub oauth: Option<Box<OAuthConfig>>,
    pub facts: ServerFacts,
}

pub const DEFAULT_STARTUP_TIMEOUT: Duration = Duration::from_secs(30);
pub const DEFAULT_TOOL_TIMEOUT: Duration = Duration::from_secs(120);

/// Why a raw entry could not become a spec. `key` is relative to the server's entry.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct SpecError {
    pub key: String,
    pub message: String,
}

impl SpecError {
    pub(crate) fn new(key: &str, message: impl Into<String>) -> Self {
        Self {
            key: key.to_string(),
            message: message.into(),
        }
    }
}

/// A stable hash of everything a definition runs, dials or sends, as written: the command
/// line, env and cwd; the url and headers; the whole `oauth` block (its grant, endpoints,
/// secrets and the files it names); and the two switches that change what reaches the
/// server (`allowUnvalidated` sends arguments no schema checked, `elicitationDefaults`
/// answers its forms unasked). Any edit to these makes a remembered approval stale.
///
/// Left out, because they change only what the host does on its side: `enabled`, the
/// timeouts, `trust` (never believed for a project file), `alwaysLoad`, `parallel` and the
/// result caps; the tool filters, which only hide tools of a server already approved whole;
/// and `sandbox`, which a project file can only narrow (a user's own file
/// needs no approval). The files named are hashed by path, not contents: an ID token file
/// is rewritten by its issuer by design, and a key file rotates.
pub fn definition_hash(raw: &RawServer) -> String {
    // Destructured in full so that a new field cannot be added without deciding here.
    let RawServer {
        kind,
        command,
        args,
        env,
        cwd,
        url,
        headers,
        oauth,
        allow_unvalidated,
        elicitation_defaults,
        enabled: _,
        timeout: _,
        tool_timeout: _,
        trust: _,
        always_load: _,
        parallel: _,
        max_result_tokens: _,
        tools: _,
        enabled_tools: _,
        disabled_tools: _,
        sandbox: _,
    } = raw;
    // serde_json writes struct fields in declaration order and BTreeMaps sorted: canonical.
    let base = (kind, command, args, env, cwd, url, headers);
    let bytes = if oauth.is_none() && allow_unvalidated.is_none() && elicitation_defaults.is_none()
    {
        // The encoding of the fields hashed before the rest were: approvals of servers that
        // set none of the rest stay valid. A 10-element array never equals a 7-element one.
        serde_json::to_vec(&base)
    } else {
        serde_json::to_vec(&(base, oauth, allow_unvalidated, elicitation_defaults))
    };
    // Strings, string-keyed maps and options always serialize; should that ever change, the
    // Debug form still tells definitions apart (an empty input would make them all alike).
    let bytes = bytes.unwrap_or_else(|_| format!("{raw:?}").into_bytes());
    let digest = Sha256::digest(&bytes);
    mcp_host_core::hex::lower(&digest)
}

impl RawServer {
    pub fn is_enabled(&self) -> bool {
        self.enabled.unwrap_or(true)
    }

    /// The `oauth` block, expanded and checked (only for http servers).
    fn oauth_config(
        &self,
        exp: &dyn Fn(&str, &str) -> Result<String, SpecError>,
    ) -> Result<Option<Box<OAuthConfig>>, SpecError> {
        let Some(raw) = &self.oauth else {
            return Ok(None);
        };
        if self.command.is_some() {
            return Err(SpecError::new(
                "oauth",
                "OAuth is for http servers; a stdio server gets its secrets through `env`",
            ));
        }
        crate::oauth::oauth_config(raw, exp).map(|c| Some(Box::new(c)))
    }

    /// What the host believes of the server's tools, given the file it came from.
    fn facts(&self, scope: Scope) -> ServerFacts {
        ServerFacts {
            // A project file could otherwise vouch for its own servers.
            trusted: scope != Scope::Project && self.trust.unwrap_or(false),
            always_load: self.always_load.unwrap_or(false),
            allow_unvalidated: self.allow_unvalidated.unwrap_or(false),
            parallel: self.parallel.unwrap_or(true),
            max_result_tokens: self.max_result_tokens,
            tool_result_tokens: (self.tools.iter())
                .filter_map(|(name, o)| Some((name.clone(), o.max_result_tokens?)))
                .collect(),
            // Only the host knows, once it has looked at the kernel and the command.
            sealed: false,
            tool_filter: (self.enabled_tools.is_some() || !self.disabled_tools.is_empty()).then(
                || {
                    std::sync::Arc::new(ToolFilter {
                        only: (self.enabled_tools.as_ref()).map(|t| t.iter().cloned().collect()),
                        except: self.disabled_tools.iter().cloned().collect(),
                    })
                },
            ),
        }
    }

    /// Validates and expands. `lookup` resolves `${VAR}` references.
    pub fn to_spec(
        &self,
        name: &str,
        scope: Scope,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<ServerSpec, SpecError> {
        let exp = |key: &str, value: &str| {
            expand(value, lookup).map_err(|e: ExpandError| SpecError::new(key, e.to_string()))
        };
        let kind =
            self.kind
                .as_deref()
                .unwrap_or(if self.url.is_some() && self.command.is_none() {
                    "http"
                } else {
                    "stdio"
                });
        let transport = match kind {
            "stdio" => {
                let command = self
                    .command
                    .as_deref()
                    .ok_or_else(|| SpecError::new("command", "a stdio server needs `command`"))?;
                let command = exp("command", command)?;
                if command.trim().is_empty() {
                    return Err(SpecError::new("command", "`command` is empty"));
                }
                let args = (self.args.iter().enumerate())
                    .map(|(i, a)| exp(&format!("args[{i}]"), a))
                    .collect::<Result<_, _>>()?;
                let env = (self.env.iter())
                    .map(|(k, v)| Ok((k.clone(), exp(&format!("env.{k}"), v)?)))
                    .collect::<Result<_, SpecError>>()?;
                let cwd = self
                    .cwd
                    .as_deref()
                    .map(|c| exp("cwd", c))
                    .transpose()?
                    .map(PathBuf::from);
                let sandbox = sandbox_spec(
                    self.sandbox.as_ref(),
                    scope,
                    lookup("HOME").as_deref(),
                    &exp,
                )?;
                Transport::Stdio {
                    command,
                    args,
                    env,
                    cwd,
                    sandbox: Box::new(sandbox),
                }
            }
            "http" | "sse" | "streamable-http" | "streamableHttp" => {
                let url = self
                    .url
                    .as_deref()
                    .ok_or_else(|| SpecError::new("url", "an http server needs `url`"))?;
                let url = exp("url", url)?;
                if !(url.starts_with("http://") || url.starts_with("https://")) {
                    return Err(SpecError::new(
                        "url",
                        format!("`{url}` is not an http(s) URL"),
                    ));
                }
                if self.sandbox.is_some() {
                    return Err(SpecError::new(
                        "sandbox",
                        "a sandbox confines a local (stdio) server; an http server runs elsewhere",
                    ));
                }
                let headers = (self.headers.iter())
                    .map(|(k, v)| Ok((k.clone(), exp(&format!("headers.{k}"), v)?)))
                    .collect::<Result<_, SpecError>>()?;
                Transport::Http {
                    url,
                    headers,
                    legacy_sse: kind == "sse",
                }
            }
            other => {
                return Err(SpecError::new(
                    "type",
                    format!("unknown server type `{other}` (expected stdio, http or sse)"),
                ));
            }
        };
        Ok(ServerSpec {
            name: name.to_string(),
            scope,
            transport,
            startup_timeout: self
                .timeout
                .map_or(DEFAULT_STARTUP_TIMEOUT, Duration::from_millis),
            tool_timeout: self
                .tool_timeout
                .map_or(DEFAULT_TOOL_TIMEOUT, Duration::from_millis),
            definition_hash: definition_hash(self),
            elicitation_defaults: self.elicitation_defaults.unwrap_or(false),
            oauth: self.oauth_config(&exp)?,
            facts: self.facts(scope),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        (name == "TOKEN").then(|| "s3cret".to_string())
    }

    fn raw(json: &str) -> RawServer {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn oauth_blocks_expand_secrets_and_are_checked() {
        use crate::oauth::{IdToken, IdentityProviderConfig, OAuthGrant};
        let s = raw(r#"{"url":"https://mcp.example/mcp","oauth":{"clientId":"c1","clientSecret":"${TOKEN}","scopes":["read"]}}"#)
            .to_spec("r", Scope::User, &env)
            .unwrap();
        let o = s.oauth.unwrap();
        assert_eq!(o.client_secret.as_deref(), Some("s3cret"));
        assert_eq!(
            (o.client_id.as_deref(), o.scopes.as_slice(), &o.grant),
            (
                Some("c1"),
                &["read".to_string()][..],
                &OAuthGrant::AuthorizationCode
            )
        );
        assert!(!o.is_machine());
        let bad = |json: &str| raw(json).to_spec("r", Scope::User, &env).unwrap_err();
        assert_eq!(bad(r#"{"command":"x","oauth":{}}"#).key, "oauth");
        assert_eq!(
            bad(r#"{"url":"https://a/mcp","oauth":{"grant":"password"}}"#).key,
            "oauth.grant"
        );
        assert_eq!(
            bad(r#"{"url":"https://a/mcp","oauth":{"clientId":"c","privateKeyFile":"/k.pem"}}"#)
                .key,
            "oauth.privateKeyFile"
        );
        assert_eq!(
            bad(r#"{"url":"https://a/mcp","oauth":{"grant":"client_credentials","clientId":"c","clientSecret":"s","privateKeyFile":"/k.pem"}}"#).key,
            "oauth.privateKeyFile"
        );
        assert_eq!(
            bad(r#"{"url":"https://a/mcp","oauth":{"grant":"client_credentials","clientId":"c","privateKeyFile":"k.pem"}}"#).message,
            "the file must be an absolute path"
        );
        assert_eq!(
            bad(r#"{"url":"https://a/mcp","oauth":{"grant":"client_credentials","clientId":"c","privateKeyFile":"/k.pem","signingAlgorithm":"HS256"}}"#).key,
            "oauth.signingAlgorithm"
        );
        let jwt = raw(r#"{"url":"https://a/mcp","oauth":{"grant":"client_credentials","clientId":"c","privateKeyFile":"/keys/${TOKEN}.pem","signingAlgorithm":"RS256"}}"#)
            .to_spec("r", Scope::User, &env)
            .unwrap()
            .oauth
            .unwrap();
        assert_eq!(
            jwt.grant,
            OAuthGrant::PrivateKeyJwt {
                key_file: "/keys/s3cret.pem".into(),
                algorithm: "RS256".into()
            }
        );
        assert!(jwt.is_machine());
        // SEP-990: the identity provider block, its token from the environment or a file.
        let idp = raw(r#"{"url":"https://a/mcp","oauth":{"grant":"identity_assertion","clientId":"c","clientSecret":"${TOKEN}",
            "identityProvider":{"tokenEndpoint":"https://idp/token","clientId":"i","idToken":"${TOKEN}"}}}"#)
            .to_spec("r", Scope::User, &env)
            .unwrap()
            .oauth
            .unwrap();
        assert_eq!(
            idp.grant,
            OAuthGrant::IdentityAssertion(IdentityProviderConfig {
                token_endpoint: "https://idp/token".into(),
                client_id: "i".into(),
                client_secret: None,
                id_token: IdToken::Value("s3cret".into()),
            })
        );
        // SEP-1933: the workload's JWT file, read at every exchange.
        let wif = raw(r#"{"url":"https://a/mcp","oauth":{"grant":"workload_identity","clientId":"w","assertionFile":"/run/token"}}"#)
            .to_spec("r", Scope::User, &env)
            .unwrap()
            .oauth
            .unwrap();
        assert_eq!(
            wif.grant,
            OAuthGrant::WorkloadIdentity {
                assertion_file: "/run/token".into()
            }
        );
        assert!(wif.is_machine());
        for (json, key) in [
            (
                r#"{"grant":"workload_identity","clientId":"w"}"#,
                "oauth.assertionFile",
            ),
            (
                r#"{"grant":"workload_identity","assertionFile":"/run/token"}"#,
                "oauth.clientId",
            ),
            (
                r#"{"grant":"workload_identity","clientId":"w","assertionFile":"rel"}"#,
                "oauth.assertionFile",
            ),
            (
                r#"{"clientId":"w","assertionFile":"/run/token"}"#,
                "oauth.assertionFile",
            ),
            (
                r#"{"grant":"identity_assertion","clientId":"c"}"#,
                "oauth.identityProvider",
            ),
            (
                r#"{"clientId":"c","identityProvider":{}}"#,
                "oauth.identityProvider",
            ),
            (
                r#"{"grant":"identity_assertion","clientId":"c","identityProvider":{"clientId":"i","idToken":"t"}}"#,
                "oauth.identityProvider.tokenEndpoint",
            ),
            (
                r#"{"grant":"identity_assertion","clientId":"c","identityProvider":{"tokenEndpoint":"https://i/t","clientId":"i"}}"#,
                "oauth.identityProvider",
            ),
            (
                r#"{"grant":"identity_assertion","clientId":"c","identityProvider":{"tokenEndpoint":"https://i/t","clientId":"i","idTokenFile":"rel"}}"#,
                "oauth.identityProvider.idTokenFile",
            ),
            (
                r#"{"grant":"identity_assertion","identityProvider":{"tokenEndpoint":"https://i/t","clientId":"i","idToken":"t"}}"#,
                "oauth.clientId",
            ),
        ] {
            let server = format!(r#"{{"url":"https://a/mcp","oauth":{json}}}"#);
            assert_eq!(bad(&server).key, key, "{json}");
        }
        assert_eq!(
            bad(r#"{"url":"https://a/mcp","oauth":{"grant":"client_credentials"}}"#).key,
            "oauth.clientId"
        );
        assert_eq!(
            bad(r#"{"url":"https://a/mcp","oauth":{"clientMetadataUrl":"http://a/c.json"}}"#).key,
            "oauth.clientMetadataUrl"
        );
        // A misspelt key is an error, not silently ignored.
        assert!(
            serde_json::from_str::<RawServer>(
                r#"{"url":"https://a/mcp","oauth":{"clientID":"x"}}"#
            )
            .is_err()
        );
    }

    #[test]
    fn stdio_and_http_specs_expand_variables() {
        let s = raw(r#"{"command":"run","args":["--t=${TOKEN}"],"env":{"A":"${MISSING:-d}"}}"#)
            .to_spec("a", Scope::User, &env)
            .unwrap();
        let Transport::Stdio { args, env: e, .. } = &s.transport else {
            panic!()
        };
        assert_eq!(args, &["--t=s3cret"]);
        assert_eq!(e["A"], "d");
        let h = raw(
            r#"{"type":"http","url":"http://x/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}"#,
        )
        .to_spec("h", Scope::User, &env)
        .unwrap();
        assert!(
            matches!(h.transport, Transport::Http { ref headers, .. } if headers["Authorization"] == "Bearer s3cret")
        );
    }

    #[test]
    fn missing_variable_names_the_key() {
        let e = raw(r#"{"command":"x","env":{"K":"${NOPE}"}}"#)
            .to_spec("a", Scope::User, &env)
            .unwrap_err();
        assert_eq!(e.key, "env.K");
        assert!(e.message.contains("NOPE"));
    }

    #[test]
    fn shape_errors_name_the_key() {
        let missing = raw(r#"{"args":[]}"#)
            .to_spec("a", Scope::User, &env)
            .unwrap_err();
        assert_eq!(missing.key, "command");
        let bad_type = raw(r#"{"type":"ws","url":"x"}"#)
            .to_spec("a", Scope::User, &env)
            .unwrap_err();
        assert_eq!(bad_type.key, "type");
        let bad_url = raw(r#"{"type":"http","url":"ftp://x"}"#).to_spec("a", Scope::User, &env);
        assert_eq!(bad_url.unwrap_err().key, "url");
    }

    #[test]
    fn project_files_cannot_mark_their_servers_trusted() {
        let r = raw(r#"{"command":"x","trust":true}"#);
        assert!(r.to_spec("a", Scope::User, &env).unwrap().facts.trusted);
        assert!(!r.to_spec("a", Scope::Project, &env).unwrap().facts.trusted);
    }

    #[test]
    fn definition_hash_changes_with_what_runs_but_not_with_options() {
        let a = raw(r#"{"command":"x","args":["1"]}"#);
        let b = raw(r#"{"command":"x","args":["2"]}"#);
        let c = raw(r#"{"command":"x","args":["1"],"timeout":5}"#);
        assert_ne!(definition_hash(&a), definition_hash(&b));
        assert_eq!(definition_hash(&a), definition_hash(&c));
    }

    #[test]
    fn definition_hash_covers_the_whole_oauth_block_and_what_is_sent() {
        let base = r#""url":"https://a/mcp""#;
        let hash = |extra: &str| definition_hash(&raw(&format!("{{{base}{extra}}}")));
        let idp = |endpoint: &str, file: &str| {
            format!(
                r#","oauth":{{"grant":"identity_assertion","clientId":"c","identityProvider":{{"tokenEndpoint":"{endpoint}","clientId":"i","idTokenFile":"{file}"}}}}"#
            )
        };
        let variants = [
            String::new(),
            r#","oauth":{}"#.to_string(),
            r#","oauth":{"clientId":"c"}"#.to_string(),
            r#","oauth":{"scopes":["read","write"]}"#.to_string(),
            r#","oauth":{"grant":"client_credentials","clientId":"c","privateKeyFile":"/k.pem"}"#
                .to_string(),
            r#","oauth":{"grant":"client_credentials","clientId":"c","privateKeyFile":"/other.pem"}"#
                .to_string(),
            idp("https://idp/token", "/t"),
            idp("https://evil/token", "/t"),
            idp("https://idp/token", "/home/u/.ssh/id_ed25519"),
            r#","allowUnvalidated":true"#.to_string(),
            r#","elicitationDefaults":true"#.to_string(),
        ];
        let hashes: std::collections::BTreeSet<String> = variants.iter().map(|v| hash(v)).collect();
        assert_eq!(hashes.len(), variants.len(), "every variant hashes apart");
        // Approvals recorded before the oauth block was hashed stay valid when there is none.
        let old = serde_json::to_vec(&(
            None::<String>,
            None::<String>,
            Vec::<String>::new(),
            BTreeMap::<String, String>::new(),
            None::<String>,
            Some("https://a/mcp"),
            BTreeMap::<String, String>::new(),
        ))
        .unwrap();
        let old: String = Sha256::digest(&old)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(hash(""), old);
    }
}
