//! Configuration fails closed, through the real binary: a file that cannot be read or parsed,
//! a rule or hook that could not work, or an unknown key under `permissions` or `hooks`
//! stops every command that could make a call (non-zero, the located problem, no server
//! started); `servers` still lists what it read but exits non-zero; unknown keys elsewhere
//! only warn, with a guess; other hosts' formats are named. The fake server's request log
//! proves that no call reached it.

use crate::common::*;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::process::Output;

/// A sandbox with the fake server `f` (logging every request it gets) in `servers.json`.
struct Setup {
    sb: Sandbox,
    servers: PathBuf,
    log: PathBuf,
}

fn setup() -> Setup {
    let sb = Sandbox::new();
    let log = sb.work_file("requests.log");
    let servers = sb.config(
        "servers.json",
        json!({"f": fake_server(&["--request-log", log.to_str().unwrap()])}),
    );
    Setup { sb, servers, log }
}

impl Setup {
    /// `mcp-host ARGS` with only `servers.json` and the given extra config files.
    fn run(&self, args: &[&str], extra: &[&Path]) -> Output {
        let mut c = self.sb.command(self.sb.path());
        c.args(args)
            .args(["--strict-mcp-config", "--mcp-config"])
            .arg(&self.servers);
        for f in extra {
            c.arg("--mcp-config").arg(f);
        }
        c.stdin(std::process::Stdio::null()).output().unwrap()
    }

    fn requests(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn assert_no_call(&self) {
        let log = self.requests();
        assert!(
            !log.contains("tools/call"),
            "a call reached the server:\n{log}"
        );
    }
}

fn call(s: &Setup, extra: &[&Path]) -> Output {
    s.run(
        &["call", "f", "echo", "--args", r#"{"message": "hi"}"#],
        extra,
    )
}

fn assert_refused(out: &Output, located: &str) {
    let err = stderr(out);
    assert!(!out.status.success(), "exit 0:\n{err}");
    assert!(err.contains(located), "no `{located}` in:\n{err}");
    assert!(err.contains("no server was started"), "{err}");
}

/// The only deny rule sits in a file with a syntax error (the trailing comma on line 3).
const BROKEN_DENY: &str = "{\n  \"permissions\": {\n    \"deny\": [\"f__*\"],\n  }\n}\n";

#[test]
fn a_deny_rule_in_a_file_with_a_syntax_error_stops_call_run_chat_and_policy() {
    let s = setup();
    let rules = s.sb.write("rules.json", BROKEN_DENY);
    let at = format!("{}:4:3", rules.display());

    let out = call(&s, &[&rules]);
    assert_refused(&out, &at);
    s.assert_no_call();

    let (url, seen) = fake_model(vec![
        tool_calls_stream(&[("c1", "f__echo", r#"{"message": "hi"}"#)]),
        text_stream("done"),
    ]);
    let model = ["-m", "openai-compatible:test-model", "--base-url", &url];
    let mut run = vec!["run", "-p", "echo hi", "--allowed-tools", "f__echo"];
    run.extend(model);
    let out = s.run(&run, &[&rules]);
    assert_refused(&out, &at);
    assert!(seen.lock().unwrap().is_empty(), "the model was asked");

    let mut chat = vec!["chat"];
    chat.extend(model);
    assert_refused(&s.run(&chat, &[&rules]), &at);
    // Bare `mcp-host` is chat too.
    assert_refused(&s.run(&[], &[&rules]), &at);

    assert_refused(&s.run(&["policy", "explain", "f__echo"], &[&rules]), &at);
    let table = s.sb.write(
        "cases.json",
        r#"{"cases": [{"tool": "f__echo", "expect": "deny"}]}"#,
    );
    let out = s.run(&["policy", "test", table.to_str().unwrap()], &[&rules]);
    assert_refused(&out, &at);

    // Nothing above started the server at all.
    assert_eq!(s.requests(), "", "a server was started");
}

#[test]
fn servers_and_tools_show_what_they_read_and_exit_non_zero() {
    let s = setup();
    let rules = s.sb.write("rules.json", BROKEN_DENY);
    let out = s.run(&["servers", "--json"], &[&rules]);
    assert!(!out.status.success(), "{}", stderr(&out));
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row(&rows, "f")["state"], "ready");
    assert!(stderr(&out).contains(&format!("{}:4:3", rules.display())));
    let out = s.run(&["tools", "--json"], &[&rules]);
    assert!(!out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("echo"), "{}", stdout(&out));
}

#[test]
fn a_missing_mcp_config_file_is_fatal() {
    let s = setup();
    let missing = s.sb.path().join("nope.json");
    let out = call(&s, &[&missing]);
    assert_refused(&out, &format!("{}: cannot read", missing.display()));
    s.assert_no_call();
    assert!(!s.run(&["servers"], &[&missing]).status.success());
}

#[test]
fn an_unknown_key_under_permissions_or_hooks_is_fatal_and_named() {
    let s = setup();
    let perms = s.sb.write(
        "perms.json",
        "{\"permissions\": {\n  \"denny\": [\"f__*\"]}}",
    );
    let out = call(&s, &[&perms]);
    assert_refused(&out, "perms.json:2:12: key `permissions.denny`");
    assert!(
        stderr(&out).contains("did you mean `deny`?"),
        "{}",
        stderr(&out)
    );

    let hooks = s.sb.write(
        "hooks.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "f__.*", "hooks": [{"command": "exit 2", "timout": 5}]}]}}"#,
    );
    let out = call(&s, &[&hooks]);
    assert_refused(&out, "key `hooks.PreToolUse[0].hooks[0]");
    assert!(stderr(&out).contains("timout"), "{}", stderr(&out));
    s.assert_no_call();
}

#[test]
fn a_rule_or_hook_matcher_that_does_not_compile_is_fatal() {
    let s = setup();
    let regex = s.sb.write(
        "regex.json",
        r#"{"permissions": {"deny": [{"tool": "f__*", "when": {"pointer": "/message", "regex": "(hi"}}]}}"#,
    );
    assert_refused(&call(&s, &[&regex]), "key `permissions.deny[0].when.regex`");
    let matcher = s.sb.write(
        "matcher.json",
        r#"{"hooks": {"PreToolUse": [{"matcher": "f__(", "hooks": [{"command": "exit 2"}]}]}}"#,
    );
    assert_refused(&call(&s, &[&matcher]), "key `hooks.PreToolUse[0].matcher`");
    s.assert_no_call();
}

#[test]
fn an_unknown_server_key_warns_with_a_guess_and_the_call_still_runs() {
    let sb = Sandbox::new();
    let mut server = fake_server(&[]);
    server["tool_timeout"] = json!(5000);
    let cfg = sb.config("c.json", json!({"f": server}));
    let out = sb.run_with(
        &["call", "f", "echo", "--args", r#"{"message": "hi"}"#],
        &cfg,
    );
    let err = stderr(&out);
    assert!(out.status.success(), "{err}");
    assert!(
        err.contains("warning: ") && err.contains("key `mcpServers.f.tool_timeout`"),
        "{err}"
    );
    assert!(err.contains("did you mean `toolTimeout`?"), "{err}");
}

#[test]
fn other_hosts_formats_are_named_not_reported_as_bad_json() {
    let s = setup();
    let vscode = s.sb.write(
        "mcp.json",
        &json!({"servers": {"time": {"command": "uvx", "args": ["mcp-server-time"]}}}).to_string(),
    );
    let codex = s.sb.write(
        "config.toml",
        "model = \"o3\"\n[mcp_servers.time]\ncommand = \"uvx\"\nargs = [\"mcp-server-time\"]\n",
    );
    let goose = s.sb.write(
        "config.yaml",
        "extensions:\n  time:\n    cmd: uvx\n    args: [mcp-server-time]\n",
    );
    for (file, name, at) in [
        (&vscode, "VS Code", ":1:"),
        (&codex, "Codex", ":2:1"),
        (&goose, "goose", ":1:1"),
    ] {
        let out = call(&s, &[file]);
        assert_refused(&out, &format!("{}{at}", file.display()));
        assert!(stderr(&out).contains(name), "{}", stderr(&out));
        assert!(!s.run(&["servers"], &[file]).status.success());
    }
    s.assert_no_call();
}
