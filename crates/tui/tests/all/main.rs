//! The screen's integration tests in one binary: core events on screen, keys, `NO_COLOR`,
//! hostile text, and snapshots of every view (insta, under `snapshots/`).

#![allow(clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

mod common;
mod events;
mod keys;
mod no_color;
mod safety;
mod snapshots;
