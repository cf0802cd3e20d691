//! Nothing a server or a model sends reaches the terminal raw, on any path: every command's
//! output (stdout and stderr, `-vv` logs included) is captured through a real pty with
//! `script` from util-linux, against the fake server's `hostile-text` fault (escapes in
//! descriptions, instructions, results, JSON-RPC errors and stderr; NUL bytes and a 1 MiB
//! line on stdout) and a model that answers with the same text. The only control bytes
//! allowed are the pty's own line endings (`\r\n`) and tabs.

use crate::common::*;
use mcp_host_testkit::HOSTILE_TEXT;
use serde_json::{Value, json};
use std::path::Path;
use std::process::Command;

/// Runs `mcp-host ARGS -vv --strict-mcp-config --mcp-config CONFIG` under `script`, so stdout
/// and stderr are a terminal; returns the exit status and every byte the terminal got.
fn through_pty(sb: &Sandbox, args: &[&str], config: &Path) -> (Option<i32>, Vec<u8>) {
    let mut all: Vec<String> = vec![HOST.to_string()];
    all.extend(args.iter().map(|a| a.to_string()));
    all.extend(["-vv", "--strict-mcp-config", "--mcp-config"].map(String::from));
    all.push(config.display().to_string());
    let line = all
        .iter()
        .map(|a| format!("'{}'", a.replace('\'', r"'\''")))
        .collect::<Vec<_>>()
        .join(" ");
    let out = Command::new("script")
        .args(["-qfec", &line, "/dev/null"])
        .current_dir(sb.path())
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", sb.path())
        .env("SHELL", "/bin/sh")
        .env("TERM", "xterm-256color")
        .env("XDG_CONFIG_HOME", sb.path().join("config"))
        .env("XDG_DATA_HOME", sb.path().join("data"))
        .env("XDG_RUNTIME_DIR", sb.path().join("run"))
        .stdin(std::process::Stdio::null())
        .output()
        .expect("util-linux `script` is needed for the pty tests");
    (out.status.code(), out.stdout)
}

/// Every byte is printable text, a tab or the pty's `\r\n`; no C1 control is encoded in it.
fn assert_terminal_safe(what: &str, bytes: &[u8]) {
    let text =
        std::str::from_utf8(bytes).unwrap_or_else(|e| panic!("{what}: output is not UTF-8 ({e})"));
    for (i, c) in text.char_indices() {
        let ok = !c.is_control()
            || c == '\n'
            || c == '\t'
            || (c == '\r' && text[i + 1..].starts_with('\n'));
        assert!(
            ok,
            "{what}: U+{:04X} reached the terminal at byte {i}: {:?}",
            c as u32,
            &text[i.saturating_sub(80)..(i + 80).min(text.len())]
        );
        assert!(
            !matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}'),
            "{what}: U+{:04X} reached the terminal at byte {i}",
            c as u32
        );
    }
}

fn hostile_config(sb: &Sandbox) -> std::path::PathBuf {
    sb.config(
        "c.json",
        json!({"f": fake_server(&["--fault", "hostile-text"])}),
    )
}

/// A Chat Completions SSE body that streams `text` in two deltas.
fn text_sse(text: &str) -> String {
    let mid = text
        .char_indices()
        .nth(text.chars().count() / 2)
        .map_or(0, |(i, _)| i);
    let chunk = |t: &str| json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]});
    format!(
        "data: {}\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(&text[..mid]),
        chunk(&text[mid..]),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    )
}

/// A model that calls `f__echo` once, then answers with hostile text.
fn hostile_model() -> String {
    let (url, _) = fake_model_fn(|body: &Value| {
        let after_tool = body["messages"]
            .as_array()
            .is_some_and(|m| m.iter().any(|m| m["role"] == "tool"));
        if after_tool {
            text_sse(&format!("model says {HOSTILE_TEXT} done"))
        } else {
            tool_calls_stream(&[("call_1", "f__echo", r#"{"message": "from the model"}"#)])
        }
    });
    url
}

#[test]
fn call_results_and_errors_reach_the_terminal_sanitised() {
    let sb = Sandbox::new();
    let cfg = hostile_config(&sb);
    for (args, code, expect) in [
        (
            &["call", "f", "echo", "--args", r#"{"message": "hi there"}"#][..],
            0,
            "hi there",
        ),
        (
            &[
                "call",
                "f",
                "echo",
                "--json",
                "--args",
                r#"{"message": "hi there"}"#,
            ][..],
            0,
            "hi there",
        ),
        // A JSON-RPC error message: the `error: {e}` path.
        (&["call", "f", "hostile_error"][..], 1, "error"),
        // A tool error (`isError`).
        (&["call", "f", "error"][..], 1, "it failed"),
        // An unknown tool: the error names the server's state.
        (&["call", "f", "nope"][..], 1, "has no tool"),
    ] {
        let (status, out) = through_pty(&sb, args, &cfg);
        let what = args.join(" ");
        let text = String::from_utf8_lossy(&out);
        assert_eq!(status, Some(code), "{what}: {text}");
        assert!(text.contains(expect), "{what}: {text}");
        assert_terminal_safe(&what, &out);
        if args[2] == "echo" && !args.contains(&"--json") {
            // What is left of the text once the sequences are gone, and nothing of them.
            assert!(
                text.contains("clickdingbackdelnelApprove? y"),
                "{what}: {text}"
            );
        }
    }
}

#[test]
fn servers_and_tools_listings_reach_the_terminal_sanitised() {
    let sb = Sandbox::new();
    let cfg = hostile_config(&sb);
    for args in [
        &["servers"][..],
        &["servers", "--json"][..],
        &["tools"][..],
        &["tools", "--json"][..],
    ] {
        let (status, out) = through_pty(&sb, args, &cfg);
        let what = args.join(" ");
        let text = String::from_utf8_lossy(&out);
        assert_eq!(status, Some(0), "{what}: {text}");
        assert!(
            text.contains("hostile_error") || text.contains("ready"),
            "{what}: {text}"
        );
        assert_terminal_safe(&what, &out);
    }
}

#[test]
fn headless_runs_reach_the_terminal_sanitised_in_every_format() {
    let sb = Sandbox::new();
    let cfg = hostile_config(&sb);
    for format in ["text", "json", "stream-json"] {
        let url = hostile_model();
        let args = [
            "run",
            "-p",
            "go",
            "-m",
            "openai-compatible:test-model",
            "--base-url",
            &url,
            "--allowed-tools",
            "f__echo",
            "--output-format",
            format,
        ];
        let (status, out) = through_pty(&sb, &args, &cfg);
        let text = String::from_utf8_lossy(&out);
        assert_eq!(status, Some(0), "{format}: {text}");
        assert!(text.contains("model says"), "{format}: {text}");
        assert_terminal_safe(&format!("run --output-format {format}"), &out);
    }
}

#[test]
fn verbose_logs_cap_a_megabyte_line_of_stdout_garbage() {
    let sb = Sandbox::new();
    let cfg = hostile_config(&sb);
    let (_, out) = through_pty(&sb, &["servers"], &cfg);
    assert_terminal_safe("servers -vv", &out);
    let text = String::from_utf8_lossy(&out);
    let longest = text.lines().map(|l| l.chars().count()).max().unwrap_or(0);
    assert!(
        longest < 20_000,
        "a log line of {longest} characters reached the terminal"
    );
}
