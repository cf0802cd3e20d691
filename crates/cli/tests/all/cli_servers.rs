//! End-to-end tests of `mcp-host servers|tools|call` against the fake server in both eras,
//! with broken config files, and through the project-approval flow.

use crate::common::*;
use serde_json::json;

#[test]
fn every_era_and_probe_quirk_ends_ready_in_the_right_era() {
    let sb = Sandbox::new();
    let spawns = sb.work_file("probe-locks.log");
    let cfg = sb.config("c.json", json!({
        "legacy": fake_server(&["--era", "legacy"]),
        "modern": fake_server(&["--era", "modern"]),
        "dual": fake_server(&["--era", "dual"]),
        "probe_locks": fake_server(&["--era", "probe-locks", "--spawn-log", spawns.to_str().unwrap()]),
        "exit_on_probe": fake_server(&["--era", "legacy", "--fault", "exit-on-probe"]),
    }));
    let rows = sb.servers_json(&cfg);
    for (name, era) in [
        ("legacy", "2025-11-25"),
        ("modern", "2026-07-28"),
        ("dual", "2026-07-28"),
        ("probe_locks", "2025-11-25"),
        ("exit_on_probe", "2025-11-25"),
    ] {
        let r = row(&rows, name);
        assert_eq!(r["state"], "ready", "{name}: {r}");
        assert_eq!(r["era"], era, "{name}");
        assert_eq!(r["tools"], 12, "{name}");
        assert_eq!(r["transport"], "stdio");
        assert_eq!(r["error"], serde_json::Value::Null);
    }
    // The locked connection was abandoned and a fresh process spoke initialize.
    let starts = std::fs::read_to_string(&spawns).unwrap();
    assert_eq!(starts.lines().count(), 2, "{starts}");
}

#[test]
fn a_bad_file_and_a_missing_command_leave_the_others_ready() {
    let sb = Sandbox::new();
    let bad = sb.write(
        "bad.json",
        "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"a\",,}\n  }\n}\n",
    );
    let good = sb.config(
        "good.json",
        json!({
            "ok": fake_server(&[]),
            "missing": {"command": "definitely-not-installed-mcp"},
            "noenv": {"command": fake(), "env": {"TOKEN": "${MCP_TEST_UNSET_VAR}"}},
        }),
    );
    let out = sb.run(
        sb.path(),
        &[
            "servers",
            "--json",
            "--strict-mcp-config",
            "--mcp-config",
            bad.to_str().unwrap(),
            "--mcp-config",
            good.to_str().unwrap(),
        ],
    );
    // It lists what it could read, and says by its status that a file could not be read.
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(
        err.contains(&format!("{}:3:", bad.display())),
        "names file and line: {err}"
    );
    assert!(
        err.contains("mcpServers.noenv.env.TOKEN") && err.contains("MCP_TEST_UNSET_VAR"),
        "{err}"
    );
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(row(&rows, "ok")["state"], "ready");
    let missing = row(&rows, "missing");
    assert_eq!(missing["state"], "failed");
    assert!(
        missing["error"]
            .as_str()
            .unwrap()
            .contains("definitely-not-installed-mcp")
    );
    assert_eq!(row(&rows, "noenv")["state"], "failed");
}

#[test]
fn call_prints_text_and_reports_tool_errors_with_exit_status() {
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&[])}));
    let c = cfg.to_str().unwrap();
    let ok = sb.run(
        sb.path(),
        &[
            "call",
            "f",
            "echo",
            "--args",
            r#"{"message":"hi"}"#,
            "--strict-mcp-config",
            "--mcp-config",
            c,
        ],
    );
    assert!(ok.status.success(), "{}", stderr(&ok));
    assert_eq!(stdout(&ok), "hi\n");

    let failed = sb.run(
        sb.path(),
        &[
            "call",
            "f",
            "error",
            "--strict-mcp-config",
            "--mcp-config",
            c,
        ],
    );
    assert_eq!(failed.status.code(), Some(1));
    assert!(stderr(&failed).contains("it failed"));

    let unknown = sb.run(
        sb.path(),
        &[
            "call",
            "f",
            "nope",
            "--strict-mcp-config",
            "--mcp-config",
            c,
        ],
    );
    assert_eq!(unknown.status.code(), Some(1));
    assert!(
        stderr(&unknown).contains("server `f` has no tool `nope`"),
        "{}",
        stderr(&unknown)
    );

    let evil = sb.run(
        sb.path(),
        &[
            "call",
            "f",
            "evil",
            "--strict-mcp-config",
            "--mcp-config",
            c,
        ],
    );
    assert_eq!(
        stdout(&evil),
        "safetext\n",
        "escape sequences must be stripped"
    );
}

#[test]
fn call_reads_args_from_stdin() {
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({"f": fake_server(&["--era", "modern"])}));
    let out = sb.run_with_stdin(
        &["call", "f", "add", "--args", "-"],
        &cfg,
        br#"{"a": 2, "b": 40}"#,
    );
    assert_eq!(stdout(&out), "42\n");
}

#[test]
fn tools_json_lists_every_tool_and_reports_broken_ones() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--broken-tool", "--page-size", "4", "--tools", "3"])}),
    );
    let out = sb.run_with(&["tools", "--json"], &cfg);
    assert!(out.status.success(), "{}", stderr(&out));
    let tools: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        tools.len(),
        15,
        "12 fixed + 3 extra over 4 pages; the broken one skipped"
    );
    let echo = tools.iter().find(|t| t["tool"] == "echo").unwrap();
    assert_eq!(echo["server"], "f");
    assert_eq!(echo["inputSchema"]["type"], "object");
    assert!(
        stderr(&out).contains("tool `broken` skipped"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn a_cursor_loop_stops_listing_instead_of_spinning() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({"f": fake_server(&["--page-size", "2", "--cursor-loop"])}),
    );
    let out = sb.run_with(&["tools", "--json"], &cfg);
    assert!(out.status.success());
    assert!(stderr(&out).contains("repeated"), "{}", stderr(&out));
}

#[test]
fn project_servers_need_approval_and_ask_again_after_an_edit() {
    let sb = Sandbox::new();
    let repo = sb.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let write_project = |arg: &str| {
        let text = json!({"mcpServers": {"proj": fake_server(&["--tools", arg])}}).to_string();
        std::fs::write(repo.join(".mcp.json"), text).unwrap();
    };
    write_project("1");
    let list = |sb: &Sandbox| -> serde_json::Value {
        let out = sb.run(&repo, &["servers", "--json"]);
        let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
        row(&rows, "proj").clone()
    };
    let r = list(&sb);
    assert_eq!(
        (r["state"].as_str(), r["scope"].as_str()),
        (Some("pending_approval"), Some("project"))
    );

    let approve = sb.run(&repo, &["servers", "approve", "proj", "--yes"]);
    assert!(approve.status.success(), "{}", stderr(&approve));
    assert_eq!(list(&sb)["state"], "ready");

    write_project("2");
    assert_eq!(
        list(&sb)["state"],
        "pending_approval",
        "an edited definition asks again"
    );

    assert!(sb.run(&repo, &["servers", "deny", "proj"]).status.success());
    assert_eq!(list(&sb)["state"], "disabled");
    let not_project = sb.run(&repo, &["servers", "approve", "nope"]);
    assert!(!not_project.status.success());
}

#[test]
fn older_handshake_versions_are_accepted_and_unknown_ones_refused() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({
            "v0618": fake_server(&["--answer-version", "2025-06-18"]),
            "v0326": fake_server(&["--answer-version", "2025-03-26"]),
            "v1105": fake_server(&["--answer-version", "2024-11-05"]),
            "bogus": fake_server(&["--answer-version", "1999-01-01"]),
        }),
    );
    let rows = sb.servers_json(&cfg);
    for (name, era) in [
        ("v0618", "2025-06-18"),
        ("v0326", "2025-03-26"),
        ("v1105", "2024-11-05"),
    ] {
        assert_eq!(
            (
                row(&rows, name)["state"].as_str(),
                row(&rows, name)["era"].as_str()
            ),
            (Some("ready"), Some(era))
        );
    }
    let r = row(&rows, "bogus");
    assert_eq!(r["state"], "failed", "{r}");
    assert_eq!(r["restarts"], 0, "a version mismatch is not retried: {r}");
}

#[test]
fn configured_http_headers_reach_the_server_with_variables_expanded() {
    let (mut server, port) = fake_http(0);
    let url = format!("http://127.0.0.1:{port}/mcp");
    let sb = Sandbox::new();
    let cfg = sb.config("c.json", json!({
        "h": {"type": "http", "url": url, "headers": {"Authorization": "Basic dXNlcg==", "X-Team": "${MCP_TEST_TEAM:-blue}"}},
        "bad": {"type": "http", "url": url, "headers": {"Mcp-Session-Id": "forged"}},
    }));
    let out = sb.run_with(&["call", "h", "headers"], &cfg);
    let text = stdout(&out);
    assert!(text.contains("authorization: basic dxnlcg=="), "{text}");
    assert!(text.contains("x-team: blue"), "{text}");
    let rows = sb.servers_json(&cfg);
    let bad = row(&rows, "bad");
    assert_eq!(bad["state"], "failed");
    assert!(
        bad["error"].as_str().unwrap().contains("Mcp-Session-Id"),
        "{bad}"
    );
    server.kill().unwrap();
    server.wait().unwrap();
}
