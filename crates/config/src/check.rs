//! The `permissions` and `hooks` sections, read and checked at load time so that a rule or
//! hook that could not work is a located, fatal problem instead of a rule silently left out
//! when the commands compile it: a condition needs exactly one test, a JSON Pointer, a regex
//! that compiles (with the same limits the policy uses), an absolute `under` directory; a
//! glob uses only `*`, `?` and the characters of model-visible names; a hook matcher is a
//! regex and a hook is a `command`.

use crate::file::{ConfigProblem, Entries, Located, Origin, Severity};
use crate::permissions::{RawCondition, RawHooks, RawPermissions, RawRule};
use regex::Regex;
use serde_json::value::RawValue;

/// The size limit of a condition's compiled regex: a rule must not be able to make every
/// call expensive.
const REGEX_SIZE_LIMIT: usize = 1 << 20;

/// Compiles a condition's `regex` exactly as the policy does (one builder for both).
pub fn condition_regex(pattern: &str) -> Result<Regex, String> {
    regex::RegexBuilder::new(pattern)
        .size_limit(REGEX_SIZE_LIMIT)
        .build()
        .map_err(|e| format!("bad regex: {e}"))
}

/// Compiles a hook's `matcher`: a regex over the whole model-visible tool name; empty or
/// `*` matches every tool (`None`).
pub fn hook_matcher(matcher: &str) -> Result<Option<Regex>, String> {
    match matcher {
        "" | "*" => Ok(None),
        re => Regex::new(&format!("^(?:{re})$"))
            .map(Some)
            .map_err(|e| format!("the matcher is not a regex: {e}")),
    }
}

/// Why a rule cannot work: (key below the rule, message).
fn check_rule(rule: &RawRule) -> Result<(), (&'static str, String)> {
    let pattern = rule.pattern();
    let key = match rule {
        RawRule::Pattern(_) => "",
        RawRule::Detailed { .. } => "tool",
    };
    if pattern.is_empty() {
        return Err((key, "an empty pattern matches no tool".into()));
    }
    // Model-visible names are `[A-Za-z0-9_-]`: a pattern with anything else (a regex such as
    // `github__.*`) matches no tool, and a deny rule that matches nothing protects nothing.
    if let Some(c) = pattern
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '*' | '?')))
    {
        return Err((
            key,
            format!(
                "`{c}` is never in a model-visible tool name ([A-Za-z0-9_-]), so this pattern matches no tool; patterns are globs with only `*` and `?`"
            ),
        ));
    }
    match rule.condition() {
        None => Ok(()),
        Some(c) => check_condition(c),
    }
}

fn check_condition(c: &RawCondition) -> Result<(), (&'static str, String)> {
    if !(c.pointer.is_empty() || c.pointer.starts_with('/')) {
        return Err((
            "when.pointer",
            format!(
                "`{}` is not a JSON Pointer (it starts with `/`, e.g. `/path`)",
                c.pointer
            ),
        ));
    }
    let tests = [
        c.equals.is_some(),
        c.regex.is_some(),
        c.prefix.is_some(),
        c.under.is_some(),
    ];
    if tests.iter().filter(|t| **t).count() != 1 {
        return Err((
            "when",
            "a condition needs exactly one of `equals`, `regex`, `prefix`, `under`".into(),
        ));
    }
    if let Some(r) = &c.regex {
        condition_regex(r).map_err(|e| ("when.regex", e))?;
    }
    if let Some(dir) = &c.under
        && !dir.starts_with('/')
    {
        return Err((
            "when.under",
            format!("`{dir}` is not an absolute directory, so no path would ever be under it"),
        ));
    }
    Ok(())
}

fn join(parent: &str, sub: &str) -> String {
    if sub.is_empty() {
        parent.to_string()
    } else {
        format!("{parent}.{sub}")
    }
}

/// Reads and checks `permissions`; every problem in it is fatal.
pub(crate) fn permissions(
    origin: Origin<'_>,
    raw: &RawValue,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Located<RawPermissions>> {
    let before = problems.len();
    for (key, value) in section_fields(origin, raw, "permissions", problems)? {
        let at = origin.at(value);
        let full = format!("permissions.{key}");
        match key.as_str() {
            "allow" | "ask" | "deny" => {
                let rules: Vec<&RawValue> = match origin.parse(FATAL, value, &full) {
                    Ok(r) => r,
                    Err(p) => {
                        problems.push(p);
                        continue;
                    }
                };
                for (i, rule) in rules.into_iter().enumerate() {
                    let rule_key = format!("{full}[{i}]");
                    match origin.parse::<RawRule>(FATAL, rule, &rule_key) {
                        Ok(r) => {
                            if let Err((sub, message)) = check_rule(&r) {
                                let key = join(&rule_key, sub);
                                problems.push(origin.problem(
                                    FATAL,
                                    origin.at(rule),
                                    &key,
                                    message,
                                ));
                            }
                        }
                        Err(p) => problems.push(p),
                    }
                }
            }
            "taintExempt" => {
                if let Err(p) = origin.parse::<Vec<crate::TaintExempt>>(FATAL, value, &full) {
                    problems.push(p);
                }
            }
            other => problems.push(crate::keys::unknown(
                origin,
                FATAL,
                at,
                "permissions",
                other,
                crate::keys::PERMISSIONS,
            )),
        }
    }
    typed_section(origin, raw, "permissions", before, problems)
}

/// Reads and checks `hooks`; every problem in it is fatal (a hook that is not run guards
/// nothing, and its author believes it does).
pub(crate) fn hooks(
    origin: Origin<'_>,
    raw: &RawValue,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Located<RawHooks>> {
    let before = problems.len();
    for (event, value) in section_fields(origin, raw, "hooks", problems)? {
        let at = origin.at(value);
        let key = format!("hooks.{event}");
        if !crate::keys::HOOK_EVENTS.contains(&event.as_str()) {
            let mut p =
                crate::keys::unknown(origin, FATAL, at, "hooks", &event, crate::keys::HOOK_EVENTS);
            p.message = format!(
                "{} (mcp-host runs only PreToolUse and PostToolUse hooks)",
                p.message
            );
            problems.push(p);
            continue;
        }
        let matchers: Vec<&RawValue> = match origin.parse(FATAL, value, &key) {
            Ok(m) => m,
            Err(p) => {
                problems.push(p);
                continue;
            }
        };
        for (i, m) in matchers.into_iter().enumerate() {
            let m_key = format!("{key}[{i}]");
            let matcher = match origin.parse::<crate::HookMatcher>(FATAL, m, &m_key) {
                Ok(matcher) => matcher,
                Err(p) => {
                    problems.push(p);
                    continue;
                }
            };
            if let Err(e) = hook_matcher(&matcher.matcher) {
                problems.push(origin.problem(FATAL, origin.at(m), &format!("{m_key}.matcher"), e));
            }
            for (j, h) in matcher.hooks.iter().enumerate() {
                if h.kind != "command" {
                    problems.push(origin.problem(
                        FATAL,
                        origin.at(m),
                        &format!("{m_key}.hooks[{j}].type"),
                        format!(
                            "mcp-host runs only `command` hooks; this `{}` hook would never run",
                            h.kind
                        ),
                    ));
                }
            }
        }
    }
    typed_section(origin, raw, "hooks", before, problems)
}

/// The fields of a fatal section (`permissions`, `hooks`), each once: a key that appears
/// twice is a problem (serde would keep the second silently). `None` when the section is
/// not an object.
fn section_fields<'a>(
    origin: Origin<'_>,
    raw: &'a RawValue,
    section: &str,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Vec<(String, &'a RawValue)>> {
    let fields: Entries<'a> = match origin.parse(FATAL, raw, section) {
        Ok(f) => f,
        Err(p) => {
            problems.push(p);
            return None;
        }
    };
    let mut once: Vec<(String, &RawValue)> = Vec::new();
    for (key, value) in fields.0 {
        if once.iter().any(|(k, _)| *k == key) {
            problems.push(origin.problem(
                FATAL,
                origin.at(value),
                &format!("{section}.{key}"),
                "appears twice; the second would replace the first",
            ));
            continue;
        }
        once.push((key, value));
    }
    Some(once)
}

/// The checked section as its typed value, unless checking it found problems (counted
/// from `before`).
fn typed_section<T: serde::de::DeserializeOwned>(
    origin: Origin<'_>,
    raw: &RawValue,
    section: &str,
    before: usize,
    problems: &mut Vec<ConfigProblem>,
) -> Option<Located<T>> {
    if problems.len() > before {
        return None;
    }
    let (line, column) = origin.at(raw);
    match origin.parse::<T>(FATAL, raw, section) {
        Ok(value) => Some(Located {
            value,
            line,
            column,
        }),
        Err(p) => {
            problems.push(p);
            None
        }
    }
}

/// Everything wrong in `permissions` and `hooks` stops the commands that make calls.
const FATAL: Severity = Severity::Fatal;
