//! Writing servers into a scope's file (`mcp add`, `mcp remove`, `mcp import`): the user
//! file, the project's `.mcp.json`, or this project's entry in `local.json`. A file is read
//! and changed as JSON, keeping every other key and the order of its members (and its
//! indentation), and replaced atomically; a file that cannot be read as JSON is refused,
//! never overwritten.

use crate::load::{ConfigPaths, find_project};
use crate::server::{RawServer, Scope};
use serde_json::{Map, Value};
use std::io::Write;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum EditError {
    #[error("{file}: cannot read: {source}")]
    Read {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("{file}:{line}:{column}: not valid JSON ({why}); fix it first, nothing was written")]
    Syntax {
        file: PathBuf,
        line: usize,
        column: usize,
        why: String,
    },
    #[error("{file}: {at} is not a JSON object; nothing was written")]
    Shape { file: PathBuf, at: String },
    #[error("{file}: cannot write: {source}")]
    Write {
        file: PathBuf,
        source: std::io::Error,
    },
    #[error("server `{name}` is already in {file}; add --force to replace it")]
    Exists { name: String, file: PathBuf },
    #[error("no server named `{name}` in {file}")]
    Missing { name: String, file: PathBuf },
    #[error("server `{name}`: {why}")]
    Invalid { name: String, why: String },
}

/// The files servers can be written to, for one working directory.
#[derive(Clone, Debug)]
pub struct ScopeFiles {
    pub user: PathBuf,
    pub project: PathBuf,
    pub local: PathBuf,
    /// The key of this project in `local.json`.
    pub project_root: PathBuf,
}

impl ScopeFiles {
    pub fn new(paths: &ConfigPaths) -> Self {
        let (root, file) = find_project(&paths.cwd);
        Self {
            user: paths.user_file.clone(),
            project: file.unwrap_or_else(|| root.join(".mcp.json")),
            local: paths.local_file(),
            project_root: root,
        }
    }

    pub fn file(&self, scope: Scope) -> &Path {
        match scope {
            Scope::User => &self.user,
            Scope::Project => &self.project,
            // `--mcp-config` files are never written; they are the caller's.
            Scope::Local | Scope::Flag => &self.local,
        }
    }

    /// The servers a scope's file holds, in written order.
    pub fn servers(&self, scope: Scope) -> Result<Map<String, Value>, EditError> {
        let mut doc = Document::read(self.file(scope))?;
        let servers = doc.servers_of(scope, &self.project_root, false)?;
        Ok(servers.cloned().unwrap_or_default())
    }

    /// Writes `server` as `name` into a scope's file. The definition must be one this host
    /// can read (a typo'd key is refused here, not found at the next start).
    pub fn add(
        &self,
        scope: Scope,
        name: &str,
        server: Value,
        replace: bool,
    ) -> Result<PathBuf, EditError> {
        check_server(name, &server)?;
        let file = self.file(scope).to_path_buf();
        let mut doc = Document::read(&file)?;
        let servers =
            (doc.servers_of(scope, &self.project_root, true)?).ok_or_else(|| EditError::Shape {
                file: file.clone(),
                at: "`mcpServers`".into(),
            })?;
        if servers.contains_key(name) && !replace {
            return Err(EditError::Exists {
                name: name.into(),
                file,
            });
        }
        servers.insert(name.to_string(), server);
        doc.write(scope)?;
        Ok(file)
    }

    pub fn remove(&self, scope: Scope, name: &str) -> Result<PathBuf, EditError> {
        let file = self.file(scope).to_path_buf();
        let mut doc = Document::read(&file)?;
        let removed = doc
            .servers_of(scope, &self.project_root, false)?
            .and_then(|s| s.shift_remove(name));
        if removed.is_none() {
            return Err(EditError::Missing {
                name: name.into(),
                file,
            });
        }
        doc.write(scope)?;
        Ok(file)
    }
}

/// Refuses a definition the loader would refuse: unknown keys, wrong types, no command and
/// no URL, an empty name.
pub fn check_server(name: &str, server: &Value) -> Result<(), EditError> {
    let invalid = |why: String| EditError::Invalid {
        name: name.into(),
        why,
    };
    if name.trim().is_empty() || name.chars().any(char::is_control) {
        return Err(invalid(
            "a server name must be printable and not empty".into(),
        ));
    }
    let Value::Object(members) = server else {
        return Err(invalid("a server definition is a JSON object".into()));
    };
    if let Some(key) = members
        .keys()
        .find(|k| !crate::keys::SERVER.contains(&k.as_str()))
    {
        let hint = crate::keys::did_you_mean(key, crate::keys::SERVER)
            .map(|k| format!(" (did you mean `{k}`?)"))
            .unwrap_or_default();
        return Err(invalid(format!("unknown key `{key}`{hint}")));
    }
    let raw: RawServer =
        serde_json::from_value(server.clone()).map_err(|e| invalid(e.to_string()))?;
    if raw.command.is_none() && raw.url.is_none() {
        return Err(invalid(
            "needs a `command` (stdio) or a `url` (http)".into(),
        ));
    }
    Ok(())
}

/// One file's JSON, with how it was indented.
struct Document {
    file: PathBuf,
    root: Value,
    indent: Vec<u8>,
    existed: bool,
}

impl Document {
    fn read(file: &Path) -> Result<Self, EditError> {
        let text = match std::fs::read_to_string(file) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Ok(Self {
                    file: file.to_path_buf(),
                    root: Value::Object(Map::new()),
                    indent: b"  ".to_vec(),
                    existed: false,
                });
            }
            Err(source) => {
                return Err(EditError::Read {
                    file: file.to_path_buf(),
                    source,
                });
            }
        };
        let body = text.strip_prefix('\u{feff}').unwrap_or(&text);
        let root: Value = if body.trim().is_empty() {
            Value::Object(Map::new())
        } else {
            serde_json::from_str(body).map_err(|e| EditError::Syntax {
                file: file.to_path_buf(),
                line: e.line(),
                column: e.column(),
                why: e.to_string(),
            })?
        };
        if !root.is_object() {
            return Err(EditError::Shape {
                file: file.to_path_buf(),
                at: "the file".into(),
            });
        }
        Ok(Self {
            file: file.to_path_buf(),
            root,
            indent: indent_of(body),
            existed: true,
        })
    }

    /// The `mcpServers` object of the scope (for the local file, this project's), made
    /// when `create` and missing.
    fn servers_of(
        &mut self,
        scope: Scope,
        project_root: &Path,
        create: bool,
    ) -> Result<Option<&mut Map<String, Value>>, EditError> {
        let file = self.file.clone();
        let mut at = self.root.as_object_mut().ok_or_else(|| EditError::Shape {
            file: file.clone(),
            at: "the file".into(),
        })?;
        let mut path: Vec<String> = Vec::new();
        if matches!(scope, Scope::Local | Scope::Flag) {
            path.push("projects".into());
            path.push(project_root.to_string_lossy().into_owned());
        }
        path.push("mcpServers".into());
        for key in path {
            if !at.contains_key(&key) {
                if !create {
                    return Ok(None);
                }
                at.insert(key.clone(), Value::Object(Map::new()));
            }
            at = match at.get_mut(&key) {
                Some(Value::Object(m)) => m,
                _ => {
                    return Err(EditError::Shape {
                        file,
                        at: format!("`{key}`"),
                    });
                }
            };
        }
        Ok(Some(at))
    }

    /// Replaces the file: written beside it and renamed over it, so a crash leaves the old
    /// file or the new one. Files of the user's own scopes may hold secrets: a new one is
    /// made readable by its owner only; an existing one keeps its mode.
    fn write(&self, scope: Scope) -> Result<(), EditError> {
        use std::os::unix::fs::PermissionsExt;
        let err = |source| EditError::Write {
            file: self.file.clone(),
            source,
        };
        let formatter = serde_json::ser::PrettyFormatter::with_indent(&self.indent);
        let mut text = Vec::new();
        let mut ser = serde_json::Serializer::with_formatter(&mut text, formatter);
        serde::Serialize::serialize(&self.root, &mut ser)
            .map_err(|e| err(std::io::Error::other(e)))?;
        text.push(b'\n');
        let mode = match std::fs::metadata(&self.file) {
            Ok(m) if self.existed => m.permissions().mode() & 0o7777,
            _ if scope == Scope::Project => 0o644,
            _ => 0o600,
        };
        write_atomically(&self.file, &text, mode).map_err(err)
    }
}

/// Replaces `path` with `bytes`: written beside it with `mode`, synced, and renamed over
/// it, so a crash leaves the old file or the new one, never half of either.
pub(crate) fn write_atomically(path: &Path, bytes: &[u8], mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
    let dir = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(dir)?;
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&tmp)?;
    let written = out
        .write_all(bytes)
        .and_then(|()| out.sync_all())
        .and_then(|()| std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(mode)))
        .and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written
}

/// The indentation of the first indented line (two spaces for a file that has none).
fn indent_of(text: &str) -> Vec<u8> {
    text.lines()
        .skip(1)
        .map(|l| l.len() - l.trim_start_matches([' ', '\t']).len())
        .zip(text.lines().skip(1))
        .find(|(n, _)| *n > 0)
        .map_or_else(|| b"  ".to_vec(), |(n, l)| l.as_bytes()[..n].to_vec())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn files(dir: &Path) -> ScopeFiles {
        std::fs::create_dir_all(dir.join("proj/.git")).unwrap();
        let paths = ConfigPaths {
            user_file: dir.join("config/mcp-host/config.json"),
            data_dir: dir.join("data"),
            cwd: dir.join("proj"),
        };
        ScopeFiles::new(&paths)
    }

    #[test]
    fn adding_keeps_the_files_other_content_order_and_indentation() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        std::fs::create_dir_all(f.user.parent().unwrap()).unwrap();
        std::fs::write(
            &f.user,
            "{\n    \"permissions\": {\"deny\": [\"x__*\"]},\n    \"mcpServers\": {\"b\": {\"command\": \"b\"}}\n}\n",
        )
        .unwrap();
        f.add(
            Scope::User,
            "a",
            json!({"command": "a", "args": ["-x"]}),
            false,
        )
        .unwrap();
        let text = std::fs::read_to_string(&f.user).unwrap();
        assert!(text.starts_with("{\n    \"permissions\""), "{text}");
        let v: Value = serde_json::from_str(&text).unwrap();
        let names: Vec<&String> = v["mcpServers"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["b", "a"]);
        assert_eq!(v["permissions"]["deny"][0], "x__*");
        let e = f
            .add(Scope::User, "a", json!({"command": "c"}), false)
            .unwrap_err();
        assert!(matches!(e, EditError::Exists { .. }), "{e}");
        f.remove(Scope::User, "b").unwrap();
        assert_eq!(f.servers(Scope::User).unwrap().len(), 1);
    }

    #[test]
    fn local_servers_are_keyed_by_project_and_private() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        f.add(
            Scope::Local,
            "t",
            json!({"command": "t", "env": {"K": "secret"}}),
            false,
        )
        .unwrap();
        let v: Value = serde_json::from_str(&std::fs::read_to_string(&f.local).unwrap()).unwrap();
        let root = f.project_root.to_string_lossy().into_owned();
        assert_eq!(v["projects"][&root]["mcpServers"]["t"]["command"], "t");
        let mode = std::fs::metadata(&f.local).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(f.project, dir.path().join("proj/.mcp.json"));
    }

    #[test]
    fn broken_files_and_definitions_are_refused_and_nothing_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let f = files(dir.path());
        std::fs::write(&f.project, "{\"mcpServers\": {,}}").unwrap();
        let e = f
            .add(Scope::Project, "a", json!({"command": "a"}), false)
            .unwrap_err();
        assert!(e.to_string().contains(":1:"), "{e}");
        assert_eq!(
            std::fs::read_to_string(&f.project).unwrap(),
            "{\"mcpServers\": {,}}"
        );
        let e = f
            .add(Scope::User, "a", json!({"comand": "a"}), false)
            .unwrap_err();
        assert!(e.to_string().contains("did you mean `command`"), "{e}");
        let e = f
            .add(Scope::User, "a", json!({"args": ["x"]}), false)
            .unwrap_err();
        assert!(e.to_string().contains("needs a `command`"), "{e}");
        assert!(!f.user.exists());
    }
}
