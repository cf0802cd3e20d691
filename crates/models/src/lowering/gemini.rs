//! Gemini's schema subset (OpenAPI 3.0 style): `type`, `format`, `description`, `nullable`,
//! string `enum`, `items`, `properties`, `required`, `minItems`/`maxItems`,
//! `minimum`/`maximum`, `anyOf`. Local `$ref`s are inlined (a cycle becomes a plain object),
//! `allOf` is merged, `oneOf` becomes `anyOf`, `type: [T, "null"]` becomes `nullable`, `const`
//! a one-value enum. Everything else (`additionalProperties`, `default`, `examples`, `title`,
//! `pattern`, …) is dropped: Gemini answers 400 to keywords it does not know.

use super::{Budget, MAX_DEPTH, copy_description, is_null_schema, merge_into, resolve, type_list};
use serde_json::{Map, Value, json};

/// Formats Gemini accepts, by type; others are dropped rather than rejected by the API.
const STRING_FORMATS: &[&str] = &["enum", "date-time"];
const NUMBER_FORMATS: &[&str] = &["float", "double", "int32", "int64"];
const TYPES: &[&str] = &["string", "number", "integer", "boolean", "array", "object"];

pub(super) fn lower(root: &Value) -> Value {
    let mut walk = Walk {
        root,
        stack: Vec::new(),
        budget: Budget::new(),
    };
    let mut out = walk.node(root, 0);
    // The root is the arguments object: it cannot be null.
    if let Some(map) = out.as_object_mut() {
        map.remove("nullable");
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

/// What a cycle, an unresolvable reference or a too-deep schema becomes: an object the
/// model may fill freely, described if the original was.
fn placeholder(map: &Map<String, Value>, budget: &mut Budget) -> Value {
    let mut out = Map::new();
    out.insert("type".into(), json!("object"));
    copy_description(map, &mut out, budget);
    Value::Object(out)
}

fn append_description(out: &mut Map<String, Value>, note: &str) {
    let text = match out.get("description").and_then(Value::as_str) {
        Some(d) if !d.is_empty() => format!("{d} ({note})"),
        _ => note.to_string(),
    };
    out.insert("description".into(), json!(text));
}

/// `enum` and `const`: Gemini takes string values only; other values are named in the
/// description so the model still sees them, and `null` among them means nullable.
fn enumeration(
    map: &Map<String, Value>,
    out: &mut Map<String, Value>,
    (types, nullable): (&mut Vec<String>, &mut bool),
    budget: &mut Budget,
) {
    let values: Vec<Value> = match (map.get("enum"), map.get("const")) {
        (Some(values @ Value::Array(_)), _) => match budget.copy(values) {
            Some(Value::Array(values)) => values,
            _ => return,
        },
        (_, Some(c)) => match budget.copy(c) {
            Some(c) => vec![c],
            None => return,
        },
        _ => return,
    };
    *nullable |= values.iter().any(Value::is_null);
    let values: Vec<Value> = values.into_iter().filter(|v| !v.is_null()).collect();
    if values.is_empty() {
        return;
    }
    if values.iter().all(Value::is_string) {
        out.insert("enum".into(), json!(values));
        if types.is_empty() {
            types.push("string".into());
        }
    } else {
        let listed: Vec<String> = values.iter().map(Value::to_string).collect();
        append_description(out, &format!("one of: {}", listed.join(", ")));
        if types.is_empty()
            && let Some(t) = uniform_type(&values)
        {
            types.push(t.into());
        }
    }
}

/// The JSON type all `values` share, if they share one.
fn uniform_type(values: &[Value]) -> Option<&'static str> {
    let kind = |v: &Value| match v {
        Value::Bool(_) => Some("boolean"),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some("integer"),
        Value::Number(_) => Some("number"),
        Value::String(_) => Some("string"),
        _ => None,
    };
    let first = kind(values.first()?)?;
    values
        .iter()
        .all(|v| kind(v) == Some(first))
        .then_some(first)
}

impl Walk<'_> {
    fn node(&mut self, schema: &Value, depth: usize) -> Value {
        let Some(map) = schema.as_object() else {
            // `true` or a non-schema: anything goes, which Gemini says by saying nothing.
            return json!({});
        };
        self.map(map, None, depth)
    }

    /// `map` lowered. With `only`, as one branch of a schema of several types: as if its
    /// `type` were that one and it had no `anyOf`, `oneOf`, `allOf`, `enum` or `const`.
    fn map(&mut self, map: &Map<String, Value>, only: Option<&str>, depth: usize) -> Value {
        if depth > MAX_DEPTH || !self.budget.node() {
            return placeholder(map, &mut self.budget);
        }
        if only.is_none()
            && let Some(reference) = map.get("$ref").and_then(Value::as_str)
        {
            return self.reference(map, reference, depth);
        }
        let mut out = Map::new();
        copy_description(map, &mut out, &mut self.budget);
        let (mut types, mut nullable) = match only {
            Some(t) => (vec![t.to_string()], false),
            None => type_list(map.get("type")),
        };
        types.retain(|t| TYPES.contains(&t.as_str()));
        nullable |= map.get("nullable") == Some(&Value::Bool(true));
        let mut branches = Vec::new();
        if only.is_none() {
            enumeration(map, &mut out, (&mut types, &mut nullable), &mut self.budget);
            for key in ["anyOf", "oneOf"] {
                for branch in map.get(key).and_then(Value::as_array).into_iter().flatten() {
                    if is_null_schema(branch) {
                        nullable = true;
                    } else {
                        branches.push(self.node(branch, depth + 1));
                    }
                }
            }
        }
        let split = types.len() > 1;
        if split {
            // Several types: one branch per type, each keeping the keywords of its type.
            for t in std::mem::take(&mut types) {
                branches.push(self.map(map, Some(&t), depth + 1));
            }
        }
        if types.is_empty() && branches.len() == 1 {
            // `anyOf: [X, {type: null}]` is how generators say "optional X": flatten it.
            merge_into(&mut out, branches.remove(0));
        } else if !branches.is_empty() {
            out.insert("anyOf".into(), json!(branches));
        }
        if let Some(t) = types.first() {
            out.insert("type".into(), json!(t));
        } else if !out.contains_key("type") && !out.contains_key("anyOf") {
            // Gemini wants a type; infer it from the keywords that imply one.
            if map.contains_key("properties") {
                out.insert("type".into(), json!("object"));
            } else if map.contains_key("items") {
                out.insert("type".into(), json!("array"));
            }
        }
        if !split {
            self.typed_keywords(map, &mut out, depth);
        }
        let members = map.get("allOf").and_then(Value::as_array);
        for member in members.filter(|_| only.is_none()).into_iter().flatten() {
            let lowered = self.node(member, depth + 1);
            merge_into(&mut out, lowered);
        }
        // Only names that exist may be required, or Gemini rejects the declaration.
        let names: std::collections::HashSet<String> = out
            .get("properties")
            .and_then(Value::as_object)
            .map(|p| p.keys().cloned().collect())
            .unwrap_or_default();
        if let Some(Value::Array(required)) = out.get_mut("required") {
            required.retain(|r| r.as_str().is_some_and(|r| names.contains(r)));
            if required.is_empty() {
                out.remove("required");
            }
        }
        if nullable {
            out.insert("nullable".into(), json!(true));
        }
        Value::Object(out)
    }

    fn reference(&mut self, map: &Map<String, Value>, reference: &str, depth: usize) -> Value {
        let target = resolve(self.root, reference);
        let mut out = match target {
            Some(target) if !self.stack.iter().any(|r| r == reference) => {
                self.stack.push(reference.to_string());
                let lowered = self.node(target, depth + 1);
                self.stack.pop();
                lowered
            }
            // A recursive schema cannot be inlined, and a non-local one is not fetched.
            _ => placeholder(map, &mut self.budget),
        };
        // A description next to the `$ref` says what this use of the type means.
        if let (Some(out), Some(d)) = (out.as_object_mut(), map.get("description"))
            && d.is_string()
            && let Some(d) = self.budget.copy(d)
        {
            out.insert("description".into(), d);
        }
        out
    }

    /// The keywords that belong to the node's type (all of them when the type is unknown).
    fn typed_keywords(
        &mut self,
        map: &Map<String, Value>,
        out: &mut Map<String, Value>,
        depth: usize,
    ) {
        let t = out.get("type").and_then(Value::as_str).map(str::to_string);
        let is = |name: &str| t.as_deref().is_none_or(|t| t == name);
        if is("object") {
            if let Some(props) = map.get("properties").and_then(Value::as_object) {
                let mut lowered = Map::new();
                for (name, schema) in props {
                    if !self.budget.spend(name.len()) {
                        break;
                    }
                    lowered.insert(name.clone(), self.node(schema, depth + 1));
                }
                out.insert("properties".into(), Value::Object(lowered));
            }
            if let Some(Value::Array(required)) =
                map.get("required").and_then(|r| self.budget.copy(r))
            {
                let names: Vec<Value> = required.into_iter().filter(Value::is_string).collect();
                out.insert("required".into(), Value::Array(names));
            }
        }
        if is("array") {
            match map.get("items") {
                Some(Value::Array(tuple)) => {
                    // Tuples do not exist in OpenAPI 3.0: any of the positions' schemas.
                    let mut items: Vec<Value> =
                        tuple.iter().map(|s| self.node(s, depth + 1)).collect();
                    match items.len() {
                        0 => {}
                        1 => {
                            out.insert("items".into(), items.remove(0));
                        }
                        _ => {
                            out.insert("items".into(), json!({"anyOf": items}));
                        }
                    }
                }
                Some(items) => {
                    let lowered = self.node(items, depth + 1);
                    out.insert("items".into(), lowered);
                }
                None => {}
            }
            for key in ["minItems", "maxItems"] {
                if let Some(n) = map.get(key).filter(|n| n.is_u64()) {
                    out.insert(key.into(), n.clone());
                }
            }
        }
        if is("number") || is("integer") {
            for key in ["minimum", "maximum"] {
                if let Some(n) = map.get(key).filter(|n| n.is_number()) {
                    out.insert(key.into(), n.clone());
                }
            }
        }
        if let (Some(t), Some(format)) = (t.as_deref(), map.get("format").and_then(Value::as_str)) {
            let allowed = match t {
                "string" => STRING_FORMATS,
                "number" | "integer" => NUMBER_FORMATS,
                _ => &[],
            };
            if allowed.contains(&format) {
                out.insert("format".into(), json!(format));
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::lowering::{Dialect, lower};
    use serde_json::json;

    fn gemini(schema: serde_json::Value) -> serde_json::Value {
        lower(&schema, Dialect::Gemini)
    }

    #[test]
    fn nullable_unions_become_nullable() {
        let out = gemini(json!({
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": {"type": ["string", "null"], "default": null, "title": "A"},
                "b": {"anyOf": [{"type": "integer", "minimum": 0}, {"type": "null"}], "description": "count"},
                "c": {"type": ["string", "integer"]}
            },
            "required": ["a", "ghost"]
        }));
        assert_eq!(
            out,
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "string", "nullable": true},
                    "b": {"type": "integer", "minimum": 0, "nullable": true, "description": "count"},
                    "c": {"anyOf": [{"type": "string"}, {"type": "integer"}]}
                },
                "required": ["a"]
            })
        );
    }

    #[test]
    fn nested_objects_and_arrays_keep_their_supported_keywords() {
        let out = gemini(json!({
            "type": "object",
            "properties": {
                "filter": {
                    "type": "object",
                    "properties": {
                        "tags": {"type": "array", "items": {"type": "string", "pattern": "^[a-z]+$", "minLength": 1}, "minItems": 1, "uniqueItems": true},
                        "since": {"type": "string", "format": "date-time"},
                        "url": {"type": "string", "format": "uri"},
                        "ratio": {"type": "number", "format": "double", "exclusiveMaximum": 1}
                    },
                    "required": ["tags"],
                    "additionalProperties": {"type": "string"}
                },
                "pair": {"type": "array", "items": [{"type": "string"}, {"type": "integer"}]}
            }
        }));
        assert_eq!(
            out["properties"]["filter"],
            json!({
                "type": "object",
                "properties": {
                    "tags": {"type": "array", "items": {"type": "string"}, "minItems": 1},
                    "since": {"type": "string", "format": "date-time"},
                    "url": {"type": "string"},
                    "ratio": {"type": "number", "format": "double"}
                },
                "required": ["tags"]
            })
        );
        assert_eq!(
            out["properties"]["pair"]["items"],
            json!({"anyOf": [{"type": "string"}, {"type": "integer"}]})
        );
    }

    #[test]
    fn local_refs_are_inlined_and_a_cycle_becomes_an_object() {
        let out = gemini(json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "properties": {
                "owner": {"$ref": "#/$defs/Person", "description": "who owns it"},
                "tree": {"$ref": "#/definitions/Node"},
                "remote": {"$ref": "https://example.com/schema.json"},
                "mixed": {"allOf": [{"$ref": "#/$defs/Person"}, {"properties": {"age": {"type": "integer"}}}]}
            },
            "$defs": {"Person": {"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]}},
            "definitions": {"Node": {"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/definitions/Node"}}}}}
        }));
        assert!(out.get("$defs").is_none() && out.get("definitions").is_none());
        assert!(out.get("$schema").is_none());
        let p = &out["properties"];
        assert_eq!(
            p["owner"],
            json!({"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"], "description": "who owns it"})
        );
        assert_eq!(
            p["tree"]["properties"]["children"]["items"],
            json!({"type": "object"}),
            "the second visit of Node is a cycle"
        );
        assert_eq!(p["remote"], json!({"type": "object"}));
        assert_eq!(
            p["mixed"],
            json!({"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}}, "required": ["name"]})
        );
    }

    #[test]
    fn enums_are_strings_only_and_const_is_a_one_value_enum() {
        let out = gemini(json!({
            "type": "object",
            "properties": {
                "mode": {"enum": ["fast", "slow", null]},
                "level": {"type": "integer", "enum": [1, 2, 3], "description": "how loud"},
                "kind": {"const": "file"},
                "flag": {"const": true},
                "choice": {"oneOf": [{"const": "a"}, {"const": "b"}]}
            }
        }));
        let p = &out["properties"];
        assert_eq!(
            p["mode"],
            json!({"type": "string", "enum": ["fast", "slow"], "nullable": true})
        );
        assert_eq!(
            p["level"],
            json!({"type": "integer", "description": "how loud (one of: 1, 2, 3)"})
        );
        assert_eq!(p["kind"], json!({"type": "string", "enum": ["file"]}));
        assert_eq!(
            p["flag"],
            json!({"type": "boolean", "description": "one of: true"})
        );
        assert_eq!(
            p["choice"],
            json!({"anyOf": [{"type": "string", "enum": ["a"]}, {"type": "string", "enum": ["b"]}]})
        );
    }

    #[test]
    fn depth_is_capped() {
        let mut schema = json!({"type": "string"});
        for _ in 0..100 {
            schema = json!({"type": "object", "properties": {"x": schema}});
        }
        let out = gemini(schema);
        let mut node = &out;
        let mut depth = 0;
        while let Some(next) = node.pointer("/properties/x") {
            node = next;
            depth += 1;
        }
        assert!(depth <= crate::lowering::MAX_DEPTH + 1, "{depth}");
        assert_eq!(node, &json!({"type": "object"}));
    }
}
