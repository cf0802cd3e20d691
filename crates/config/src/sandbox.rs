//! A stdio server's `sandbox` key: read from the file as written (a level name, or an object
//! of intent: what it may read, write and reach), checked key by key so that every mistake
//! is located, with `${VAR}` and `~` expanded in paths. A project file may only narrow a
//! sandbox: it may not turn one off or grant a path, a host or a private address.

use crate::server::{Scope, SpecError};
use mcp_host_core::confinement::{AddressRange, HostRule, SandboxLevel};
use serde_json::Value;
use std::path::PathBuf;

/// A stdio server's sandbox, checked and expanded. The default is `strict` with nothing
/// granted beyond what the server's command line names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SandboxSpec {
    pub level: SandboxLevel,
    /// Extra paths it may read (and execute).
    pub read: Vec<PathBuf>,
    /// Extra paths it may read and write.
    pub write: Vec<PathBuf>,
    /// Hosts it may reach through the egress proxy.
    pub hosts: Vec<HostRule>,
    /// Private address ranges the proxy may connect to for it.
    pub private: Vec<AddressRange>,
    /// Refuse to start the server when the kernel cannot confine it as asked.
    pub require: bool,
    /// Whether existing folders named in its arguments and environment are its roots.
    pub argument_roots: bool,
}

impl Default for SandboxSpec {
    fn default() -> Self {
        Self {
            level: SandboxLevel::Strict,
            read: Vec::new(),
            write: Vec::new(),
            hosts: Vec::new(),
            private: Vec::new(),
            require: false,
            argument_roots: true,
        }
    }
}

impl SandboxSpec {
    /// Whether the server, confined as written, can write nothing the user has (only its
    /// private temp folder) and reach no host: then its tools cannot change anything
    /// outside it, whatever their annotations say.
    pub fn is_sealed(&self, has_roots: bool) -> bool {
        self.level == SandboxLevel::Strict
            && self.write.is_empty()
            && self.hosts.is_empty()
            && !(self.argument_roots && has_roots)
    }
}

const KEYS: &[&str] = &["level", "filesystem", "network", "require", "argumentRoots"];
const FS_KEYS: &[&str] = &["read", "write"];
const NET_KEYS: &[&str] = &["allow", "allowPrivate"];

type Expand<'a> = &'a dyn Fn(&str, &str) -> Result<String, SpecError>;

/// Reads the `sandbox` value of a server entry from a file of `scope`.
pub(crate) fn sandbox_spec(
    value: Option<&Value>,
    scope: Scope,
    home: Option<&str>,
    exp: Expand<'_>,
) -> Result<SandboxSpec, SpecError> {
    let mut spec = SandboxSpec::default();
    let Some(value) = value else {
        return Ok(spec);
    };
    let object = match value {
        Value::String(level) => {
            spec.level = level_named("sandbox", level)?;
            return narrowed(spec, scope, "sandbox");
        }
        Value::Object(o) => o,
        _ => {
            return Err(SpecError::new(
                "sandbox",
                "expected \"strict\", \"off\" or an object with filesystem, network and require",
            ));
        }
    };
    known_keys("sandbox", object, KEYS)?;
    if let Some(level) = object.get("level") {
        let Value::String(level) = level else {
            return Err(SpecError::new(
                "sandbox.level",
                "expected \"strict\" or \"off\"",
            ));
        };
        spec.level = level_named("sandbox.level", level)?;
    }
    spec.require = flag(object, "require")?.unwrap_or(false);
    spec.argument_roots = flag(object, "argumentRoots")?.unwrap_or(true);
    if let Some(fs) = section(object, "filesystem", FS_KEYS)? {
        spec.read = paths(fs, "sandbox.filesystem.read", home, exp)?;
        spec.write = paths(fs, "sandbox.filesystem.write", home, exp)?;
    }
    if let Some(net) = section(object, "network", NET_KEYS)? {
        spec.hosts = strings(net, "sandbox.network.allow", exp)?
            .into_iter()
            .map(|(key, s)| HostRule::parse(&s).map_err(|m| SpecError::new(&key, m)))
            .collect::<Result<_, _>>()?;
        spec.private = strings(net, "sandbox.network.allowPrivate", exp)?
            .into_iter()
            .map(|(key, s)| AddressRange::parse(&s).map_err(|m| SpecError::new(&key, m)))
            .collect::<Result<_, _>>()?;
    }
    narrowed(spec, scope, "sandbox")
}

/// Whether a project file's sandbox stays within what a project may ask (checked before the
/// person is asked to approve the server, with nothing expanded).
pub(crate) fn project_may_ask(value: Option<&Value>) -> Result<(), SpecError> {
    let verbatim = |_: &str, v: &str| Ok(v.to_string());
    sandbox_spec(value, Scope::Project, Some("/"), &verbatim).map(drop)
}

/// A project file's sandbox may only take away: anything it grants is refused, at its key.
fn narrowed(spec: SandboxSpec, scope: Scope, key: &str) -> Result<SandboxSpec, SpecError> {
    if scope != Scope::Project {
        return Ok(spec);
    }
    let widens = |what: &str, at: &str| {
        Err(SpecError::new(
            at,
            format!(
                "a project file may narrow a sandbox, never widen it: {what} belongs in your own config \
                 (your user file, ~/.config/mcp-host/config.json, or your local file, \
                 ~/.local/share/mcp-host/local.json)"
            ),
        ))
    };
    if spec.level == SandboxLevel::Off {
        return widens("turning it off", key);
    }
    let granted = [
        ("filesystem.read", !spec.read.is_empty()),
        ("filesystem.write", !spec.write.is_empty()),
        ("network.allow", !spec.hosts.is_empty()),
        ("network.allowPrivate", !spec.private.is_empty()),
    ];
    match granted.iter().find(|(_, g)| *g) {
        Some((what, _)) => widens(&format!("`{what}`"), &format!("sandbox.{what}")),
        None => Ok(spec),
    }
}

fn level_named(key: &str, level: &str) -> Result<SandboxLevel, SpecError> {
    match level {
        "strict" => Ok(SandboxLevel::Strict),
        "off" => Ok(SandboxLevel::Off),
        other => Err(SpecError::new(
            key,
            format!("unknown sandbox level `{other}` (expected \"strict\" or \"off\")"),
        )),
    }
}

fn known_keys(
    at: &str,
    object: &serde_json::Map<String, Value>,
    known: &[&str],
) -> Result<(), SpecError> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(k) => Err(SpecError::new(
            &format!("{at}.{k}"),
            match crate::keys::did_you_mean(k, known) {
                Some(hint) => format!("unknown key `{k}` (did you mean `{hint}`?)"),
                None => format!("unknown key `{k}` (expected one of {})", known.join(", ")),
            },
        )),
        None => Ok(()),
    }
}

fn flag(object: &serde_json::Map<String, Value>, name: &str) -> Result<Option<bool>, SpecError> {
    match object.get(name) {
        None => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(SpecError::new(
            &format!("sandbox.{name}"),
            "expected true or false",
        )),
    }
}

fn section<'v>(
    object: &'v serde_json::Map<String, Value>,
    name: &str,
    known: &[&str],
) -> Result<Option<&'v serde_json::Map<String, Value>>, SpecError> {
    let at = format!("sandbox.{name}");
    match object.get(name) {
        None => Ok(None),
        Some(Value::Object(o)) => known_keys(&at, o, known).map(|()| Some(o)),
        Some(_) => Err(SpecError::new(
            &at,
            format!("expected an object with {}", known.join(" and ")),
        )),
    }
}

/// The strings of a list, each expanded and with its own key.
fn strings(
    section: &serde_json::Map<String, Value>,
    key: &str,
    exp: Expand<'_>,
) -> Result<Vec<(String, String)>, SpecError> {
    let name = key.rsplit('.').next().unwrap_or(key);
    let Some(value) = section.get(name) else {
        return Ok(Vec::new());
    };
    let Value::Array(items) = value else {
        return Err(SpecError::new(key, "expected a list of strings"));
    };
    items
        .iter()
        .enumerate()
        .map(|(i, item)| {
            let at = format!("{key}[{i}]");
            match item {
                Value::String(s) => Ok((at.clone(), exp(&at, s)?)),
                _ => Err(SpecError::new(&at, "expected a string")),
            }
        })
        .collect()
}

/// Absolute paths; `~` and `~/...` are the user's home.
fn paths(
    section: &serde_json::Map<String, Value>,
    key: &str,
    home: Option<&str>,
    exp: Expand<'_>,
) -> Result<Vec<PathBuf>, SpecError> {
    strings(section, key, exp)?
        .into_iter()
        .map(|(at, s)| {
            let path = match (s.strip_prefix('~'), home) {
                (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                    PathBuf::from(format!("{home}{rest}"))
                }
                _ => PathBuf::from(&s),
            };
            if path.is_absolute() {
                Ok(path)
            } else {
                Err(SpecError::new(
                    &at,
                    format!("`{s}` is not an absolute path (start it with / or ~/)"),
                ))
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(json: &str, scope: Scope) -> Result<SandboxSpec, SpecError> {
        let value: Value = serde_json::from_str(json).unwrap();
        let exp = |_: &str, v: &str| Ok(v.replace("${ROOT}", "/srv"));
        sandbox_spec(Some(&value), scope, Some("/home/u"), &exp)
    }

    #[test]
    fn levels_and_intent_are_read_and_expanded() {
        assert_eq!(
            spec("\"off\"", Scope::User).unwrap().level,
            SandboxLevel::Off
        );
        let s = spec(
            r#"{"filesystem":{"read":["~/docs","${ROOT}/x"],"write":["/tmp/out"]},
                "network":{"allow":["api.github.com","*.example.com:443"],"allowPrivate":["127.0.0.1"]},
                "require":true}"#,
            Scope::User,
        )
        .unwrap();
        assert_eq!(
            s.read,
            [PathBuf::from("/home/u/docs"), PathBuf::from("/srv/x")]
        );
        assert_eq!(s.write, [PathBuf::from("/tmp/out")]);
        assert_eq!(s.hosts.len(), 2);
        assert_eq!(s.private[0].to_string(), "127.0.0.1");
        assert!(s.require && s.argument_roots);
        assert!(!s.is_sealed(false));
    }

    #[test]
    fn mistakes_are_located_at_their_key() {
        let key = |json: &str| spec(json, Scope::User).unwrap_err().key;
        assert_eq!(key("\"loose\""), "sandbox");
        assert_eq!(key("7"), "sandbox");
        assert_eq!(key(r#"{"netwrok":{}}"#), "sandbox.netwrok");
        assert_eq!(
            key(r#"{"network":{"allow":["ok.com","bad host"]}}"#),
            "sandbox.network.allow[1]"
        );
        assert_eq!(
            key(r#"{"filesystem":{"read":["rel/path"]}}"#),
            "sandbox.filesystem.read[0]"
        );
        assert_eq!(
            key(r#"{"network":{"allowPrivate":["10.0.0.0/40"]}}"#),
            "sandbox.network.allowPrivate[0]"
        );
        assert_eq!(key(r#"{"require":"yes"}"#), "sandbox.require");
        let hint = spec(r#"{"netwrok":{}}"#, Scope::User).unwrap_err().message;
        assert!(hint.contains("did you mean `network`"), "{hint}");
    }

    #[test]
    fn a_project_file_may_narrow_but_never_widen() {
        let refused = |json: &str| spec(json, Scope::Project).unwrap_err();
        assert_eq!(refused("\"off\"").key, "sandbox");
        assert_eq!(refused(r#"{"level":"off"}"#).key, "sandbox");
        assert_eq!(
            refused(r#"{"filesystem":{"write":["/"]}}"#).key,
            "sandbox.filesystem.write"
        );
        assert_eq!(
            refused(r#"{"network":{"allow":["x.com"]}}"#).key,
            "sandbox.network.allow"
        );
        assert!(
            refused(r#"{"filesystem":{"read":["~"]}}"#)
                .message
                .contains("never widen")
        );
        let narrowed = spec(r#"{"require":true,"argumentRoots":false}"#, Scope::Project).unwrap();
        assert!(narrowed.require && !narrowed.argument_roots);
        assert!(narrowed.is_sealed(true));
        assert!(spec(r#"{"network":{"allow":["x.com"]}}"#, Scope::Local).is_ok());
    }
}
