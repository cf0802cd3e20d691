//! Policy end to end: `policy explain` names the deciding rule, `policy test` runs the
//! repo's fixture (and fails on a wrong expectation), annotations are believed only from
//! trusted servers, a project file cannot allow, and `call` leaves an audit line per
//! decision and call with no secret in it.

use crate::common::*;

/// The rules under test are for servers that can change things: each one here may reach a
/// host, so it is not sealed (a sealed server's tools are read-only by construction).
macro_rules! reaches_a_host {
    () => {
        json!({"network": {"allow": ["example.test"]}})
    };
}

fn reaching(mut server: serde_json::Value) -> serde_json::Value {
    server["sandbox"] = reaches_a_host!();
    server
}
use serde_json::{Value, json};

const FIXTURE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/policy-cases.json"
);

/// Servers `u` (untrusted) and `t` (trusted), both claiming `evil` is read-only, and rules.
fn config(sb: &Sandbox) -> std::path::PathBuf {
    let text = json!({
        "mcpServers": {
            "u": {"sandbox": reaches_a_host!(), "command": fake(), "args": ["--annotate-readonly", "evil"]},
            "t": {"sandbox": reaches_a_host!(), "command": fake(), "args": ["--annotate-readonly", "evil"], "trust": true},
        },
        "permissions": {
            "allow": ["u__echo", {"tool": "t__slow", "when": {"pointer": "/ms", "equals": 5}}],
            "ask": ["*__add"],
            "deny": ["*__crash"]
        }
    });
    sb.write("c.json", &serde_json::to_string_pretty(&text).unwrap())
}

#[test]
fn explain_names_the_rule_for_allow_ask_and_deny() {
    let sb = Sandbox::new();
    let cfg = config(&sb);
    for (tool, verdict, rule) in [
        ("u__echo", "allow", "`u__echo`"),
        ("u__add", "ask", "`*__add`"),
        ("u__crash", "deny", "`*__crash`"),
    ] {
        let out = sb.run_with(&["policy", "explain", tool], &cfg);
        let text = stdout(&out);
        assert!(text.starts_with(&format!("{verdict}: ")), "{tool}: {text}");
        assert!(
            text.contains(rule) && text.contains("c.json"),
            "{tool}: {text}"
        );
    }
    let out = sb.run_with(&["policy", "explain", "u__echo", "--json"], &cfg);
    let d: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(d["decided_by"]["by"], "allow_rule");
}

#[test]
fn the_fixture_passes_and_a_wrong_expectation_fails() {
    let sb = Sandbox::new();
    let cfg = config(&sb);
    let ok = sb.run_with(&["policy", "test", FIXTURE], &cfg);
    assert!(ok.status.success(), "{}", stdout(&ok));
    assert!(
        stdout(&ok).contains("policy: 11 passed, 0 failed"),
        "{}",
        stdout(&ok)
    );

    let mut cases: Value =
        serde_json::from_str(&std::fs::read_to_string(FIXTURE).unwrap()).unwrap();
    cases["cases"][5]["expect"] = json!("allow");
    let wrong = sb.write("wrong.json", &cases.to_string());
    let bad = sb.run_with(&["policy", "test", wrong.to_str().unwrap()], &cfg);
    assert_eq!(bad.status.code(), Some(1));
    assert!(
        stdout(&bad)
            .contains("FAIL untrusted readOnlyHint is not believed: expected allow, got ask"),
        "{}",
        stdout(&bad)
    );
}

#[test]
fn a_project_file_cannot_allow() {
    let sb = Sandbox::new();
    let repo = sb.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    std::fs::write(
        repo.join(".mcp.json"),
        json!({"permissions": {"allow": ["*"]}}).to_string(),
    )
    .unwrap();
    let flag = sb.config("flag.json", json!({"f": reaching(fake_server(&[]))}));
    let out = sb
        .command(&repo)
        .args([
            "policy",
            "explain",
            "f__grow",
            "--mcp-config",
            flag.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert!(stdout(&out).starts_with("ask: "), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("a project file cannot allow tools"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn call_applies_deny_rules_and_audits_without_secrets() {
    let sb = Sandbox::new();
    let secret = "sekrit-4242-token";
    let text = json!({
        "mcpServers": {"u": {"sandbox": reaches_a_host!(), "command": fake(), "env": {"API_TOKEN": "${MCP_TEST_SECRET}"}}},
        "permissions": {"deny": ["*__crash"]}
    });
    let cfg = sb.write("c.json", &text.to_string());
    let run = |args: &[&str]| {
        let mut all = args.to_vec();
        all.extend(["--strict-mcp-config", "--mcp-config", cfg.to_str().unwrap()]);
        sb.command(sb.path())
            .env("MCP_TEST_SECRET", secret)
            .args(&all)
            .output()
            .unwrap()
    };
    let ok = run(&[
        "call",
        "u__echo",
        "--args",
        &json!({"message": secret}).to_string(),
    ]);
    assert_eq!(stdout(&ok), format!("{secret}\n"));
    let denied = run(&["call", "u", "crash"]);
    assert_eq!(denied.status.code(), Some(1));
    assert!(
        stderr(&denied).contains("denied by rule `*__crash`"),
        "{}",
        stderr(&denied)
    );

    let log = std::fs::read_to_string(sb.path().join("data/mcp-host/audit.jsonl")).unwrap();
    assert!(
        !log.contains(secret),
        "a secret reached the audit log:\n{log}"
    );
    let lines: Vec<Value> = log
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let events: Vec<(&str, &str)> = lines
        .iter()
        .map(|l| (l["event"].as_str().unwrap(), l["tool"].as_str().unwrap()))
        .collect();
    // One record per call, sent or refused, with its decision in it.
    assert_eq!(events, [("call", "echo"), ("call", "crash")]);
    assert_eq!(lines[0]["verdict"], "ask");
    assert_eq!(lines[0]["source"], "person");
    assert_eq!(lines[0]["status"], "ok");
    assert_eq!(lines[1]["verdict"], "deny");
    assert_eq!(lines[1]["status"], "refused");
    assert_eq!(lines[0]["args_sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn hooks_can_deny_and_a_failing_or_slow_hook_denies() {
    let sb = Sandbox::new();
    let json_deny = r#"{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny", "permissionDecisionReason": "json says no"}}"#;
    let text = json!({
        "mcpServers": {"f": {"sandbox": reaches_a_host!(), "command": fake()}},
        "hooks": {
            "PreToolUse": [
                {"matcher": "f__echo", "hooks": [{"type": "command", "command": "if grep -q forbidden; then echo 'no forbidden words' >&2; exit 2; fi"}]},
                {"matcher": "f__add", "hooks": [{"type": "command", "command": format!("cat >/dev/null; echo '{json_deny}'")}]},
                {"matcher": "f__grow", "hooks": [{"type": "command", "command": "sleep 5", "timeout": 1}]},
                {"matcher": "f__error", "hooks": [{"type": "command", "command": "exit 1"}]}
            ],
            "PostToolUse": [{"matcher": "f__echo", "hooks": [{"command": "cat >/dev/null; echo '{\"decision\": \"block\", \"reason\": \"looked at the result\"}'"}]}]
        }
    });
    let cfg = sb.write("c.json", &text.to_string());
    let ok = sb.run_with(
        &["call", "f__echo", "--args", r#"{"message": "fine"}"#],
        &cfg,
    );
    assert_eq!(stdout(&ok), "fine\n", "{}", stderr(&ok));
    assert!(
        stderr(&ok).contains("PostToolUse hook objected: looked at the result"),
        "{}",
        stderr(&ok)
    );
    for (tool, args, why) in [
        (
            "f__echo",
            r#"{"message": "forbidden"}"#,
            "no forbidden words",
        ),
        ("f__add", r#"{"a": 1, "b": 2}"#, "json says no"),
        ("f__grow", "{}", "timed out"),
        ("f__error", "{}", "failed (exit Some(1))"),
    ] {
        let out = sb.run_with(&["call", tool, "--args", args], &cfg);
        assert_eq!(out.status.code(), Some(1), "{tool}");
        assert!(stderr(&out).contains(why), "{tool}: {}", stderr(&out));
    }
    let log = std::fs::read_to_string(sb.path().join("data/mcp-host/audit.jsonl")).unwrap();
    assert_eq!(
        log.lines()
            .filter(|l| l.contains("\"decided_by\":{\"by\":\"hook\""))
            .count(),
        4,
        "{log}"
    );
}

#[test]
fn a_project_file_cannot_define_hooks() {
    let sb = Sandbox::new();
    let repo = sb.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let hooks =
        json!({"hooks": {"PreToolUse": [{"matcher": "*", "hooks": [{"command": "exit 2"}]}]}});
    std::fs::write(repo.join(".mcp.json"), hooks.to_string()).unwrap();
    let flag = sb.config("flag.json", json!({"f": reaching(fake_server(&[]))}));
    let out = sb
        .command(&repo)
        .args([
            "call",
            "f__echo",
            "--args",
            r#"{"message": "ran"}"#,
            "--mcp-config",
            flag.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    assert_eq!(stdout(&out), "ran\n", "{}", stderr(&out));
    assert!(
        stderr(&out).contains("a project file cannot define hooks"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn remembered_answers_apply_to_one_definition_until_forgotten() {
    let sb = Sandbox::new();
    let honest = sb.config("a.json", json!({"f": reaching(fake_server(&[]))}));
    let changed = sb.config(
        "b.json",
        json!({"f": reaching(fake_server(&["--describe-echo", "Echoes, differently"]))}),
    );
    let explain =
        |cfg: &std::path::Path| stdout(&sb.run_with(&["policy", "explain", "f__echo"], cfg));
    assert!(explain(&honest).starts_with("ask: "));
    assert!(
        sb.run_with(&["policy", "remember", "f__echo", "allow"], &honest)
            .status
            .success()
    );
    let now = explain(&honest);
    assert!(
        now.starts_with("allow: ") && now.contains("remembered"),
        "{now}"
    );
    // A changed definition is not covered by the answer (and drift asks anyway).
    assert!(
        explain(&changed).starts_with("ask: "),
        "{}",
        explain(&changed)
    );
    let forget = sb.run_with(&["policy", "forget", "--server", "f"], &honest);
    assert!(stdout(&forget).contains("forgot 1"), "{}", stdout(&forget));
    assert!(explain(&honest).starts_with("ask: "));
}

/// A deterministic pseudo-random sequence for the property test.
struct Lcg(u64);

impl Lcg {
    fn pick(&mut self, n: usize) -> usize {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((self.0 >> 33) as usize) % n
    }
}

#[test]
fn no_call_reaches_a_server_without_a_recorded_decision() {
    // Random calls (valid and invalid arguments, denied and allowed tools): every tools/call
    // the server receives is preceded by an audit decision that was not a denial.
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let text = json!({
        "mcpServers": {"f": {"sandbox": reaches_a_host!(), "command": fake(), "args": ["--request-log", log.to_str().unwrap()]}},
        "permissions": {"deny": ["f__error", {"tool": "f__echo", "when": {"pointer": "/message", "prefix": "rm "}}]}
    });
    let cfg = sb.write("c.json", &text.to_string());
    let calls = [
        ("f__echo", r#"{"message": "hi"}"#),
        ("f__echo", r#"{"message": "rm -rf /"}"#),
        ("f__echo", r#"{"message": 3}"#),
        ("f__add", r#"{"a": 1, "b": 2}"#),
        ("f__add", r#"{"a": "x"}"#),
        ("f__error", "{}"),
        ("f__evil", "{}"),
        ("f__nope", "{}"),
    ];
    let mut rng = Lcg(2026);
    let mut sent = 0;
    for _ in 0..24 {
        let (tool, args) = calls[rng.pick(calls.len())];
        let before = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("tools/call")
            .count();
        sb.run_with(&["call", tool, "--args", args], &cfg);
        let after = std::fs::read_to_string(&log)
            .unwrap_or_default()
            .matches("tools/call")
            .count();
        let audit = std::fs::read_to_string(sb.path().join("data/mcp-host/audit.jsonl"))
            .unwrap_or_default();
        let last: Option<Value> = audit
            .lines()
            .rfind(|l| l.contains("\"event\":\"call\""))
            .map(|l| serde_json::from_str(l).unwrap());
        if after > before {
            sent += 1;
            let d = last.expect("a call was sent without any decision");
            assert_eq!(d["name"], tool, "the last decision is for this call");
            assert_ne!(
                d["verdict"], "deny",
                "a denied call reached the server: {tool} {args}"
            );
            assert_ne!(d["status"], "refused", "a refused call reached the server");
        }
    }
    assert!(sent > 0, "the scenario sent nothing; it proves nothing");
}
