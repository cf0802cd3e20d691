//! One snapshot of every ready server's tools: model-visible names, capped descriptions,
//! lint flags, compiled argument validators, definition hashes (and pin state), each
//! server's configured facts (trust, parallelism, result caps) on every entry, and the
//! search index. Entries are ordered by server id, then tool name, so the tool list a
//! provider sees is stable and its prompt cache survives. A snapshot is immutable; the
//! engine takes a new one at turn boundaries.

use crate::lint::{self, Flag};
use crate::names::{NameTable, ToolKey};
use crate::pins::{self, PinCheck};
use crate::schema::{self, Checker, Problem};
use crate::search::DocText;
use crate::search::hybrid::{Embedder, SemanticIndex};

mod ranking;
use mcp_host_core::pins::{MAX_PINS_PER_SERVER, PinRecords, PinnedHashes};
use mcp_host_core::{
    PromptDescriptor, ResourceDescriptor, ResourceTemplateDescriptor, ServerFacts, ServerId,
    ToolDefinition, ToolDescriptor,
};
use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fmt;
use std::sync::{Arc, OnceLock};

/// One server's contribution to a snapshot.
#[derive(Clone, Debug)]
pub struct ServerTools {
    pub server: ServerId,
    /// Shared with the connection's own list: a snapshot copies no definition.
    pub tools: Vec<Arc<ToolDescriptor>>,
    pub prompts: Vec<PromptDescriptor>,
    pub resources: Vec<ResourceDescriptor>,
    pub templates: Vec<ResourceTemplateDescriptor>,
    /// What the configuration says about the server's tools; every entry keeps it.
    pub facts: Arc<ServerFacts>,
    /// The server's `instructions`, linted like descriptions (flags on the server).
    pub instructions: Option<String>,
}

/// A tool as the host presents it.
#[derive(Clone)]
pub struct Entry {
    /// The model-visible name.
    pub name: String,
    pub key: ToolKey,
    /// The definition exactly as the server sent it; shared with every call decided on it
    /// (which checks it is still the server's right before sending), not copied.
    pub tool: Arc<ToolDescriptor>,
    /// The description as always shown: hidden characters removed, capped at
    /// [`lint::DESCRIPTION_LIMIT`].
    pub description: String,
    /// The input schema as the model is given it, when cleaning changed it (see
    /// [`Entry::model_schema`]).
    model_schema: Option<Value>,
    /// Instruction-like phrases found in the title, description or parameter texts.
    pub instruction_phrases: Vec<String>,
    pub flags: Vec<Flag>,
    validator: Option<Validator>,
    pub callable: bool,
    /// The server's facts, shared by all its entries.
    facts: Arc<ServerFacts>,
    /// Hash of the definition; pins and remembered approvals are bound to it.
    pub hash: String,
    /// Set by [`Catalogue::check_pins`].
    pub pin: Option<PinCheck>,
}

impl fmt::Debug for Entry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Entry")
            .field("name", &self.name)
            .field("key", &self.key)
            .field("flags", &self.flags)
            .finish()
    }
}

impl Entry {
    /// The input schema as the model is given it: hidden characters removed from its prose
    /// (see [`lint::clean_schema`]); the listed schema itself when it had none.
    pub fn model_schema(&self) -> &Value {
        self.model_schema
            .as_ref()
            .unwrap_or(&self.tool.input_schema)
    }

    /// The definition pinned and hashed: every field the model or policy relies on.
    pub fn definition(tool: &ToolDescriptor) -> Value {
        json!({
            "name": tool.name, "title": tool.title, "description": tool.description,
            "inputSchema": tool.input_schema, "outputSchema": tool.output_schema,
            "annotations": tool.annotations,
        })
    }

    /// Whether this snapshot compiled the tool's input schema, and it compiled: a verdict to
    /// keep with the definition's pin, so later snapshots need not compile it again (see
    /// [`Catalogue::build_knowing`]).
    pub fn schema_checked_now(&self) -> bool {
        matches!(self.validator, Some(Validator::Compiled(_)))
    }

    /// Whether the host believes this server's annotations (`trust: true` in its config).
    pub fn trusted(&self) -> bool {
        self.facts.trusted
    }

    /// Whether the server runs sealed: sandboxed with nothing to write and no host to reach.
    pub fn sealed(&self) -> bool {
        self.facts.sealed
    }

    /// Whether the server allows its calls to overlap (`parallel`, on unless configured
    /// off). Only trusted read-only tools overlap; which hints are believed is policy's.
    pub fn parallel(&self) -> bool {
        self.facts.parallel
    }

    /// `alwaysLoad: true`: visible even in deferred mode.
    pub fn always_load(&self) -> bool {
        self.facts.always_load
    }

    /// The configured cap in tokens on one result of this tool, if any.
    pub fn result_tokens(&self) -> Option<u64> {
        self.facts.result_tokens(&self.key.tool)
    }

    /// What a provider is given: the model-visible name, a capped description, the schema,
    /// with hidden characters removed from all of their text. `on_demand` uses the larger
    /// limit for tools loaded through `load_tools`.
    pub fn model_definition(&self, on_demand: bool) -> ToolDefinition {
        let description = if on_demand {
            let raw = self.tool.description.as_deref().unwrap_or_default();
            lint::cap_description(
                &lint::clean_for_model(raw),
                lint::DESCRIPTION_LIMIT_ON_DEMAND,
            )
            .0
        } else {
            self.description.clone()
        };
        ToolDefinition {
            name: self.name.clone(),
            description,
            input_schema: self.model_schema().clone(),
        }
    }
}

/// A callable tool's argument validator: compiled when the catalogue was built, or, for a
/// schema that compiled under the same rules in an earlier run ([`Catalogue::build_knowing`]),
/// at the tool's first call. Most tools of a start are never called, and compiling a schema
/// (and, once a process, the meta-schema it is checked against) was most of a start's cost.
#[derive(Clone, Debug)]
enum Validator {
    Compiled(Arc<Checker>),
    /// Compiled at most once per snapshot, whichever call comes first.
    Deferred(Arc<OnceLock<Result<Checker, schema::CompileError>>>),
}

/// Why a call was not sent.
#[derive(Clone, Debug, PartialEq)]
pub enum Refusal {
    UnknownTool(String),
    Unavailable {
        name: String,
        reason: String,
    },
    InvalidArguments {
        name: String,
        problems: Vec<Problem>,
    },
    /// The validation did not finish (over its budget): refused, never passed.
    NotValidated {
        name: String,
        reason: String,
    },
}

impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::UnknownTool(n) => write!(f, "no tool named `{n}`"),
            Self::Unavailable { name, reason } => {
                write!(f, "tool `{name}` is unavailable: {reason}")
            }
            Self::NotValidated { name, reason } => {
                write!(f, "arguments for `{name}` were not accepted: {reason}")
            }
            Self::InvalidArguments { name, problems } => {
                write!(
                    f,
                    "arguments for `{name}` do not match its input schema (nothing was sent):"
                )?;
                for p in problems {
                    let at = if p.pointer.is_empty() {
                        "(root)"
                    } else {
                        &p.pointer
                    };
                    write!(f, "\n  {at}: {}", p.message)?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for Refusal {}

impl ServerTools {
    /// A server with tools only and default options.
    pub fn new(
        server: ServerId,
        tools: impl IntoIterator<Item = impl Into<Arc<ToolDescriptor>>>,
    ) -> Self {
        Self {
            server,
            tools: tools.into_iter().map(Into::into).collect(),
            prompts: Vec::new(),
            resources: Vec::new(),
            templates: Vec::new(),
            facts: Arc::new(ServerFacts::default()),
            instructions: None,
        }
    }
}

fn tagged<T>(server: &ServerId, items: Vec<T>) -> impl Iterator<Item = Offered<T>> + use<'_, T> {
    items.into_iter().map(move |item| Offered {
        server: server.clone(),
        item,
    })
}

/// Something a server offers besides tools, with the server it came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Offered<T> {
    pub server: ServerId,
    pub item: T,
}

#[derive(Debug)]
pub struct Catalogue {
    entries: Vec<Entry>,
    prompts: Vec<Offered<PromptDescriptor>>,
    resources: Vec<Offered<ResourceDescriptor>>,
    templates: Vec<Offered<ResourceTemplateDescriptor>>,
    by_name: HashMap<String, usize>,
    by_key: HashMap<ToolKey, usize>,
    /// The lexical index and each server's name as stemmed words, built on the first
    /// search: only deferred catalogues search, and a start that lists tools does not.
    lexical: OnceLock<ranking::Lexical>,
    /// Set by [`Catalogue::with_embedder`]: semantic ranking beside the lexical one.
    embedder: Option<Arc<Embedder>>,
    /// The tools' vectors, computed on the first search (only deferred catalogues search).
    semantic: OnceLock<SemanticIndex>,
    /// `search_tools`' server list, made once per snapshot (every deferred model step
    /// sends it).
    pub(crate) server_list: OnceLock<String>,
    /// The estimated tokens of every callable tool's definition as the model is given it,
    /// counted on the first plan (every model step plans, and counting serialised each
    /// definition: a step's cost grew with the number of tools).
    pub(crate) callable_tokens: OnceLock<usize>,
    /// The first non-blank line of each server's instructions, as sent.
    instructions: BTreeMap<ServerId, String>,
    /// Findings about a server: in its instructions, and each of its tools whose text
    /// reads as instructions to the model.
    server_flags: BTreeMap<ServerId, Vec<Flag>>,
}

impl Catalogue {
    /// A snapshot of `servers`, every tool's input schema compiled now.
    pub fn build(servers: Vec<ServerTools>) -> Self {
        Self::build_knowing(servers, &HashSet::new())
    }

    /// As [`Catalogue::build`], but a tool whose definition hash is in `checked` (its schema
    /// compiled under [`schema::CHECKER`] before: kept with its pin) is offered as callable
    /// without compiling it; it compiles at its first call, and a call whose schema then does
    /// not compile is refused. [`Entry::schema_checked_now`] tells which compiled here.
    pub fn build_knowing(mut servers: Vec<ServerTools>, checked: &HashSet<String>) -> Self {
        servers.sort_by(|a, b| a.server.cmp(&b.server));
        let mut prompts = Vec::new();
        let mut resources = Vec::new();
        let mut templates = Vec::new();
        for s in &mut servers {
            s.prompts.sort_by(|a, b| a.name.cmp(&b.name));
            s.resources.sort_by(|a, b| a.uri.cmp(&b.uri));
            s.templates
                .sort_by(|a, b| a.uri_template.cmp(&b.uri_template));
            prompts.extend(tagged(&s.server, std::mem::take(&mut s.prompts)));
            resources.extend(tagged(&s.server, std::mem::take(&mut s.resources)));
            templates.extend(tagged(&s.server, std::mem::take(&mut s.templates)));
        }
        let mut server_flags: BTreeMap<ServerId, Vec<Flag>> = BTreeMap::new();
        let mut instructions = BTreeMap::new();
        for s in &servers {
            if let Some(line) = (s.instructions.as_deref().unwrap_or_default().lines())
                .find(|l| !l.trim().is_empty())
            {
                instructions.insert(s.server.clone(), line.to_string());
            }
            let found = lint::instructions_flags(s.instructions.as_deref().unwrap_or_default());
            if !found.is_empty() {
                server_flags.insert(s.server.clone(), found);
            }
        }
        let mut sorted: BTreeMap<ToolKey, (Arc<ToolDescriptor>, Arc<ServerFacts>)> =
            BTreeMap::new();
        for s in servers {
            for t in s.tools {
                if !s.facts.offers(&t.name) {
                    continue;
                }
                let key = ToolKey {
                    server: s.server.clone(),
                    tool: t.name.clone(),
                };
                sorted.insert(key, (t, s.facts.clone()));
            }
        }
        let names = NameTable::allocate(sorted.keys().cloned());
        let mut entries: Vec<Entry> = sorted
            .into_iter()
            .map(|(key, (tool, facts))| {
                let name = names.name_of(&key).unwrap_or(&key.tool).to_string();
                entry(name, key, tool, facts, checked)
            })
            .collect();
        flag_confusables(&mut entries);
        for e in &entries {
            if !e.instruction_phrases.is_empty() {
                server_flags.entry(e.key.server.clone()).or_default().push(
                    Flag::ReadsAsInstructions {
                        field: format!("tool `{}`", e.key.tool),
                        phrases: e.instruction_phrases.clone(),
                    },
                );
            }
        }
        let by_name = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.name.clone(), i))
            .collect();
        let by_key = entries
            .iter()
            .enumerate()
            .map(|(i, e)| (e.key.clone(), i))
            .collect();
        Self {
            entries,
            prompts,
            resources,
            templates,
            by_name,
            by_key,
            lexical: OnceLock::new(),
            embedder: None,
            semantic: OnceLock::new(),
            server_list: OnceLock::new(),
            callable_tokens: OnceLock::new(),
            instructions,
            server_flags,
        }
    }

    /// The first line of `server`'s instructions, if it sent any; check
    /// [`Catalogue::server_flags`] before showing it to a model.
    pub fn instructions(&self, server: &ServerId) -> Option<&str> {
        self.instructions.get(server).map(String::as_str)
    }

    /// Findings about `server` itself (its instructions, and its tools that read as
    /// instructions to the model); empty when there are none.
    pub fn server_flags(&self, server: &ServerId) -> &[Flag] {
        self.server_flags
            .get(server)
            .map(Vec::as_slice)
            .unwrap_or_default()
    }

    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Every prompt of every server, by server then name.
    pub fn prompts(&self) -> &[Offered<PromptDescriptor>] {
        &self.prompts
    }

    /// Every resource of every server, by server then URI.
    pub fn resources(&self) -> &[Offered<ResourceDescriptor>] {
        &self.resources
    }

    /// Every resource template of every server, by server then template.
    pub fn resource_templates(&self) -> &[Offered<ResourceTemplateDescriptor>] {
        &self.templates
    }

    pub fn get(&self, name: &str) -> Option<&Entry> {
        self.by_name.get(name).map(|&i| &self.entries[i])
    }

    pub fn find(&self, server: &ServerId, tool: &str) -> Option<&Entry> {
        let key = ToolKey {
            server: server.clone(),
            tool: tool.to_string(),
        };
        self.by_key.get(&key).map(|&i| &self.entries[i])
    }

    /// Checks a call before it is sent: the tool exists, is callable, and the arguments
    /// match its schema.
    pub fn prepare_call(&self, entry: &Entry, args: &Value) -> Result<(), Refusal> {
        if !entry.callable {
            let reason = entry.flags.iter().find_map(|f| match f {
                Flag::SchemaUnavailable { reason } => Some(reason.clone()),
                _ => None,
            });
            let reason = reason.unwrap_or_else(|| "not callable".into());
            return Err(Refusal::Unavailable {
                name: entry.name.clone(),
                reason,
            });
        }
        let checker = match &entry.validator {
            None => None,
            Some(Validator::Compiled(checker)) => Some(&**checker),
            Some(Validator::Deferred(cell)) => {
                let compiled = cell.get_or_init(|| schema::compile(&entry.tool.input_schema));
                // Compiled before under the same rules, so this cannot fail but by a fault of
                // the kept verdict: what cannot be checked is not sent.
                let checker = compiled.as_ref().map_err(|e| Refusal::Unavailable {
                    name: entry.name.clone(),
                    reason: e.to_string(),
                })?;
                Some(checker)
            }
        };
        if let Some(v) = checker {
            let problems = schema::problems(v, args).map_err(|e| Refusal::NotValidated {
                name: entry.name.clone(),
                reason: e.to_string(),
            })?;
            if !problems.is_empty() {
                return Err(Refusal::InvalidArguments {
                    name: entry.name.clone(),
                    problems,
                });
            }
        }
        Ok(())
    }

    /// Resolves a model-visible name and checks the call.
    pub fn prepare_named_call(&self, name: &str, args: &Value) -> Result<&Entry, Refusal> {
        let entry = self
            .get(name)
            .ok_or_else(|| Refusal::UnknownTool(name.to_string()))?;
        self.prepare_call(entry, args).map(|()| entry)
    }

    /// Compares every entry with its pin in `pins` (pinning new ones) and records the result.
    pub async fn check_pins<P: PinRecords>(&mut self, pins: &P) -> Result<(), P::Error> {
        let known = pins.hashes().await?;
        self.check_pins_against(pins, &known).await
    }

    /// [`Catalogue::check_pins`] with every pin's hash already read (`known`): a tool whose
    /// pin is its definition (nearly all, nearly always) needs no query; a new or changed
    /// definition queries its own pin.
    pub async fn check_pins_against<P: PinRecords>(
        &mut self,
        pins: &P,
        known: &PinnedHashes,
    ) -> Result<(), P::Error> {
        for e in &mut self.entries {
            let pinned = known
                .get(e.key.server.as_str())
                .and_then(|t| t.get(&e.key.tool));
            if pinned == Some(&e.hash) {
                e.pin = Some(PinCheck::Same);
                continue;
            }
            let definition = || Entry::definition(&e.tool);
            let check = pins::check(
                pins,
                e.key.server.as_str(),
                &e.key.tool,
                &e.hash,
                definition,
            );
            let check = check.await?;
            e.pin = Some(check);
        }
        self.forget_pins_past_bound(pins, known).await
    }

    /// Forgets the pins of tools a server no longer lists, for each server whose pins
    /// (those read, and those made now) pass [`MAX_PINS_PER_SERVER`].
    async fn forget_pins_past_bound<P: PinRecords>(
        &self,
        pins: &P,
        known: &PinnedHashes,
    ) -> Result<(), P::Error> {
        // Nearly always no server is near the bound: nothing to count.
        let made = self.entries.len();
        if known
            .values()
            .all(|t| t.len() + made <= MAX_PINS_PER_SERVER)
            && made <= MAX_PINS_PER_SERVER
        {
            return Ok(());
        }
        let mut listed: HashMap<&str, Vec<&str>> = HashMap::new();
        let mut new: HashMap<&str, usize> = HashMap::new();
        for e in &self.entries {
            let server = e.key.server.as_str();
            listed.entry(server).or_default().push(&e.key.tool);
            if matches!(e.pin, Some(PinCheck::New)) {
                *new.entry(server).or_default() += 1;
            }
        }
        for (server, tools) in listed {
            let pinned = known.get(server).map_or(0, HashMap::len);
            if pinned + new.get(server).copied().unwrap_or(0) > MAX_PINS_PER_SERVER {
                pins.forget_unlisted(server, &tools).await?;
            }
        }
        Ok(())
    }
}

fn entry(
    name: String,
    key: ToolKey,
    tool: Arc<ToolDescriptor>,
    facts: Arc<ServerFacts>,
    checked: &HashSet<String>,
) -> Entry {
    let hash = pins::tool_hash(&tool);
    let lint::ToolText {
        description,
        model_schema,
        mut flags,
        instruction_phrases,
    } = lint::tool_text(&tool);
    // What cleaning could not remove (argument names, `enum`/`const` values) would reach the
    // model hidden: the tool is withheld rather than offered with text nobody can see.
    // A schema left as listed is plain: nothing in it is hidden.
    let hidden_in_names = match (model_schema.as_ref())
        .and_then(|cleaned| lint::hidden_in_json("inputSchema", cleaned))
    {
        Some(Flag::HiddenCharacters {
            count, examples, ..
        }) => Some(format!(
            "argument names or allowed values hold {count} hidden character(s) ({}) the model would read",
            examples.join(", ")
        )),
        _ => None,
    };
    let compiled = || {
        if checked.contains(&hash) {
            Ok(Validator::Deferred(Arc::default()))
        } else {
            schema::compile(&tool.input_schema).map(|v| Validator::Compiled(Arc::new(v)))
        }
    };
    let (validator, callable) = match (hidden_in_names, compiled()) {
        (Some(reason), _) => {
            flags.push(Flag::SchemaUnavailable { reason });
            (None, false)
        }
        (None, Ok(v)) => (Some(v), true),
        // `allowUnvalidated` covers schemas the validator cannot read, not ones refused
        // as too costly to check: those stay withheld (see `CompileError::may_go_unvalidated`).
        (None, Err(e)) if facts.allow_unvalidated && e.may_go_unvalidated() => {
            flags.push(Flag::SchemaUnvalidated {
                reason: e.to_string(),
            });
            (None, true)
        }
        (None, Err(e)) => {
            flags.push(Flag::SchemaUnavailable {
                reason: e.to_string(),
            });
            (None, false)
        }
    };
    Entry {
        name,
        key,
        tool,
        description,
        model_schema,
        instruction_phrases,
        flags,
        validator,
        callable,
        facts,
        hash,
        pin: None,
    }
}

/// Flags every tool whose name has the same UTS #39 skeleton as a differently spelled tool
/// of another server.
fn flag_confusables(entries: &mut [Entry]) {
    let mut by_skeleton: HashMap<String, Vec<usize>> = HashMap::new();
    for (i, e) in entries.iter().enumerate() {
        by_skeleton
            .entry(lint::skeleton(&e.key.tool))
            .or_default()
            .push(i);
    }
    let mut found: Vec<(usize, Flag)> = Vec::new();
    for group in by_skeleton.values().filter(|g| g.len() > 1) {
        // Only tools of different names are confusable; a group of one name (the same
        // server configured many times, say) has no pair to compare, and comparing every
        // pair made a start's cost grow with the square of such servers.
        let first = &entries[group[0]].key.tool;
        if group.iter().all(|&i| entries[i].key.tool == *first) {
            continue;
        }
        for &i in group {
            for &j in group {
                let (a, b) = (&entries[i].key, &entries[j].key);
                if a.server != b.server && a.tool != b.tool {
                    let flag = Flag::Confusable {
                        other_server: b.server.to_string(),
                        other_tool: b.tool.clone(),
                    };
                    found.push((i, flag));
                }
            }
        }
    }
    for (i, flag) in found {
        entries[i].flags.push(flag);
    }
}

/// Drops parenthesised examples ("(e.g., 'Asia/Tokyo')") from a parameter description: they
/// describe a value's format, not what the tool does, and their rare words would otherwise
/// outrank the words that do.
fn without_examples(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = rest.find('(') {
        let inner = rest[start + 1..].trim_start().to_lowercase();
        let example = ["e.g", "eg.", "for example", "such as", "example"]
            .iter()
            .any(|p| inner.starts_with(p));
        match rest[start..].find(')') {
            Some(len) if example => {
                out.push_str(&rest[..start]);
                rest = &rest[start + len + 1..];
            }
            _ => {
                out.push_str(&rest[..=start]);
                rest = &rest[start + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

pub(crate) fn doc_text(e: &Entry) -> DocText {
    let props = e
        .tool
        .input_schema
        .get("properties")
        .and_then(Value::as_object);
    let param_names = props
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    let param_descriptions = props
        .map(|p| {
            p.values()
                .filter_map(|v| v.get("description")?.as_str().map(without_examples))
                .collect()
        })
        .unwrap_or_default();
    DocText {
        server: e.key.server.to_string(),
        name: e.key.tool.clone(),
        title: e.tool.title.clone().unwrap_or_default(),
        description: e.description.clone(),
        param_names,
        param_descriptions,
    }
}

#[cfg(test)]
mod tests;
