//! Table-driven scenarios for every rule kind, mode, flag, hint and taint case.

use crate::*;
use mcp_host_core::ServerId;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn rule(pattern: &str, when: Option<(&str, Condition)>) -> Rule {
    Rule {
        pattern: pattern.into(),
        when: when.map(|(p, c)| (p.into(), c)),
        source: RuleSource {
            scope: "user".into(),
            file: "config.json".into(),
            key: format!("rule {pattern}"),
        },
    }
}

struct Case {
    name: &'static str,
    server: &'static str,
    tool: &'static str,
    args: Value,
    mode: Mode,
    trusted: bool,
    sealed: bool,
    annotations: Option<Value>,
    drifted: bool,
    look_alike: bool,
    instruction_phrases: &'static [&'static str],
    provenance: &'static [&'static str],
    remembered: Option<Verdict>,
    expect: Verdict,
    by: &'static str,
}

fn base() -> Case {
    Case {
        name: "",
        server: "fs",
        tool: "read_file",
        args: json!({"path": "/home/u/proj/a.txt"}),
        mode: Mode::Ask,
        trusted: false,
        sealed: false,
        annotations: None,
        drifted: false,
        look_alike: false,
        instruction_phrases: &[],
        provenance: &[],
        remembered: None,
        expect: Verdict::Ask,
        by: "mode",
    }
}

fn policy() -> Policy {
    Policy {
        allow: vec![
            rule(
                "fs__read_*",
                Some(("/path", Condition::Under("/home/u/proj".into()))),
            ),
            rule("time__*", None),
            rule("git__git_status", None),
        ],
        ask: vec![rule("*__write_*", None)],
        deny: vec![
            rule("*__delete_*", None),
            rule(
                "fetch__fetch",
                Some(("/url", Condition::Prefix("http://".into()))),
            ),
        ],
        taint_exempt: [("git".to_string(), "time".to_string())]
            .into_iter()
            .collect(),
    }
}

fn by_label(d: &DecidedBy) -> &'static str {
    match d {
        DecidedBy::DenyRule { .. } => "deny_rule",
        DecidedBy::AskRule { .. } => "ask_rule",
        DecidedBy::AllowRule { .. } => "allow_rule",
        DecidedBy::Drift => "drift",
        DecidedBy::LookAlike => "look_alike",
        DecidedBy::InstructionText => "instruction_text",
        DecidedBy::Taint { .. } => "taint",
        DecidedBy::Remembered => "remembered",
        DecidedBy::ReadOnlyHint => "read_only_hint",
        DecidedBy::Sealed => "sealed",
        DecidedBy::Mode { .. } => "mode",
        DecidedBy::Hook { .. } => "hook",
        DecidedBy::User { .. } => "user",
    }
}

/// The servers whose output is in the context.
pub(crate) fn provenance_of<'a>(servers: impl Iterator<Item = &'a str>) -> BTreeSet<ServerId> {
    servers.map(ServerId::new).collect()
}

/// A remembered answer for one tool's definition, or none.
pub(crate) fn remembered_for(
    server: &str,
    tool: &str,
    definition_hash: &str,
    answer: Option<Verdict>,
) -> Remembered {
    let mut remembered = Remembered::default();
    if let Some(v) = answer {
        let key = MemoryKey {
            server: server.into(),
            tool: tool.into(),
            definition_hash: definition_hash.into(),
        };
        remembered.answers.insert(key, v);
    }
    remembered
}

fn run(c: &Case) -> Decision {
    let server = ServerId::new(c.server);
    let name = format!("{}__{}", c.server, c.tool);
    let provenance = provenance_of(c.provenance.iter().copied());
    let remembered = remembered_for(c.server, c.tool, "h1", c.remembered);
    let p = policy();
    let phrases: Vec<String> = c
        .instruction_phrases
        .iter()
        .map(|p| p.to_string())
        .collect();
    let cx = Context {
        mode: c.mode,
        policy: &p,
        server_trusted: c.trusted,
        server_sealed: c.sealed,
        tool: ToolFacts {
            definition_hash: "h1",
            drifted: c.drifted,
            look_alike: c.look_alike,
            instruction_phrases: &phrases,
            annotations: c.annotations.as_ref(),
        },
        provenance: &provenance,
        remembered: &remembered,
    };
    decide(
        Call {
            server: &server,
            tool: c.tool,
            name: &name,
            args: &c.args,
        },
        cx,
    )
}

#[test]
fn scenarios() {
    let read_only = Some(json!({"readOnlyHint": true}));
    let cases = vec![
        Case {
            name: "allow rule with a path condition",
            expect: Verdict::Allow,
            by: "allow_rule",
            ..base()
        },
        Case {
            name: "path outside the allowed directory",
            args: json!({"path": "/home/u/proj/../.ssh/id_rsa"}),
            ..base()
        },
        Case {
            name: "deny glob",
            tool: "delete_file",
            expect: Verdict::Deny,
            by: "deny_rule",
            ..base()
        },
        Case {
            name: "deny beats allow",
            server: "time",
            tool: "delete_zone",
            expect: Verdict::Deny,
            by: "deny_rule",
            ..base()
        },
        Case {
            name: "deny with a prefix condition",
            server: "fetch",
            tool: "fetch",
            args: json!({"url": "http://x"}),
            expect: Verdict::Deny,
            by: "deny_rule",
            ..base()
        },
        Case {
            name: "prefix condition not met",
            server: "fetch",
            tool: "fetch",
            args: json!({"url": "https://x"}),
            ..base()
        },
        Case {
            name: "ask rule beats allow mode default",
            tool: "write_file",
            mode: Mode::Auto,
            by: "ask_rule",
            ..base()
        },
        Case {
            name: "auto mode allows the rest",
            server: "x",
            tool: "y",
            mode: Mode::Auto,
            expect: Verdict::Allow,
            ..base()
        },
        Case {
            name: "deny mode denies the rest",
            server: "x",
            tool: "y",
            mode: Mode::Deny,
            expect: Verdict::Deny,
            ..base()
        },
        Case {
            name: "deny mode still allows allowed",
            server: "time",
            tool: "now",
            mode: Mode::Deny,
            expect: Verdict::Allow,
            by: "allow_rule",
            ..base()
        },
        Case {
            name: "untrusted read-only hint is not believed",
            server: "x",
            tool: "y",
            annotations: read_only.clone(),
            ..base()
        },
        Case {
            name: "trusted read-only hint skips the question",
            server: "x",
            tool: "y",
            trusted: true,
            annotations: read_only.clone(),
            expect: Verdict::Allow,
            by: "read_only_hint",
            ..base()
        },
        Case {
            name: "read-only hint does not beat deny mode",
            server: "x",
            tool: "y",
            trusted: true,
            annotations: read_only.clone(),
            mode: Mode::Deny,
            expect: Verdict::Deny,
            ..base()
        },
        Case {
            name: "drift always asks, even in auto mode",
            server: "time",
            tool: "now",
            drifted: true,
            mode: Mode::Auto,
            by: "drift",
            ..base()
        },
        Case {
            name: "look-alike always asks",
            server: "time",
            tool: "now",
            look_alike: true,
            mode: Mode::Deny,
            by: "look_alike",
            ..base()
        },
        Case {
            name: "text that reads as instructions asks, even in auto mode and under an allow rule",
            tool: "read_file",
            instruction_phrases: &["<important>", "~/.ssh"],
            mode: Mode::Auto,
            by: "instruction_text",
            ..base()
        },
        Case {
            name: "a trusted server's text is not held against it",
            server: "time",
            tool: "now",
            trusted: true,
            instruction_phrases: &["~/.ssh"],
            mode: Mode::Auto,
            expect: Verdict::Allow,
            by: "allow_rule",
            ..base()
        },
        Case {
            name: "deny beats drift",
            tool: "delete_file",
            drifted: true,
            expect: Verdict::Deny,
            by: "deny_rule",
            ..base()
        },
        Case {
            name: "taint from another server asks",
            server: "time",
            tool: "now",
            provenance: &["fetch"],
            mode: Mode::Auto,
            by: "taint",
            ..base()
        },
        Case {
            name: "own output is not taint",
            server: "time",
            tool: "now",
            provenance: &["time"],
            expect: Verdict::Allow,
            by: "allow_rule",
            ..base()
        },
        Case {
            name: "taint exemption per server pair",
            server: "time",
            tool: "now",
            provenance: &["git"],
            expect: Verdict::Allow,
            by: "allow_rule",
            ..base()
        },
        Case {
            name: "a sealed server's tool is read-only though its hints are not believed",
            server: "x",
            tool: "y",
            sealed: true,
            expect: Verdict::Allow,
            by: "sealed",
            ..base()
        },
        Case {
            name: "a sealed server's tool is not tainted",
            server: "x",
            tool: "y",
            provenance: &["fetch"],
            sealed: true,
            expect: Verdict::Allow,
            by: "sealed",
            ..base()
        },
        Case {
            name: "sealed does not beat a deny rule, an ask rule or deny mode",
            server: "x",
            tool: "y",
            sealed: true,
            mode: Mode::Deny,
            expect: Verdict::Deny,
            ..base()
        },
        Case {
            name: "trusted read-only tools are not tainted",
            server: "x",
            tool: "y",
            provenance: &["fetch"],
            trusted: true,
            annotations: read_only,
            expect: Verdict::Allow,
            by: "read_only_hint",
            ..base()
        },
        Case {
            name: "remembered allow",
            server: "x",
            tool: "y",
            remembered: Some(Verdict::Allow),
            expect: Verdict::Allow,
            by: "remembered",
            ..base()
        },
        Case {
            name: "remembered deny beats allow rules",
            server: "time",
            tool: "now",
            remembered: Some(Verdict::Deny),
            expect: Verdict::Deny,
            by: "remembered",
            ..base()
        },
    ];
    let mut failures = Vec::new();
    for c in &cases {
        let d = run(c);
        if d.verdict != c.expect || by_label(&d.decided_by) != c.by {
            failures.push(format!(
                "{}: got {:?} by {:?} ({})",
                c.name, d.verdict, d.decided_by, d.reason
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_changed_definition_forgets_remembered_answers() {
    let c = Case {
        server: "x",
        tool: "y",
        remembered: Some(Verdict::Allow),
        ..base()
    };
    assert_eq!(run(&c).verdict, Verdict::Allow);
    // Same key, other hash: the memory is for "h1" only.
    let server = ServerId::new("x");
    let mut remembered = Remembered::default();
    remembered.answers.insert(
        MemoryKey {
            server: "x".into(),
            tool: "y".into(),
            definition_hash: "h1".into(),
        },
        Verdict::Allow,
    );
    let p = Policy::default();
    let provenance = BTreeSet::new();
    let cx = Context {
        mode: Mode::Ask,
        policy: &p,
        server_trusted: false,
        server_sealed: false,
        tool: ToolFacts {
            definition_hash: "h2",
            drifted: false,
            look_alike: false,
            instruction_phrases: &[],
            annotations: None,
        },
        provenance: &provenance,
        remembered: &remembered,
    };
    let d = decide(
        Call {
            server: &server,
            tool: "y",
            name: "x__y",
            args: &json!({}),
        },
        cx,
    );
    assert_eq!((d.verdict, by_label(&d.decided_by)), (Verdict::Ask, "mode"));
}

#[test]
fn decisions_name_the_rule_and_the_tainting_server() {
    let d = run(&Case {
        tool: "delete_file",
        ..base()
    });
    assert!(
        d.reason.contains("`*__delete_*`") && d.reason.contains("config.json"),
        "{}",
        d.reason
    );
    let t = run(&Case {
        server: "time",
        tool: "now",
        provenance: &["fetch"],
        ..base()
    });
    assert!(t.reason.contains("`fetch`"), "{}", t.reason);
}

#[test]
fn hints_are_pessimistic_and_only_believed_when_trusted() {
    let a = json!({"readOnlyHint": true, "destructiveHint": false, "openWorldHint": false});
    assert_eq!(
        hints(false, Some(&a)),
        Hints {
            read_only: false,
            destructive: true,
            open_world: true
        }
    );
    assert_eq!(
        hints(true, Some(&a)),
        Hints {
            read_only: true,
            destructive: false,
            open_world: false
        }
    );
    assert_eq!(
        hints(true, Some(&json!({}))),
        Hints {
            read_only: false,
            destructive: true,
            open_world: true
        }
    );
}
