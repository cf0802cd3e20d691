//! The static half of the schema budget: before a tool's `inputSchema` is compiled, its
//! subschemas are walked structurally (only keywords that hold schemas, never `enum`,
//! `const` or property names) with local `$ref`s followed, and the schema is refused when
//!
//! - a `$ref` cannot be followed inside the document (only `#…` pointers, `$anchor`s and
//!   embedded `$id`s are; `$dynamicRef`/`$recursiveRef` are not followed, so refused),
//! - `$ref`s form a loop that never descends into the arguments (`{"$ref": "#"}`, `a → b → a`):
//!   such a loop has no meaning, and the validator would accept anything,
//! - the schema with every `$ref` inlined would have more than [`MAX_EXPANDED_NODES`]
//!   subschemas, or nest deeper than [`MAX_EXPANDED_DEPTH`]: that is what makes validation
//!   exponential (`allOf`/`anyOf` branches that `$ref` the next level, each level multiplying
//!   the work). A recursion through `properties`/`items` (a tree) is legitimate and counted
//!   once; its cost per call is bounded at run time by the step budget in `schema.rs`.
//!
//! The walk is linear in the size of the schema (memoised per subschema), so the refusal
//! itself is cheap whatever the schema.

use serde_json::Value;
use std::collections::{BTreeMap, HashMap, HashSet};

/// Subschemas of the schema with every `$ref` inlined. Real servers' schemas have tens to a
/// few hundred; an exponential one has billions.
pub const MAX_EXPANDED_NODES: u64 = 100_000;
/// Nesting of subschemas with every `$ref` inlined (a chain of `$ref`s nests too).
pub const MAX_EXPANDED_DEPTH: usize = 128;
/// The JSON Pointers of all subschemas together, in bytes. The walk keys each subschema by
/// its pointer, which holds every property name above it: a long name over many children
/// made that its length times their number (a 92 KB schema, 4.7 GB of pointers and 11 s).
/// Real schemas' pointers add up to kilobytes; 16 times the largest schema compiled is far
/// beyond any of them.
pub const MAX_POINTER_BYTES: usize = 16 * crate::schema::MAX_SCHEMA_BYTES;

/// Why a schema is refused before compiling.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BudgetError {
    #[error("`$ref` {reference} at {at} cannot be followed inside the schema")]
    UnresolvedRef { at: String, reference: String },
    #[error("`{keyword}` at {at} is not followed by the host, so the schema cannot be checked")]
    Unsupported { at: String, keyword: &'static str },
    #[error(
        "`$ref` loop through {at} never reaches a value (it would accept anything or never end)"
    )]
    RefLoop { at: String },
    #[error(
        "schema expands to more than {MAX_EXPANDED_NODES} subschemas once its `$ref`s are followed (combinator expansion)"
    )]
    Expansion,
    #[error("schema nests deeper than {MAX_EXPANDED_DEPTH} levels once its `$ref`s are followed")]
    ExpandedDepth,
    #[error(
        "the paths to the schema's subschemas add up to more than {MAX_POINTER_BYTES} bytes (long property names over many subschemas)"
    )]
    PathBytes,
}

/// The bytes of pointers a walk has made, against [`MAX_POINTER_BYTES`].
#[derive(Default)]
struct PathBudget(usize);

impl PathBudget {
    /// `parent` followed by `suffix`, counted.
    fn join(&mut self, parent: &str, suffix: &str) -> Result<String, BudgetError> {
        self.0 += parent.len() + suffix.len();
        if self.0 > MAX_POINTER_BYTES {
            return Err(BudgetError::PathBytes);
        }
        Ok(format!("{parent}{suffix}"))
    }
}

/// How a subschema is applied by its parent.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Edge {
    /// To the same value (`allOf`, `anyOf`, `not`, `$ref`, …): a loop of these never ends.
    InPlace,
    /// To a part of the value (`properties`, `items`, …): recursion ends with the value.
    Descent,
}

const IN_PLACE_ONE: &[&str] = &["not", "if", "then", "else"];
const IN_PLACE_MANY: &[&str] = &["allOf", "anyOf", "oneOf"];
const IN_PLACE_MAP: &[&str] = &["dependentSchemas", "dependencies"];
const DESCENT_ONE: &[&str] = &[
    "additionalProperties",
    "additionalItems",
    "contains",
    "propertyNames",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
];
const DESCENT_MANY: &[&str] = &["prefixItems"];
const DESCENT_MAP: &[&str] = &["properties", "patternProperties"];
/// Hold schemas that only apply when referenced.
const DEFINITIONS: &[&str] = &["$defs", "definitions"];

fn escape(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

/// Every subschema directly inside `schema`, with how it is applied (`None` for definitions)
/// and its JSON Pointer suffix. Applies to both walks and to the cleaning of descriptions,
/// so all three agree on what a subschema is.
pub(crate) fn subschemas(schema: &Value) -> Vec<(Option<EdgeKind>, String, &Value)> {
    let mut out = Vec::new();
    let Value::Object(map) = schema else {
        return out;
    };
    for (k, v) in map {
        let key = k.as_str();
        let kind = if IN_PLACE_ONE.contains(&key)
            || IN_PLACE_MANY.contains(&key)
            || IN_PLACE_MAP.contains(&key)
        {
            Some(EdgeKind(Edge::InPlace))
        } else if DESCENT_ONE.contains(&key)
            || DESCENT_MANY.contains(&key)
            || DESCENT_MAP.contains(&key)
            || key == "items"
        {
            Some(EdgeKind(Edge::Descent))
        } else if DEFINITIONS.contains(&key) {
            None
        } else {
            continue;
        };
        let base = format!("/{}", escape(key));
        let maps = IN_PLACE_MAP.contains(&key) || DESCENT_MAP.contains(&key) || kind.is_none();
        match v {
            Value::Object(m) if maps => {
                for (name, sub) in m {
                    // `dependencies` also holds arrays of property names: not schemas.
                    if sub.is_object() || sub.is_boolean() {
                        out.push((kind, format!("{base}/{}", escape(name)), sub));
                    }
                }
            }
            Value::Array(a) => {
                for (i, sub) in a.iter().enumerate() {
                    out.push((kind, format!("{base}/{i}"), sub));
                }
            }
            Value::Object(_) | Value::Bool(_) if !maps => out.push((kind, base, v)),
            _ => {}
        }
    }
    out
}

/// How a subschema is applied, opaque outside this module.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) struct EdgeKind(Edge);

/// A subschema of the document, by JSON Pointer, with the pointer of the resource (`$id`)
/// its `#…` references are relative to.
struct Node<'a> {
    value: &'a Value,
    base: String,
}

/// Ordered maps: which refusal is reported, and which of two equal `$id`s wins, must not
/// depend on a hasher's seed (a tool's reason would change from run to run).
struct Graph<'a> {
    nodes: BTreeMap<String, Node<'a>>,
    /// Edges by node pointer: (kind, target pointer).
    edges: HashMap<String, Vec<(Edge, String)>>,
}

fn id_of(v: &Value) -> Option<&str> {
    v.get("$id")
        .and_then(Value::as_str)
        .filter(|id| !id.starts_with('#'))
}

/// Percent-decoding of a URI fragment (`%25` → `%`), enough for JSON Pointers.
fn decode(fragment: &str) -> String {
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && let Some(h) = fragment
                .get(i + 1..i + 3)
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(h);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

impl<'a> Graph<'a> {
    fn build(root: &'a Value) -> Result<Self, BudgetError> {
        let mut nodes = BTreeMap::new();
        let mut paths = PathBudget::default();
        let mut stack = vec![(String::new(), root, String::new())];
        while let Some((ptr, value, parent_base)) = stack.pop() {
            if nodes.contains_key(&ptr) {
                continue;
            }
            let base = if id_of(value).is_some() {
                ptr.clone()
            } else {
                parent_base
            };
            for (_, suffix, sub) in subschemas(value) {
                stack.push((paths.join(&ptr, &suffix)?, sub, base.clone()));
            }
            nodes.insert(ptr, Node { value, base });
        }
        let mut ids: HashMap<&str, String> = HashMap::new();
        let mut anchors: HashMap<(String, &str), String> = HashMap::new();
        // In document order, the first of two equal `$id`s or anchors wins.
        for (ptr, n) in &nodes {
            if let Some(id) = id_of(n.value) {
                ids.entry(id).or_insert_with(|| ptr.clone());
            }
            if let Some(a) = n.value.get("$anchor").and_then(Value::as_str) {
                anchors
                    .entry((n.base.clone(), a))
                    .or_insert_with(|| ptr.clone());
            }
        }
        let mut graph = Graph {
            nodes,
            edges: HashMap::new(),
        };
        // Popped from the end: the first problem in document order is the one reported.
        let mut pending: Vec<String> = graph.nodes.keys().rev().cloned().collect();
        let mut done: HashSet<String> = HashSet::new();
        while let Some(ptr) = pending.pop() {
            if !done.insert(ptr.clone()) {
                continue;
            }
            let Some(node) = graph.nodes.get(&ptr) else {
                continue;
            };
            let (value, base) = (node.value, node.base.clone());
            let mut edges: Vec<(Edge, String)> = subschemas(value)
                .into_iter()
                .filter_map(|(kind, suffix, _)| kind.map(|k| (k.0, format!("{ptr}{suffix}"))))
                .collect();
            for keyword in ["$dynamicRef", "$recursiveRef"] {
                if value.get(keyword).is_some() {
                    return Err(BudgetError::Unsupported {
                        at: display(&ptr),
                        keyword,
                    });
                }
            }
            if let Some(r) = value.get("$ref").and_then(Value::as_str) {
                let target = resolve(r, &base, &ids, &anchors).ok_or_else(|| {
                    BudgetError::UnresolvedRef {
                        at: display(&ptr),
                        reference: r.to_string(),
                    }
                })?;
                if !graph.nodes.contains_key(&target) {
                    // A `$ref` into a part of the document that is not under a schema
                    // keyword (`#/components/…`): walk it as a schema too.
                    let sub = root
                        .pointer(&target)
                        .filter(|v| v.is_object() || v.is_boolean())
                        .ok_or_else(|| BudgetError::UnresolvedRef {
                            at: display(&ptr),
                            reference: r.to_string(),
                        })?;
                    let mut more = vec![(target.clone(), sub)];
                    while let Some((p, v)) = more.pop() {
                        if graph.nodes.contains_key(&p) {
                            continue;
                        }
                        for (_, suffix, s) in subschemas(v) {
                            more.push((paths.join(&p, &suffix)?, s));
                        }
                        let base = if id_of(v).is_some() {
                            p.clone()
                        } else {
                            base.clone()
                        };
                        pending.push(p.clone());
                        graph.nodes.insert(p, Node { value: v, base });
                    }
                }
                edges.push((Edge::InPlace, target));
            }
            graph.edges.insert(ptr, edges);
        }
        Ok(graph)
    }

    fn edges(&self, ptr: &str) -> &[(Edge, String)] {
        self.edges.get(ptr).map(Vec::as_slice).unwrap_or_default()
    }
}

fn resolve(
    reference: &str,
    base: &str,
    ids: &HashMap<&str, String>,
    anchors: &HashMap<(String, &str), String>,
) -> Option<String> {
    let (resource, fragment) = match reference.split_once('#') {
        Some((r, f)) => (r, f),
        None => (reference, ""),
    };
    let base = if resource.is_empty() {
        base.to_string()
    } else {
        ids.get(resource)?.clone()
    };
    let fragment = decode(fragment);
    if fragment.is_empty() || fragment.starts_with('/') {
        Some(format!("{base}{fragment}"))
    } else {
        anchors.get(&(base, fragment.as_str())).cloned()
    }
}

fn display(ptr: &str) -> String {
    format!("#{ptr}")
}

/// Checks `schema` against the static budget; the error says which limit it broke.
pub fn check(schema: &Value) -> Result<Estimate, BudgetError> {
    let graph = Graph::build(schema)?;
    find_in_place_loop(&graph)?;
    let mut memo: HashMap<String, (u64, usize)> = HashMap::new();
    let mut on_stack = HashSet::new();
    let (nodes, depth) = expand(&graph, "", &mut memo, &mut on_stack, 0)?;
    let mut pointers: Vec<String> = graph.nodes.keys().cloned().collect();
    pointers.sort();
    Ok(Estimate {
        nodes,
        depth,
        recursive: graph_has_cycle(&graph),
        pointers,
    })
}

/// What the static walk found out about a schema that passed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Estimate {
    /// Subschemas with every `$ref` inlined (a recursion counted once).
    pub nodes: u64,
    /// Their nesting.
    pub depth: usize,
    /// A `$ref` recursion through `properties`/`items`: the work per call grows with the
    /// arguments' depth.
    pub recursive: bool,
    /// JSON Pointer of every subschema, `$defs` and `$ref` targets included.
    pub pointers: Vec<String>,
}

/// A loop of in-place edges only (three-colour DFS over that subgraph).
fn find_in_place_loop(graph: &Graph<'_>) -> Result<(), BudgetError> {
    #[derive(Clone, Copy, PartialEq)]
    enum Colour {
        Grey,
        Black,
    }
    let mut colour: HashMap<&str, Colour> = HashMap::new();
    let mut starts: Vec<&String> = graph.nodes.keys().collect();
    starts.sort();
    for start in starts {
        if colour.contains_key(start.as_str()) {
            continue;
        }
        // (node, index of the next edge to look at)
        let mut stack: Vec<(&str, usize)> = vec![(start.as_str(), 0)];
        colour.insert(start, Colour::Grey);
        while let Some(&(node, next)) = stack.last() {
            let target = graph
                .edges(node)
                .iter()
                .filter(|(e, _)| *e == Edge::InPlace)
                .map(|(_, t)| t)
                .nth(next);
            if let Some(target) = target {
                if let Some(top) = stack.last_mut() {
                    top.1 += 1;
                }
                match colour.get(target.as_str()) {
                    Some(Colour::Grey) => {
                        return Err(BudgetError::RefLoop {
                            at: display(target),
                        });
                    }
                    Some(Colour::Black) => {}
                    None => {
                        colour.insert(target, Colour::Grey);
                        stack.push((target.as_str(), 0));
                    }
                }
            } else {
                colour.insert(node, Colour::Black);
                stack.pop();
            }
        }
    }
    Ok(())
}

fn graph_has_cycle(graph: &Graph<'_>) -> bool {
    fn visit<'g>(
        graph: &'g Graph<'_>,
        node: &'g str,
        grey: &mut HashSet<&'g str>,
        black: &mut HashSet<&'g str>,
        depth: usize,
    ) -> bool {
        // The expansion walk already refused anything deeper than this.
        if depth > MAX_EXPANDED_DEPTH + 1 || black.contains(node) {
            return false;
        }
        if !grey.insert(node) {
            return true;
        }
        let found = graph
            .edges(node)
            .iter()
            .any(|(_, t)| visit(graph, t, grey, black, depth + 1));
        grey.remove(node);
        black.insert(node);
        found
    }
    let (mut grey, mut black) = (HashSet::new(), HashSet::new());
    visit(graph, "", &mut grey, &mut black, 0)
}

/// (inlined subschemas, nesting) under `ptr`; a `$ref` back to an ancestor (a recursion,
/// which the loop check proved descends into the value) counts as one subschema.
fn expand(
    graph: &Graph<'_>,
    ptr: &str,
    memo: &mut HashMap<String, (u64, usize)>,
    on_stack: &mut HashSet<String>,
    depth: usize,
) -> Result<(u64, usize), BudgetError> {
    if depth > MAX_EXPANDED_DEPTH {
        return Err(BudgetError::ExpandedDepth);
    }
    if let Some(known) = memo.get(ptr) {
        if depth + known.1 > MAX_EXPANDED_DEPTH {
            return Err(BudgetError::ExpandedDepth);
        }
        return Ok(*known);
    }
    if on_stack.contains(ptr) {
        return Ok((1, 1));
    }
    on_stack.insert(ptr.to_string());
    let mut nodes: u64 = 1;
    let mut deepest = 0;
    for (_, target) in graph.edges(ptr) {
        let (n, d) = expand(graph, target, memo, on_stack, depth + 1)?;
        nodes = nodes.saturating_add(n);
        deepest = deepest.max(d);
        if nodes > MAX_EXPANDED_NODES {
            return Err(BudgetError::Expansion);
        }
    }
    on_stack.remove(ptr);
    memo.insert(ptr.to_string(), (nodes, deepest + 1));
    Ok((nodes, deepest + 1))
}

#[cfg(test)]
mod properties;

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use serde_json::json;

    pub(crate) use mcp_host_testkit::expansion_schema;

    /// Found by the property test: the refusal named the unresolvable `$ref` a hash map
    /// happened to visit first, so a tool's reason changed from run to run.
    #[test]
    fn the_first_problem_in_document_order_is_reported_every_time() {
        let schema = json!({
            "$defs": {"a": {"$ref": "#/$defs/gone"}, "b": {"$ref": "#/$defs/missing"}},
            "properties": {"x": {"$ref": "#/$defs/a"}, "y": {"$ref": "#/$defs/b"}}
        });
        let first = BudgetError::UnresolvedRef {
            at: "#/$defs/a".into(),
            reference: "#/$defs/gone".into(),
        };
        for _ in 0..20 {
            assert_eq!(check(&schema), Err(first.clone()));
        }
    }

    /// A long property name over many subschemas is refused by the bytes its pointers would
    /// take, before they are made; the walk made them all (4.7 GB for a 92 KB schema).
    #[test]
    fn long_names_over_many_subschemas_are_refused_by_their_paths() {
        let schema = mcp_host_testkit::long_path_schema(32 * 1024, 20_000);
        assert!(serde_json::to_vec(&schema).unwrap().len() < crate::schema::MAX_SCHEMA_BYTES);
        assert_eq!(check(&schema), Err(BudgetError::PathBytes));
        // The same shape with a name of real length passes.
        assert!(check(&mcp_host_testkit::long_path_schema(40, 2_000)).is_ok());
    }

    #[test]
    fn real_shapes_pass_with_their_size() {
        let plain = json!({"type": "object", "properties": {"a": {"type": "string"}, "b": {"anyOf": [{"type": "integer"}, {"type": "null"}]}}});
        let e = check(&plain).unwrap();
        assert_eq!((e.nodes, e.recursive), (5, false));
        let shared = json!({"$defs": {"t": {"type": "object", "properties": {"k": {"type": "string"}}}},
            "type": "object", "properties": {"x": {"$ref": "#/$defs/t"}, "y": {"items": {"$ref": "#/$defs/t"}}}});
        assert!(!check(&shared).unwrap().recursive);
    }

    #[test]
    fn an_expansion_schema_is_refused_quickly() {
        let s = expansion_schema(12, 8);
        assert!(s.to_string().len() < 4096, "{}", s.to_string().len());
        let started = std::time::Instant::now();
        assert_eq!(check(&s), Err(BudgetError::Expansion));
        assert!(started.elapsed() < std::time::Duration::from_secs(1));
        assert!(
            check(&expansion_schema(3, 8)).is_ok(),
            "small fan-out is fine"
        );
    }

    #[test]
    fn a_recursive_tree_passes_and_is_marked_recursive() {
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {"children": {"items": {"$ref": "#/$defs/node"}}}}},
            "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}});
        let e = check(&tree).unwrap();
        assert!(e.recursive);
        let root_recursion = json!({"type": "object", "properties": {"next": {"$ref": "#"}}});
        assert!(check(&root_recursion).unwrap().recursive);
    }

    #[test]
    fn loops_that_never_descend_are_refused() {
        for s in [
            json!({"$ref": "#"}),
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}),
            json!({"$defs": {"a": {"anyOf": [{"type": "string"}, {"$ref": "#/$defs/a"}]}}, "$ref": "#/$defs/a"}),
            json!({"$defs": {"a": {"$anchor": "me", "allOf": [{"$ref": "#me"}]}}, "properties": {"p": {"$ref": "#/$defs/a"}}}),
        ] {
            assert!(
                matches!(check(&s), Err(BudgetError::RefLoop { .. })),
                "{s}: {:?}",
                check(&s)
            );
        }
    }

    #[test]
    fn refs_outside_the_document_and_dynamic_refs_are_refused() {
        let missing = json!({"properties": {"x": {"$ref": "#/$defs/nope"}}});
        assert!(matches!(
            check(&missing),
            Err(BudgetError::UnresolvedRef { .. })
        ));
        let dynamic = json!({"$dynamicAnchor": "m", "properties": {"x": {"$dynamicRef": "#m"}}});
        assert!(matches!(
            check(&dynamic),
            Err(BudgetError::Unsupported { .. })
        ));
        let embedded = json!({"$id": "https://x.test/root", "$defs": {"s": {"$id": "item", "type": "string"}},
            "properties": {"x": {"$ref": "item"}, "y": {"$ref": "https://x.test/root#/$defs/s"}}});
        assert!(check(&embedded).is_ok(), "{:?}", check(&embedded));
        let elsewhere = json!({"components": {"A": {"type": "string"}}, "properties": {"x": {"$ref": "#/components/A"}}});
        assert!(check(&elsewhere).is_ok());
    }

    #[test]
    fn a_long_ref_chain_is_refused_by_depth() {
        let mut defs = serde_json::Map::new();
        for i in 0..300 {
            defs.insert(
                format!("a{i}"),
                json!({"allOf": [{"$ref": format!("#/$defs/a{}", i + 1)}]}),
            );
        }
        defs.insert("a300".into(), json!({"type": "string"}));
        let s = json!({"$defs": defs, "properties": {"x": {"$ref": "#/$defs/a0"}}});
        assert_eq!(check(&s), Err(BudgetError::ExpandedDepth));
    }
}
