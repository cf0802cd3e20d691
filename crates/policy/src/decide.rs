//! The decision on one tool call: a pure function of the call, the rules, the server's
//! trust, the tool's catalogue facts, the turn's provenance, remembered answers and the
//! mode. Order: deny rules; drift and look-alike names (always ask); taint from another
//! server's output; ask rules; remembered answers; allow rules; believed read-only hints;
//! then the mode's default. Every decision names what decided it.

use crate::rules::Rule;
use mcp_host_core::ServerId;
pub use mcp_host_core::decision::{DecidedBy, Decision, MemoryKey, Mode, Verdict};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// Rules from every scope, already merged (a project file's allow rules are never here).
#[derive(Clone, Debug, Default)]
pub struct Policy {
    pub allow: Vec<Rule>,
    pub ask: Vec<Rule>,
    pub deny: Vec<Rule>,
    /// (from server, to server) pairs for which taint does not apply.
    pub taint_exempt: BTreeSet<(String, String)>,
}

/// The answers currently in force (once, session and always answers alike; their lifetime
/// is the caller's business).
#[derive(Clone, Debug, Default)]
pub struct Remembered {
    pub answers: BTreeMap<MemoryKey, Verdict>,
}

#[derive(Clone, Copy, Debug)]
pub struct Call<'a> {
    pub server: &'a ServerId,
    /// The server's own tool name.
    pub tool: &'a str,
    /// The model-visible name rules are written against.
    pub name: &'a str,
    pub args: &'a Value,
}

/// What the catalogue knows about the tool.
#[derive(Clone, Copy, Debug)]
pub struct ToolFacts<'a> {
    pub definition_hash: &'a str,
    pub drifted: bool,
    pub look_alike: bool,
    /// Phrases in the tool's text that address the model ("ignore previous instructions",
    /// `~/.ssh`, …); empty when none were found.
    pub instruction_phrases: &'a [String],
    pub annotations: Option<&'a Value>,
}

#[derive(Clone, Copy, Debug)]
pub struct Context<'a> {
    pub mode: Mode,
    pub policy: &'a Policy,
    pub server_trusted: bool,
    /// The server runs sandboxed with nothing of the user's to write and no host to reach
    /// (`ServerFacts::sealed`): its calls cannot change anything outside it.
    pub server_sealed: bool,
    pub tool: ToolFacts<'a>,
    /// Servers whose output entered the context since the user last spoke.
    pub provenance: &'a BTreeSet<ServerId>,
    pub remembered: &'a Remembered,
}

/// Annotations as policy reads them: believed only from a trusted server, and then with the
/// spec's pessimistic defaults (missing `destructiveHint` = destructive, missing
/// `openWorldHint` = open world).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hints {
    pub read_only: bool,
    pub destructive: bool,
    pub open_world: bool,
}

pub fn hints(trusted: bool, annotations: Option<&Value>) -> Hints {
    let get = |k: &str| {
        if trusted {
            annotations.and_then(|a| a.get(k)).and_then(Value::as_bool)
        } else {
            None
        }
    };
    Hints {
        read_only: get("readOnlyHint").unwrap_or(false),
        destructive: get("destructiveHint").unwrap_or(true),
        open_world: get("openWorldHint").unwrap_or(true),
    }
}

fn decision(verdict: Verdict, decided_by: DecidedBy, reason: String) -> Decision {
    Decision {
        verdict,
        decided_by,
        reason,
    }
}

pub fn decide(call: Call<'_>, cx: Context<'_>) -> Decision {
    let first = |rules: &[Rule]| {
        rules
            .iter()
            .find(|r| r.matches(call.name, call.args))
            .map(Rule::describe)
    };
    if let Some(rule) = first(&cx.policy.deny) {
        return decision(
            Verdict::Deny,
            DecidedBy::DenyRule { rule: rule.clone() },
            format!("denied by rule {rule}"),
        );
    }
    if cx.tool.drifted {
        let why = format!(
            "`{}` changed since it was first seen; review the change before it runs",
            call.name
        );
        return decision(Verdict::Ask, DecidedBy::Drift, why);
    }
    if cx.tool.look_alike {
        let why = format!(
            "`{}` has a name that looks like another server's tool",
            call.name
        );
        return decision(Verdict::Ask, DecidedBy::LookAlike, why);
    }
    // A server the user trusts vouches for its own text; any other must show it to a person.
    if !cx.tool.instruction_phrases.is_empty() && !cx.server_trusted {
        let why = format!(
            "`{}` has text that reads as instructions to the model ({}); read its description before it runs",
            call.name,
            cx.tool.instruction_phrases.join(", ")
        );
        return decision(Verdict::Ask, DecidedBy::InstructionText, why);
    }
    let h = hints(cx.server_trusted, cx.tool.annotations);
    let trusted_read_only = cx.server_trusted && h.read_only;
    // Read-only by the annotations of a server the user trusts, or by construction: a
    // sealed server's call cannot carry what the context holds anywhere.
    let read_only = trusted_read_only || cx.server_sealed;
    if !read_only
        && let Some(from) = cx.provenance.iter().find(|s| {
            *s != call.server
                && !cx
                    .policy
                    .taint_exempt
                    .contains(&(s.to_string(), call.server.to_string()))
        })
    {
        let why = format!(
            "output from server `{from}` is in this turn's context and this call goes to `{}`",
            call.server
        );
        return decision(
            Verdict::Ask,
            DecidedBy::Taint {
                from: from.to_string(),
            },
            why,
        );
    }
    if let Some(rule) = first(&cx.policy.ask) {
        return decision(
            Verdict::Ask,
            DecidedBy::AskRule { rule: rule.clone() },
            format!("rule {rule} asks"),
        );
    }
    // The key is three copies of text: made only when there is an answer to look for.
    let remembered = (!cx.remembered.answers.is_empty()).then(|| MemoryKey {
        server: call.server.to_string(),
        tool: call.tool.to_string(),
        definition_hash: cx.tool.definition_hash.to_string(),
    });
    if let Some(v) = remembered.and_then(|key| cx.remembered.answers.get(&key)) {
        return decision(
            *v,
            DecidedBy::Remembered,
            "you answered for this exact definition before".into(),
        );
    }
    if let Some(rule) = first(&cx.policy.allow) {
        return decision(
            Verdict::Allow,
            DecidedBy::AllowRule { rule: rule.clone() },
            format!("allowed by rule {rule}"),
        );
    }
    if cx.mode == Mode::Ask && cx.server_sealed {
        return decision(
            Verdict::Allow,
            DecidedBy::Sealed,
            "the server is sandboxed: it can write nothing outside its temp folder and reach no host, so its tools are read-only".into(),
        );
    }
    if cx.mode == Mode::Ask && trusted_read_only {
        return decision(
            Verdict::Allow,
            DecidedBy::ReadOnlyHint,
            "a trusted server marks this tool read-only".into(),
        );
    }
    let (verdict, why) = match cx.mode {
        Mode::Ask => {
            let kind = match (h.destructive, h.open_world) {
                (true, true) => "may change things and reach outside systems",
                (true, false) => "may change things",
                (false, true) => "may reach outside systems",
                (false, false) => "is not known to be read-only",
            };
            (
                Verdict::Ask,
                format!("no rule allows `{}`, and it {kind}", call.name),
            )
        }
        Mode::Auto => (
            Verdict::Allow,
            "auto mode allows what no rule or flag stops".into(),
        ),
        Mode::Deny => (
            Verdict::Deny,
            format!("no rule allows `{}` (deny mode)", call.name),
        ),
    };
    decision(verdict, DecidedBy::Mode { mode: cx.mode }, why)
}
