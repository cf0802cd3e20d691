//! The catalogue for the model-free commands: the engine's snapshot of the started servers'
//! tools, with every definition checked against the user's pin store
//! (`$XDG_DATA_HOME/mcp-host/pins.sqlite`).

use crate::host::Host;
use mcp_host_engine::host::Servers;
use mcp_host_registry::catalogue::Catalogue;
use mcp_host_registry::search::hybrid::Embedder;
use mcp_host_store::pins::PinStore;

/// Says on stderr which servers are not ready and which tools were skipped, then builds the
/// catalogue from the ready ones and checks their pins.
pub async fn snapshot(host: &Host, m: &Servers) -> anyhow::Result<(Catalogue, PinStore)> {
    let pins = host.pins().await?;
    let (catalogue, warnings) =
        mcp_host_engine::tools::snapshot(m, &pins, &Embedder::new()).await?;
    for w in warnings {
        crate::output::errln!("warning: {w}");
    }
    Ok((catalogue, pins))
}
