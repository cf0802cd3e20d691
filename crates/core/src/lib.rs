//! Vocabulary shared by every mcp-host crate: host-assigned ids, the neutral MCP types the
//! rest of the host sees (tools, content, call outcomes), a tool as a model is offered it
//! (`definition.rs`), per-server states, the decision vocabulary, the events a session sends
//! its front ends, lowercase hex (`hex.rs`), the end of an HTTP head in a growing buffer (`http_head.rs`), an audit line's object written field by field (`json_line.rs`), a local server's confinement (`confinement.rs`), what the configuration says about a server's tools (`facts.rs`), the seam
//! between pin checks and the pin store (`pins.rs`, a trait only), and the text sanitiser
//! applied to every server-supplied string before it reaches a terminal. No I/O and no async
//! runtime live here.

pub mod confinement;
pub mod decision;
pub mod definition;
pub mod event;
pub mod facts;
pub mod hex;
pub mod http_head;
pub mod json_line;
pub mod pins;
pub mod redact;
pub mod sanitize;
pub mod state;
pub mod time;
pub mod types;

pub use definition::ToolDefinition;
pub use facts::{ServerFacts, ToolFilter};
pub use state::{Era, ServerState, ServerStatus, TransportKind};
pub use types::{
    CallOutcome, Content, ListIssue, Partial, PromptArgument, PromptDescriptor, ResourceDescriptor,
    ResourceTemplateDescriptor, ServerId, ToolDescriptor,
};
