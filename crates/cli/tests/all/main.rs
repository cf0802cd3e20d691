//! The host's integration tests, in one test binary so the host is linked once for all of
//! them (as codex, ripgrep and uv lay theirs out): one module per area, sharing `common`'s
//! sandbox, fake-server configs and binary runners. Run one area with a filter, e.g.
//! `cargo test -p mcp-host --test all policy::`.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

mod common;

mod approval_text;
mod catalogue;
mod chat_approve;
mod cli_servers;
mod config_fail_closed;
mod confinement;
mod day_one;
mod engine;
mod event_stream;
mod faults;
mod gate;
mod http_failures;
mod input_rounds;
mod legacy_sse;
mod model_text;
mod oauth;
mod orphans;
mod policy;
mod project_approval;
mod providers;
mod run;
mod schema_budget;
#[cfg(feature = "hosted")]
mod serve;
mod session;
mod sign_in;
mod tasks;
mod terminal_safety;
mod traces;
mod wire_faults;
mod zygote;
