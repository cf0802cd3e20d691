//! Multi-round-trip input (2026-07-28, SEP-2322) headless, through the real CLI against the
//! fake server's `ask` tool: two rounds answered by the headless policy, each in the call's
//! one audit record; a server that asks forever is given up on, and one that asks for what
//! the host never declared is refused.

use crate::common::*;
use serde_json::{Value, json};

fn audit_lines(sb: &Sandbox) -> Vec<Value> {
    let log = sb.path().join("data/mcp-host/audit.jsonl");
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

#[test]
fn a_tool_that_asks_twice_completes_headless_and_each_round_is_audited() {
    let sb = Sandbox::new();
    let mut asker = fake_server(&["--era", "modern"]);
    asker["elicitationDefaults"] = json!(true);
    let cfg = sb.config("c.json", json!({"m": asker}));
    let out = sb.run_with(&["call", "m", "ask"], &cfg);
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out).trim(),
        "name=Ada sure=true (accept, 2 rounds)",
        "the defaults answered both rounds: {}",
        stderr(&out)
    );
    let calls: Vec<Value> = audit_lines(&sb)
        .into_iter()
        .filter(|l| l["event"] == "call")
        .collect();
    assert_eq!(calls.len(), 1, "one record for the call and its rounds");
    let rounds = calls[0]["input_rounds"].as_array().unwrap();
    assert_eq!(rounds.len(), 2, "{rounds:?}");
    for (round, key) in rounds.iter().zip(["name", "sure"]) {
        assert_eq!(round["requests"][0]["key"], key);
        assert_eq!(round["requests"][0]["kind"], "form");
        assert_eq!(round["requests"][0]["action"], "accept");
        assert_eq!(round["request_state"], true);
    }
    assert!(
        !calls[0].to_string().contains("Ada"),
        "what the person answered stays out of the log: {}",
        calls[0]
    );
}

#[test]
fn without_anyone_to_answer_the_round_is_declined_and_the_server_still_answers() {
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"m": fake_server(&["--era", "modern"])}));
    let out = sb.run_with(&["call", "m", "ask"], &cfg);
    assert_eq!(stdout(&out).trim(), r#"no name: {"action":"decline"}"#);
}

#[test]
fn a_server_that_asks_forever_too_much_or_for_undeclared_input_is_refused() {
    for (fault, why) in [
        ("mrtr-forever", "asked for input 11 times without answering"),
        ("mrtr-many", "asked 1000 questions at once; at most 10"),
        (
            "mrtr-sampling",
            "for sampling or roots, which this host did not declare",
        ),
    ] {
        let sb = Sandbox::new();
        let mut asker = fake_server(&["--era", "modern", "--fault", fault]);
        asker["elicitationDefaults"] = json!(true);
        let cfg = sb.config("c.json", json!({"m": asker}));
        let out = sb.run_with(&["call", "m", "ask"], &cfg);
        assert!(!out.status.success(), "{fault}");
        assert!(stderr(&out).contains(why), "{fault}: {}", stderr(&out));
        // The failed call's record still shows every round it was asked and answered.
        let calls: Vec<Value> = audit_lines(&sb)
            .into_iter()
            .filter(|l| l["event"] == "call")
            .collect();
        let answered = if fault == "mrtr-forever" { 10 } else { 0 };
        let rounds = calls[0]["input_rounds"].as_array().map_or(0, Vec::len);
        assert_eq!(rounds, answered, "{fault}: {}", calls[0]);
    }
}
