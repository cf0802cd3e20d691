//! Where a turn's catalogue comes from. A snapshot is built from the ready servers' lists
//! with every definition checked against the user's pins; a live source rebuilds it at a
//! model step boundary whenever a server's state or lists moved, so a server that became
//! ready mid-turn joins at the next step and a definition that changed is seen (as drift,
//! which is asked about again) before the model's next call is decided.

use crate::connections::Connections;
use mcp_host_core::{ServerId, ServerState, sanitize::one_line};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use mcp_host_registry::search::hybrid::Embedder;
use mcp_host_store::pins::{PinError, PinStore};
use std::sync::Arc;
use tokio::sync::Mutex;

/// Builds a catalogue from the ready servers, with their configured facts, and checks its
/// pins; its searches rank with `embedder` too (which keeps tool vectors between
/// snapshots). Returns what a person should be told: servers that are not ready, tools
/// that were skipped.
pub async fn snapshot(
    servers: &dyn Connections,
    pins: &PinStore,
    embedder: &Arc<Embedder>,
) -> Result<(Catalogue, Vec<String>), PinError> {
    let mut warnings = Vec::new();
    let mut ready = Vec::new();
    for id in servers.ids() {
        let Some(status) = servers.status(&id) else {
            continue;
        };
        if status.state != ServerState::Ready {
            let why = status
                .state
                .error()
                .map(|e| format!(": {}", one_line(e, 200)))
                .unwrap_or_default();
            warnings.push(format!("server `{id}` is {}{why}", status.state.label()));
            continue;
        }
        let Some(list) = servers.tools(&id) else {
            continue;
        };
        for issue in &list.issues {
            warnings.push(format!(
                "server `{id}`: tool `{}` skipped: {}",
                one_line(&issue.item, 64),
                issue.reason
            ));
        }
        let offers = servers.offers(&id).unwrap_or_default();
        ready.push(ServerTools {
            server: id.clone(),
            tools: list.items.clone(),
            prompts: offers.prompts.items.clone(),
            resources: offers.resources.items.clone(),
            templates: offers.templates.items.clone(),
            facts: servers.facts(&id).unwrap_or_default(),
            instructions: servers.instructions(&id),
        });
    }
    let mut catalogue = Catalogue::build(ready).with_embedder(embedder.clone());
    catalogue.check_pins(pins).await?;
    Ok((catalogue, warnings))
}

/// The servers' states and list revisions a catalogue was built at.
type Seen = Vec<(ServerId, &'static str, u64)>;

fn seen(servers: &dyn Connections) -> Seen {
    servers
        .ids()
        .into_iter()
        .filter_map(|id| {
            let s = servers.status(&id)?;
            Some((id, s.state.label(), s.revision))
        })
        .collect()
}

enum Source {
    /// One catalogue for every step (tests, benchmarks).
    Fixed(Arc<Catalogue>),
    /// Rebuilt from the servers when they moved.
    Live {
        pins: PinStore,
        embedder: Arc<Embedder>,
        last: Mutex<Option<(Seen, Arc<Catalogue>)>>,
    },
}

/// The catalogue a turn reads, step by step.
pub struct ToolSource(Source);

impl ToolSource {
    /// Always this catalogue.
    pub fn fixed(catalogue: Catalogue) -> Self {
        Self(Source::Fixed(Arc::new(catalogue)))
    }

    /// Rebuilt from the servers whenever one of them changed state or lists.
    pub fn live(pins: PinStore) -> Self {
        Self(Source::Live {
            pins,
            embedder: Embedder::new(),
            last: Mutex::new(None),
        })
    }

    /// A live source whose first catalogue is built now; returns what a person should be
    /// told about it (servers not ready, tools skipped), so a front end builds it once.
    pub async fn start(
        pins: PinStore,
        servers: &dyn Connections,
    ) -> Result<(Self, Arc<Catalogue>, Vec<String>), PinError> {
        let at = seen(servers);
        let embedder = Embedder::new();
        let (catalogue, warnings) = snapshot(servers, &pins, &embedder).await?;
        let catalogue = Arc::new(catalogue);
        let source = Self(Source::Live {
            pins,
            embedder,
            last: Mutex::new(Some((at, catalogue.clone()))),
        });
        Ok((source, catalogue, warnings))
    }

    /// The catalogue for the next model step.
    pub async fn current(&self, servers: &dyn Connections) -> Result<Arc<Catalogue>, PinError> {
        match &self.0 {
            Source::Fixed(c) => Ok(c.clone()),
            Source::Live {
                pins,
                embedder,
                last,
            } => {
                let mut last = last.lock().await;
                let now = seen(servers);
                if let Some((at, catalogue)) = last.as_ref()
                    && *at == now
                {
                    return Ok(catalogue.clone());
                }
                let (catalogue, _) = snapshot(servers, pins, embedder).await?;
                let catalogue = Arc::new(catalogue);
                *last = Some((now, catalogue.clone()));
                Ok(catalogue)
            }
        }
    }
}
