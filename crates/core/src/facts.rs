//! What the host's configuration says about one server's tools, as opposed to how to reach
//! the server: whether its annotations are believed, whether its tools stay visible, whether
//! unreadable schemas are offered, whether its calls may overlap, and its result caps. The
//! config crate fills it; the catalogue carries it with every entry, so whoever holds an
//! entry can answer these questions without asking the connection layer.

use std::collections::{BTreeMap, BTreeSet};

/// One server's facts. The default is a server configured with none of these keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ServerFacts {
    /// Whether policy may believe this server's annotations. Never true for a project file.
    pub trusted: bool,
    /// `alwaysLoad: true`: visible even in deferred mode.
    pub always_load: bool,
    /// `allowUnvalidated: true`: offer tools whose schema does not compile, unvalidated,
    /// instead of withholding them.
    pub allow_unvalidated: bool,
    /// `false`: this server's calls run one at a time, even trusted read-only ones.
    pub parallel: bool,
    /// The server's result cap in tokens, when configured.
    pub max_result_tokens: Option<u64>,
    /// Per-tool result caps in tokens, by the server's own tool name.
    pub tool_result_tokens: BTreeMap<String, u64>,
    /// The server runs in a strict sandbox this kernel enforces, with nothing of the user's
    /// to write (no roots, no granted writes) and no host to reach: policy treats its
    /// tools as read-only even when their annotations are not believed. Set by the host
    /// when it starts the server, never by a file.
    pub sealed: bool,
    /// Which of the server's tools are offered at all (all of them without one). Shared:
    /// a spec is copied into every state the server goes through.
    pub tool_filter: Option<std::sync::Arc<ToolFilter>>,
}

/// `enabledTools` / `disabledTools`: a tool outside the filter is not in the catalogue, so
/// neither the model nor a person can see or call it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// Only these (by the server's own names), when given.
    pub only: Option<BTreeSet<String>>,
    /// Never these.
    pub except: BTreeSet<String>,
}

impl ToolFilter {
    pub fn offers(&self, tool: &str) -> bool {
        !self.except.contains(tool) && self.only.as_ref().is_none_or(|o| o.contains(tool))
    }
}

impl Default for ServerFacts {
    fn default() -> Self {
        Self {
            trusted: false,
            always_load: false,
            allow_unvalidated: false,
            // Unless a server says otherwise, its trusted read-only calls may overlap.
            parallel: true,
            max_result_tokens: None,
            tool_result_tokens: BTreeMap::new(),
            sealed: false,
            tool_filter: None,
        }
    }
}

impl ServerFacts {
    /// Whether the server's tool `tool` is offered at all.
    pub fn offers(&self, tool: &str) -> bool {
        self.tool_filter.as_ref().is_none_or(|f| f.offers(tool))
    }

    /// The configured result cap for one tool: the tool's own, else the server's.
    pub fn result_tokens(&self, tool: &str) -> Option<u64> {
        self.tool_result_tokens
            .get(tool)
            .copied()
            .or(self.max_result_tokens)
    }
}
