//! Compiling a tool's `inputSchema` once and validating the model's arguments against it
//! before anything is sent. Schemas are untrusted: size and depth are capped before
//! compiling, regexes have backtracking and size limits, and no `$ref` is ever resolved over
//! the network or from disk (the crate's fetching features are off and the retriever
//! refuses everything).

use jsonschema::{Draft, PatternOptions, Retrieve, Uri, Validator};
use serde::Serialize;
use serde_json::Value;

pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
pub const MAX_SCHEMA_DEPTH: usize = 64;
/// At most this many problems are reported for one call; the model can fix them in turns.
pub const MAX_PROBLEMS: usize = 20;

/// One thing wrong with the arguments, located by JSON Pointer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// JSON Pointer into the arguments ("" is the whole object).
    pub pointer: String,
    pub message: String,
}

struct RefuseAll;

impl Retrieve for RefuseAll {
    fn retrieve(
        &self,
        uri: &Uri<String>,
    ) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        Err(format!("external $ref {uri} is not resolved (schemas are self-contained)").into())
    }
}

fn depth(v: &Value) -> usize {
    match v {
        Value::Object(m) => 1 + m.values().map(depth).max().unwrap_or(0),
        Value::Array(a) => 1 + a.iter().map(depth).max().unwrap_or(0),
        _ => 0,
    }
}

/// Compiles a schema; the error says why it cannot be used.
pub fn compile(schema: &Value) -> Result<Validator, String> {
    let bytes = serde_json::to_vec(schema).map_err(|e| e.to_string())?.len();
    if bytes > MAX_SCHEMA_BYTES {
        return Err(format!(
            "schema is {bytes} bytes, over the {MAX_SCHEMA_BYTES}-byte limit"
        ));
    }
    if depth(schema) > MAX_SCHEMA_DEPTH {
        return Err(format!(
            "schema nests deeper than {MAX_SCHEMA_DEPTH} levels"
        ));
    }
    let mut options = jsonschema::options()
        .with_retriever(RefuseAll)
        .with_pattern_options(
            PatternOptions::fancy_regex()
                .backtrack_limit(100_000)
                .size_limit(1 << 20),
        );
    // MCP's default dialect is 2020-12; a declared `$schema` picks another.
    if schema.get("$schema").is_none() {
        options = options.with_draft(Draft::Draft202012);
    }
    options
        .build(schema)
        .map_err(|e| format!("schema does not compile: {e}"))
}

/// Every problem with `args` (at most [`MAX_PROBLEMS`]); empty when valid.
pub fn problems(validator: &Validator, args: &Value) -> Vec<Problem> {
    validator
        .iter_errors(args)
        .take(MAX_PROBLEMS)
        .map(|e| Problem {
            pointer: e.instance_path().to_string(),
            message: e.to_string(),
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "limit": {"type": "integer", "minimum": 1},
            "tags": {"type": "array", "items": {"type": "object", "properties": {"v": {"type": "string"}}}}
        }, "required": ["limit"], "additionalProperties": false})
    }

    #[test]
    fn each_problem_is_located_by_json_pointer() {
        let v = compile(&schema()).unwrap();
        assert!(problems(&v, &json!({"limit": 3})).is_empty());
        let p = problems(
            &v,
            &json!({"limit": "3", "tags": [{"v": 1}], "extra": true}),
        );
        let pointers: Vec<&str> = p.iter().map(|p| p.pointer.as_str()).collect();
        assert!(pointers.contains(&"/limit"), "{p:?}");
        assert!(pointers.contains(&"/tags/0/v"), "{p:?}");
        assert!(
            pointers.contains(&""),
            "additionalProperties is reported at the root: {p:?}"
        );
    }

    #[test]
    fn external_refs_are_never_fetched() {
        for r in ["https://example.invalid/s.json", "file:///etc/passwd"] {
            let s = json!({"type": "object", "properties": {"x": {"$ref": r}}});
            let e = compile(&s).unwrap_err();
            assert!(e.contains("does not compile"), "{r}: {e}");
        }
        let local = json!({"$defs": {"n": {"type": "number"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}});
        assert!(problems(&compile(&local).unwrap(), &json!({"x": "no"})).len() == 1);
    }

    #[test]
    fn broken_oversized_and_deep_schemas_are_refused_not_fatal() {
        assert!(
            compile(&json!({"type": "object", "properties": {"x": {"pattern": "(unclosed"}}}))
                .is_err()
        );
        assert!(compile(&json!({"type": 12})).is_err());
        let big = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
        assert!(compile(&big).unwrap_err().contains("limit"));
        let mut deep = json!({"type": "object"});
        for _ in 0..70 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        assert!(compile(&deep).unwrap_err().contains("deeper"));
    }

    #[test]
    fn a_declared_draft_is_honoured() {
        // Tuple `items` is draft-07; 2020-12 spells it `prefixItems` and rejects the array form.
        let tuple = json!({"type": "object", "properties": {"p": {"type": "array", "items": [{"type": "string"}]}}});
        let mut draft7 = tuple.clone();
        draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        let v = compile(&draft7).unwrap();
        assert_eq!(problems(&v, &json!({"p": [1]}))[0].pointer, "/p/0");
        assert!(compile(&tuple).is_err(), "2020-12 is the default dialect");
    }
}
