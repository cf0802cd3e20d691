//! The engine against in-memory servers (no process, no socket): the agent loop, the gate
//! and the records, driven by a scripted model through [`Connections`] and [`Caller`] fakes.
//! The same paths against real supervised servers are in `crates/cli/tests/all/engine.rs`.
//!
//! [`Connections`]: mcp_host_engine::connections::Connections
//! [`Caller`]: mcp_host_engine::connections::Caller

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

mod background;
mod fakes;
mod person;
mod snapshot;
mod turn;
