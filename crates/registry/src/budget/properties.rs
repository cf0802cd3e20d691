//! Property tests over generated schemas: `$ref`s to `$defs`, to the root, combinators and
//! descents nested at random, with arguments of any shape. The static budget is total and
//! deterministic; whatever it accepts stays inside its limits, compiles (or is refused with
//! a reason) and validates any arguments to an answer or to the step budget's refusal.

use super::{MAX_EXPANDED_DEPTH, MAX_EXPANDED_NODES, check};
use crate::schema::{compile, problems};
use proptest::prelude::*;
use serde_json::{Value, json};

fn leaf() -> impl Strategy<Value = Value> {
    prop_oneof![
        Just(json!({"type": "string"})),
        Just(json!({"type": "integer", "minimum": 0})),
        Just(json!({"type": "string", "pattern": "^(a+)+$"})),
        Just(json!({"$ref": "#/$defs/a"})),
        Just(json!({"$ref": "#/$defs/b"})),
        Just(json!({"$ref": "#"})),
        Just(json!({"$ref": "#/$defs/missing"})),
        Just(json!({})),
        Just(json!(true)),
    ]
}

fn schema() -> impl Strategy<Value = Value> {
    leaf().prop_recursive(6, 64, 4, |inner| {
        let many = proptest::collection::vec(inner.clone(), 1..4);
        prop_oneof![
            many.clone().prop_map(|v| json!({"allOf": v})),
            many.clone().prop_map(|v| json!({"anyOf": v})),
            many.prop_map(|v| json!({"oneOf": v})),
            (inner.clone(), inner.clone())
                .prop_map(|(x, y)| json!({"type": "object", "properties": {"x": x, "y": y}})),
            inner
                .clone()
                .prop_map(|s| json!({"type": "array", "items": s})),
            inner.prop_map(|s| json!({"not": s})),
        ]
    })
}

fn document() -> impl Strategy<Value = Value> {
    (schema(), schema(), schema()).prop_map(|(root, a, b)| {
        let mut root = match root {
            Value::Object(m) => m,
            other => {
                let mut m = serde_json::Map::new();
                m.insert("allOf".into(), json!([other]));
                m
            }
        };
        root.insert("$defs".into(), json!({"a": a, "b": b}));
        Value::Object(root)
    })
}

fn arguments() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        "a{0,30}b?".prop_map(Value::from),
    ];
    leaf.prop_recursive(6, 48, 4, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::from),
            (inner.clone(), inner).prop_map(|(x, y)| json!({"x": x, "y": y})),
        ]
    })
}

proptest! {
    #[test]
    fn the_budget_is_total_and_what_it_accepts_is_bounded(doc in document(), args in arguments()) {
        let first = check(&doc);
        prop_assert_eq!(&first, &check(&doc), "not deterministic");
        if let Ok(estimate) = &first {
            prop_assert!(estimate.nodes <= MAX_EXPANDED_NODES);
            prop_assert!(estimate.depth <= MAX_EXPANDED_DEPTH);
            if let Ok(checker) = compile(&doc) {
                // An answer, or the step budget's refusal: either way it ends.
                let _ = problems(&checker, &args);
            }
        } else {
            prop_assert!(compile(&doc).is_err(), "compiled what the budget refused");
        }
    }
}
