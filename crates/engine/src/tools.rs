//! Where a turn's catalogue comes from. A snapshot is built from the ready servers' lists
//! with every definition checked against the user's pins; a live source rebuilds it at a
//! model step boundary whenever a server's state or lists moved, so a server that became
//! ready mid-turn joins at the next step and a definition that changed is seen (as drift,
//! which is asked about again) before the model's next call is decided.

use crate::connections::Connections;
use mcp_host_core::{ServerId, ServerState, sanitize::one_line};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use mcp_host_registry::pins::PinCheck;
use mcp_host_registry::schema;
use mcp_host_registry::search::hybrid::Embedder;
use mcp_host_store::pins::{CheckedSchema, PinError, PinStore};
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
    let servers: Vec<&str> = ready.iter().map(|s| s.server.as_str()).collect();
    let (known, checked) = pins.hashes_and_verdicts(schema::CHECKER, &servers).await?;
    let mut catalogue = Catalogue::build_knowing(ready, &checked).with_embedder(embedder.clone());
    catalogue.check_pins_against(pins, &known).await?;
    keep_schema_verdicts(&catalogue, pins).await;
    Ok((catalogue, warnings))
}

/// Keeps with their pins the schemas this snapshot compiled, so the next one (in this
/// process or a later one) offers those tools without compiling them again. Only a saving:
/// a verdict that cannot be kept is compiled for again next time.
async fn keep_schema_verdicts(catalogue: &Catalogue, pins: &PinStore) {
    // Only a definition that is its tool's pin has somewhere to keep the verdict: a drifted
    // one would cost an empty write at every snapshot until accepted.
    let compiled: Vec<CheckedSchema<'_>> = (catalogue.entries().iter())
        .filter(|e| e.schema_checked_now())
        .filter(|e| matches!(e.pin, Some(PinCheck::New | PinCheck::Same)))
        .map(|e| (e.key.server.as_str(), e.key.tool.as_str(), e.hash.as_str()))
        .collect();
    if compiled.is_empty() {
        return;
    }
    if let Err(e) = pins.note_schemas_checked(&compiled, schema::CHECKER).await {
        tracing::warn!("cannot keep which tool schemas compiled: {e}");
    }
}

/// The servers' states and list revisions a catalogue was built at.
type Seen = Vec<(ServerId, &'static str, u64)>;

fn seen(servers: &dyn Connections) -> Seen {
    servers
        .ids()
        .into_iter()
        .filter_map(|id| {
            let (state, revision) = servers.state_and_revision(&id)?;
            Some((id, state, revision))
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
        last: Mutex<Option<Built>>,
    },
}

/// The last catalogue, the servers it was built at, and their count of changes then
/// ([`Connections::changes`]): while that stands still, the servers are not read again.
struct Built {
    at: Seen,
    catalogue: Arc<Catalogue>,
    changes: Option<u64>,
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
        // Counted before the states are read: a change while they are read moves the count
        // past the one kept, and the next step reads them again.
        let changes = servers.changes();
        let at = seen(servers);
        let embedder = Embedder::new();
        let (catalogue, warnings) = snapshot(servers, &pins, &embedder).await?;
        let catalogue = Arc::new(catalogue);
        let source = Self(Source::Live {
            pins,
            embedder,
            last: Mutex::new(Some(Built {
                at,
                catalogue: catalogue.clone(),
                changes,
            })),
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
                // Counted before the states are read, as in `start`.
                let changes = servers.changes();
                if let Some(built) = last.as_ref()
                    && changes.is_some()
                    && built.changes == changes
                {
                    return Ok(built.catalogue.clone());
                }
                let now = seen(servers);
                if let Some(built) = last.as_mut()
                    && built.at == now
                {
                    built.changes = changes;
                    return Ok(built.catalogue.clone());
                }
                let (catalogue, _) = snapshot(servers, pins, embedder).await?;
                let catalogue = Arc::new(catalogue);
                *last = Some(Built {
                    at: now,
                    catalogue: catalogue.clone(),
                    changes,
                });
                Ok(catalogue)
            }
        }
    }
}
