//! A catalogue snapshot of live connections.

use crate::fakes::FakeServers;
use mcp_host_engine::tools::ToolSource;
use mcp_host_store::pins::PinStore;
use std::sync::Arc;

/// A snapshot takes each tool's definition as the connection listed it, shared and not
/// copied: a deep copy of every definition (its schema's maps and strings), then dropping it,
/// was a twentieth of a start's cost.
#[tokio::test]
async fn a_snapshot_shares_the_listed_definitions() {
    let dir = tempfile::tempdir().unwrap();
    let pins = PinStore::open(&dir.path().join("pins.sqlite"))
        .await
        .unwrap();
    let servers = FakeServers::new();
    let (_, catalogue, warnings) = ToolSource::start(pins, &servers).await.unwrap();
    assert!(warnings.is_empty(), "{warnings:?}");
    let [entry] = catalogue.entries() else {
        panic!("one tool, not {}", catalogue.entries().len());
    };
    assert!(Arc::ptr_eq(&entry.tool, &servers.tools.items[0]));
}
