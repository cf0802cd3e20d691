//! mcp-host configuration: reading `mcpServers` files (the `.mcp.json` /
//! `claude_desktop_config.json` format), the user / project / local scopes and their
//! precedence, `${VAR}` expansion, and the ledger of the user's answers about project servers.
//! Every problem is reported with file, line, column, key and a severity: a file, rule or
//! hook that cannot be read as written is fatal (the commands that make calls refuse to
//! start), a broken server entry drops that server, an unknown key is a warning.

mod check;
mod describe;
mod edit;
mod expand;
mod file;
mod foreign;
mod import;
mod keys;
mod load;
mod oauth;
mod permissions;
mod sandbox;
mod server;
mod trust;

pub use check::{condition_regex, hook_matcher};
pub use describe::{describe_definition, visible};
pub use edit::{EditError, ScopeFiles, check_server};
pub use expand::{ExpandError, expand};
pub use file::{
    ConfigFile, ConfigProblem, DefaultMode, Located, RawDefaults, Severity, parse_config_text,
};
pub use import::{
    HostKind, Imported, InputPrompt, fill_inputs, has_literal_values, import_text, known_files,
    variable_name, without_secrets,
};
pub use load::{
    ConfigPaths, LoadOptions, LoadedConfig, ProjectServer, ServerEntry, ServerReadiness, load,
};
pub use oauth::{
    IdToken, IdentityProviderConfig, OAuthConfig, OAuthGrant, RawIdentityProvider, RawOAuth,
    SIGNING_ALGORITHMS,
};
pub use permissions::{
    HookCommand, HookMatcher, RawCondition, RawHooks, RawPermissions, RawRule, TaintExempt,
};
pub use sandbox::SandboxSpec;
pub use server::{RawServer, RawToolOptions, Scope, ServerSpec, Transport, definition_hash};
pub use trust::{TrustAnswer, TrustError, TrustLedger};
