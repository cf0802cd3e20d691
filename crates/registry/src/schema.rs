//! Compiling a tool's `inputSchema` once and validating the model's arguments against it
//! before anything is sent. Schemas are untrusted, so both steps run under a budget:
//!
//! - before compiling: size and depth caps, then the static walk of `budget.rs` (every
//!   local `$ref` followed; loops that never descend, unresolvable references and
//!   combinator expansion refused), so a hostile schema costs a linear walk, not a compile;
//! - while validating: every subschema of the compiled copy carries a step counter (a custom
//!   keyword), and a validation that takes more than [`MAX_VALIDATION_STEPS`] steps is
//!   abandoned at once and the call refused: fail closed, never "valid".
//!
//! Schemas that can make a validation long or deep (a `$ref` recursion, a large expansion)
//! validate on a thread of their own with a large stack, handed off with
//! `block_in_place` so the async workers keep running. Regexes have backtracking and size
//! limits, and no `$ref` is ever resolved over the network or from disk (the crate's
//! fetching features are off and the retriever refuses everything).

use crate::budget::{self, BudgetError};
use jsonschema::{Draft, Keyword, PatternOptions, Retrieve, Uri, ValidationError, Validator};
use serde::Serialize;
use serde_json::Value;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The rules a schema is compiled under (`build.rs`: this code and the versions it runs on).
/// A schema known to have compiled under the same rules in an earlier run is not compiled
/// again when a catalogue is built, only at its tool's first call
/// ([`crate::catalogue::Catalogue::build_knowing`]).
pub const CHECKER: &str = env!("SCHEMA_CHECKER");

pub const MAX_SCHEMA_BYTES: usize = 256 * 1024;
pub const MAX_SCHEMA_DEPTH: usize = 64;
/// At most this many problems are reported for one call; the model can fix them in turns.
pub const MAX_PROBLEMS: usize = 20;
/// Subschema visits one validation may make (each of its two passes, see [`problems`]).
/// Real servers' calls take tens; an array of a thousand ten-field objects about 11,000.
/// Stopping at the limit takes well under a second (docs/benchmarks.md).
pub const MAX_VALIDATION_STEPS: u64 = 200_000;
/// The keyword added to every subschema of the compiled copy to count visits.
const STEP_KEYWORD: &str = "x-mcp-host-step";
/// Above this many inlined subschemas (or with a recursion) validation leaves the worker.
const INLINE_NODES: u64 = 1_000;
const INLINE_DEPTH: usize = 32;
/// Stack of the validation thread: a recursive schema nests once per level of arguments.
const VALIDATION_STACK: usize = 64 << 20;

/// One thing wrong with the arguments, located by JSON Pointer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Problem {
    /// JSON Pointer into the arguments ("" is the whole object).
    pub pointer: String,
    pub message: String,
}

/// Why a schema cannot be used.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum CompileError {
    #[error("schema is {bytes} bytes, over the {MAX_SCHEMA_BYTES}-byte limit")]
    TooLarge { bytes: usize },
    #[error("schema nests deeper than {MAX_SCHEMA_DEPTH} levels")]
    TooDeep,
    /// Over the static budget: the schema could hang validation. `allowUnvalidated` does not
    /// lift this (the tool is withheld either way).
    #[error("schema over the host's budget: {0}")]
    Budget(#[from] BudgetError),
    #[error("schema does not compile: {0}")]
    Invalid(String),
}

impl CompileError {
    /// Whether `allowUnvalidated` may offer the tool anyway: only for schemas the validator
    /// does not understand, never for ones refused as too costly (they are hostile or broken,
    /// and "unvalidated" would silently turn a refusal into "accept anything").
    pub fn may_go_unvalidated(&self) -> bool {
        matches!(self, Self::Invalid(_))
    }
}

/// A validation stopped before it finished; the call is refused.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum ValidateError {
    #[error(
        "validating the arguments took more than {MAX_VALIDATION_STEPS} steps and was stopped; nothing was sent"
    )]
    OverBudget,
    #[error("the validation could not run: {0}; nothing was sent")]
    NotRun(String),
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

/// The unwinding payload that ends a validation over budget (`resume_unwind` runs no panic
/// hook, so nothing is printed).
struct OverBudget;

/// Steps taken by the validation in progress on one [`Checker`].
struct Steps(AtomicU64);

impl Steps {
    fn tick(&self) {
        if self.0.fetch_add(1, Ordering::Relaxed) >= MAX_VALIDATION_STEPS {
            resume_unwind(Box::new(OverBudget));
        }
    }
}

struct Step(Arc<Steps>);

impl<'i> Keyword<'i> for Step {
    fn validate(&self, _instance: &'i Value) -> Result<(), ValidationError<'i>> {
        self.0.tick();
        Ok(())
    }

    fn is_valid(&self, _instance: &'i Value) -> bool {
        self.0.tick();
        true
    }
}

/// A compiled schema with its validation budget.
pub struct Checker {
    validator: Validator,
    steps: Arc<Steps>,
    /// One validation at a time per schema, so the step count is that validation's.
    serial: Mutex<()>,
    /// Validate on a thread of its own (see the module header).
    off_worker: bool,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker")
            .field("off_worker", &self.off_worker)
            .finish_non_exhaustive()
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
pub fn compile(schema: &Value) -> Result<Checker, CompileError> {
    let bytes = serde_json::to_vec(schema)
        .map_err(|e| CompileError::Invalid(e.to_string()))?
        .len();
    if bytes > MAX_SCHEMA_BYTES {
        return Err(CompileError::TooLarge { bytes });
    }
    if depth(schema) > MAX_SCHEMA_DEPTH {
        return Err(CompileError::TooDeep);
    }
    let estimate = budget::check(schema)?;
    let mut counted = schema.clone();
    for p in &estimate.pointers {
        if let Some(Value::Object(m)) = counted.pointer_mut(p) {
            m.insert(STEP_KEYWORD.into(), Value::Bool(true));
        }
    }
    let steps = Arc::new(Steps(AtomicU64::new(0)));
    let for_keyword = steps.clone();
    let mut options = jsonschema::options()
        .with_retriever(RefuseAll)
        .with_pattern_options(
            PatternOptions::fancy_regex()
                .backtrack_limit(100_000)
                .size_limit(1 << 20),
        )
        .with_keyword(STEP_KEYWORD, move |_, _, _| {
            Ok(Box::new(Step(for_keyword.clone())) as Box<dyn for<'i> Keyword<'i>>)
        });
    // MCP's default dialect is 2020-12; a declared `$schema` picks another.
    if schema.get("$schema").is_none() {
        options = options.with_draft(Draft::Draft202012);
    }
    let validator = options
        .build(&counted)
        .map_err(|e| CompileError::Invalid(e.to_string()))?;
    Ok(Checker {
        validator,
        steps,
        serial: Mutex::new(()),
        off_worker: estimate.recursive
            || estimate.nodes > INLINE_NODES
            || estimate.depth > INLINE_DEPTH,
    })
}

/// Every problem with `args` (at most [`MAX_PROBLEMS`]); empty when valid. A validation
/// over budget is an error: the caller refuses the call.
pub fn problems(checker: &Checker, args: &Value) -> Result<Vec<Problem>, ValidateError> {
    let run = || {
        // A poisoned lock only means an earlier validation unwound; the count is reset anyway.
        let _one = checker.serial.lock().unwrap_or_else(|p| p.into_inner());
        let found = catch_unwind(AssertUnwindSafe(|| {
            // The quick pass (no error details) settles valid arguments, the common case;
            // only invalid ones pay for collecting the problems.
            checker.steps.0.store(0, Ordering::Relaxed);
            if checker.validator.is_valid(args) {
                return Vec::new();
            }
            checker.steps.0.store(0, Ordering::Relaxed);
            checker
                .validator
                .iter_errors(args)
                .take(MAX_PROBLEMS)
                .map(|e| Problem {
                    pointer: e.instance_path().to_string(),
                    message: e.to_string(),
                })
                .collect::<Vec<_>>()
        }));
        match found {
            Ok(problems) => Ok(problems),
            Err(payload) if payload.is::<OverBudget>() => Err(ValidateError::OverBudget),
            Err(payload) => resume_unwind(payload),
        }
    };
    if checker.off_worker {
        off_worker(run)
    } else {
        run()
    }
}

/// Runs `f` on a thread with a large stack. On a multi-threaded tokio runtime the calling
/// worker is handed over first (`block_in_place`), so other tasks keep running meanwhile.
fn off_worker<F>(f: F) -> Result<Vec<Problem>, ValidateError>
where
    F: FnOnce() -> Result<Vec<Problem>, ValidateError> + Send,
{
    let on_thread = || {
        std::thread::scope(|s| {
            match std::thread::Builder::new()
                .name("schema-validation".into())
                .stack_size(VALIDATION_STACK)
                .spawn_scoped(s, f)
            {
                Ok(handle) => handle
                    .join()
                    .unwrap_or_else(|payload| resume_unwind(payload)),
                Err(e) => Err(ValidateError::NotRun(e.to_string())),
            }
        })
    };
    let multi_threaded = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_threaded {
        tokio::task::block_in_place(on_thread)
    } else {
        on_thread()
    }
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
        assert!(problems(&v, &json!({"limit": 3})).unwrap().is_empty());
        let p = problems(
            &v,
            &json!({"limit": "3", "tags": [{"v": 1}], "extra": true}),
        )
        .unwrap();
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
            let e = compile(&s).unwrap_err().to_string();
            assert!(e.contains("cannot be followed"), "{r}: {e}");
        }
        let local = json!({"$defs": {"n": {"type": "number"}}, "type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}});
        assert!(
            problems(&compile(&local).unwrap(), &json!({"x": "no"}))
                .unwrap()
                .len()
                == 1
        );
    }

    #[test]
    fn broken_oversized_and_deep_schemas_are_refused_not_fatal() {
        assert!(
            compile(&json!({"type": "object", "properties": {"x": {"pattern": "(unclosed"}}}))
                .is_err()
        );
        assert!(compile(&json!({"type": 12})).is_err());
        let big = json!({"type": "object", "description": "x".repeat(MAX_SCHEMA_BYTES)});
        assert!(compile(&big).unwrap_err().to_string().contains("limit"));
        let mut deep = json!({"type": "object"});
        for _ in 0..70 {
            deep = json!({"type": "object", "properties": {"a": deep}});
        }
        assert!(compile(&deep).unwrap_err().to_string().contains("deeper"));
    }

    #[test]
    fn a_declared_draft_is_honoured() {
        // Tuple `items` is draft-07; 2020-12 spells it `prefixItems` and rejects the array form.
        let tuple = json!({"type": "object", "properties": {"p": {"type": "array", "items": [{"type": "string"}]}}});
        let mut draft7 = tuple.clone();
        draft7["$schema"] = json!("http://json-schema.org/draft-07/schema#");
        let v = compile(&draft7).unwrap();
        assert_eq!(problems(&v, &json!({"p": [1]})).unwrap()[0].pointer, "/p/0");
        assert!(compile(&tuple).is_err(), "2020-12 is the default dialect");
    }

    use crate::budget::tests::expansion_schema;
    use std::time::{Duration, Instant};

    #[test]
    fn an_expansion_schema_is_refused_before_compiling_and_quickly() {
        let s = expansion_schema(12, 8);
        assert!(s.to_string().len() < 4096);
        let started = Instant::now();
        let e = compile(&s).unwrap_err();
        assert!(
            matches!(e, CompileError::Budget(BudgetError::Expansion)),
            "{e}"
        );
        assert!(!e.may_go_unvalidated());
        assert!(e.to_string().contains("expansion"), "{e}");
        assert!(started.elapsed() < Duration::from_secs(1));
    }

    #[test]
    fn a_recursive_tree_still_validates_correctly() {
        let tree = json!({"$defs": {"node": {"type": "object", "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/node"}}}}},
            "type": "object", "properties": {"root": {"$ref": "#/$defs/node"}}, "required": ["root"]});
        let v = compile(&tree).unwrap();
        let good = json!({"root": {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}});
        assert!(problems(&v, &good).unwrap().is_empty());
        let bad =
            json!({"root": {"name": "a", "children": [{"name": "b", "children": [{"name": 3}]}]}});
        let p = problems(&v, &bad).unwrap();
        assert_eq!(p[0].pointer, "/root/children/0/children/0/name", "{p:?}");
    }

    #[test]
    fn degenerate_ref_loops_are_refused_never_accept_anything() {
        for s in [
            json!({"$ref": "#"}),
            json!({"type": "object", "properties": {"x": {"$ref": "#/$defs/a"}}, "$defs": {"a": {"$ref": "#/$defs/b"}, "b": {"$ref": "#/$defs/a"}}}),
            json!({"$schema": "http://json-schema.org/draft-07/schema#", "definitions": {"a": {"$ref": "#/definitions/a"}}, "properties": {"x": {"$ref": "#/definitions/a"}}}),
        ] {
            let e = compile(&s).err().unwrap_or_else(|| panic!("{s} compiled"));
            assert!(
                matches!(e, CompileError::Budget(BudgetError::RefLoop { .. })),
                "{s}: {e}"
            );
        }
    }

    #[test]
    fn a_validation_over_its_step_budget_is_refused_not_passed() {
        // Within the static budget (a legitimate-looking recursion) but each level tries
        // eight branches that all recurse: 8^depth steps for nested arguments.
        let s = json!({"$defs": {"n": {"anyOf": (0..8).map(|i| json!({"type": "array", "minItems": i % 2, "items": {"$ref": "#/$defs/n"}})).collect::<Vec<_>>()}},
            "type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}});
        let v = compile(&s).unwrap();
        let mut deep = json!("leaf");
        for _ in 0..12 {
            deep = json!([deep]);
        }
        let started = Instant::now();
        let e = problems(&v, &json!({"x": deep})).unwrap_err();
        assert_eq!(e, ValidateError::OverBudget);
        assert!(started.elapsed() < Duration::from_secs(10), "not minutes");
        // The next call on the same schema has its own budget.
        assert!(problems(&v, &json!({"x": [[]]})).unwrap().is_empty());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn a_long_validation_leaves_the_async_workers_free() {
        use std::sync::atomic::AtomicBool;
        let s = json!({"$defs": {"n": {"anyOf": (0..8).map(|i| json!({"type": "array", "minItems": i % 2, "items": {"$ref": "#/$defs/n"}})).collect::<Vec<_>>()}},
            "type": "object", "properties": {"x": {"$ref": "#/$defs/n"}}});
        let v = Arc::new(compile(&s).unwrap());
        let mut deep = json!("leaf");
        for _ in 0..14 {
            deep = json!([deep]);
        }
        let done = Arc::new(AtomicBool::new(false));
        let started = Arc::new(tokio::sync::Notify::new());
        let validation = tokio::spawn({
            let (done, started) = (done.clone(), started.clone());
            async move {
                started.notify_one();
                // No await from here on: without the hand-off this holds the only worker.
                let r = problems(&v, &json!({"x": deep}));
                done.store(true, Ordering::SeqCst);
                r
            }
        });
        started.notified().await;
        let other = tokio::spawn({
            let done = done.clone();
            async move { done.load(Ordering::SeqCst) }
        });
        assert!(
            !other.await.unwrap(),
            "another task ran while the validation was still going"
        );
        assert_eq!(validation.await.unwrap(), Err(ValidateError::OverBudget));
    }
}
