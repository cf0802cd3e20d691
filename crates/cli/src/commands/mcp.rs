//! `mcp-host mcp add|add-json|list|get|remove|import`: servers written into (and read from)
//! the scopes' files without starting any of them. The files' editing is the config
//! crate's (`ScopeFiles`); the translation of other hosts' files is too (`import_text`).
//! This module asks the person what it must (VS Code inputs) and says what it did.

use crate::cli::{McpCommand, ScopeArg, TransportArg};
use crate::host::Host;
use crate::output::{errln, outln, table};
use anyhow::{Context, bail};
use mcp_host_config::{
    HostKind, Imported, RawServer, Scope, ScopeFiles, ServerReadiness, TrustAnswer,
};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead, IsTerminal, Write};
use std::process::ExitCode;

pub fn run(host: &Host, command: McpCommand) -> anyhow::Result<ExitCode> {
    let files = ScopeFiles::new(&host.paths);
    match command {
        McpCommand::Add {
            scope,
            transport,
            env,
            headers,
            force,
            name,
            target,
            args,
        } => {
            let server = definition(transport, &target, args, &env, &headers)?;
            add(host, &files, scope.into(), &name, server, force)
        }
        McpCommand::AddJson {
            scope,
            force,
            name,
            json,
        } => {
            let server: Value =
                serde_json::from_str(&json).context("the definition is not JSON")?;
            add(host, &files, scope.into(), &name, server, force)
        }
        McpCommand::List { json } => list(host, &files, json),
        McpCommand::Get { name, json } => get(host, &name, json),
        McpCommand::Remove { name, scope } => remove(&files, &name, scope.map(Into::into)),
        McpCommand::Import {
            from,
            file,
            scope,
            only,
            dry_run,
            force,
        } => import(
            host,
            &files,
            ImportRequest {
                from,
                file,
                scope: scope.into(),
                only,
                dry_run,
                force,
            },
        ),
    }
}

impl From<ScopeArg> for Scope {
    fn from(s: ScopeArg) -> Self {
        match s {
            ScopeArg::Local => Self::Local,
            ScopeArg::Project => Self::Project,
            ScopeArg::User => Self::User,
        }
    }
}

/// The JSON entry `mcp add` writes.
fn definition(
    transport: Option<TransportArg>,
    target: &str,
    args: Vec<String>,
    env: &[String],
    headers: &[String],
) -> anyhow::Result<Value> {
    let is_url = target.starts_with("http://") || target.starts_with("https://");
    let transport = transport.unwrap_or(if is_url {
        TransportArg::Http
    } else {
        TransportArg::Stdio
    });
    let pairs = |items: &[String], sep: char, what: &str| -> anyhow::Result<Map<String, Value>> {
        items
            .iter()
            .map(|item| match item.split_once(sep) {
                Some((k, v)) if !k.trim().is_empty() => {
                    Ok((k.trim().to_string(), json!(v.trim_start())))
                }
                _ => bail!("{what} `{item}` is not `NAME{sep}VALUE`"),
            })
            .collect()
    };
    let mut server = Map::new();
    match transport {
        TransportArg::Stdio => {
            if !headers.is_empty() {
                bail!("--header is for http servers; a stdio server gets its secrets with --env");
            }
            server.insert("command".into(), json!(target));
            if !args.is_empty() {
                server.insert("args".into(), json!(args));
            }
            let env = pairs(env, '=', "--env")?;
            if !env.is_empty() {
                server.insert("env".into(), Value::Object(env));
            }
        }
        TransportArg::Http | TransportArg::Sse => {
            if !is_url {
                bail!("`{target}` is not an http:// or https:// URL");
            }
            if !args.is_empty() || !env.is_empty() {
                bail!("arguments and --env are for stdio servers; an http server takes --header");
            }
            let kind = if transport == TransportArg::Sse {
                "sse"
            } else {
                "http"
            };
            server.insert("type".into(), json!(kind));
            server.insert("url".into(), json!(target));
            let headers = pairs(headers, ':', "--header")?;
            if !headers.is_empty() {
                server.insert("headers".into(), Value::Object(headers));
            }
        }
    }
    Ok(Value::Object(server))
}

fn scope_words(scope: Scope) -> &'static str {
    match scope {
        Scope::Local => "local: yours, in this project only",
        Scope::Project => "project: shared with everyone who clones it",
        Scope::User => "user: yours, in every project",
        Scope::Flag => "flag",
    }
}

fn add(
    host: &Host,
    files: &ScopeFiles,
    scope: Scope,
    name: &str,
    server: Value,
    force: bool,
) -> anyhow::Result<ExitCode> {
    let file = files.add(scope, name, server.clone(), force)?;
    outln!(
        "added server `{}` to {} ({})",
        mcp_host_config::visible(name),
        file.display(),
        scope_words(scope)
    );
    if scope == Scope::Project {
        approve_own(host, files, name, &server)?;
        if mcp_host_config::has_literal_values(&server) {
            errln!(
                "warning: {} is shared: write secrets as ${{VAR}} references, not values",
                file.display()
            );
        }
    }
    outln!(
        "check it with: mcp-host doctor {}",
        mcp_host_config::visible(name)
    );
    Ok(ExitCode::SUCCESS)
}

/// The person who wrote a project server here needs no prompt to run it; anyone else who
/// clones the project is still asked (the approval is this user's, for this definition).
fn approve_own(host: &Host, files: &ScopeFiles, name: &str, server: &Value) -> anyhow::Result<()> {
    let raw: RawServer = serde_json::from_value(server.clone())?;
    let hash = mcp_host_config::definition_hash(&raw);
    host.ledger()?
        .record(&files.project_root, name, &hash, TrustAnswer::Approved)?;
    Ok(())
}

/// What `list` and `get` show of one configured server.
#[derive(serde::Serialize)]
struct Listed {
    name: String,
    scope: &'static str,
    file: String,
    state: &'static str,
    /// What it runs, or where it is reached.
    target: String,
    /// The scopes whose definition of the same name this one hides.
    shadows: Vec<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    definition: Option<Value>,
}

/// What the loaded configuration says of each server: nothing is read again.
fn listed(host: &Host) -> Vec<Listed> {
    (host.config.entries.iter())
        .map(|e| {
            // Serialising a parsed definition cannot fail; `Null` would only show less.
            let definition = serde_json::to_value(&e.raw).unwrap_or(Value::Null);
            Listed {
                name: e.name.clone(),
                scope: e.scope.label(),
                file: e.file.display().to_string(),
                state: match &e.readiness {
                    ServerReadiness::Start(_) => "enabled",
                    ServerReadiness::Disabled => "disabled",
                    ServerReadiness::PendingApproval => "pending_approval",
                    ServerReadiness::Denied => "denied",
                    ServerReadiness::Invalid(_) => "invalid",
                },
                target: target_of(&definition),
                shadows: e.shadows.iter().map(|s| s.label()).collect(),
                definition: Some(definition),
            }
        })
        .collect()
}

fn target_of(v: &Value) -> String {
    if let Some(url) = v.get("url").and_then(Value::as_str) {
        return url.to_string();
    }
    let mut words: Vec<String> = v
        .get("command")
        .and_then(Value::as_str)
        .map(str::to_string)
        .into_iter()
        .collect();
    if let Some(Value::Array(args)) = v.get("args") {
        words.extend(args.iter().filter_map(Value::as_str).map(str::to_string));
    }
    words.join(" ")
}

fn list(host: &Host, files: &ScopeFiles, json: bool) -> anyhow::Result<ExitCode> {
    let mut rows = listed(host);
    if json {
        rows.iter_mut().for_each(|r| r.definition = None);
        crate::output::print_json(&rows)?;
        return Ok(ExitCode::SUCCESS);
    }
    if rows.is_empty() {
        nothing_configured(files);
        return Ok(ExitCode::SUCCESS);
    }
    let cells: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            let shadows = if r.shadows.is_empty() {
                String::new()
            } else {
                format!(" (hides {})", r.shadows.join(", "))
            };
            vec![
                r.name.clone(),
                format!("{}{shadows}", r.scope),
                r.state.into(),
                crate::output::one_line(&r.target, 80),
            ]
        })
        .collect();
    crate::output::out!("{}", table(&["NAME", "SCOPE", "STATE", "RUNS"], &cells));
    Ok(ExitCode::SUCCESS)
}

/// With no server anywhere: where the host looked, and how to add one.
pub(crate) fn nothing_configured(files: &ScopeFiles) {
    outln!("No MCP servers are configured. Looked in:");
    outln!("  user     {}", files.user.display());
    outln!("  project  {}", files.project.display());
    outln!(
        "  local    {} (this project: {})",
        files.local.display(),
        files.project_root.display()
    );
    outln!("Add one:    mcp-host mcp add time -- uvx mcp-server-time");
    outln!("            mcp-host mcp add --transport http docs https://example.com/mcp");
    outln!(
        "Or import:  mcp-host mcp import   (Claude Desktop, Claude Code, VS Code, Cursor, Codex, goose, mcphost)"
    );
}

fn get(host: &Host, name: &str, json: bool) -> anyhow::Result<ExitCode> {
    let Some(row) = listed(host).into_iter().find(|r| r.name == name) else {
        errln!(
            "error: no server named `{}` is configured (see `mcp-host mcp list`)",
            mcp_host_config::visible(name)
        );
        return Ok(ExitCode::FAILURE);
    };
    if json {
        crate::output::print_json(&row)?;
        return Ok(ExitCode::SUCCESS);
    }
    outln!("{}", row.name);
    outln!("  scope:  {} ({})", row.scope, row.file);
    outln!("  state:  {}", row.state);
    outln!("  runs:   {}", row.target);
    if !row.shadows.is_empty() {
        outln!("  hides:  its definition in {}", row.shadows.join(", "));
    }
    if let Some(def) = &row.definition {
        outln!("  definition:");
        let text = mcp_host_core::sanitize::to_json_pretty(def)?;
        for line in text.lines() {
            outln!("    {line}");
        }
    }
    Ok(ExitCode::SUCCESS)
}

fn remove(files: &ScopeFiles, name: &str, scope: Option<Scope>) -> anyhow::Result<ExitCode> {
    let scope = match scope {
        Some(s) => s,
        None => {
            let holding: Vec<Scope> = [Scope::Local, Scope::Project, Scope::User]
                .into_iter()
                .filter(|s| files.servers(*s).is_ok_and(|m| m.contains_key(name)))
                .collect();
            match holding.as_slice() {
                [one] => *one,
                [] => bail!(
                    "no server named `{}` in the local, project or user file",
                    mcp_host_config::visible(name)
                ),
                many => bail!(
                    "`{}` is in more than one scope ({}); say which with --scope",
                    mcp_host_config::visible(name),
                    many.iter()
                        .map(|s| s.label())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
    };
    let file = files.remove(scope, name)?;
    outln!(
        "removed server `{}` from {}",
        mcp_host_config::visible(name),
        file.display()
    );
    Ok(ExitCode::SUCCESS)
}

struct ImportRequest {
    from: Option<HostKind>,
    file: Option<std::path::PathBuf>,
    scope: Scope,
    only: Vec<String>,
    dry_run: bool,
    force: bool,
}

fn import(host: &Host, files: &ScopeFiles, req: ImportRequest) -> anyhow::Result<ExitCode> {
    let lookup = |k: &str| host.env.get(k).cloned();
    let sources: Vec<(HostKind, std::path::PathBuf)> = match (&req.file, req.from) {
        (Some(file), Some(kind)) => vec![(kind, file.clone())],
        _ => {
            let kinds = req.from.map_or(HostKind::ALL.to_vec(), |k| vec![k]);
            let all: Vec<_> = kinds
                .iter()
                .flat_map(|k| {
                    mcp_host_config::known_files(*k, &lookup, &files.project_root)
                        .into_iter()
                        .map(move |f| (*k, f))
                })
                .collect();
            let found: Vec<_> = all.iter().filter(|(_, f)| f.is_file()).cloned().collect();
            if found.is_empty() {
                errln!("error: found no other host's config file; looked for:");
                for (k, f) in &all {
                    errln!("  {:<15} {}", k.label(), f.display());
                }
                errln!("(give one with --from HOST --file FILE)");
                return Ok(ExitCode::FAILURE);
            }
            found
        }
    };
    let mut answers: BTreeMap<String, String> = BTreeMap::new();
    let (mut written, mut failed) = (0usize, 0usize);
    for (kind, file) in sources {
        let text = std::fs::read_to_string(&file)
            .with_context(|| format!("cannot read {}", file.display()))?;
        let entries = match mcp_host_config::import_text(kind, &file, &text, &files.project_root) {
            Ok(e) => e,
            Err(e) => {
                errln!("error: {e}");
                failed += 1;
                continue;
            }
        };
        outln!("from {} ({}):", file.display(), kind.label());
        for entry in entries {
            if !req.only.is_empty() && !req.only.contains(&entry.name) {
                continue;
            }
            match import_one(host, files, &req, entry, &mut answers) {
                Ok(true) => written += 1,
                Ok(false) => {}
                Err(e) => {
                    failed += 1;
                    errln!("  error: {e:#}");
                }
            }
        }
    }
    let verb = if req.dry_run {
        "would import"
    } else {
        "imported"
    };
    outln!(
        "{verb} {written} server{} into {} ({})",
        if written == 1 { "" } else { "s" },
        files.file(req.scope).display(),
        scope_words(req.scope)
    );
    Ok(if failed == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// Translates, answers, strips and writes one server; `false` when it was skipped.
fn import_one(
    host: &Host,
    files: &ScopeFiles,
    req: &ImportRequest,
    mut entry: Imported,
    answers: &mut BTreeMap<String, String>,
) -> anyhow::Result<bool> {
    let name = mcp_host_config::visible(&entry.name);
    let shared = req.scope == Scope::Project;
    let mut to_set = Vec::new();
    for input in &entry.inputs {
        if !answers.contains_key(&input.id) {
            let answer = if shared || req.dry_run {
                None
            } else {
                ask_input(input)?
            };
            let value = answer.unwrap_or_else(|| {
                let var = mcp_host_config::variable_name(&input.id);
                to_set.push(var.clone());
                format!("${{{var}}}")
            });
            answers.insert(input.id.clone(), value);
        }
    }
    mcp_host_config::fill_inputs(&mut entry.server, &|id| {
        answers.get(id).cloned().unwrap_or_default()
    });
    if shared {
        to_set.extend(mcp_host_config::without_secrets(&mut entry.server));
    }
    if files.servers(req.scope)?.contains_key(&entry.name) && !req.force {
        outln!(
            "  {name}: skipped, the scope already has a server of that name (--force replaces it)"
        );
        return Ok(false);
    }
    mcp_host_config::check_server(&entry.name, &entry.server)?;
    if !req.dry_run {
        files.add(req.scope, &entry.name, entry.server.clone(), true)?;
        if shared {
            approve_own(host, files, &entry.name, &entry.server)?;
        }
    }
    outln!("  {name}: {}", target_of(&entry.server));
    for what in &entry.untranslated {
        outln!("    not translated: {}", crate::output::one_line(what, 200));
    }
    to_set.sort();
    to_set.dedup();
    for var in to_set {
        outln!("    set {var} in the environment it runs in");
    }
    Ok(true)
}

/// Asks for a VS Code input's value on stderr, reading one line of standard input (without
/// echo on a terminal). An empty answer or none leaves a `${VAR}` reference instead.
fn ask_input(input: &mcp_host_config::InputPrompt) -> anyhow::Result<Option<String>> {
    let stdin = std::io::stdin();
    let what = if input.description.is_empty() {
        &input.id
    } else {
        &input.description
    };
    crate::output::write_err_inline(&format!(
        "{what} (`{}`; empty: read ${{{}}} from the environment): ",
        input.id,
        mcp_host_config::variable_name(&input.id)
    ));
    let hide = input.password && stdin.is_terminal();
    let saved = if hide { echo_off() } else { None };
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line);
    if let Some(saved) = saved {
        let _ = nix::sys::termios::tcsetattr(
            std::io::stdin(),
            nix::sys::termios::SetArg::TCSANOW,
            &saved,
        );
        let _ = std::io::stderr().write_all(b"\n");
    }
    read.context("cannot read the answer")?;
    let answer = line.trim_end_matches(['\r', '\n']).to_string();
    Ok((!answer.is_empty()).then_some(answer))
}

/// Turns terminal echo off, returning the settings to restore.
fn echo_off() -> Option<nix::sys::termios::Termios> {
    use nix::sys::termios::{LocalFlags, SetArg, tcgetattr, tcsetattr};
    let saved = tcgetattr(std::io::stdin()).ok()?;
    let mut quiet = saved.clone();
    quiet.local_flags.remove(LocalFlags::ECHO);
    tcsetattr(std::io::stdin(), SetArg::TCSANOW, &quiet).ok()?;
    Some(saved)
}
