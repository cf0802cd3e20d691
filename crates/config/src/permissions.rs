//! Permission rules as written in a config file:
//!
//! ```json
//! "permissions": {
//!   "allow": ["time__*", {"tool": "fs__read_*", "when": {"pointer": "/path", "under": "/home/me/src"}}],
//!   "ask":   ["*__write_*"],
//!   "deny":  ["*__delete_*", {"tool": "fetch__fetch", "when": {"pointer": "/url", "prefix": "http://"}}],
//!   "taintExempt": [{"from": "git", "to": "time"}]
//! }
//! ```
//!
//! This module reads them; `check` rejects at load time what could not work, and the
//! policy crate compiles them.

use serde::Deserialize;
use serde_json::Value;

/// One rule: a glob over model-visible names, with an optional argument condition.
#[derive(Clone, Debug, PartialEq)]
pub enum RawRule {
    Pattern(String),
    Detailed {
        tool: String,
        when: Option<RawCondition>,
    },
}

impl RawRule {
    pub fn pattern(&self) -> &str {
        match self {
            Self::Pattern(p) | Self::Detailed { tool: p, .. } => p,
        }
    }

    pub fn condition(&self) -> Option<&RawCondition> {
        match self {
            Self::Pattern(_) => None,
            Self::Detailed { when, .. } => when.as_ref(),
        }
    }
}

/// The object form of a rule. Unknown keys are errors: a misspelt `when` would otherwise
/// turn a narrow allow rule into one for every call of the tool.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct DetailedRule {
    tool: String,
    #[serde(default)]
    when: Option<RawCondition>,
}

// By hand rather than `untagged`, so that a mistake inside the object form keeps its own
// message and path instead of "did not match any variant".
impl<'de> Deserialize<'de> for RawRule {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = RawRule;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a pattern string or {\"tool\": ..., \"when\": {...}}")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<RawRule, E> {
                Ok(RawRule::Pattern(v.to_string()))
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<RawRule, A::Error> {
                let d =
                    DetailedRule::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(RawRule::Detailed {
                    tool: d.tool,
                    when: d.when,
                })
            }
        }
        d.deserialize_any(Visit)
    }
}

/// Exactly one of `equals`, `regex`, `prefix`, `under` is expected.
#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawCondition {
    pub pointer: String,
    #[serde(default)]
    pub equals: Option<Value>,
    #[serde(default)]
    pub regex: Option<String>,
    #[serde(default)]
    pub prefix: Option<String>,
    #[serde(default)]
    pub under: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TaintExempt {
    pub from: String,
    pub to: String,
}

#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct RawPermissions {
    #[serde(default)]
    pub allow: Vec<RawRule>,
    #[serde(default)]
    pub ask: Vec<RawRule>,
    #[serde(default)]
    pub deny: Vec<RawRule>,
    #[serde(default)]
    pub taint_exempt: Vec<TaintExempt>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_patterns_or_patterns_with_a_condition() {
        let p: RawPermissions = serde_json::from_str(
            r#"{"allow": ["time__*", {"tool": "fs__read_*", "when": {"pointer": "/path", "under": "/src"}}],
                "taintExempt": [{"from": "git", "to": "time"}]}"#,
        )
        .unwrap();
        assert_eq!(p.allow[0].pattern(), "time__*");
        assert_eq!(
            p.allow[1].condition().unwrap().under.as_deref(),
            Some("/src")
        );
        assert_eq!(p.taint_exempt[0].to, "time");
        assert!(
            serde_json::from_str::<RawPermissions>(r#"{"alow": []}"#).is_err(),
            "typos are errors"
        );
        let typo = serde_json::from_str::<RawRule>(r#"{"tool": "fs__*", "whne": {}}"#);
        assert!(
            typo.unwrap_err()
                .to_string()
                .contains("unknown field `whne`")
        );
    }
}

/// Hooks in Claude Code's shape:
/// `"hooks": {"PreToolUse": [{"matcher": "github__.*", "hooks": [{"type": "command", "command": "...", "timeout": 10}]}]}`.
/// `matcher` is a regex over the model-visible tool name (empty or `*` matches every tool);
/// `timeout` is in seconds.
#[derive(Clone, Debug, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RawHooks {
    #[serde(rename = "PreToolUse", default)]
    pub pre_tool_use: Vec<HookMatcher>,
    #[serde(rename = "PostToolUse", default)]
    pub post_tool_use: Vec<HookMatcher>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookMatcher {
    #[serde(default)]
    pub matcher: String,
    pub hooks: Vec<HookCommand>,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HookCommand {
    #[serde(rename = "type", default = "command_type")]
    pub kind: String,
    pub command: String,
    #[serde(default)]
    pub timeout: Option<u64>,
}

fn command_type() -> String {
    "command".into()
}
