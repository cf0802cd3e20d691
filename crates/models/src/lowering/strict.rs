//! OpenAI strict mode (`strict: true` on a function): every object lists all its properties
//! in `required` and has `additionalProperties: false`, so an optional property becomes a
//! required nullable one (`type: [T, "null"]`). Definitions stay (`$defs`, with
//! `definitions` renamed to it) because strict mode accepts references into them, recursive
//! ones included; a `$ref` with other keywords beside it is inlined, since strict mode
//! rejects that shape. Keywords outside the supported set (`default`, `minLength`,
//! `maxLength`, `examples`, unsupported `format`s, …) are dropped. `oneOf` becomes `anyOf`,
//! `allOf` is merged. A free-form object (no `properties`) can only be `{}` in strict mode;
//! an untyped schema stays untyped and the API may refuse it: use the non-strict dialect
//! for such tools.

use super::{Budget, MAX_DEPTH, copy_description, merge_into, resolve, type_list};
use serde_json::{Map, Value, json};

/// String formats strict mode supports.
const FORMATS: &[&str] = &[
    "date-time",
    "time",
    "date",
    "duration",
    "email",
    "hostname",
    "ipv4",
    "ipv6",
    "uuid",
];
/// Keywords copied as they are when present.
const KEPT: &[&str] = &[
    "description",
    "enum",
    "const",
    "pattern",
    "multipleOf",
    "minimum",
    "maximum",
    "exclusiveMinimum",
    "exclusiveMaximum",
    "minItems",
    "maxItems",
];

pub(super) fn lower(root: &Value) -> Value {
    let mut walk = Walk {
        root,
        stack: Vec::new(),
        budget: Budget::new(),
    };
    let mut out = walk.node(root, 0);
    let mut defs = Map::new();
    // `$defs` comes last so it wins over a `definitions` entry of the same name.
    for key in ["definitions", "$defs"] {
        for (name, def) in root
            .get(key)
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !walk.budget.spend(name.len()) {
                break;
            }
            defs.insert(name.clone(), walk.node(def, 1));
        }
    }
    if let (false, Some(map)) = (defs.is_empty(), out.as_object_mut()) {
        map.insert("$defs".into(), Value::Object(defs));
    }
    out
}

struct Walk<'a> {
    root: &'a Value,
    /// References being inlined on the current path, to spot a cycle.
    stack: Vec<String>,
    /// Nodes and copied bytes still allowed to be written.
    budget: Budget,
}

/// What an unresolvable reference or a too-deep schema becomes: the only object strict
/// mode can say without knowing its shape.
fn placeholder(map: &Map<String, Value>, budget: &mut Budget) -> Value {
    let mut out = Map::new();
    copy_description(map, &mut out, budget);
    out.insert("type".into(), json!("object"));
    out.insert("properties".into(), json!({}));
    out.insert("required".into(), json!([]));
    out.insert("additionalProperties".into(), json!(false));
    Value::Object(out)
}

/// A reference strict mode can keep as a reference: the root or a definition (the
/// definitions are carried over under `$defs`).
fn kept_reference(reference: &str) -> Option<String> {
    if reference == "#" || reference.starts_with("#/$defs/") {
        Some(reference.to_string())
    } else {
        reference
            .strip_prefix("#/definitions/")
            .map(|name| format!("#/$defs/{name}"))
    }
}

/// Makes a lowered schema also accept `null` (for a property that was optional).
fn nullable(schema: Value) -> Value {
    let Value::Object(mut map) = schema else {
        return schema;
    };
    let (types, has_null) = type_list(map.get("type"));
    if !types.is_empty() {
        if !has_null {
            let mut list: Vec<Value> = types.into_iter().map(Value::String).collect();
            list.push(json!("null"));
            map.insert("type".into(), Value::Array(list));
        }
        // An enum must also list null, or null stays impossible.
        if let Some(Value::Array(values)) = map.get_mut("enum")
            && !values.contains(&Value::Null)
        {
            values.push(Value::Null);
        }
        return Value::Object(map);
    }
    if let Some(Value::Array(branches)) = map.get_mut("anyOf") {
        if !branches
            .iter()
            .any(|b| b.get("type").is_some_and(|t| t == "null"))
        {
            branches.push(json!({"type": "null"}));
        }
        return Value::Object(map);
    }
    json!({"anyOf": [Value::Object(map), {"type": "null"}]})
}

impl Walk<'_> {
    fn node(&mut self, schema: &Value, depth: usize) -> Value {
        let Some(map) = schema.as_object() else {
            // `true`, `false`, or not a schema at all (kept for the API to judge).
            return self.budget.copy(schema).unwrap_or_else(|| json!({}));
        };
        if depth > MAX_DEPTH || !self.budget.node() {
            return placeholder(map, &mut self.budget);
        }
        if let Some(reference) = map.get("$ref").and_then(Value::as_str) {
            return self.reference(map, reference, depth);
        }
        let mut out = Map::new();
        for key in std::iter::once(&"type").chain(KEPT) {
            if let Some(v) = map.get(*key).and_then(|v| self.budget.copy(v)) {
                out.insert((*key).into(), v);
            }
        }
        if let Some(f) = map.get("format").and_then(Value::as_str)
            && FORMATS.contains(&f)
        {
            out.insert("format".into(), json!(f));
        }
        let mut branches = Vec::new();
        for key in ["anyOf", "oneOf"] {
            for branch in map.get(key).and_then(Value::as_array).into_iter().flatten() {
                branches.push(self.node(branch, depth + 1));
            }
        }
        if !branches.is_empty() {
            out.insert("anyOf".into(), json!(branches));
        }
        self.items(map, &mut out, depth);
        let (types, _) = type_list(map.get("type"));
        let is_object = types.iter().any(|t| t == "object") || map.contains_key("properties");
        if is_object {
            if !out.contains_key("type") {
                out.insert("type".into(), json!("object"));
            }
            self.object(map, &mut out, depth);
        }
        for member in map
            .get("allOf")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let lowered = self.node(member, depth + 1);
            merge_into(&mut out, lowered);
        }
        Value::Object(out)
    }

    /// Properties, all required (optional ones made nullable), nothing else allowed.
    fn object(&mut self, map: &Map<String, Value>, out: &mut Map<String, Value>, depth: usize) {
        let required: std::collections::HashSet<&str> = map
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let mut properties = Map::new();
        for (name, schema) in map
            .get("properties")
            .and_then(Value::as_object)
            .into_iter()
            .flatten()
        {
            if !self.budget.spend(name.len()) {
                break;
            }
            let lowered = self.node(schema, depth + 1);
            let lowered = if required.contains(name.as_str()) {
                lowered
            } else {
                nullable(lowered)
            };
            properties.insert(name.clone(), lowered);
        }
        let names: Vec<Value> = properties.keys().map(|k| json!(k)).collect();
        out.insert("properties".into(), Value::Object(properties));
        out.insert("required".into(), Value::Array(names));
        out.insert("additionalProperties".into(), json!(false));
    }

    fn items(&mut self, map: &Map<String, Value>, out: &mut Map<String, Value>, depth: usize) {
        match map.get("items") {
            // Tuples are not in the strict subset: any of the positions' schemas.
            Some(Value::Array(tuple)) => {
                let items: Vec<Value> = tuple.iter().map(|s| self.node(s, depth + 1)).collect();
                out.insert("items".into(), json!({"anyOf": items}));
            }
            Some(items) => {
                let lowered = self.node(items, depth + 1);
                out.insert("items".into(), lowered);
            }
            None => {}
        }
    }

    fn reference(&mut self, map: &Map<String, Value>, reference: &str, depth: usize) -> Value {
        let alone = map.keys().all(|k| k == "$ref");
        let cyclic = self.stack.iter().any(|r| r == reference);
        if let Some(kept) = kept_reference(reference)
            && (alone || cyclic)
        {
            // A recursive reference with a description beside it loses the description:
            // inlining it would never end.
            return json!({"$ref": kept});
        }
        let Some(target) = resolve(self.root, reference).filter(|_| !cyclic) else {
            return placeholder(map, &mut self.budget);
        };
        self.stack.push(reference.to_string());
        let mut lowered = self.node(target, depth + 1);
        self.stack.pop();
        if let (Some(out), Some(d)) = (lowered.as_object_mut(), map.get("description"))
            && d.is_string()
            && let Some(d) = self.budget.copy(d)
        {
            out.insert("description".into(), d);
        }
        lowered
    }
}

#[cfg(test)]
mod tests {
    use crate::lowering::{Dialect, lower};
    use serde_json::json;

    fn strict(schema: serde_json::Value) -> serde_json::Value {
        lower(&schema, Dialect::OpenAiStrict)
    }

    #[test]
    fn optional_properties_become_required_and_nullable() {
        let out = strict(json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "minLength": 1, "format": "uri", "default": "."},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "mode": {"type": "string", "enum": ["a", "b"]},
                "when": {"type": "string", "format": "date-time"},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]},
                "maybe": {"type": ["string", "null"]}
            },
            "required": ["path"]
        }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "path": {"type": "string"},
                    "limit": {"type": ["integer", "null"], "minimum": 1, "maximum": 100},
                    "mode": {"type": ["string", "null"], "enum": ["a", "b", null]},
                    "when": {"type": ["string", "null"], "format": "date-time"},
                    "either": {"anyOf": [{"type": "string"}, {"type": "integer"}, {"type": "null"}]},
                    "maybe": {"type": ["string", "null"]}
                },
                "required": ["path", "limit", "mode", "when", "either", "maybe"],
                "additionalProperties": false
            })
        );
    }

    #[test]
    fn nested_objects_are_closed_and_free_form_ones_become_empty() {
        let out = strict(json!({
            "type": "object",
            "properties": {
                "filter": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]},
                "meta": {"type": "object", "additionalProperties": {"type": "string"}},
                "rows": {"type": "array", "items": {"type": "object", "properties": {"id": {"type": "integer"}}}}
            },
            "required": ["filter", "meta", "rows"]
        }));
        let p = &out["properties"];
        assert_eq!(
            p["filter"],
            json!({"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"], "additionalProperties": false})
        );
        assert_eq!(
            p["meta"],
            json!({"type": "object", "properties": {}, "required": [], "additionalProperties": false})
        );
        assert_eq!(
            p["rows"]["items"]["properties"]["id"]["type"],
            json!(["integer", "null"])
        );
        assert_eq!(p["rows"]["items"]["additionalProperties"], false);
    }

    #[test]
    fn definitions_are_kept_and_recursion_stays_a_reference() {
        let out = strict(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "tree": {"$ref": "#/definitions/Node"},
                "owner": {"$ref": "#/$defs/Person", "description": "who"},
                "other": {"$ref": "#/$defs/Person"}
            },
            "required": ["tree", "owner"],
            "definitions": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}, "required": ["children"]}},
            "$defs": {"Person": {"type": "object", "properties": {"name": {"type": "string"}}}}
        }));
        let p = &out["properties"];
        assert_eq!(p["tree"], json!({"$ref": "#/$defs/Node"}));
        assert_eq!(
            p["owner"],
            json!({"type": "object", "description": "who", "properties": {"name": {"type": ["string", "null"]}}, "required": ["name"], "additionalProperties": false}),
            "a $ref with siblings is inlined"
        );
        assert_eq!(
            p["other"],
            json!({"anyOf": [{"$ref": "#/$defs/Person"}, {"type": "null"}]})
        );
        assert_eq!(
            out["$defs"]["Node"]["properties"]["children"]["items"],
            json!({"$ref": "#/$defs/Node"})
        );
        assert_eq!(out["$defs"]["Person"]["additionalProperties"], false);
        assert!(out.get("definitions").is_none() && out.get("$schema").is_none());
    }

    #[test]
    fn a_cycle_through_an_inlined_reference_ends() {
        let out = strict(json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/properties/a", "description": "self"}},
            "required": ["a"]
        }));
        assert_eq!(out["properties"]["a"]["additionalProperties"], false);
    }
}
