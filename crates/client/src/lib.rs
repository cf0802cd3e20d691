//! The MCP client side of mcp-host: supervised stdio processes and Streamable HTTP
//! connections, protocol-era negotiation, and the connection manager that keeps one session
//! per configured server. OAuth is `mcp-host-auth`'s: a remote [`Endpoint`] carries its
//! `OAuth` handle, and the transport sends through the client that handle gives.
//!
//! rmcp is used only inside `session/` (the lifecycle and requests), `http/` (the Streamable
//! HTTP transport, its guards and its failures), `wire/` (our stdio transport under rmcp's service),
//! `handler` (rmcp's `ClientHandler`), `listing` and `reading` (decoding rmcp's results);
//! everything this crate exports speaks the neutral types of `mcp-host-core`, and those of
//! `mcp-host-auth` where a connection needs OAuth.

pub mod backoff;
mod changes;
mod handler;
pub mod harness;
mod http;
pub mod lenient;
mod lines;
pub mod listing;
pub mod manager;
mod pace;
pub mod procs;
mod progress;
mod reading;
mod runner;
pub mod sandbox;
pub mod seccomp;
pub mod session;
mod sign_in;
pub mod stdio;
pub mod supervisor;
pub mod trace;
pub mod wire;
pub mod zygote;

pub use handler::{
    ClientFeatures, ElicitationAsk, ElicitationKind, ElicitationReply, MAX_QUESTIONS_WAITING,
    defaults_answer,
};
pub use http::{
    HttpClient, HttpWire, InProcessHttp, NetworkClient, http_client, install_crypto_provider,
};
pub use listing::{Listing, ToolList};
pub use manager::{CallError, Expect, Manager, ManagerOptions, ServerSetup, ToolCaller};
pub use progress::{Progress, ProgressFeed, ProgressSink, progress_channel};
pub use reading::{PromptMessage, ResourceText};
pub use session::{CallFailed, ConnectError, Endpoint, EraChoice, RequestError, Session};
pub use stdio::{StdioLaunch, SupervisorCommand};
