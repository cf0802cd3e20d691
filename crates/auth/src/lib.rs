//! Every secret of mcp-host, in one crate for security review. This file owns the crate's
//! public face; the parts live in:
//!
//! * `credentials.rs`: [`CredentialVault`], where credentials persist (the OS keyring when
//!   one works, else 0600 files written atomically) and the cross-process refresh lock.
//! * `keyring.rs`: [`OsKeyring`], the freedesktop Secret Service over D-Bus.
//!
//! Nothing here logs a token or a secret.

mod credentials;
mod keyring;

pub use credentials::{
    CredentialError, CredentialKey, CredentialVault, Protection, RefreshLock, VaultChoice,
};
pub use keyring::{KeyringUnavailable, OsKeyring};
