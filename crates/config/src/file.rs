//! Parsing one `mcpServers` file into per-server raw entries, each with its position in the
//! file, so that one broken server is reported precisely and the others still load. Each
//! problem carries a severity: a file that cannot be read as written (or whose rules
//! cannot) is fatal, a broken server entry drops that server, an unknown key is a warning.

use crate::describe::visible;
use crate::permissions::{RawHooks, RawPermissions};
use crate::server::RawServer;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::cell::Cell;
use std::fmt;
use std::path::{Path, PathBuf};

/// How bad a problem is; it decides what a command does about it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// The file, or a rule or hook in it, cannot be read as written. A rule that cannot be
    /// read might have forbidden a call, so every command that could make one refuses.
    Fatal,
    /// One server entry is dropped; the rest of the file applies.
    Error,
    /// Ignored as written (an unknown key); everything else applies.
    Warning,
}

impl Severity {
    /// How the problem is introduced on stderr.
    pub fn label(self) -> &'static str {
        match self {
            Self::Fatal | Self::Error => "error",
            Self::Warning => "warning",
        }
    }
}

/// A problem in a config file, located as precisely as the parser allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    pub severity: Severity,
    pub file: PathBuf,
    /// 1-based; 0 when the file could not be read at all.
    pub line: usize,
    pub column: usize,
    /// Dotted path of the offending key, e.g. `mcpServers.git.args`; empty for syntax errors.
    pub key: String,
    pub message: String,
}

impl ConfigProblem {
    pub(crate) fn new(
        severity: Severity,
        file: &Path,
        (line, column): (usize, usize),
        key: &str,
        message: impl Into<String>,
    ) -> Self {
        Self {
            severity,
            file: file.to_path_buf(),
            line,
            column,
            key: key.to_string(),
            message: message.into(),
        }
    }

    pub fn is_fatal(&self) -> bool {
        self.severity == Severity::Fatal
    }
}

// Keys and messages quote the file, which may be a cloned repository's: what reaches the
// terminal has its control and invisible characters escaped.
impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", visible(&self.file.display().to_string()))?;
        if self.line > 0 {
            write!(f, ":{}:{}", self.line, self.column)?;
        }
        if !self.key.is_empty() {
            write!(f, ": key `{}`", visible(&self.key))?;
        }
        write!(f, ": {}", visible(&self.message))
    }
}

impl std::error::Error for ConfigProblem {}

/// A value together with where it was found.
#[derive(Clone, Debug, PartialEq)]
pub struct Located<T> {
    pub value: T,
    pub line: usize,
    pub column: usize,
}

/// One parsed file: the servers that parsed, and a problem for each one that did not.
#[derive(Clone, Debug, Default)]
pub struct ConfigFile {
    pub servers: Vec<(String, Located<RawServer>)>,
    pub permissions: Option<Located<RawPermissions>>,
    pub hooks: Option<Located<RawHooks>>,
    pub defaults: Option<Located<RawDefaults>>,
    pub problems: Vec<ConfigProblem>,
}

/// `"defaults"`: what the interactive and headless hosts use when the command line does not
/// say. Read from the user's own files only: a cloned project choosing the model's address
/// or the approval mode would be choosing where prompts go and what runs unasked.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RawDefaults {
    /// `provider:model`, as `-m` takes it.
    pub model: Option<String>,
    /// The model API's base URL, as `--base-url` takes it.
    pub base_url: Option<String>,
    /// The interactive host's mode: `ask`, `auto` or `deny`.
    pub mode: Option<DefaultMode>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DefaultMode {
    Ask,
    Auto,
    Deny,
}

/// The members of a JSON object in order, duplicates kept (a map would keep only the last
/// of two `permissions` keys, silently dropping the first one's rules).
pub(crate) struct Entries<'a>(pub(crate) Vec<(String, &'a RawValue)>);

impl<'de> Deserialize<'de> for Entries<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Entries<'de>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> Result<Self::Value, A::Error> {
                let mut out = Vec::new();
                while let Some(entry) = map.next_entry::<String, &'de RawValue>()? {
                    out.push(entry);
                }
                Ok(Entries(out))
            }
        }
        d.deserialize_map(Visit)
    }
}

/// Where one JSON fragment sits in the whole file, for locating problems inside it.
#[derive(Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) file: &'a Path,
    pub(crate) full: &'a str,
    /// The last place located: its byte offset, line and column. Fragments are located
    /// mostly in the order they come in the file, so each count goes on from the one before
    /// instead of from the start (every server's entry is located: counting from the start
    /// made a file's cost grow with the square of its servers).
    last: &'a Cell<(usize, usize, usize)>,
}

impl Origin<'_> {
    /// Line and column of a fragment of the file.
    pub(crate) fn at(&self, raw: &RawValue) -> (usize, usize) {
        let offset = offset_in(self.full, raw.get());
        let from = match self.last.get() {
            last @ (before, _, _) if before <= offset => last,
            _ => (0, 1, 1),
        };
        let (line, column) = position_from(self.full, offset, from);
        self.last.set((offset, line, column));
        (line, column)
    }

    pub(crate) fn problem(
        &self,
        severity: Severity,
        at: (usize, usize),
        key: &str,
        message: impl Into<String>,
    ) -> ConfigProblem {
        ConfigProblem::new(severity, self.file, at, key, message)
    }

    /// Deserializes `raw`; an error is located in the file and keyed below `key`.
    pub(crate) fn parse<'a, T: Deserialize<'a>>(
        &self,
        severity: Severity,
        raw: &'a RawValue,
        key: &str,
    ) -> Result<T, ConfigProblem> {
        let de = &mut serde_json::Deserializer::from_str(raw.get());
        serde_path_to_error::deserialize::<_, T>(de).map_err(|e| {
            let sub = path_or_empty(e.path());
            let inner = e.into_inner();
            let at = shift(self.at(raw), inner.line(), inner.column());
            let key = match (key.is_empty(), sub.is_empty()) {
                (_, true) => key.to_string(),
                (true, false) => sub,
                (false, false) => format!("{key}.{sub}"),
            };
            self.problem(severity, at, &key, describe(&inner))
        })
    }
}

/// Parses `text` (the contents of `file`). Syntax errors make the whole file a problem; a
/// server whose entry has a wrong shape becomes a problem of its own.
pub fn parse_config_text(file: &Path, text: &str) -> ConfigFile {
    // Windows editors start UTF-8 files with a byte-order mark, which JSON does not allow.
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    parse_config_slice(file, text, text)
}

/// Like [`parse_config_text`] for an object nested inside a larger file: `slice` must point
/// into `full`, and positions are reported relative to `full`.
pub(crate) fn parse_config_slice(file: &Path, full: &str, slice: &str) -> ConfigFile {
    let last = Cell::new((0, 1, 1));
    let origin = Origin {
        file,
        full,
        last: &last,
    };
    let mut out = ConfigFile::default();
    if slice.trim().is_empty() {
        return out;
    }
    let top: Entries<'_> = match serde_json::from_str(slice) {
        Ok(top) => top,
        Err(e) => {
            let problem = match crate::foreign::recognise(slice) {
                Some((line, key, message)) => {
                    let (l, c) = shift(position_of(full, slice), line, 1);
                    origin.problem(Severity::Fatal, (l, c), key, message)
                }
                None => {
                    let at = shift(position_of(full, slice), e.line(), e.column());
                    origin.problem(Severity::Fatal, at, "", describe(&e))
                }
            };
            out.problems.push(problem);
            return out;
        }
    };
    let has_servers = top.0.iter().any(|(k, _)| k == "mcpServers");
    let mut seen: Vec<&str> = Vec::new();
    for (key, raw) in &top.0 {
        if seen.contains(&key.as_str()) {
            out.problems.push(origin.problem(
                Severity::Fatal,
                origin.at(raw),
                key,
                "appears twice in the file; the second would silently replace the first",
            ));
            continue;
        }
        seen.push(key);
        match key.as_str() {
            "mcpServers" => servers(origin, raw, &mut out),
            "permissions" => {
                out.permissions = crate::check::permissions(origin, raw, &mut out.problems)
            }
            "hooks" => out.hooks = crate::check::hooks(origin, raw, &mut out.problems),
            "defaults" => match origin.parse::<RawDefaults>(Severity::Error, raw, "defaults") {
                Ok(value) => {
                    let (line, column) = origin.at(raw);
                    out.defaults = Some(Located {
                        value,
                        line,
                        column,
                    });
                }
                Err(p) => out.problems.push(p),
            },
            // Editors' schema hints are not configuration.
            "$schema" => {}
            "servers" if !has_servers => out.problems.push(origin.problem(
                Severity::Fatal,
                origin.at(raw),
                key,
                crate::foreign::VSCODE,
            )),
            other => out.problems.push(crate::keys::unknown(
                origin,
                Severity::Warning,
                origin.at(raw),
                "",
                other,
                crate::keys::TOP_LEVEL,
            )),
        }
    }
    out
}

fn servers(origin: Origin<'_>, raw: &RawValue, out: &mut ConfigFile) {
    let entries: Entries<'_> = match origin.parse(Severity::Fatal, raw, "mcpServers") {
        Ok(e) => e,
        Err(p) => return out.problems.push(p),
    };
    for (name, raw) in entries.0 {
        let (line, column) = origin.at(raw);
        let key = format!("mcpServers.{name}");
        if out.servers.iter().any(|(n, _)| *n == name) {
            out.problems.push(origin.problem(
                Severity::Error,
                (line, column),
                &key,
                "the server is defined twice in this file; only the first definition applies",
            ));
            continue;
        }
        // Unknown keys would be ignored silently by the typed parse: say so, with a guess.
        if let Ok(fields) = serde_json::from_str::<Entries<'_>>(raw.get()) {
            for (field, value) in &fields.0 {
                if !crate::keys::SERVER.contains(&field.as_str()) {
                    out.problems.push(crate::keys::unknown(
                        origin,
                        Severity::Warning,
                        origin.at(value),
                        &key,
                        field,
                        crate::keys::SERVER,
                    ));
                }
            }
        }
        match origin.parse::<RawServer>(Severity::Error, raw, &key) {
            Ok(server) => out.servers.push((
                name,
                Located {
                    value: server,
                    line,
                    column,
                },
            )),
            Err(p) => out.problems.push(p),
        }
    }
}

/// Converts a position inside a slice that starts at `base` into one in the whole file.
pub(crate) fn shift(base: (usize, usize), line: usize, column: usize) -> (usize, usize) {
    if line <= 1 {
        (base.0, base.1 + column.saturating_sub(1))
    } else {
        (base.0 + line - 1, column)
    }
}

fn path_or_empty(path: &serde_path_to_error::Path) -> String {
    let s = path.to_string();
    if s == "." { String::new() } else { s }
}

fn describe(e: &serde_json::Error) -> String {
    // serde_json appends " at line X column Y"; we print the position ourselves.
    let msg = e.to_string();
    match msg.rfind(" at line ") {
        Some(i) => msg[..i].to_string(),
        None => msg,
    }
}

/// Line and column (1-based) of `slice`, which must point into `text`.
pub(crate) fn position_of(text: &str, slice: &str) -> (usize, usize) {
    position_from(text, offset_in(text, slice), (0, 1, 1))
}

/// Where `slice`, which must point into `text`, starts in it.
fn offset_in(text: &str, slice: &str) -> usize {
    (slice.as_ptr() as usize)
        .saturating_sub(text.as_ptr() as usize)
        .min(text.len())
}

/// Line and column (1-based) of byte `offset` of `text`, counting from `from`: an earlier
/// offset with its line and column. Only the text between the two is read (a file may be
/// one long line).
fn position_from(
    text: &str,
    offset: usize,
    (start, line, column): (usize, usize, usize),
) -> (usize, usize) {
    let between = &text[start..offset];
    let newlines = between.bytes().filter(|&b| b == b'\n').count();
    let column = match between.rfind('\n') {
        Some(at) => between[at + 1..].chars().count() + 1,
        None => column + between.chars().count(),
    };
    (line + newlines, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ConfigFile {
        parse_config_text(Path::new("/p/.mcp.json"), text)
    }

    /// Every server is located where it is, whether fragments are located in the file's
    /// order (each count going on from the last) or back before one located already.
    #[test]
    fn servers_are_located_in_order_and_out_of_it() {
        let entries: Vec<String> = (0..40)
            .map(|i| format!("{}\"s{i}\": {{\"command\": \"x\"}}", " ".repeat(i % 7)))
            .collect();
        let text = format!("{{\"mcpServers\": {{\n{}\n}}}}", entries.join(",\n"));
        let f = parse(&text);
        assert_eq!(f.servers.len(), 40);
        for (i, (name, located)) in f.servers.iter().enumerate() {
            assert_eq!(name, &format!("s{i}"));
            let expected_column = i % 7 + name.len() + 5;
            assert_eq!(
                (located.line, located.column),
                (i + 2, expected_column),
                "{name}"
            );
        }
        let last = Cell::new((0, 1, 1));
        let origin = Origin {
            file: Path::new("/p/.mcp.json"),
            full: &text,
            last: &last,
        };
        let top: Entries<'_> = serde_json::from_str(&text).unwrap();
        let servers: Entries<'_> = serde_json::from_str(top.0[0].1.get()).unwrap();
        for i in [30, 3, 39, 0, 17, 17] {
            let (_, raw) = &servers.0[i];
            assert_eq!(origin.at(raw), position_of(&text, raw.get()), "{i}");
            assert_eq!(origin.at(raw).0, i + 2, "{i}");
        }
        // One line: columns go on from the last one located.
        let one_line = text.replace('\n', " ");
        let f = parse(&one_line);
        for (name, located) in &f.servers {
            let at = one_line.find(&format!("\"{name}\"")).unwrap() + name.len() + 5;
            assert_eq!((located.line, located.column), (1, at), "{name}");
        }
    }

    #[test]
    fn syntax_error_names_file_line_and_column() {
        let f = parse("{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}");
        assert!(f.servers.is_empty());
        let p = &f.problems[0];
        assert_eq!((p.line, p.file.to_str()), (3, Some("/p/.mcp.json")));
        assert!(p.column > 20, "column {}", p.column);
        assert!(p.to_string().starts_with("/p/.mcp.json:3:"), "{p}");
    }

    #[test]
    fn a_wrongly_typed_key_drops_only_its_server_and_names_the_key() {
        let text = "{\"mcpServers\": {\n  \"good\": {\"command\": \"echo\"},\n  \"bad\": {\n    \"command\": \"x\",\n    \"args\": \"not-a-list\"\n  }\n}}";
        let f = parse(text);
        assert_eq!(f.servers.len(), 1);
        assert_eq!(f.servers[0].0, "good");
        let p = &f.problems[0];
        assert_eq!(p.key, "mcpServers.bad.args");
        assert_eq!(p.line, 5);
        assert!(p.message.contains("expected a sequence"), "{}", p.message);
    }

    #[test]
    fn records_where_each_server_starts() {
        let f = parse("{\"mcpServers\": {\n\n  \"a\": {\"command\": \"x\"}}}");
        assert_eq!((f.servers[0].1.line, f.servers[0].1.column), (3, 8));
    }

    #[test]
    fn a_wrong_top_level_shape_is_one_problem() {
        let f = parse("{\"mcpServers\": []}");
        assert_eq!(f.problems.len(), 1);
        assert_eq!(f.problems[0].key, "mcpServers");
    }

    #[test]
    fn files_without_servers_and_empty_files_are_fine() {
        assert!(parse("").problems.is_empty());
        let f = parse("{\"other\": 1, \"$schema\": \"x\"}");
        assert!(f.servers.is_empty());
        assert!(
            f.problems.iter().all(|p| p.severity == Severity::Warning),
            "{:?}",
            f.problems
        );
    }

    fn fatal(text: &str) -> Vec<ConfigProblem> {
        let f = parse(text);
        let fatal: Vec<ConfigProblem> = f
            .problems
            .into_iter()
            .filter(ConfigProblem::is_fatal)
            .collect();
        assert!(!fatal.is_empty(), "expected a fatal problem in {text}");
        fatal
    }

    #[test]
    fn a_byte_order_mark_is_not_a_syntax_error() {
        let f = parse("\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}}}");
        assert!(f.problems.is_empty(), "{:?}", f.problems);
        assert_eq!(f.servers.len(), 1);
    }

    #[test]
    fn a_syntax_error_is_fatal() {
        let p = &fatal("{\"permissions\": {\"deny\": [\"*\"],}}")[0];
        assert_eq!((p.line, p.severity), (1, Severity::Fatal));
    }

    #[test]
    fn unknown_server_keys_warn_with_a_guess_and_the_server_still_loads() {
        let f = parse(
            "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n  \"tool_timeout\": 5, \"colour\": 1}},\n \"mcpservers\": {}}",
        );
        assert_eq!(f.servers.len(), 1);
        let keys: Vec<(&str, Severity, usize)> = f
            .problems
            .iter()
            .map(|p| (p.key.as_str(), p.severity, p.line))
            .collect();
        assert_eq!(
            keys,
            [
                ("mcpServers.a.tool_timeout", Severity::Warning, 2),
                ("mcpServers.a.colour", Severity::Warning, 2),
                ("mcpservers", Severity::Warning, 3)
            ]
        );
        assert!(
            f.problems[0]
                .message
                .contains("did you mean `toolTimeout`?"),
            "{}",
            f.problems[0]
        );
        assert!(
            f.problems[2].message.contains("did you mean `mcpServers`?"),
            "{}",
            f.problems[2]
        );
    }

    #[test]
    fn unknown_keys_under_permissions_and_hooks_are_fatal() {
        let p = &fatal("{\"permissions\": {\"deny\": [], \"denny\": [\"*\"]}}")[0];
        assert_eq!(p.key, "permissions.denny");
        assert!(p.message.contains("did you mean `deny`?"), "{p}");
        let p = &fatal("{\"hooks\": {\"PreToolUse\": [], \"Stop\": []}}")[0];
        assert_eq!(p.key, "hooks.Stop");
        let p = &fatal(r#"{"hooks": {"PreToolUse": [{"matcher": "x", "hook": []}]}}"#)[0];
        assert!(p.key.starts_with("hooks.PreToolUse[0]"), "{p}");
        let p =
            &fatal(r#"{"hooks": {"PreToolUse": [{"hooks": [{"command": "x", "timout": 5}]}]}}"#)[0];
        assert!(p.message.contains("timout"), "{p}");
        let p = &fatal(r#"{"permissions": {"deny": []}, "permissions": {}}"#)[0];
        assert_eq!(p.key, "permissions");
    }

    #[test]
    fn a_rule_that_could_not_work_is_fatal_and_located() {
        for (rule, key, says) in [
            (
                r#"{"tool": "fs__*", "when": {"pointer": "/p", "regex": "("}}"#,
                "permissions.deny[1].when.regex",
                "bad regex",
            ),
            (
                r#"{"tool": "fs__*", "when": {"pointer": "path", "equals": 1}}"#,
                "permissions.deny[1].when.pointer",
                "JSON Pointer",
            ),
            (
                r#"{"tool": "fs__*", "when": {"pointer": "/p", "under": "src"}}"#,
                "permissions.deny[1].when.under",
                "absolute",
            ),
            (
                r#"{"tool": "fs__*", "when": {"pointer": "/p", "prefix": "a", "equals": "b"}}"#,
                "permissions.deny[1].when",
                "exactly one",
            ),
            (
                r#"{"tool": "fs__*", "whn": {"pointer": "/p", "prefix": "a"}}"#,
                "permissions.deny[1]",
                "whn",
            ),
            (r#""github__[a-z]*""#, "permissions.deny[1]", "globs"),
            (r#""github__.*""#, "permissions.deny[1]", "matches no tool"),
            (r#""""#, "permissions.deny[1]", "empty"),
            ("7", "permissions.deny[1]", "pattern string"),
        ] {
            let text = format!("{{\"permissions\": {{\"deny\": [\"ok__*\",\n   {rule}]}}}}");
            let p = &fatal(&text)[0];
            assert!(p.key.starts_with(key), "{rule}: {p}");
            assert!(p.message.contains(says), "{rule}: {p}");
            assert_eq!(p.line, 2, "{rule}: {p}");
        }
        assert!(parse(r#"{"permissions": {"deny": ["a__*", {"tool": "b__?", "when": {"pointer": "/u", "regex": "^http:"}}]}}"#).problems.is_empty());
    }

    #[test]
    fn a_hook_that_would_not_run_is_fatal() {
        let p = &fatal(
            r#"{"hooks": {"PreToolUse": [{"matcher": "git(", "hooks": [{"command": "x"}]}]}}"#,
        )[0];
        assert_eq!(p.key, "hooks.PreToolUse[0].matcher");
        assert!(p.message.contains("not a regex"), "{p}");
        let p = &fatal(
            r#"{"hooks": {"PostToolUse": [{"hooks": [{"type": "prompt", "command": "x"}]}]}}"#,
        )[0];
        assert_eq!(p.key, "hooks.PostToolUse[0].hooks[0].type");
        assert!(parse(r#"{"hooks": {"PreToolUse": [{"matcher": "git__.*", "hooks": [{"command": "x", "timeout": 3}]}]}}"#).problems.is_empty());
    }

    #[test]
    fn other_hosts_formats_are_named() {
        let p = &fatal("{\"servers\": {\"time\": {\"command\": \"uvx\"}}, \"inputs\": []}")[0];
        assert!(p.message.contains("VS Code"), "{p}");
        let p = &fatal("[mcp_servers.time]\ncommand = \"uvx\"\n")[0];
        assert!(p.message.contains("Codex") && p.line == 1, "{p}");
        let p = &fatal("# goose\nextensions:\n  time:\n    cmd: uvx\n")[0];
        assert!(p.message.contains("goose") && p.line == 2, "{p}");
    }

    #[test]
    fn keys_and_messages_from_the_file_are_printed_with_controls_escaped() {
        let f = parse(
            "{\"\\u001b]0;owned\\u0007\": 1, \"mcpServers\": {\"a\": {\"command\": \"x\", \"type\": 5}}}",
        );
        let shown: Vec<String> = f.problems.iter().map(ToString::to_string).collect();
        assert!(
            shown
                .iter()
                .all(|s| !s.contains('\u{1b}') && !s.contains('\u{7}')),
            "{shown:?}"
        );
        assert!(shown[0].contains("\\u{001B}]0;owned\\u{0007}"), "{shown:?}");
    }
}
