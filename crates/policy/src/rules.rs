//! Rules: glob patterns over model-visible tool names (`github__*`, `*__delete_*`),
//! optionally with a condition on one argument (a JSON Pointer compared by equality, regex,
//! prefix, or path-under-directory). Matching is pure and never touches the filesystem.

use regex::Regex;
use serde::Serialize;
use serde_json::Value;

/// Where a rule came from, so a decision can name it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct RuleSource {
    /// `user`, `project`, `local`, `flag`, or `builtin`.
    pub scope: String,
    pub file: String,
    /// e.g. `permissions.deny[2]`.
    pub key: String,
}

#[derive(Clone, Debug)]
pub enum Condition {
    Equals(Value),
    Regex(Regex),
    Prefix(String),
    /// The argument is a path inside this directory (compared lexically, after resolving
    /// `.` and `..`; a relative path never matches).
    Under(String),
}

#[derive(Clone, Debug)]
pub struct Rule {
    pub pattern: String,
    /// JSON Pointer into the arguments and what the value there must satisfy.
    pub when: Option<(String, Condition)>,
    pub source: RuleSource,
}

impl Rule {
    pub fn matches(&self, name: &str, args: &Value) -> bool {
        glob_match(&self.pattern, name)
            && self
                .when
                .as_ref()
                .is_none_or(|(p, c)| condition_holds(args.pointer(p), c))
    }

    /// How the rule reads in an explanation.
    pub fn describe(&self) -> String {
        let cond = match &self.when {
            None => String::new(),
            Some((p, Condition::Equals(v))) => format!(" when {p} == {v}"),
            Some((p, Condition::Regex(r))) => format!(" when {p} matches /{}/", r.as_str()),
            Some((p, Condition::Prefix(s))) => format!(" when {p} starts with {s:?}"),
            Some((p, Condition::Under(d))) => format!(" when {p} is under {d:?}"),
        };
        format!(
            "`{}`{cond} ({} {} {})",
            self.pattern, self.source.scope, self.source.file, self.source.key
        )
    }
}

fn condition_holds(value: Option<&Value>, c: &Condition) -> bool {
    let Some(v) = value else { return false };
    match c {
        Condition::Equals(want) => v == want,
        Condition::Regex(r) => v.as_str().is_some_and(|s| r.is_match(s)),
        Condition::Prefix(p) => v.as_str().is_some_and(|s| s.starts_with(p.as_str())),
        Condition::Under(dir) => v.as_str().is_some_and(|s| path_under(s, dir)),
    }
}

/// Lexical normalisation: `/a/./b/../c` → `/a/c`; `..` above the root stays at the root.
/// `None` for relative paths: without a base they cannot be judged.
pub fn normalize(path: &str) -> Option<Vec<&str>> {
    if !path.starts_with('/') {
        return None;
    }
    let mut out = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                out.pop();
            }
            p => out.push(p),
        }
    }
    Some(out)
}

pub fn path_under(path: &str, dir: &str) -> bool {
    match (normalize(path), normalize(dir)) {
        (Some(p), Some(d)) => p.len() >= d.len() && p[..d.len()] == d[..],
        _ => false,
    }
}

/// `*` matches any run of characters (including none), `?` exactly one; everything else is
/// literal. Model-visible names are ASCII, but this works on characters anyway.
pub fn glob_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let n: Vec<char> = name.chars().collect();
    let (mut pi, mut ni) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while ni < n.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == n[ni]) {
            pi += 1;
            ni += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, ni));
            pi += 1;
        } else if let Some((sp, sn)) = star {
            pi = sp + 1;
            ni = sn + 1;
            star = Some((sp, sn + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn globs() {
        assert!(glob_match("github__*", "github__create_issue"));
        assert!(glob_match("*__delete_*", "fs__delete_file"));
        assert!(!glob_match("*__delete_*", "fs__deleted"));
        assert!(glob_match("fs__read_?ile", "fs__read_file"));
        assert!(glob_match("*", "anything"));
        assert!(!glob_match("git__*", "github__x"));
        assert!(glob_match("a*b*c", "aXbYbZc"));
    }

    #[test]
    fn paths_are_compared_after_resolving_dot_dot() {
        assert!(path_under("/home/u/proj/src/a.rs", "/home/u/proj"));
        assert!(path_under("/home/u/proj", "/home/u/proj/"));
        assert!(!path_under("/home/u/proj/../.ssh/id_rsa", "/home/u/proj"));
        assert!(!path_under("/home/u/project2/x", "/home/u/proj"));
        assert!(!path_under("relative/x", "/home"));
    }

    fn src() -> RuleSource {
        RuleSource {
            scope: "user".into(),
            file: "f".into(),
            key: "k".into(),
        }
    }

    #[test]
    fn conditions_look_at_one_argument() {
        let under = Rule {
            pattern: "fs__*".into(),
            when: Some(("/path".into(), Condition::Under("/tmp".into()))),
            source: src(),
        };
        assert!(under.matches("fs__write", &json!({"path": "/tmp/x"})));
        assert!(!under.matches("fs__write", &json!({"path": "/etc/passwd"})));
        assert!(
            !under.matches("fs__write", &json!({})),
            "a missing argument does not match"
        );
        let re = Rule {
            pattern: "*".into(),
            when: Some((
                "/url".into(),
                Condition::Regex(Regex::new("^https://").unwrap()),
            )),
            source: src(),
        };
        assert!(
            re.matches("x", &json!({"url": "https://a"}))
                && !re.matches("x", &json!({"url": "http://a"}))
        );
        let eq = Rule {
            pattern: "*".into(),
            when: Some(("/force".into(), Condition::Equals(json!(true)))),
            source: src(),
        };
        assert!(
            eq.matches("x", &json!({"force": true})) && !eq.matches("x", &json!({"force": "true"}))
        );
    }
}
