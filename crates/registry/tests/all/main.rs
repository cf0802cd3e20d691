//! The registry's integration tests in one binary: what the model reads of hostile tool
//! text, and retrieval quality on the evaluation sets.

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

mod model_text;
mod retrieval;
