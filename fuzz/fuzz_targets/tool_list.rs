//! A `tools/list` page from one or two servers, built from structured input (random bytes
//! would rarely get past JSON syntax): lenient decoding keeps what is usable and says why it
//! dropped the rest, and the catalogue gives every tool kept a distinct model-visible name
//! of at most 64 characters from `[A-Za-z0-9_-]` that resolves back to that very tool.
#![no_main]

use arbitrary::Arbitrary;
use libfuzzer_sys::fuzz_target;
use mcp_host_core::ServerId;
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use serde_json::{Value, json};
use std::collections::BTreeSet;

#[derive(Arbitrary, Debug)]
enum Field {
    Missing,
    Text(String),
    Number(i64),
    Null,
    Object,
}

#[derive(Arbitrary, Debug)]
struct Tool {
    name: Field,
    description: Field,
    schema: Field,
    /// Nest the schema this deep in `properties`.
    depth: u8,
    read_only: Option<bool>,
}

#[derive(Arbitrary, Debug)]
struct Input {
    servers: Vec<(String, Vec<Tool>)>,
}

fn value(f: &Field) -> Option<Value> {
    match f {
        Field::Missing => None,
        Field::Text(s) => Some(json!(s)),
        Field::Number(n) => Some(json!(n)),
        Field::Null => Some(Value::Null),
        Field::Object => Some(json!({"type": "object"})),
    }
}

fn tool(t: &Tool) -> Value {
    let mut obj = serde_json::Map::new();
    if let Some(v) = value(&t.name) {
        obj.insert("name".into(), v);
    }
    if let Some(v) = value(&t.description) {
        obj.insert("description".into(), v);
    }
    let mut schema = value(&t.schema).unwrap_or(json!({"type": "object"}));
    for _ in 0..t.depth.min(80) {
        schema = json!({"type": "object", "properties": {"x": schema}});
    }
    obj.insert("inputSchema".into(), schema);
    if let Some(ro) = t.read_only {
        obj.insert("annotations".into(), json!({"readOnlyHint": ro}));
    }
    Value::Object(obj)
}

fuzz_target!(|input: Input| {
    let mut servers = Vec::new();
    let mut seen = BTreeSet::new();
    for (name, tools) in input.servers.iter().take(4) {
        if name.is_empty() || !seen.insert(name.clone()) {
            continue;
        }
        let page = json!({"tools": tools.iter().take(64).map(tool).collect::<Vec<_>>()});
        let Ok(parsed) = mcp_host_client::lenient::parse_tool_page(page) else {
            continue;
        };
        servers.push(ServerTools::new(ServerId::new(name), parsed.items));
    }
    let catalogue = Catalogue::build(servers);
    let mut names = BTreeSet::new();
    for entry in catalogue.entries() {
        let n = &entry.name;
        assert!(!n.is_empty() && n.len() <= 64, "name {n:?}");
        assert!(
            n.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-'),
            "name {n:?}"
        );
        assert!(names.insert(n.clone()), "{n:?} given twice");
        let back = catalogue.get(n).map(|e| (&e.key.server, &e.key.tool));
        assert_eq!(back, Some((&entry.key.server, &entry.key.tool)));
    }
});
