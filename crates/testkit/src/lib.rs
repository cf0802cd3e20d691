//! Test helpers for mcp-host: locating the fake server binary that `cargo test --workspace`
//! builds, the data its tools return (so tests can check it), and a local OAuth
//! authorization server with the MCP servers it protects ([`oauth_server`]).

pub mod oauth_server;

use std::path::PathBuf;

/// Path of a binary built into the same target directory as the running test.
/// Integration tests run from `target/<profile>/deps/`; binaries live one level up.
pub fn workspace_bin(name: &str) -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let dir = exe.parent().and_then(|d| {
        if d.ends_with("deps") {
            d.parent()
        } else {
            Some(d)
        }
    });
    let path = dir
        .map(|d| d.join(name))
        .unwrap_or_else(|| PathBuf::from(name));
    assert!(
        path.exists(),
        "{} not built; run the tests with `cargo test --workspace`",
        path.display()
    );
    path
}

pub fn fake_server() -> PathBuf {
    workspace_bin("mcp-fake-server")
}

/// The text the fake server's `big` tool returns: numbered lines, cut to exactly `bytes`,
/// so a test can rebuild it and any slice shows where it came from.
pub fn big_text(bytes: usize) -> String {
    let mut s = String::with_capacity(bytes + 64);
    let mut i = 0u64;
    while s.len() < bytes {
        s.push_str(&format!("line {i:08} of the big result\n"));
        i += 1;
    }
    s.truncate(bytes);
    s
}
