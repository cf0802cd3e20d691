//! mcp-host configuration: reading `mcpServers` files (the `.mcp.json` /
//! `claude_desktop_config.json` format), the user / project / local scopes and their
//! precedence, `${VAR}` expansion, and the ledger of the user's answers about project servers.
//! Every problem is reported with file, line, column and key, and never stops the other
//! files or servers from loading.

mod expand;
mod file;
mod load;
mod oauth;
mod permissions;
mod server;
mod trust;

pub use expand::{ExpandError, expand};
pub use file::{ConfigFile, ConfigProblem, Located, parse_config_text};
pub use load::{ConfigPaths, LoadOptions, LoadedConfig, ServerEntry, ServerReadiness, load};
pub use oauth::{
    IdToken, IdentityProviderConfig, OAuthConfig, OAuthGrant, RawIdentityProvider, RawOAuth,
    SIGNING_ALGORITHMS,
};
pub use permissions::{
    HookCommand, HookMatcher, RawCondition, RawHooks, RawPermissions, RawRule, TaintExempt,
};
pub use server::{RawServer, RawToolOptions, Scope, ServerSpec, Transport, definition_hash};
pub use trust::{TrustAnswer, TrustError, TrustLedger};
