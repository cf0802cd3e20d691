//! Headless runs end to end: a local server speaking OpenAI's streaming Chat Completions
//! wire format drives a tool-using turn against the fake MCP server. Denied and invalid calls
//! come back to the model as readable errors and the turn goes on.

use crate::common::*;
use serde_json::{Value, json};

#[test]
fn a_tool_using_turn_completes_with_denied_and_invalid_calls_reported_to_the_model() {
    let (url, seen) = fake_model(vec![
        tool_calls_stream(&[
            (
                "call_a",
                "f__echo",
                r#"{"message": "hello from the model"}"#,
            ),
            ("call_b", "f__add", r#"{"a": "two", "b": 2}"#),
            ("call_c", "f__grow", "{}"),
        ]),
        tool_calls_stream(&[("call_d", "f__add", r#"{"a": 40, "b": 2}"#)]),
        text_stream("All done: the sum is 42."),
    ]);
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--instructions", "Prefer echo for greetings."])}),
    );
    let out = sb.run_with(
        &[
            "run",
            "-p",
            "say hello and add",
            "-m",
            "openai-compatible:test-model",
            "--base-url",
            &url,
            "--allowed-tools",
            "f__echo,f__add",
            "--output-format",
            "json",
        ],
        &cfg,
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["result"], "All done: the sum is 42.");
    assert_eq!(report["end"], "finished");
    assert_eq!(report["steps"], 3);
    let calls = report["tool_calls"].as_array().unwrap();
    assert_eq!(calls.len(), 4);
    assert_eq!(calls[0]["is_error"], false);
    assert!(
        calls[1]["refused"].as_str().unwrap().contains("/a"),
        "{}",
        calls[1]
    );
    assert!(
        calls[2]["refused"].as_str().unwrap().contains("denied"),
        "{}",
        calls[2]
    );

    let requests = seen.lock().unwrap();
    assert_eq!(requests.len(), 3);
    assert_eq!(requests[0]["model"], "test-model");
    let system = requests[0]["messages"][0]["content"].as_str().unwrap();
    assert_eq!(requests[0]["messages"][0]["role"], "system");
    assert!(
        system.contains("<server-instructions server=\"f\">")
            && system.contains("Prefer echo for greetings."),
        "{system}"
    );
    // Every call the model made has one record in the audit log, in call order, sent or
    // refused, with its decision and how it ended.
    let audit = std::fs::read_to_string(sb.path().join("data/mcp-host/audit.jsonl")).unwrap();
    let events: Vec<(String, String)> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .map(|v| {
            assert_eq!(v["event"], "call");
            assert_eq!(v["source"], "model");
            (
                v["tool"].as_str().unwrap().to_string(),
                v["status"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    let want = [
        ("echo", "ok"),
        ("add", "refused"),
        ("grow", "refused"),
        ("add", "ok"),
    ];
    assert_eq!(
        events,
        want.map(|(a, b)| (a.to_string(), b.to_string())),
        "{audit}"
    );
    assert!(
        requests[0]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "f__echo")
    );
    let second = requests[1]["messages"].as_array().unwrap();
    let tool_msg = |id: &str| {
        second.iter().find(|m| m["tool_call_id"] == id).unwrap()["content"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert_eq!(tool_msg("call_a"), "hello from the model");
    assert!(
        tool_msg("call_b").starts_with("ERROR: ")
            && tool_msg("call_b").contains("nothing was sent")
    );
    assert!(
        tool_msg("call_c").contains("denied"),
        "{}",
        tool_msg("call_c")
    );
    let third = requests[2]["messages"].as_array().unwrap();
    assert!(
        third
            .iter()
            .any(|m| m["tool_call_id"] == "call_d" && m["content"] == "42")
    );
}

#[test]
fn the_step_cap_ends_a_turn_that_never_stops_calling_tools() {
    let loop_call = || tool_calls_stream(&[("c", "f__echo", r#"{"message": "again"}"#)]);
    let (url, _) = fake_model(vec![loop_call(), loop_call(), loop_call()]);
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&[])}));
    let out = sb.run_with(
        &[
            "run",
            "-p",
            "loop",
            "-m",
            "openai-compatible:m",
            "--base-url",
            &url,
            "--allowed-tools",
            "f__*",
            "--max-steps",
            "2",
        ],
        &cfg,
    );
    assert_eq!(out.status.code(), Some(3));
    assert!(
        stdout(&out).contains("Stopped after 2 model steps"),
        "{}",
        stdout(&out)
    );
}

#[test]
fn without_a_model_run_says_how_to_configure_one_and_other_commands_still_work() {
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&[])}));
    let out = sb.run_with(&["run", "-p", "hi"], &cfg);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        stderr(&out).contains("no model configured: pass -m provider:model"),
        "{}",
        stderr(&out)
    );
    assert!(sb.run_with(&["tools"], &cfg).status.success());
}

fn anthropic_event(v: Value) -> String {
    format!("event: {}\ndata: {v}\n\n", v["type"].as_str().unwrap())
}

fn anthropic_tools(calls: &[(&str, &str, &str)]) -> String {
    let mut out = anthropic_event(
        json!({"type": "message_start", "message": {"id": "msg_1", "role": "assistant", "content": []}}),
    );
    for (i, (id, name, args)) in calls.iter().enumerate() {
        out += &anthropic_event(
            json!({"type": "content_block_start", "index": i, "content_block": {"type": "tool_use", "id": id, "name": name, "input": {}}}),
        );
        let (head, tail) = args.split_at(args.len() / 2);
        for part in [head, tail] {
            out += &anthropic_event(
                json!({"type": "content_block_delta", "index": i, "delta": {"type": "input_json_delta", "partial_json": part}}),
            );
        }
        out += &anthropic_event(json!({"type": "content_block_stop", "index": i}));
    }
    out += &anthropic_event(json!({"type": "message_delta", "delta": {"stop_reason": "tool_use"}}));
    out + &anthropic_event(json!({"type": "message_stop"}))
}

fn anthropic_text(text: &str) -> String {
    let mut out = anthropic_event(
        json!({"type": "message_start", "message": {"id": "msg_2", "role": "assistant", "content": []}}),
    );
    out += &anthropic_event(
        json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
    );
    out += &anthropic_event(
        json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
    );
    out += &anthropic_event(json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}}));
    out + &anthropic_event(json!({"type": "message_stop"}))
}

#[test]
fn the_same_turn_works_through_the_anthropic_wire_format() {
    let (url, seen) = fake_model(vec![
        anthropic_tools(&[
            ("toolu_a", "f__echo", r#"{"message": "via anthropic"}"#),
            ("toolu_b", "f__grow", "{}"),
        ]),
        anthropic_text("Finished."),
    ]);
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&[])}));
    let out = sb.run_with(
        &[
            "run",
            "-p",
            "go",
            "-m",
            "anthropic:claude-test",
            "--base-url",
            &url,
            "--allowed-tools",
            "f__echo",
            "--output-format",
            "json",
        ],
        &cfg,
    );
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    let report: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(report["result"], "Finished.");
    let requests = seen.lock().unwrap();
    let results = &requests[1]["messages"][2]["content"];
    assert_eq!(results[0]["tool_use_id"], "toolu_a");
    assert_eq!(results[0]["content"], "via anthropic");
    assert_eq!(results[0]["is_error"], false);
    assert_eq!(
        results[1]["is_error"], true,
        "the denied call is an error result"
    );
    assert_eq!(
        requests[0]["tools"].as_array().unwrap().last().unwrap()["cache_control"]["type"],
        "ephemeral"
    );
}

#[test]
fn a_20_mb_result_is_stored_previewed_and_read_back_through_read_result() {
    const SIZE: usize = 20_000_000;
    let (url, seen) = fake_model_fn(|request| {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let last_tool = messages
            .iter()
            .rev()
            .find(|m| m["role"] == "tool")
            .map(|m| m["content"].as_str().unwrap_or_default().to_string());
        match last_tool {
            None => tool_calls_stream(&[("big", "f__big", &json!({"bytes": SIZE}).to_string())]),
            Some(preview) if preview.contains("too large to show whole") => {
                let at = preview.find("handle ").unwrap() + "handle ".len();
                let handle = &preview[at..at + 32];
                let args =
                    json!({"handle": handle, "offset": 10_000_000, "length": 100}).to_string();
                tool_calls_stream(&[("read", "read_result", &args)])
            }
            Some(page) => {
                let page: Value = serde_json::from_str(&page)
                    .unwrap_or_else(|_| panic!("not a page: {}", &page[..page.len().min(300)]));
                text_stream(page["text"].as_str().unwrap())
            }
        }
    });
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&[])}));
    let out = sb.run_with(
        &[
            "run",
            "-p",
            "read the big one",
            "-m",
            "openai-compatible:m",
            "--base-url",
            &format!("{url}/v1"),
            "--allowed-tools",
            "f__big",
        ],
        &cfg,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let expected = mcp_host_testkit::big_text(SIZE);
    assert_eq!(
        stdout(&out),
        format!("{}\n", &expected[10_000_000..10_000_100])
    );

    let requests = seen.lock().unwrap();
    let second = serde_json::to_string(&requests[1]).unwrap();
    assert!(
        second.len() < 100_000,
        "the model was sent {} bytes, not a capped preview",
        second.len()
    );
    assert!(
        requests[1]["tools"]
            .as_array()
            .unwrap()
            .iter()
            .any(|t| t["function"]["name"] == "read_result")
    );
    // The whole result is stored byte for byte under its handle, in the SQLite store.
    let handle = mcp_host_store::result_handle(&expected);
    assert!(
        second.contains(&handle),
        "the preview does not name the handle"
    );
    let stored = tokio::runtime::Runtime::new().unwrap().block_on(async {
        let store = mcp_host_store::Store::open(&sb.path().join("data/mcp-host/store.sqlite"))
            .await
            .unwrap();
        store.get_result(&handle).await.unwrap()
    });
    assert!(stored.as_deref() == Some(expected.as_str()));
    // The audit says which call the model saw only a preview of.
    let audit = std::fs::read_to_string(sb.path().join("data/mcp-host/audit.jsonl")).unwrap();
    let truncated: Vec<(String, bool)> = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v["event"] == "call" && v["tool"].is_string())
        .map(|v| {
            (
                v["tool"].as_str().unwrap().to_string(),
                v["truncated"] == true,
            )
        })
        .collect();
    assert_eq!(truncated, [("big".to_string(), true)], "{audit}");
}

#[test]
fn an_interrupt_mid_call_cancels_it_at_the_server_and_leaves_nothing_running() {
    let (url, _) = fake_model(vec![tool_calls_stream(&[(
        "slow",
        "f__slow",
        r#"{"ms": 600000}"#,
    )])]);
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let pids = sb.work_file("spawn.log");
    let cfg = sb.config("c.json", json!({"f": fake_server(&["--request-log", log.to_str().unwrap(), "--spawn-log", pids.to_str().unwrap()])}));
    let mut host = sb
        .command(sb.path())
        .args([
            "run",
            "-p",
            "wait",
            "-m",
            "openai-compatible:m",
            "--base-url",
            &format!("{url}/v1"),
            "--allowed-tools",
            "f__slow",
            "--strict-mcp-config",
            "--mcp-config",
            cfg.to_str().unwrap(),
        ])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let started = std::time::Instant::now();
    while !std::fs::read_to_string(&log)
        .unwrap_or_default()
        .contains("tools/call slow")
    {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(15),
            "the slow call never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    signal(host.id(), nix::sys::signal::Signal::SIGINT);
    assert_eq!(host.wait().unwrap().code(), Some(130));
    let seen = std::fs::read_to_string(&log).unwrap();
    assert!(
        seen.contains("notifications/cancelled"),
        "the server was not told: {seen}"
    );
    let server: i32 = std::fs::read_to_string(&pids)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let stat = std::fs::read_to_string(format!("/proc/{server}/stat")).unwrap_or_default();
    assert!(
        stat.is_empty()
            || stat
                .rsplit(')')
                .next()
                .unwrap()
                .trim_start()
                .starts_with('Z'),
        "server still running"
    );
}

#[test]
fn stream_json_prints_one_event_per_line_then_the_result() {
    let (url, _) = fake_model(vec![
        tool_calls_stream(&[
            ("a", "f__echo", r#"{"message": "x"}"#),
            ("b", "f__grow", "{}"),
        ]),
        text_stream("ok"),
    ]);
    let (events, out) = stream_json_turn(&url, "f__echo");
    let kinds: Vec<&str> = events
        .iter()
        .map(|e| e["type"].as_str().unwrap())
        .filter(|k| *k != "text_delta")
        .collect();
    // Both calls are decided before the allowed one is sent; the refused one says why.
    assert_eq!(
        kinds,
        [
            "decision",
            "decision",
            "tool_refused",
            "tool_call",
            "tool_result",
            "result"
        ]
    );
    assert_eq!(events[1]["verdict"], "deny");
    assert_eq!(events[2]["call_id"], "b");
    assert_eq!(events[2]["server"], "f");
    assert!(events[2]["reason"].as_str().unwrap().contains("denied"));
    assert_eq!(events[3]["call_id"], "a");
    // A call says what was sent and a result what came back, for a script to follow.
    assert_eq!(events[3]["arguments"], json!({"message": "x"}));
    assert_eq!(events[3]["tool"], "echo");
    assert_eq!(events[4]["call_id"], "a");
    assert_eq!(events[4]["ok"], true);
    assert!(
        events[4]["preview"].as_str().unwrap().contains('x'),
        "{}",
        events[4]
    );
    // The turn had a refused call: stderr ends with how to allow it.
    let err = stderr(&out);
    assert!(
        err.contains("policy refused 1 call (f__grow)")
            && err.contains("--allowed-tools 'f__grow'"),
        "{err}"
    );
    // The final text also streamed, in pieces, as it arrived.
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, "ok");
    let result = events.last().unwrap();
    assert_eq!(result["result"], "ok");
    assert_eq!(result["conversation_id"].as_str().unwrap().len(), 32);
}

/// A server that floods progress (20,000 notifications at once) costs a script reading
/// `stream-json` a few lines: at most one per call per 200 ms, the last of them the latest
/// progress the server sent.
#[test]
fn a_flood_of_progress_is_a_few_lines_ending_with_the_latest() {
    let flood = 20_000;
    let args = json!({"ms": 1500, "progressFlood": flood}).to_string();
    let (url, _) = fake_model(vec![
        tool_calls_stream(&[("a", "f__slow", &args)]),
        text_stream("ok"),
    ]);
    let (events, _) = stream_json_turn(&url, "f__slow");
    let progress: Vec<&Value> = events.iter().filter(|e| e["type"] == "progress").collect();
    let result = events.iter().find(|e| e["type"] == "tool_result").unwrap();
    let took = result["duration_ms"].as_u64().unwrap();
    assert!(
        !progress.is_empty() && progress.len() as u64 <= took / 200 + 2,
        "{} progress lines in a call of {took} ms",
        progress.len()
    );
    assert_eq!(
        progress.last().unwrap()["progress"].as_f64(),
        Some(f64::from(flood - 1))
    );
    assert!(progress.iter().all(|p| p["call_id"] == "a"));
}

#[test]
fn continue_and_resume_carry_the_conversation_into_the_next_run() {
    let (url, seen) = fake_model(vec![
        tool_calls_stream(&[("call_1", "f__add", r#"{"a": 20, "b": 22}"#)]),
        text_stream("It is 42."),
        text_stream("Still 42."),
        text_stream("Yes, 42."),
    ]);
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&[])}));
    let run = |extra: &[&str]| {
        let mut args = vec![
            "run",
            "-m",
            "openai-compatible:m",
            "--base-url",
            &url,
            "--allowed-tools",
            "f__add",
            "--output-format",
            "json",
        ];
        args.extend_from_slice(extra);
        let out = sb.run_with(&args, &cfg);
        assert!(out.status.success(), "{}", stderr(&out));
        serde_json::from_slice::<Value>(&out.stdout).unwrap()
    };
    let first = run(&["-p", "add 20 and 22"]);
    let id = first["conversation_id"].as_str().unwrap().to_string();
    let second = run(&["-p", "what was it?", "--continue"]);
    assert_eq!(second["conversation_id"], id.as_str());
    let third = run(&["-p", "sure?", "--resume", &id]);
    assert_eq!(third["result"], "Yes, 42.");

    let requests = seen.lock().unwrap();
    // The second run's request carries the first run's turn, tool call and result included.
    let messages = requests[2]["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["user", "assistant", "tool", "assistant", "user"]);
    assert_eq!(messages[2]["content"], "42");
    assert_eq!(messages[4]["content"], "what was it?");
    assert_eq!(requests[3]["messages"].as_array().unwrap().len(), 7);

    // A bad id is refused with the reason, and nothing runs.
    let out = sb.run_with(
        &[
            "run",
            "-m",
            "openai-compatible:m",
            "--base-url",
            &url,
            "-p",
            "x",
            "--resume",
            "nope",
        ],
        &cfg,
    );
    assert!(!out.status.success());
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
}

/// A `run -p go` against the fake model at `url` and the fake server `f`, with `allowed`
/// allowed, printing `stream-json`: its events, and how it ended.
fn stream_json_turn(url: &str, allowed: &str) -> (Vec<Value>, std::process::Output) {
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&[])}));
    let out = sb.run_with(
        &[
            "run",
            "-p",
            "go",
            "-m",
            "openai-compatible:m",
            "--base-url",
            &format!("{url}/v1"),
            "--allowed-tools",
            allowed,
            "--output-format",
            "stream-json",
        ],
        &cfg,
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let events = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    (events, out)
}
