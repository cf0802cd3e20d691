//! Properties of `decide` over generated rules, modes, flags, provenance and remembered
//! answers (proptest, shrinking to the smallest counterexample): the orderings the
//! table-driven cases in `tests.rs` show one at a time hold for every combination.

use crate::tests::{provenance_of, remembered_for};
use crate::*;
use mcp_host_core::ServerId;
use proptest::collection::{btree_set, vec};
use proptest::prelude::*;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn rule(pattern: String) -> Rule {
    Rule {
        pattern,
        when: None,
        source: RuleSource {
            scope: "user".into(),
            file: "config.json".into(),
            key: "generated".into(),
        },
    }
}

/// Patterns over the names below: literal, `*` and `?` in a few places.
fn any_pattern() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("*".to_string()),
        "[ab]__[xy]",
        "[ab]__\\*",
        "\\*__[xy]",
        "[ab]__[xy]\\?",
        "[ab]\\?[_]*",
    ]
}

fn any_rules() -> impl Strategy<Value = Vec<Rule>> {
    vec(any_pattern().prop_map(rule), 0..3)
}

fn any_mode() -> impl Strategy<Value = Mode> {
    prop_oneof![Just(Mode::Ask), Just(Mode::Auto), Just(Mode::Deny)]
}

fn any_annotations() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![
        Just(None),
        Just(Some(json!({"readOnlyHint": true}))),
        Just(Some(
            json!({"readOnlyHint": false, "destructiveHint": true})
        )),
        Just(Some(
            json!({"destructiveHint": false, "openWorldHint": false})
        )),
    ]
}

#[derive(Debug, Clone)]
struct World {
    server: &'static str,
    tool: &'static str,
    allow: Vec<Rule>,
    ask: Vec<Rule>,
    deny: Vec<Rule>,
    exempt: BTreeSet<(String, String)>,
    mode: Mode,
    trusted: bool,
    sealed: bool,
    drifted: bool,
    look_alike: bool,
    phrases: bool,
    annotations: Option<Value>,
    provenance: BTreeSet<&'static str>,
    remembered: Option<Verdict>,
}

fn any_world() -> impl Strategy<Value = World> {
    let servers = prop_oneof![Just("a"), Just("b")];
    let tools = prop_oneof![Just("x"), Just("y")];
    let exempt = btree_set(
        (
            prop_oneof![Just("a"), Just("b")],
            prop_oneof![Just("a"), Just("b")],
        )
            .prop_map(|(f, t)| (f.to_string(), t.to_string())),
        0..2,
    );
    let verdicts = prop_oneof![
        Just(None),
        Just(Some(Verdict::Allow)),
        Just(Some(Verdict::Deny))
    ];
    (
        (
            servers,
            tools,
            any_rules(),
            any_rules(),
            any_rules(),
            exempt,
        ),
        (any_mode(), any::<[bool; 5]>(), any_annotations()),
        (btree_set(prop_oneof![Just("a"), Just("b")], 0..3), verdicts),
    )
        .prop_map(
            |(
                (server, tool, allow, ask, deny, exempt),
                (mode, flags, annotations),
                (provenance, remembered),
            )| {
                let [trusted, sealed, drifted, look_alike, phrases] = flags;
                World {
                    server,
                    tool,
                    allow,
                    ask,
                    deny,
                    exempt,
                    mode,
                    trusted,
                    sealed,
                    drifted,
                    look_alike,
                    phrases,
                    annotations,
                    provenance,
                    remembered,
                }
            },
        )
}

fn decide_in(w: &World) -> Decision {
    let server = ServerId::new(w.server);
    let name = format!("{}__{}", w.server, w.tool);
    let args = json!({});
    let policy = Policy {
        allow: w.allow.clone(),
        ask: w.ask.clone(),
        deny: w.deny.clone(),
        taint_exempt: w.exempt.clone(),
    };
    let phrases = if w.phrases {
        vec!["ignore previous instructions".to_string()]
    } else {
        vec![]
    };
    let provenance = provenance_of(w.provenance.iter().copied());
    let remembered = remembered_for(w.server, w.tool, "h", w.remembered);
    decide(
        Call {
            server: &server,
            tool: w.tool,
            name: &name,
            args: &args,
        },
        Context {
            mode: w.mode,
            policy: &policy,
            server_trusted: w.trusted,
            server_sealed: w.sealed,
            tool: ToolFacts {
                definition_hash: "h",
                drifted: w.drifted,
                look_alike: w.look_alike,
                instruction_phrases: &phrases,
                annotations: w.annotations.as_ref(),
            },
            provenance: &provenance,
            remembered: &remembered,
        },
    )
}

fn any_matches(rules: &[Rule], name: &str) -> bool {
    rules.iter().any(|r| r.matches(name, &json!({})))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    /// A deny rule always wins; a tool whose definition drifted, whose name looks like
    /// another's, or whose untrusted text addresses the model is always asked about; output
    /// of another server in the context (not exempt) makes a call that could carry it ask;
    /// and an allow comes only from an allow rule, a remembered allow, auto mode, or a tool
    /// that cannot change or reach anything (sealed, or read-only by a trusted server).
    #[test]
    fn deny_wins_warnings_ask_and_every_allow_has_a_reason(w in any_world()) {
        let d = decide_in(&w);
        let name = format!("{}__{}", w.server, w.tool);
        if any_matches(&w.deny, &name) {
            prop_assert_eq!(d.verdict, Verdict::Deny);
            return Ok(());
        }
        if w.drifted || w.look_alike || (w.phrases && !w.trusted) {
            prop_assert_eq!(d.verdict, Verdict::Ask, "{:?}", d);
            return Ok(());
        }
        let read_only_by_trust = w.trusted
            && w.annotations.as_ref().is_some_and(|a| a["readOnlyHint"] == true);
        let cannot_carry = read_only_by_trust || w.sealed;
        let tainted = w
            .provenance
            .iter()
            .any(|s| *s != w.server && !w.exempt.contains(&(s.to_string(), w.server.to_string())));
        if tainted && !cannot_carry {
            prop_assert_eq!(d.verdict, Verdict::Ask, "{:?}", d);
            return Ok(());
        }
        if d.verdict == Verdict::Allow {
            let why = any_matches(&w.allow, &name)
                || w.remembered == Some(Verdict::Allow)
                || w.mode == Mode::Auto
                || (w.mode == Mode::Ask && cannot_carry);
            prop_assert!(why, "allowed without a reason: {:?}", d);
            prop_assert!(!any_matches(&w.ask, &name), "an ask rule was skipped: {:?}", d);
        }
        if w.mode == Mode::Deny && !any_matches(&w.allow, &name) && w.remembered != Some(Verdict::Allow) {
            prop_assert_ne!(d.verdict, Verdict::Allow, "{:?}", d);
        }
    }

    /// `*` matches every name and a pattern without wildcards matches itself only.
    #[test]
    fn globs_match_as_written(name in "[a-z_]{0,12}", other in "[a-z_]{0,12}") {
        prop_assert!(rules::glob_match("*", &name));
        prop_assert!(rules::glob_match(&name, &name));
        prop_assert_eq!(rules::glob_match(&name, &other), name == other);
    }
}
