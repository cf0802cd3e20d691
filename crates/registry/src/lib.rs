//! The tool catalogue of mcp-host: one snapshot of what every ready server offers, the
//! names the model sees, argument validation before anything is sent, lint flags
//! (look-alike names, hidden characters, cut descriptions), definition pins with drift
//! reports, and lexical search for deferred tool loading. No I/O: pins are kept wherever
//! the caller's `mcp_host_core::pins::PinRecords` keeps them (the store, in the host).

pub mod budget;
pub mod catalogue;
pub mod eval;
pub mod exposure;
pub mod lint;
pub mod names;
pub mod pins;
pub mod schema;
pub mod search;
mod udiff;
