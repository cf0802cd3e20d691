//! Compiling the configuration's permission rules into the gate's policy, for every front end.

use mcp_host_config::{LoadedConfig, RawRule};
use mcp_host_policy::{Condition, Policy, Rule, RuleSource};

/// A rule that loaded but cannot be compiled, located by file and key.
#[derive(Debug, thiserror::Error)]
#[error("{file}: key `{key}`: {why}")]
pub struct RuleError {
    pub file: String,
    pub key: String,
    pub why: String,
}

/// Compiles every scope's rules. The config check already refused rules that cannot work;
/// one that still fails here stops the command (a rule left out could be a deny).
pub fn compile(config: &LoadedConfig) -> Result<Policy, RuleError> {
    let mut policy = Policy::default();
    for (scope, file, perms) in &config.permissions {
        let lists = [
            ("allow", &perms.allow, &mut policy.allow),
            ("ask", &perms.ask, &mut policy.ask),
            ("deny", &perms.deny, &mut policy.deny),
        ];
        for (list, raws, out) in lists {
            for (i, raw) in raws.iter().enumerate() {
                let source = RuleSource {
                    scope: scope.label().into(),
                    file: file.display().to_string(),
                    key: format!("permissions.{list}[{i}]"),
                };
                let compiled = rule(raw, source).map_err(|why| RuleError {
                    file: file.display().to_string(),
                    key: format!("permissions.{list}[{i}]"),
                    why,
                })?;
                out.push(compiled);
            }
        }
        policy.taint_exempt.extend(
            perms
                .taint_exempt
                .iter()
                .map(|t| (t.from.clone(), t.to.clone())),
        );
    }
    Ok(policy)
}

fn rule(raw: &RawRule, source: RuleSource) -> Result<Rule, String> {
    let when = match raw.condition() {
        None => None,
        Some(c) => {
            let set = [
                c.equals.is_some(),
                c.regex.is_some(),
                c.prefix.is_some(),
                c.under.is_some(),
            ];
            if set.iter().filter(|x| **x).count() != 1 {
                return Err("a condition needs exactly one of equals, regex, prefix, under".into());
            }
            let cond = if let Some(v) = &c.equals {
                Condition::Equals(v.clone())
            } else if let Some(r) = &c.regex {
                Condition::Regex(regex_lite(r)?)
            } else if let Some(p) = &c.prefix {
                Condition::Prefix(p.clone())
            } else {
                Condition::Under(c.under.clone().unwrap_or_default())
            };
            Some((c.pointer.clone(), cond))
        }
    };
    Ok(Rule {
        pattern: raw.pattern().to_string(),
        when,
        source,
    })
}

fn regex_lite(pattern: &str) -> Result<regex::Regex, String> {
    // The builder the config loader checked the rule with, so a rule that loaded compiles.
    mcp_host_config::condition_regex(pattern)
}
