//! Vocabulary shared by every mcp-host crate: host-assigned ids, the neutral MCP types the
//! rest of the host sees (tools, content, call outcomes), per-server states, and the text
//! sanitiser applied to every server-supplied string before it reaches a terminal, and the
//! seam between pin checks and the pin store (`pins.rs`, a trait only).
//! No I/O and no async runtime live here.

pub mod pins;
pub mod sanitize;
pub mod state;
pub mod types;

pub use state::{Era, ServerState, ServerStatus, TransportKind};
pub use types::{
    CallOutcome, Content, ListIssue, PromptArgument, PromptDescriptor, ResourceDescriptor,
    ResourceTemplateDescriptor, ServerId, ToolDescriptor,
};
