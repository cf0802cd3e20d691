//! The model providers' integration tests in one binary: each wire format against a local
//! server that speaks it (`wire/`), and retries on rate limits and overloads (`retry.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

mod retry;
mod wire;
