//! Parsing one `mcpServers` file into per-server raw entries, each with its position in the
//! file, so that one broken server is reported precisely and the others still load.

use crate::permissions::{RawHooks, RawPermissions};
use crate::server::RawServer;
use serde::Deserialize;
use serde_json::value::RawValue;
use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};

/// A problem in a config file, located as precisely as the parser allows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigProblem {
    pub file: PathBuf,
    pub line: usize,
    pub column: usize,
    /// Dotted path of the offending key, e.g. `mcpServers.git.args`; empty for syntax errors.
    pub key: String,
    pub message: String,
}

impl fmt::Display for ConfigProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}:{}:{}", self.file.display(), self.line, self.column)?;
        if !self.key.is_empty() {
            write!(f, ": key `{}`", self.key)?;
        }
        write!(f, ": {}", self.message)
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
    pub problems: Vec<ConfigProblem>,
}

#[derive(Deserialize)]
struct TopLevel<'a> {
    #[serde(rename = "mcpServers", borrow, default)]
    mcp_servers: Option<BTreeMap<String, &'a RawValue>>,
    #[serde(borrow, default)]
    permissions: Option<&'a RawValue>,
    #[serde(borrow, default)]
    hooks: Option<&'a RawValue>,
}

/// Parses `text` (the contents of `file`). Syntax errors make the whole file a problem; a
/// server whose entry has a wrong shape becomes a problem of its own.
pub fn parse_config_text(file: &Path, text: &str) -> ConfigFile {
    parse_config_slice(file, text, text)
}

/// Like [`parse_config_text`] for an object nested inside a larger file: `slice` must point
/// into `full`, and positions are reported relative to `full`.
pub(crate) fn parse_config_slice(file: &Path, full: &str, slice: &str) -> ConfigFile {
    let (base_line, base_column) = position_of(full, slice);
    let text = slice;
    let mut out = ConfigFile::default();
    let problem = |line, column, key: &str, message: String| ConfigProblem {
        file: file.to_path_buf(),
        line,
        column,
        key: key.to_string(),
        message,
    };
    if text.trim().is_empty() {
        return out;
    }
    let de = &mut serde_json::Deserializer::from_str(text);
    let top: TopLevel<'_> = match serde_path_to_error::deserialize(de) {
        Ok(top) => top,
        Err(e) => {
            let key = path_or_empty(e.path());
            let inner = e.into_inner();
            let (l, c) = shift((base_line, base_column), inner.line(), inner.column());
            out.problems.push(problem(l, c, &key, describe(&inner)));
            return out;
        }
    };
    if let Some(raw) = top.permissions {
        match section(full, raw, "permissions") {
            Ok(p) => out.permissions = Some(p),
            Err((l, c, key, msg)) => out.problems.push(problem(l, c, &key, msg)),
        }
    }
    if let Some(raw) = top.hooks {
        match section(full, raw, "hooks") {
            Ok(h) => out.hooks = Some(h),
            Err((l, c, key, msg)) => out.problems.push(problem(l, c, &key, msg)),
        }
    }
    for (name, raw) in top.mcp_servers.unwrap_or_default() {
        let (line, column) = position_of(full, raw.get());
        let key = format!("mcpServers.{name}");
        let de = &mut serde_json::Deserializer::from_str(raw.get());
        match serde_path_to_error::deserialize::<_, RawServer>(de) {
            Ok(server) => out.servers.push((
                name,
                Located {
                    value: server,
                    line,
                    column,
                },
            )),
            Err(e) => {
                let sub = path_or_empty(e.path());
                let inner = e.into_inner();
                let (l, c) = shift((line, column), inner.line(), inner.column());
                let full_key = if sub.is_empty() {
                    key
                } else {
                    format!("{key}.{sub}")
                };
                out.problems
                    .push(problem(l, c, &full_key, describe(&inner)));
            }
        }
    }
    out
}

/// Parses one top-level section; the error is (line, column, key, message).
fn section<T: serde::de::DeserializeOwned>(
    full: &str,
    raw: &RawValue,
    name: &str,
) -> Result<Located<T>, (usize, usize, String, String)> {
    let (line, column) = position_of(full, raw.get());
    let de = &mut serde_json::Deserializer::from_str(raw.get());
    serde_path_to_error::deserialize::<_, T>(de)
        .map(|value| Located {
            value,
            line,
            column,
        })
        .map_err(|e| {
            let sub = path_or_empty(e.path());
            let inner = e.into_inner();
            let (l, c) = shift((line, column), inner.line(), inner.column());
            let key = if sub.is_empty() {
                name.to_string()
            } else {
                format!("{name}.{sub}")
            };
            (l, c, key, describe(&inner))
        })
}

/// Converts a position inside a slice that starts at `base` into one in the whole file.
fn shift(base: (usize, usize), line: usize, column: usize) -> (usize, usize) {
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
fn position_of(text: &str, slice: &str) -> (usize, usize) {
    let offset = (slice.as_ptr() as usize)
        .saturating_sub(text.as_ptr() as usize)
        .min(text.len());
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, column)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> ConfigFile {
        parse_config_text(Path::new("/p/.mcp.json"), text)
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
        let f = parse("{\"other\": 1}");
        assert!(f.problems.is_empty() && f.servers.is_empty());
    }
}
