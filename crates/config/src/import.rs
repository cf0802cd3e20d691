//! Servers configured in other MCP hosts, translated into this host's `mcpServers` entries
//! (`mcp import`): Claude Desktop, Claude Code and Cursor (the same JSON shape), VS Code's
//! `servers` with `inputs`, Codex's TOML `[mcp_servers.*]`, goose's YAML `extensions` and
//! mcphost's JSON or YAML. Translation is pure: text in, entries out, and every key that has
//! no equivalent here is named in the entry's `untranslated` list instead of being dropped
//! silently. Where each host keeps its files is in [`known_files`].

use serde_json::{Map, Value, json};
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HostKind {
    ClaudeDesktop,
    ClaudeCode,
    Vscode,
    Cursor,
    Codex,
    Goose,
    Mcphost,
}

impl HostKind {
    pub const ALL: [Self; 7] = [
        Self::ClaudeDesktop,
        Self::ClaudeCode,
        Self::Vscode,
        Self::Cursor,
        Self::Codex,
        Self::Goose,
        Self::Mcphost,
    ];

    pub fn label(self) -> &'static str {
        match self {
            Self::ClaudeDesktop => "claude-desktop",
            Self::ClaudeCode => "claude-code",
            Self::Vscode => "vscode",
            Self::Cursor => "cursor",
            Self::Codex => "codex",
            Self::Goose => "goose",
            Self::Mcphost => "mcphost",
        }
    }
}

/// Where `host` keeps its servers on Linux (`$XDG_CONFIG_HOME` honoured), the user's file
/// first, then the project's. macOS keeps Claude Desktop's and VS Code's under
/// `~/Library/Application Support/` instead (see README).
pub fn known_files(
    host: HostKind,
    lookup: &dyn Fn(&str) -> Option<String>,
    project_root: &Path,
) -> Vec<PathBuf> {
    let home = PathBuf::from(lookup("HOME").unwrap_or_else(|| "/".into()));
    let config = (lookup("XDG_CONFIG_HOME").filter(|v| !v.is_empty()))
        .map_or_else(|| home.join(".config"), PathBuf::from);
    match host {
        HostKind::ClaudeDesktop => vec![config.join("Claude/claude_desktop_config.json")],
        HostKind::ClaudeCode => vec![home.join(".claude.json")],
        HostKind::Vscode => vec![
            config.join("Code/User/mcp.json"),
            project_root.join(".vscode/mcp.json"),
        ],
        HostKind::Cursor => vec![
            home.join(".cursor/mcp.json"),
            project_root.join(".cursor/mcp.json"),
        ],
        HostKind::Codex => {
            let codex = (lookup("CODEX_HOME").filter(|v| !v.is_empty()))
                .map_or_else(|| home.join(".codex"), PathBuf::from);
            vec![codex.join("config.toml")]
        }
        HostKind::Goose => vec![config.join("goose/config.yaml")],
        HostKind::Mcphost => vec![
            home.join(".mcphost.yml"),
            home.join(".mcphost.yaml"),
            home.join(".mcphost.json"),
        ],
    }
}

/// A VS Code `inputs` entry one of the imported servers refers to (`${input:ID}`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InputPrompt {
    pub id: String,
    pub description: String,
    pub password: bool,
}

/// One translated server.
#[derive(Clone, Debug, PartialEq)]
pub struct Imported {
    pub name: String,
    /// The entry as this host reads it (`mcpServers.NAME`).
    pub server: Value,
    /// What had no equivalent here, each as a short phrase naming the key.
    pub untranslated: Vec<String>,
    /// VS Code inputs its strings refer to as `${input:ID}`, still to be answered.
    pub inputs: Vec<InputPrompt>,
}

/// Translates the servers of one of `host`'s files. `project_root` stands in for VS Code's
/// `${workspaceFolder}` and picks this project's servers out of Claude Code's file.
pub fn import_text(
    host: HostKind,
    file: &Path,
    text: &str,
    project_root: &Path,
) -> Result<Vec<Imported>, String> {
    let doc = parse(host, file, text)?;
    let mut out = Vec::new();
    match host {
        HostKind::ClaudeDesktop | HostKind::Cursor => {
            for (name, v) in members(&doc, "mcpServers") {
                out.push(claude_entry(name, v));
            }
        }
        HostKind::ClaudeCode => {
            let root = project_root.to_string_lossy();
            let project = doc.get("projects").and_then(|p| p.get(root.as_ref()));
            for (name, v) in members(&doc, "mcpServers").into_iter().chain(
                project
                    .map(|p| members(p, "mcpServers"))
                    .unwrap_or_default(),
            ) {
                out.push(claude_entry(name, v));
            }
        }
        HostKind::Vscode => {
            let inputs = vscode_inputs(&doc);
            for (name, v) in members(&doc, "servers") {
                out.push(vscode_entry(name, v, &inputs, project_root));
            }
        }
        HostKind::Codex => {
            for (name, v) in members(&doc, "mcp_servers") {
                out.push(codex_entry(name, v));
            }
        }
        HostKind::Goose => {
            for (name, v) in members(&doc, "extensions") {
                out.extend(goose_entry(name, v));
            }
        }
        HostKind::Mcphost => {
            for (name, v) in members(&doc, "mcpServers") {
                out.extend(mcphost_entry(name, v));
            }
        }
    }
    Ok(out)
}

fn parse(host: HostKind, file: &Path, text: &str) -> Result<Value, String> {
    let at = file.display();
    let doc: Value = match host {
        HostKind::Codex => {
            let table: toml::Table = toml::from_str(text).map_err(|e| format!("{at}: {e}"))?;
            serde_json::to_value(table).map_err(|e| format!("{at}: {e}"))?
        }
        // YAML is a superset of JSON, and mcphost reads either.
        HostKind::Goose | HostKind::Mcphost => {
            serde_norway::from_str(text).map_err(|e| format!("{at}: {e}"))?
        }
        _ => {
            let body = text.strip_prefix('\u{feff}').unwrap_or(text);
            serde_json::from_str(body).map_err(|e| format!("{at}: {e}"))?
        }
    };
    if doc.is_object() {
        Ok(doc)
    } else {
        Err(format!("{at}: the file is not an object of settings"))
    }
}

fn members<'a>(doc: &'a Value, key: &str) -> Vec<(&'a str, &'a Value)> {
    match doc.get(key) {
        Some(Value::Object(m)) => m.iter().map(|(k, v)| (k.as_str(), v)).collect(),
        _ => Vec::new(),
    }
}

/// Builds one entry from a source object: `take` moves the keys this host reads, and every
/// key left over is named as untranslated.
struct Entry<'a> {
    name: &'a str,
    source: Map<String, Value>,
    server: Map<String, Value>,
    untranslated: Vec<String>,
}

impl<'a> Entry<'a> {
    fn new(name: &'a str, v: &Value) -> Self {
        let source = v.as_object().cloned().unwrap_or_default();
        let mut untranslated = Vec::new();
        if !v.is_object() {
            untranslated.push("the entry is not an object".into());
        }
        Self {
            name,
            source,
            server: Map::new(),
            untranslated,
        }
    }

    fn take(&mut self, key: &str) -> Option<Value> {
        self.source.shift_remove(key)
    }

    fn put(&mut self, key: &str, v: Value) {
        self.server.insert(key.into(), v);
    }

    /// Moves `from` to `to` when it is there.
    fn rename(&mut self, from: &str, to: &str) {
        if let Some(v) = self.take(from) {
            self.put(to, v);
        }
    }

    fn note(&mut self, what: impl Into<String>) {
        self.untranslated.push(what.into());
    }

    /// Seconds (possibly fractional) as this host's milliseconds.
    fn seconds(&mut self, from: &str, to: &str) {
        if let Some(v) = self.take(from) {
            match v.as_f64() {
                Some(s) if s >= 0.0 => self.put(to, json!((s * 1000.0).round() as u64)),
                _ => self.note(format!("`{from}` is not a number of seconds")),
            }
        }
    }

    fn finish(mut self, inputs: Vec<InputPrompt>) -> Imported {
        let left: Vec<String> = self.source.keys().map(|k| format!("key `{k}`")).collect();
        self.untranslated.extend(left);
        Imported {
            name: self.name.to_string(),
            server: Value::Object(self.server),
            untranslated: self.untranslated,
            inputs,
        }
    }
}

/// Claude Desktop, Claude Code and Cursor: already this host's shape; only the keys it
/// reads are kept.
fn claude_entry(name: &str, v: &Value) -> Imported {
    let mut e = Entry::new(name, v);
    if let Some(kind) = e.take("type") {
        match kind.as_str() {
            Some("stdio" | "http" | "sse") => e.put("type", kind),
            Some("streamable-http" | "streamableHttp" | "streamable_http") => {
                e.put("type", json!("http"));
            }
            _ => e.note(format!("type {kind}")),
        }
    }
    for key in crate::keys::SERVER {
        if *key != "type" {
            e.rename(key, key);
        }
    }
    e.finish(Vec::new())
}

fn vscode_inputs(doc: &Value) -> Vec<InputPrompt> {
    let Some(Value::Array(inputs)) = doc.get("inputs") else {
        return Vec::new();
    };
    inputs
        .iter()
        .filter_map(|i| {
            Some(InputPrompt {
                id: i.get("id")?.as_str()?.to_string(),
                description: (i.get("description").and_then(Value::as_str))
                    .unwrap_or_default()
                    .to_string(),
                password: i.get("password").and_then(Value::as_bool).unwrap_or(false),
            })
        })
        .collect()
}

/// VS Code: `servers` entries with `${input:ID}`, `${env:VAR}`, `${workspaceFolder}` and
/// `${userHome}` in their strings.
fn vscode_entry(name: &str, v: &Value, inputs: &[InputPrompt], project_root: &Path) -> Imported {
    let mut e = Entry::new(name, v);
    match e.take("type") {
        Some(kind) if matches!(kind.as_str(), Some("stdio" | "http" | "sse")) => {
            e.put("type", kind);
        }
        Some(kind) => e.note(format!("type {kind}")),
        None => {}
    }
    for key in ["command", "args", "env", "cwd", "url", "headers"] {
        e.rename(key, key);
    }
    if e.take("envFile").is_some() {
        e.note("`envFile` (copy its variables into `env`)");
    }
    let mut server = Value::Object(std::mem::take(&mut e.server));
    let mut used = Vec::new();
    let mut unknown = Vec::new();
    map_strings(&mut server, &mut |s| {
        vscode_variables(s, project_root, &mut used, &mut unknown)
    });
    e.server = match server {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    for u in unknown {
        e.note(format!("VS Code variable `${{{u}}}`"));
    }
    let wanted: Vec<InputPrompt> = used
        .iter()
        .map(|id| {
            (inputs.iter().find(|i| &i.id == id).cloned()).unwrap_or(InputPrompt {
                id: id.clone(),
                description: String::new(),
                password: true,
            })
        })
        .collect();
    e.finish(wanted)
}

/// Rewrites VS Code's variables in one string; `${input:ID}` stays for the caller to fill.
fn vscode_variables(
    s: &str,
    project_root: &Path,
    inputs: &mut Vec<String>,
    unknown: &mut Vec<String>,
) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let Some(len) = rest[start..].find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let var = &rest[start + 2..start + len];
        match var.split_once(':') {
            Some(("env", name)) => out.push_str(&format!("${{{name}}}")),
            Some(("input", id)) => {
                if !inputs.iter().any(|i| i == id) {
                    inputs.push(id.to_string());
                }
                out.push_str(&format!("${{input:{id}}}"));
            }
            None if var == "workspaceFolder" => out.push_str(&project_root.to_string_lossy()),
            None if var == "userHome" => out.push_str("${HOME}"),
            _ => {
                unknown.push(var.to_string());
                out.push_str(&rest[start..start + len + 1]);
            }
        }
        rest = &rest[start + len + 1..];
    }
    out.push_str(rest);
    out
}

/// Codex: `[mcp_servers.NAME]` with `env_vars` (variables passed through), bearer tokens and
/// headers taken from the environment, timeouts in seconds, and tool filters.
fn codex_entry(name: &str, v: &Value) -> Imported {
    let mut e = Entry::new(name, v);
    for key in ["command", "args", "cwd", "url", "enabled"] {
        e.rename(key, key);
    }
    let mut env = (e.take("env").and_then(|v| v.as_object().cloned())).unwrap_or_default();
    if let Some(Value::Array(vars)) = e.take("env_vars") {
        for var in vars.iter().filter_map(Value::as_str) {
            env.insert(var.into(), json!(format!("${{{var}}}")));
        }
    }
    if !env.is_empty() {
        e.put("env", Value::Object(env));
    }
    let mut headers =
        (e.take("http_headers").and_then(|v| v.as_object().cloned())).unwrap_or_default();
    if let Some(Value::Object(from_env)) = e.take("env_http_headers") {
        for (header, var) in from_env {
            if let Some(var) = var.as_str() {
                headers.insert(header, json!(format!("${{{var}}}")));
            }
        }
    }
    if let Some(Value::String(var)) = e.take("bearer_token_env_var") {
        headers.insert("Authorization".into(), json!(format!("Bearer ${{{var}}}")));
    }
    if !headers.is_empty() {
        e.put("headers", Value::Object(headers));
    }
    if e.server.contains_key("url") && !e.server.contains_key("command") {
        e.put("type", json!("http"));
    }
    e.seconds("startup_timeout_sec", "timeout");
    e.rename("startup_timeout_ms", "timeout");
    e.seconds("tool_timeout_sec", "toolTimeout");
    e.rename("enabled_tools", "enabledTools");
    e.rename("disabled_tools", "disabledTools");
    e.finish(Vec::new())
}

/// goose: `extensions.NAME` of type `stdio` (`cmd`, `args`, `envs`, `env_keys`),
/// `streamable_http` or `sse` (`uri`, `headers`); goose's own built-in kinds have no server
/// to start and are skipped with a note.
fn goose_entry(name: &str, v: &Value) -> Option<Imported> {
    let mut e = Entry::new(name, v);
    let kind = e.take("type").and_then(|k| k.as_str().map(str::to_string));
    match kind.as_deref() {
        Some("stdio") | None => {
            e.rename("cmd", "command");
            e.rename("args", "args");
        }
        Some("streamable_http") => {
            e.put("type", json!("http"));
            e.rename("uri", "url");
            e.rename("headers", "headers");
        }
        Some("sse") => {
            e.put("type", json!("sse"));
            e.rename("uri", "url");
            e.rename("headers", "headers");
        }
        // builtin, platform, frontend, inline_python: run inside goose itself.
        Some(_) => return None,
    }
    let mut env = (e.take("envs").and_then(|v| v.as_object().cloned())).unwrap_or_default();
    if let Some(Value::Array(keys)) = e.take("env_keys") {
        for key in keys.iter().filter_map(Value::as_str) {
            env.entry(key.to_string())
                .or_insert_with(|| json!(format!("${{{key}}}")));
            e.note(format!(
                "the value of `{key}` (goose keeps it in its keyring; set {key} in the environment)"
            ));
        }
    }
    if !env.is_empty() {
        e.put("env", Value::Object(env));
    }
    e.rename("enabled", "enabled");
    e.seconds("timeout", "timeout");
    if let Some(Value::Array(tools)) = e.take("available_tools")
        && !tools.is_empty()
    {
        e.put("enabledTools", Value::Array(tools));
    }
    // Labels goose shows; nothing to run.
    for key in ["name", "display_name", "description", "bundled"] {
        e.take(key);
    }
    Some(e.finish(Vec::new()))
}

/// mcphost: `type: local` (`command` as a list, `environment`), `type: remote` (`url`,
/// `headers` as `"Name: value"` lines), or the older Claude-shaped entries (a bare `url`
/// there meant SSE).
fn mcphost_entry(name: &str, v: &Value) -> Option<Imported> {
    let mut e = Entry::new(name, v);
    let kind = e.take("type").and_then(|k| k.as_str().map(str::to_string));
    let transport = e
        .take("transport")
        .and_then(|k| k.as_str().map(str::to_string));
    match kind.as_deref() {
        Some("builtin") => return None,
        Some("local") => {
            match e.take("command") {
                Some(Value::Array(parts)) => {
                    let mut parts = parts.into_iter();
                    if let Some(cmd) = parts.next() {
                        e.put("command", cmd);
                    }
                    let rest: Vec<Value> = parts.collect();
                    if !rest.is_empty() {
                        e.put("args", Value::Array(rest));
                    }
                }
                Some(cmd) => e.put("command", cmd),
                None => {}
            }
            e.rename("environment", "env");
        }
        Some("remote") => {
            e.put("type", json!("http"));
            e.rename("url", "url");
        }
        Some(other) => {
            e.note(format!("type `{other}`"));
        }
        None => {
            for key in ["command", "args", "env"] {
                e.rename(key, key);
            }
            if let Some(url) = e.take("url") {
                let kind = match transport.as_deref() {
                    Some("streamable" | "http") => "http",
                    _ => "sse",
                };
                e.put("type", json!(kind));
                e.put("url", url);
            }
        }
    }
    match e.take("headers") {
        Some(Value::Array(lines)) => {
            let mut headers = Map::new();
            for line in lines.iter().filter_map(Value::as_str) {
                match line.split_once(':') {
                    Some((k, v)) => {
                        headers.insert(k.trim().into(), json!(v.trim()));
                    }
                    None => e.note(format!("header line `{line}`")),
                }
            }
            e.put("headers", Value::Object(headers));
        }
        Some(map @ Value::Object(_)) => e.put("headers", map),
        _ => {}
    }
    e.rename("allowedTools", "enabledTools");
    e.rename("excludedTools", "disabledTools");
    Some(e.finish(Vec::new()))
}

/// Applies `f` to every string inside `v`.
pub(crate) fn map_strings(v: &mut Value, f: &mut dyn FnMut(&str) -> String) {
    match v {
        Value::String(s) => *s = f(s),
        Value::Array(a) => a.iter_mut().for_each(|x| map_strings(x, f)),
        Value::Object(m) => m.values_mut().for_each(|x| map_strings(x, f)),
        _ => {}
    }
}

/// Replaces `${input:ID}` in every string of `server` with `answer(ID)`.
pub fn fill_inputs(server: &mut Value, answer: &dyn Fn(&str) -> String) {
    map_strings(server, &mut |s| {
        let mut out = String::new();
        let mut rest = s;
        while let Some(start) = rest.find("${input:") {
            let Some(len) = rest[start..].find('}') else {
                break;
            };
            out.push_str(&rest[..start]);
            out.push_str(&answer(&rest[start + 8..start + len]));
            rest = &rest[start + len + 1..];
        }
        out.push_str(rest);
        out
    });
}

/// For a file others read (the project's `.mcp.json`): every `env` and `headers` value that
/// does not take its value from a variable becomes a `${VAR}` reference, so no secret is
/// written where it would be shared. Returns the variables the person must now set.
pub fn without_secrets(server: &mut Value) -> Vec<String> {
    let mut to_set = Vec::new();
    for section in ["env", "headers"] {
        let Some(Value::Object(values)) = server.get_mut(section) else {
            continue;
        };
        for (key, value) in values.iter_mut() {
            if takes_a_variable(value) {
                continue;
            }
            let var = variable_name(key);
            *value = json!(format!("${{{var}}}"));
            to_set.push(var);
        }
    }
    to_set
}

/// Whether any `env` or `headers` value of `server` is written out rather than taken from a
/// variable (what [`without_secrets`] would replace).
pub fn has_literal_values(server: &Value) -> bool {
    ["env", "headers"].iter().any(|section| {
        (server.get(section).and_then(Value::as_object))
            .is_some_and(|m| m.values().any(|v| !takes_a_variable(v)))
    })
}

/// A value that comes from a `${VAR}` reference (a secret in it is not written down).
fn takes_a_variable(v: &Value) -> bool {
    v.as_str().is_some_and(|s| s.contains("${"))
}

/// The environment variable a key or input id stands for: `gh-token` → `GH_TOKEN`.
pub fn variable_name(key: &str) -> String {
    key.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_uppercase()
            } else {
                '_'
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "import_tests.rs"]
mod tests;
