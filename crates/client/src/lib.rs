//! The MCP client side of mcp-host: supervised stdio processes and Streamable HTTP
//! connections, protocol-era negotiation, and the connection manager that keeps one session
//! per configured server, and OAuth for remote servers. rmcp is used only inside `session`,
//! `http` and `oauth`; everything this crate exports speaks the neutral types of
//! `mcp-host-core`, except the credential-store contract that `oauth::store` re-exports.

pub mod backoff;
mod changes;
mod handler;
mod http;
pub mod lenient;
pub mod listing;
pub mod manager;
pub mod oauth;
pub mod procs;
mod reading;
pub mod session;
pub mod stdio;
pub mod supervisor;
pub mod wire;

pub use handler::{
    ClientFeatures, ElicitationAsk, ElicitationKind, ElicitationReply, Progress, defaults_answer,
};
pub use http::{http_client, install_crypto_provider};
pub use listing::{Listing, ToolList};
pub use manager::{CallError, Expect, Manager, ManagerOptions, ServerSetup, ToolCaller};
pub use oauth::{
    AuthSettings, AuthorizationResponse, Authorizer, Grant, JwtAlgorithm, OAuth, OAuthError,
};
pub use reading::{PromptMessage, ResourceText};
pub use session::{ConnectError, Endpoint, EraChoice, RequestError, Session};
pub use stdio::{StdioLaunch, SupervisorCommand};
