//! Test helpers for mcp-host: locating the fake server binary that `cargo test --workspace`
//! builds, and writing config files that point at it.

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
