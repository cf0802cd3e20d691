//! The catalogue for the model-free commands: a snapshot of the started servers' tools, with
//! every definition checked against the user's pin store (`$XDG_DATA_HOME/mcp-host/pins.sqlite`).

use crate::host::Host;
use crate::output::one_line;
use mcp_host_client::Manager;
use mcp_host_core::ServerState;
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use mcp_host_registry::pins::PinStore;

/// Says on stderr which servers are not ready and which tools were skipped, then builds the
/// catalogue from the ready ones and checks their pins.
pub async fn snapshot(host: &Host, m: &Manager) -> anyhow::Result<(Catalogue, PinStore)> {
    let (catalogue, pins, warnings) = snapshot_quiet(host, m).await?;
    for w in warnings {
        eprintln!("warning: {w}");
    }
    Ok((catalogue, pins))
}

/// The same snapshot, with the warnings returned instead of printed (for the full-screen UI).
pub async fn snapshot_quiet(
    host: &Host,
    m: &Manager,
) -> anyhow::Result<(Catalogue, PinStore, Vec<String>)> {
    let mut warnings = Vec::new();
    let mut servers = Vec::new();
    for id in m.ids() {
        let Some(status) = m.status(id) else { continue };
        if status.state != ServerState::Ready {
            let why = status
                .state
                .error()
                .map(|e| format!(": {}", one_line(e, 200)))
                .unwrap_or_default();
            warnings.push(format!("server `{id}` is {}{why}", status.state.label()));
            continue;
        }
        let Some(list) = m.tools(id) else { continue };
        for issue in &list.issues {
            warnings.push(format!(
                "server `{id}`: tool `{}` skipped: {}",
                one_line(&issue.item, 64),
                issue.reason
            ));
        }
        let spec = m.spec(id);
        let offers = m.offers(id).unwrap_or_default();
        servers.push(ServerTools {
            server: id.clone(),
            tools: list.items.clone(),
            prompts: offers.prompts.items.clone(),
            resources: offers.resources.items.clone(),
            templates: offers.templates.items.clone(),
            always_load: spec.is_some_and(|s| s.always_load),
            allow_unvalidated: spec.is_some_and(|s| s.allow_unvalidated),
            instructions: m.instructions(id),
        });
    }
    let mut catalogue = Catalogue::build(servers);
    let store = PinStore::open(&host.paths.data_dir.join("pins.sqlite")).await?;
    catalogue.check_pins(&store).await?;
    Ok((catalogue, store, warnings))
}
