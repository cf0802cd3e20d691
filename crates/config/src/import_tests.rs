#![allow(clippy::unwrap_used, clippy::expect_used)]
use super::*;

fn import(host: HostKind, text: &str) -> Vec<Imported> {
    import_text(host, Path::new("/f"), text, Path::new("/home/u/proj")).unwrap()
}

fn one(host: HostKind, text: &str) -> Imported {
    let mut all = import(host, text);
    assert_eq!(all.len(), 1, "{all:?}");
    all.remove(0)
}

#[test]
fn claude_desktop_entries_keep_what_this_host_reads() {
    let got = one(
        HostKind::ClaudeDesktop,
        r#"{"globalShortcut": "", "mcpServers": {"fs": {"command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u"],
            "env": {"DEBUG": "1"}, "disabled": true}}}"#,
    );
    assert_eq!(got.name, "fs");
    assert_eq!(
        got.server,
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/home/u"], "env": {"DEBUG": "1"}})
    );
    assert_eq!(got.untranslated, ["key `disabled`"]);
}

#[test]
fn claude_code_reads_user_servers_and_this_projects() {
    let all = import(
        HostKind::ClaudeCode,
        r#"{"numStartups": 3, "mcpServers": {"u": {"type": "stdio", "command": "u"}},
            "projects": {"/home/u/proj": {"mcpServers": {"p": {"type": "http", "url": "https://x/mcp"}}},
                         "/elsewhere": {"mcpServers": {"e": {"command": "e"}}}}}"#,
    );
    let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["u", "p"]);
    assert_eq!(
        all[1].server,
        json!({"type": "http", "url": "https://x/mcp"})
    );
}

#[test]
fn vscode_inputs_env_and_workspace_variables() {
    let got = one(
        HostKind::Vscode,
        r#"{
  "inputs": [{"type": "promptString", "id": "gh-token", "description": "GitHub token", "password": true}],
  "servers": {
    "github": {"type": "stdio", "command": "docker",
      "args": ["run", "-i", "-e", "GITHUB_TOKEN", "ghcr.io/github/github-mcp-server"],
      "env": {"GITHUB_TOKEN": "${input:gh-token}", "HOME_DIR": "${env:HOME}"},
      "cwd": "${workspaceFolder}/tools", "envFile": "${workspaceFolder}/.env"}
  }
}"#,
    );
    assert_eq!(got.server["env"]["GITHUB_TOKEN"], "${input:gh-token}");
    assert_eq!(got.server["env"]["HOME_DIR"], "${HOME}");
    assert_eq!(got.server["cwd"], "/home/u/proj/tools");
    assert_eq!(
        got.inputs,
        [InputPrompt {
            id: "gh-token".into(),
            description: "GitHub token".into(),
            password: true
        }]
    );
    assert_eq!(got.untranslated.len(), 1, "{:?}", got.untranslated);
    assert!(got.untranslated[0].contains("envFile"));
    let mut server = got.server;
    fill_inputs(&mut server, &|id| format!("<{id}>"));
    assert_eq!(server["env"]["GITHUB_TOKEN"], "<gh-token>");
}

#[test]
fn codex_toml_env_vars_bearer_tokens_timeouts_and_tool_filters() {
    let all = import(
        HostKind::Codex,
        r#"
model = "o3"

[mcp_servers.docs]
command = "npx"
args = ["-y", "mcp-server"]
env = { "API_KEY" = "k" }
env_vars = ["LANG", "HTTP_PROXY"]
startup_timeout_sec = 20
tool_timeout_sec = 60.5
enabled_tools = ["search"]

[mcp_servers.remote]
url = "https://mcp.example.com/mcp"
bearer_token_env_var = "REMOTE_TOKEN"
env_http_headers = { "X-Team" = "TEAM_ID" }
required = true
"#,
    );
    assert_eq!(all.len(), 2);
    assert_eq!(
        all[0].server,
        json!({"command": "npx", "args": ["-y", "mcp-server"],
               "env": {"API_KEY": "k", "LANG": "${LANG}", "HTTP_PROXY": "${HTTP_PROXY}"},
               "timeout": 20000, "toolTimeout": 60500, "enabledTools": ["search"]})
    );
    assert!(all[0].untranslated.is_empty(), "{:?}", all[0].untranslated);
    assert_eq!(
        all[1].server,
        json!({"url": "https://mcp.example.com/mcp", "headers": {"X-Team": "${TEAM_ID}",
               "Authorization": "Bearer ${REMOTE_TOKEN}"}, "type": "http"})
    );
    assert_eq!(all[1].untranslated, ["key `required`"]);
}

#[test]
fn goose_yaml_extensions() {
    let all = import(
        HostKind::Goose,
        r#"
GOOSE_PROVIDER: openai
extensions:
  developer:
    bundled: true
    enabled: true
    name: developer
    timeout: 300
    type: builtin
  fetch:
    args: ["mcp-server-fetch"]
    cmd: uvx
    enabled: true
    env_keys: ["FETCH_KEY"]
    envs: {"UA": "goose"}
    name: fetch
    timeout: 300
    type: stdio
  remote:
    type: streamable_http
    uri: http://127.0.0.1:9/mcp
    headers: {"X-A": "b"}
    enabled: false
"#,
    );
    let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["fetch", "remote"]);
    assert_eq!(
        all[0].server,
        json!({"command": "uvx", "args": ["mcp-server-fetch"],
               "env": {"UA": "goose", "FETCH_KEY": "${FETCH_KEY}"}, "enabled": true, "timeout": 300000})
    );
    assert!(all[0].untranslated[0].contains("FETCH_KEY"));
    assert_eq!(
        all[1].server,
        json!({"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-A": "b"}, "enabled": false})
    );
}

#[test]
fn mcphost_new_and_old_shapes_in_yaml_or_json() {
    let all = import(
        HostKind::Mcphost,
        r#"
mcpServers:
  files:
    type: local
    command: ["npx", "-y", "@modelcontextprotocol/server-filesystem", "/tmp"]
    environment: {DEBUG: "1"}
    allowedTools: ["read_file"]
  web:
    type: remote
    url: https://x.example/mcp
    headers: ["Authorization: Bearer ${TOKEN}"]
  old:
    url: http://127.0.0.1:9/sse
  todo:
    type: builtin
    name: todo
"#,
    );
    let names: Vec<&str> = all.iter().map(|i| i.name.as_str()).collect();
    assert_eq!(names, ["files", "web", "old"]);
    assert_eq!(
        all[0].server,
        json!({"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
               "env": {"DEBUG": "1"}, "enabledTools": ["read_file"]})
    );
    assert_eq!(all[1].server["headers"]["Authorization"], "Bearer ${TOKEN}");
    assert_eq!(
        all[2].server,
        json!({"type": "sse", "url": "http://127.0.0.1:9/sse"})
    );
    let json_form = one(
        HostKind::Mcphost,
        r#"{"mcpServers": {"a": {"command": "a", "args": ["b"]}}}"#,
    );
    assert_eq!(json_form.server, json!({"command": "a", "args": ["b"]}));
}

#[test]
fn every_translation_is_an_entry_this_host_accepts() {
    for (host, text) in [
        (
            HostKind::Codex,
            "[mcp_servers.a]\ncommand = \"a\"\nenabled_tools = [\"x\"]\n",
        ),
        (
            HostKind::Goose,
            "extensions:\n  a:\n    type: stdio\n    cmd: a\n    timeout: 1\n",
        ),
        (
            HostKind::Mcphost,
            "mcpServers:\n  a:\n    type: local\n    command: [a]\n",
        ),
    ] {
        let got = one(host, text);
        crate::edit::check_server(&got.name, &got.server).unwrap();
    }
}

#[test]
fn secrets_become_references_for_a_shared_file() {
    let mut server = json!({"command": "x", "env": {"API_KEY": "sk-123", "LANG": "${LANG}"},
                            "headers": {"x-api-key": "abc"}});
    let to_set = without_secrets(&mut server);
    assert_eq!(to_set, ["API_KEY", "X_API_KEY"]);
    assert_eq!(server["env"]["API_KEY"], "${API_KEY}");
    assert_eq!(server["env"]["LANG"], "${LANG}");
    assert_eq!(server["headers"]["x-api-key"], "${X_API_KEY}");
}

#[test]
fn unreadable_files_are_errors_naming_the_file() {
    let e = import_text(
        HostKind::Codex,
        Path::new("/c.toml"),
        "[mcp_servers.a\n",
        Path::new("/"),
    )
    .unwrap_err();
    assert!(e.starts_with("/c.toml:"), "{e}");
    let e = import_text(
        HostKind::Vscode,
        Path::new("/m.json"),
        "[1]",
        Path::new("/"),
    )
    .unwrap_err();
    assert!(e.contains("not an object"), "{e}");
}
