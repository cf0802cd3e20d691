//! Which tools the model sees. When every definition fits the token budget (default 10% of
//! the model's context window) the model sees them all. Otherwise deferred mode: the model
//! sees the `alwaysLoad` servers' tools, the tools it has loaded, and two meta-tools,
//! `search_tools(query, limit)` and `load_tools(names)`; a loaded tool's full definition is
//! visible from the next model request on. Works the same with every provider. Also the
//! list of the host's own tools (`HostTool`), which the host answers itself.

use crate::catalogue::{Catalogue, Entry};
use mcp_host_core::ToolDefinition;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// A tool the host answers itself; a call to one never reaches a server. `ReadResult` is
/// offered by the engine, whose store holds the results it reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostTool {
    SearchTools,
    LoadTools,
    ReadResult,
}

impl HostTool {
    pub const ALL: [Self; 3] = [Self::SearchTools, Self::LoadTools, Self::ReadResult];

    /// The host tool a model's call names, if any. No catalogue name can be one of these
    /// (each is `server__tool`, or ends in a hash), so a call is matched here first.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.name() == name)
    }

    /// The name the model calls it by.
    pub fn name(self) -> &'static str {
        match self {
            Self::SearchTools => "search_tools",
            Self::LoadTools => "load_tools",
            Self::ReadResult => "read_result",
        }
    }
}

/// Share of the context window the always-visible definitions may take.
pub const DEFAULT_BUDGET_SHARE: f64 = 0.10;
const MAX_SEARCH_LIMIT: usize = 20;

/// A rough, provider-neutral token estimate: four bytes of the definition's JSON per token.
pub fn estimate_tokens(definition: &ToolDefinition) -> usize {
    // Strings and JSON values always serialise; a failure would only make the estimate 0.
    serde_json::to_vec(definition)
        .map_or(0, |json| json.len())
        .div_ceil(4)
}

/// The definitions of the two meta-tools.
pub fn meta_tool_definitions() -> Vec<ToolDefinition> {
    vec![
        ToolDefinition {
            name: HostTool::SearchTools.name().into(),
            description: "Search the available tools by what you want to do. Returns tool names with one-line descriptions; call load_tools with the names you need, and they become callable on your next step.".into(),
            input_schema: json!({"type": "object", "properties": {
                "query": {"type": "string", "description": "What you want to do, in plain words"},
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_LIMIT, "default": 5}
            }, "required": ["query"], "additionalProperties": false}),
        },
        ToolDefinition {
            name: HostTool::LoadTools.name().into(),
            description: "Make tools found with search_tools callable, by name. Their full definitions are available from your next step on.".into(),
            input_schema: json!({"type": "object", "properties": {
                "names": {"type": "array", "items": {"type": "string"}, "minItems": 1, "maxItems": 50}
            }, "required": ["names"], "additionalProperties": false}),
        },
    ]
}

/// What one model request carries.
#[derive(Debug)]
pub struct Plan<'c> {
    pub deferred: bool,
    /// Entries whose definitions are sent, in catalogue order.
    pub visible: Vec<&'c Entry>,
}

impl Plan<'_> {
    /// The tool definitions for the provider, meta-tools last.
    pub fn definitions(&self, loaded: &BTreeSet<String>) -> Vec<ToolDefinition> {
        let mut out: Vec<ToolDefinition> = self
            .visible
            .iter()
            .map(|e| e.model_definition(loaded.contains(&e.name)))
            .collect();
        if self.deferred {
            out.extend(meta_tool_definitions());
        }
        out
    }
}

/// Per-conversation state: the budget and what the model has loaded.
#[derive(Clone, Debug)]
pub struct Exposure {
    pub budget_tokens: usize,
    pub loaded: BTreeSet<String>,
}

impl Exposure {
    pub fn for_context_window(context_tokens: usize) -> Self {
        let budget = (context_tokens as f64 * DEFAULT_BUDGET_SHARE) as usize;
        Self {
            budget_tokens: budget,
            loaded: BTreeSet::new(),
        }
    }

    pub fn plan<'c>(&self, catalogue: &'c Catalogue) -> Plan<'c> {
        let callable: Vec<&Entry> = catalogue.entries().iter().filter(|e| e.callable).collect();
        let total: usize = callable
            .iter()
            .map(|e| estimate_tokens(&e.model_definition(false)))
            .sum();
        if total <= self.budget_tokens {
            return Plan {
                deferred: false,
                visible: callable,
            };
        }
        let visible = callable
            .into_iter()
            .filter(|e| e.always_load() || self.loaded.contains(&e.name))
            .collect();
        Plan {
            deferred: true,
            visible,
        }
    }

    /// Runs `search_tools`; the result is what the model reads.
    pub fn search_tools(&self, catalogue: &Catalogue, args: &Value) -> Value {
        let query = args
            .get("query")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let limit = args
            .get("limit")
            .and_then(Value::as_u64)
            .map_or(5, |l| l as usize)
            .clamp(1, MAX_SEARCH_LIMIT);
        let hits: Vec<Value> = catalogue
            .search(query, limit)
            .into_iter()
            .filter(|(e, _)| e.callable)
            .map(|(e, _)| {
                let line = e.description.lines().next().unwrap_or_default();
                let short: String = line.chars().take(200).collect();
                json!({"name": e.name, "description": short, "loaded": self.loaded.contains(&e.name)})
            })
            .collect();
        json!({"tools": hits})
    }

    /// Runs `load_tools`: names that exist and are callable become visible next request.
    pub fn load_tools(&mut self, catalogue: &Catalogue, args: &Value) -> Value {
        let names = args
            .get("names")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let (mut loaded, mut unknown) = (Vec::new(), Vec::new());
        for n in names.iter().filter_map(Value::as_str) {
            match catalogue.get(n).filter(|e| e.callable) {
                Some(e) => {
                    self.loaded.insert(e.name.clone());
                    loaded.push(e.name.clone());
                }
                None => unknown.push(n.to_string()),
            }
        }
        json!({"loaded": loaded, "unknown": unknown, "note": "Loaded tools are callable from your next step."})
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalogue::ServerTools;
    use mcp_host_core::{ServerFacts, ServerId, ToolDescriptor};
    use std::sync::Arc;

    fn catalogue(n: usize, always: bool) -> Catalogue {
        let tools = (0..n)
            .map(|i| ToolDescriptor {
                name: format!("tool_{i}"),
                title: None,
                description: Some(format!("Does thing number {i} with widgets")),
                input_schema: json!({"type": "object"}),
                output_schema: None,
                annotations: None,
            })
            .collect();
        let weather = ToolDescriptor {
            name: "get_forecast".into(),
            title: None,
            description: Some("Weather forecast for a city".into()),
            input_schema: json!({"type": "object"}),
            output_schema: None,
            annotations: None,
        };
        Catalogue::build(vec![
            ServerTools::new(ServerId::new("many"), tools),
            ServerTools {
                facts: Arc::new(ServerFacts {
                    always_load: always,
                    ..ServerFacts::default()
                }),
                ..ServerTools::new(ServerId::new("wx"), vec![weather])
            },
        ])
    }

    #[test]
    fn small_catalogues_are_shown_whole_without_meta_tools() {
        let c = catalogue(3, false);
        let plan = Exposure::for_context_window(200_000).plan(&c);
        assert!(!plan.deferred);
        assert_eq!(plan.definitions(&BTreeSet::new()).len(), 4);
    }

    #[test]
    fn over_budget_defers_then_search_and_load_make_a_tool_visible() {
        let c = catalogue(500, false);
        let mut exposure = Exposure::for_context_window(20_000);
        let plan = exposure.plan(&c);
        assert!(plan.deferred && plan.visible.is_empty());
        let defs = plan.definitions(&exposure.loaded);
        let names: Vec<&str> = defs.iter().map(|d| d.name.as_str()).collect();
        assert_eq!(
            names,
            [HostTool::SearchTools.name(), HostTool::LoadTools.name()]
        );
        let found = exposure.search_tools(&c, &json!({"query": "weather forecast", "limit": 3}));
        assert_eq!(found["tools"][0]["name"], "wx__get_forecast");
        let loaded = exposure.load_tools(&c, &json!({"names": ["wx__get_forecast", "nope"]}));
        assert_eq!(loaded["unknown"], json!(["nope"]));
        let plan = exposure.plan(&c);
        assert_eq!(
            plan.visible
                .iter()
                .map(|e| e.name.as_str())
                .collect::<Vec<_>>(),
            ["wx__get_forecast"]
        );
    }

    #[test]
    fn host_tools_are_found_by_their_names_only() {
        for tool in HostTool::ALL {
            assert_eq!(HostTool::from_name(tool.name()), Some(tool));
        }
        assert_eq!(HostTool::from_name("wx__search_tools"), None);
    }

    #[test]
    fn always_load_servers_stay_visible_in_deferred_mode() {
        let c = catalogue(500, true);
        let plan = Exposure::for_context_window(20_000).plan(&c);
        assert!(plan.deferred);
        assert_eq!(plan.visible.len(), 1);
        assert!(plan.visible[0].always_load());
    }
}
