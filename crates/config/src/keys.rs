//! The keys each part of a config file may hold, and the "did you mean" hint for a key that
//! is none of them (an edit distance over the known keys, ignoring case, `_` and `-`).

use crate::file::{ConfigProblem, Origin, Severity};

/// Top-level keys of an `mcpServers` file.
pub(crate) const TOP_LEVEL: &[&str] = &["mcpServers", "permissions", "hooks", "defaults"];

/// Keys of one server entry: the fields of [`crate::RawServer`] as written (a unit test
/// keeps the two in step).
pub(crate) const SERVER: &[&str] = &[
    "type",
    "command",
    "args",
    "env",
    "cwd",
    "url",
    "headers",
    "enabled",
    "timeout",
    "toolTimeout",
    "trust",
    "alwaysLoad",
    "allowUnvalidated",
    "elicitationDefaults",
    "parallel",
    "maxResultTokens",
    "tools",
    "enabledTools",
    "disabledTools",
    "oauth",
    "sandbox",
];

/// Keys of the `permissions` section.
pub(crate) const PERMISSIONS: &[&str] = &["allow", "ask", "deny", "taintExempt"];

/// Events of the `hooks` section that mcp-host runs.
pub(crate) const HOOK_EVENTS: &[&str] = &["PreToolUse", "PostToolUse"];

/// The known key closest to `word`, when it is close enough to be a likely typo.
pub(crate) fn did_you_mean<'k>(word: &str, known: &[&'k str]) -> Option<&'k str> {
    let norm = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| *c != '_' && *c != '-')
            .flat_map(char::to_lowercase)
            .collect()
    };
    let w = norm(word);
    let (best, distance) = known
        .iter()
        .map(|k| (*k, edit_distance(&w, &norm(k))))
        .min_by_key(|(_, d)| *d)?;
    (distance <= 2.max(w.len() / 3)).then_some(best)
}

/// Levenshtein distance.
fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1];
        for (j, cb) in b.iter().enumerate() {
            let substitute = prev[j] + usize::from(ca != cb);
            cur.push(substitute.min(prev[j + 1] + 1).min(cur[j] + 1));
        }
        prev = cur;
    }
    prev[b.len()]
}

/// The problem for a key that is not one of `known`, under `parent` (dotted, may be empty).
pub(crate) fn unknown(
    origin: Origin<'_>,
    severity: Severity,
    at: (usize, usize),
    parent: &str,
    word: &str,
    known: &[&str],
) -> ConfigProblem {
    let key = if parent.is_empty() {
        word.to_string()
    } else {
        format!("{parent}.{word}")
    };
    let consequence = match severity {
        Severity::Warning => "ignored",
        Severity::Fatal | Severity::Error => "not allowed here",
    };
    let hint = match did_you_mean(word, known) {
        Some(k) => format!("did you mean `{k}`?"),
        None => format!("expected one of {}", quoted(known)),
    };
    origin.problem(
        severity,
        at,
        &key,
        format!("unknown key, {consequence}; {hint}"),
    )
}

fn quoted(keys: &[&str]) -> String {
    keys.iter()
        .map(|k| format!("`{k}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typos_find_the_key_and_strangers_do_not() {
        assert_eq!(did_you_mean("comand", SERVER), Some("command"));
        assert_eq!(did_you_mean("tool_timeout", SERVER), Some("toolTimeout"));
        assert_eq!(did_you_mean("Args", SERVER), Some("args"));
        assert_eq!(did_you_mean("mcpservers", TOP_LEVEL), Some("mcpServers"));
        assert_eq!(did_you_mean("alow", PERMISSIONS), Some("allow"));
        assert_eq!(did_you_mean("globalShortcut", TOP_LEVEL), None);
    }

    #[test]
    fn the_server_keys_are_exactly_the_fields_of_raw_server() {
        let full: crate::RawServer = serde_json::from_value(serde_json::json!({
            "type": "http", "command": "c", "args": ["a"], "env": {"A": "1"}, "cwd": "/",
            "url": "https://x", "headers": {"H": "v"}, "enabled": true, "timeout": 1,
            "toolTimeout": 1, "trust": true, "alwaysLoad": true, "allowUnvalidated": true,
            "elicitationDefaults": true, "parallel": true, "maxResultTokens": 1,
            "tools": {"t": {}}, "oauth": {}, "sandbox": "strict", "enabledTools": ["t"],
            "disabledTools": ["u"]
        }))
        .unwrap();
        let value = serde_json::to_value(full).unwrap();
        let mut written: Vec<&str> = value
            .as_object()
            .unwrap()
            .keys()
            .map(String::as_str)
            .collect();
        let mut known = SERVER.to_vec();
        written.sort_unstable();
        known.sort_unstable();
        // `oauth: {}` serializes as an empty object, so it is present.
        assert_eq!(written, known);
    }
}
