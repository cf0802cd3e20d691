//! The store's integration tests in one binary: conversations, messages and tool calls, and
//! large results, against real SQLite files.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

mod concurrent_open;
mod conversations;
mod results;
mod upgrade;
