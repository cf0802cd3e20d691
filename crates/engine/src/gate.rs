//! The one gate between a tool call and its server, whoever made the call (the model in a
//! turn, or a person with `mcp-host call` or chat's `/call`) and whichever front end asks:
//! the pure policy decision, then the `PreToolUse` hooks (unless a rule denied), and right
//! before anything is sent a check that the server still offers the definition that was
//! decided on. After the call, the `PostToolUse` hooks. Front ends never decide, run hooks or
//! check definitions themselves, so no path can skip a guard another path has.

use crate::hooks::Hooks;
use crate::tool_facts;
use mcp_host_client::Manager;
use mcp_host_core::{CallOutcome, ServerId};
use mcp_host_policy::{Call, Context, Decision, Mode, Policy, Remembered, Verdict, decide};
use mcp_host_registry::catalogue::Entry;
use serde_json::Value;
use std::collections::BTreeSet;
use std::time::Duration;

/// How long a call waits for a tool list the server announced as changed before it is
/// refused (the refresh is one `tools/list`; this is generous).
pub const LIST_REFRESH_WAIT: Duration = Duration::from_secs(10);

/// The rules and hooks every call passes.
#[derive(Clone, Copy)]
pub struct Gate<'a> {
    pub policy: &'a Policy,
    pub hooks: &'a Hooks,
}

/// What the decision needs besides the rules: the mode, trust, what is in the context, and
/// the answers remembered.
pub struct CallFacts<'a> {
    pub mode: Mode,
    pub trusted: bool,
    pub provenance: &'a BTreeSet<ServerId>,
    pub remembered: &'a Remembered,
}

impl Gate<'_> {
    /// The rules' decision alone, without running any hook (for `policy explain`).
    pub fn rules(&self, entry: &Entry, args: &Value, facts: CallFacts<'_>) -> Decision {
        decide(
            Call {
                server: &entry.key.server,
                tool: &entry.key.tool,
                name: &entry.name,
                args,
            },
            Context {
                mode: facts.mode,
                policy: self.policy,
                server_trusted: facts.trusted,
                tool: tool_facts(entry),
                provenance: facts.provenance,
                remembered: facts.remembered,
            },
        )
    }

    /// The rules' decision, then the hooks' answer (unless a rule denied: a hook may allow
    /// what a rule asks about, never what a rule forbids).
    pub async fn decide(&self, entry: &Entry, args: &Value, facts: CallFacts<'_>) -> Decision {
        let decision = self.rules(entry, args, facts);
        if decision.verdict == Verdict::Deny {
            return decision;
        }
        self.hooks
            .pre_tool_use(&entry.name, args)
            .await
            .unwrap_or(decision)
    }

    /// Runs the `PostToolUse` hooks on a result; the reasons of those that objected.
    pub async fn after(&self, entry: &Entry, args: &Value, outcome: &CallOutcome) -> Vec<String> {
        self.hooks.post_tool_use(&entry.name, args, outcome).await
    }
}

/// Whether the host believes this server's annotations (`trust: true` in its config).
pub fn trusted(manager: &Manager, server: &ServerId) -> bool {
    manager.spec(server).is_some_and(|s| s.trusted)
}

/// Right before sending: the server's current definition of the tool must be the one the
/// decision was made on. A change the server announced is waited for (the refresh is in
/// flight); a definition that differs, a tool that is gone, or a list that did not arrive
/// refuses the call, with the reason. The caller's next look at the catalogue sees the new
/// definition as drift, which is asked about again.
pub async fn still_current(manager: &Manager, entry: &Entry) -> Result<(), String> {
    let list = manager
        .current_tools(&entry.key.server, LIST_REFRESH_WAIT)
        .await
        .map_err(|e| format!("not sent: {e}"))?;
    let Some(tool) = list.items.iter().find(|t| t.name == entry.key.tool) else {
        return Err(format!(
            "not sent: server `{}` no longer offers `{}`",
            entry.key.server, entry.key.tool
        ));
    };
    // The entry keeps the descriptor exactly as the server sent it, and the hash covers
    // every one of its fields: comparing the descriptors is the same test as comparing
    // hashes, at a fraction of the cost (no canonical JSON, no SHA-256 per call).
    if tool != &entry.tool {
        return Err(format!(
            "not sent: the definition of `{}` changed after it was decided on; it must be checked (and approved) again",
            entry.name
        ));
    }
    Ok(())
}
