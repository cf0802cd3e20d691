//! What a confined stdio server may do, tried from inside it by the fake server's `probe`
//! tool (testkit's `probe.rs`): with the default `strict` sandbox it reads its runtime and
//! writes its root, and nothing of the user's home, the system's secrets or the host's
//! credentials; it connects to no loopback port but its egress proxy, which takes it to
//! an allowed host and refuses a denied one (both names mapped to a local test site by the
//! proxy's resolver); `ptrace` and `mount` fail. Every refusal is counted in the server's
//! account and every proxied connection is reported. A kernel without Landlock degrades
//! the sandbox, or refuses the server when it is `require`d.

use crate::common::*;
use mcp_host_client::Manager;
use mcp_host_client::sandbox::{Kernel, launch::SandboxOptions};
use mcp_host_core::confinement::EgressRecord;
use mcp_host_core::{Content, ServerId, ServerState};
use mcp_host_egress::Resolver;
use serde_json::json;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_util::sync::CancellationToken;

/// A local web site that answers every request with `body`; its port.
async fn site(body: &'static str) -> u16 {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((mut s, _)) = listener.accept().await {
            tokio::spawn(async move {
                let mut buf = [0u8; 4096];
                let _ = s.read(&mut buf).await;
                let answer = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = s.write_all(answer.as_bytes()).await;
            });
        }
    });
    port
}

struct World {
    dir: tempfile::TempDir,
    records: Arc<Mutex<Vec<EgressRecord>>>,
    /// The denials reported (the first of each kind), as `server: what`.
    denied: Arc<Mutex<Vec<String>>>,
    /// Whether servers get a network namespace of their own (else Landlock's TCP rules).
    netns: bool,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for (file, text) in [
            ("home/.ssh/id_rsa", "-----BEGIN TEST KEY-----"),
            ("home/.bashrc", "export SECRET=1"),
            (
                "data/mcp-host/credentials/remote.json",
                "{\"access_token\":\"t\"}",
            ),
        ] {
            let path = dir.path().join(file);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        std::fs::create_dir_all(dir.path().join("root")).unwrap();
        Self {
            dir,
            records: Arc::default(),
            denied: Arc::default(),
            netns: true,
        }
    }

    fn path(&self, rel: &str) -> String {
        self.dir.path().join(rel).display().to_string()
    }

    /// Manager options with this world's home, host data and egress records.
    fn options(&self, kernel: Kernel) -> mcp_host_client::ManagerOptions {
        let mut opts = manager_options(Duration::from_millis(50), Duration::from_millis(200));
        let mut env: std::collections::BTreeMap<String, String> = std::env::vars().collect();
        env.insert("HOME".into(), self.path("home"));
        opts.host_env = Arc::new(env);
        let records = self.records.clone();
        let denied = self.denied.clone();
        opts.supervisor.sandbox = SandboxOptions {
            resolver: Arc::new(
                Resolver::with_fixed("allowed.test=127.0.0.1,denied.test=127.0.0.1").unwrap(),
            ),
            report: Some(Arc::new(move |r| records.lock().unwrap().push(r))),
            denials: Some(Arc::new(move |server, what| {
                denied.lock().unwrap().push(format!("{server}: {what}"))
            })),
            protected: vec![self.dir.path().join("data/mcp-host")],
            kernel,
            netns: self.netns,
        };
        opts
    }
}

async fn probe(
    m: &Manager,
    calls: &mcp_host_client::ToolCaller,
    args: serde_json::Value,
) -> String {
    let out = calls
        .call(
            &ServerId::new("p"),
            "probe",
            args.as_object().cloned(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    let Some(Content::Text { text }) = out.content.first() else {
        panic!("no text: {out:?} ({:?})", m.status(&ServerId::new("p")));
    };
    text.clone()
}

fn line<'t>(text: &'t str, act: &str) -> &'t str {
    text.lines()
        .find(|l| l.starts_with(&format!("{act}: ")))
        .unwrap_or_else(|| panic!("no line for {act} in:\n{text}"))
}

#[tokio::test]
async fn a_strict_server_does_what_it_was_given_and_nothing_more() {
    strict_server(true).await;
}

/// The same where no network namespace is made: Landlock's TCP rules alone keep the server
/// to its proxy, on the host's loopback.
#[tokio::test]
async fn without_a_network_namespace_landlock_alone_keeps_it_to_its_proxy() {
    strict_server(false).await;
}

async fn strict_server(netns: bool) {
    let mut world = World::new();
    world.netns = netns;
    let site_port = site("hello from the allowed site").await;
    let elsewhere = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let elsewhere = elsewhere.local_addr().unwrap().port();
    let root = world.path("root");
    let setup = fake_setup("p", &["--fault", "probe", "--root", &root], |raw| {
        raw.sandbox = Some(json!({"network": {
            "allow": [format!("allowed.test:{site_port}")],
            "allowPrivate": ["127.0.0.1"],
        }}));
    });
    let (m, calls) = Manager::start(vec![setup], world.options(Kernel::probe()));
    wait_status(&m, "p", |s| s.state == ServerState::Ready).await;
    let (key, creds) = (
        world.path("home/.ssh/id_rsa"),
        world.path("data/mcp-host/credentials/remote.json"),
    );
    let (inside, outside, bashrc) = (
        format!("{root}/made.txt"),
        world.path("outside.txt"),
        world.path("home/.bashrc"),
    );
    let text = probe(
        &m,
        &calls,
        json!({
            "read": [key, "/etc/shadow", creds, "/etc/hostname"],
            "write": [inside, outside, bashrc],
            "connect": [elsewhere],
            "fetch": [format!("allowed.test:{site_port}"), format!("denied.test:{site_port}")],
        }),
    )
    .await;
    for forbidden in [
        format!("read {key}"),
        "read /etc/shadow".into(),
        format!("read {creds}"),
        format!("write {outside}"),
        format!("write {bashrc}"),
        format!("connect 127.0.0.1:{elsewhere}"),
        format!("fetch denied.test:{site_port}"),
    ] {
        assert!(
            line(&text, &forbidden).contains(": denied"),
            "{forbidden}:\n{text}"
        );
    }
    for (filtered, errno) in [
        ("ptrace", "os error 1"),
        ("mount", "os error 1"),
        ("process_vm_readv", "os error 1"),
        ("udp socket", "os error 1"),
        ("unix socket", "os error 1"),
    ] {
        assert!(line(&text, filtered).contains(errno), "{filtered}:\n{text}");
    }
    assert!(
        line(&text, &format!("write {inside}")).ends_with(": allowed"),
        "{text}"
    );
    assert!(
        line(&text, &format!("fetch allowed.test:{site_port}"))
            .contains("hello from the allowed site"),
        "{text}"
    );
    assert!(
        line(&text, "read /etc/hostname").contains("denied"),
        "only the system files a runtime needs: {text}"
    );
    assert!(
        text.lines()
            .any(|l| l.split_whitespace().eq(["NoNewPrivs:", "1"])),
        "{text}"
    );
    assert!(Path::new(&inside).exists() && !Path::new(&outside).exists());
    assert_eq!(std::fs::read_to_string(&bashrc).unwrap(), "export SECRET=1");

    // The proxy reported both connections: the allowed one with its bytes, the denied one
    // with its reason.
    let records = world.records.lock().unwrap().clone();
    let allowed = records.iter().find(|r| r.host == "allowed.test").unwrap();
    assert!(
        allowed.allowed && allowed.bytes_down > 0 && allowed.server == "p",
        "{allowed:?}"
    );
    let denied = records.iter().find(|r| r.host == "denied.test").unwrap();
    assert!(
        !denied.allowed && denied.detail.contains("allow-list"),
        "{denied:?}"
    );

    // The server's account names its denials, so a person can widen the profile.
    // Published on the status channel as it changes.
    let status = wait_status(&m, "p", |s| {
        s.confinement.as_ref().is_some_and(|c| {
            c.denials.iter().any(|d| d == "denied /etc/shadow")
                && c.denials
                    .iter()
                    .any(|d| d == &format!("connect denied.test:{site_port}"))
        })
    })
    .await;
    let view = status.confinement.unwrap();
    // Each file denial is reported once (the audit log), the proxy's through its own records.
    // The report follows the count, so it is waited for too.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    while !world
        .denied
        .lock()
        .unwrap()
        .iter()
        .any(|d| d == "p: denied /etc/shadow")
    {
        assert!(tokio::time::Instant::now() < deadline, "never reported");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let denied = world.denied.lock().unwrap().clone();
    let shadow = denied.iter().filter(|d| d.ends_with("/etc/shadow")).count();
    assert_eq!(shadow, 1, "{denied:?}");
    assert!(!denied.iter().any(|d| d.contains("connect")), "{denied:?}");
    assert_eq!(view.level, "strict");
    assert!(view.write.contains(&root), "{view:?}");
    assert!(
        view.reach.contains(&format!("allowed.test:{site_port}")),
        "{view:?}"
    );
    assert!(
        view.mechanisms.iter().any(|m| m.starts_with("landlock v")),
        "{view:?}"
    );
    // This machine allows unprivileged user and network namespaces.
    assert_eq!(
        view.mechanisms.contains(&"netns".to_string()),
        netns,
        "{view:?}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn without_landlock_a_sandbox_degrades_or_refuses_when_required() {
    let world = World::new();
    let no_landlock = Kernel { landlock_abi: 0 };
    let loose = fake_setup("p", &["--fault", "probe"], |_| {});
    let (m, _calls) = Manager::start(vec![loose], world.options(no_landlock));
    wait_status(&m, "p", |s| s.state == ServerState::Ready).await;
    let level = m
        .status(&ServerId::new("p"))
        .unwrap()
        .confinement
        .unwrap()
        .level;
    assert!(
        level.starts_with("strict (degraded: no Landlock"),
        "{level}"
    );
    m.shutdown().await;

    let required = fake_setup("p", &["--fault", "probe"], |raw| {
        raw.sandbox = Some(json!({"require": true}));
    });
    let (m, _calls) = Manager::start(vec![required], world.options(no_landlock));
    let status = wait_status(&m, "p", |s| matches!(s.state, ServerState::Failed { .. })).await;
    let reason = status.state.error().unwrap_or_default().to_string();
    assert!(
        reason.contains("required but cannot be enforced"),
        "{reason}"
    );
    m.shutdown().await;
}

#[tokio::test]
async fn an_unconfined_server_runs_with_the_users_rights() {
    let world = World::new();
    let off = fake_setup("p", &["--fault", "probe"], |raw| {
        raw.sandbox = Some(json!("off"))
    });
    let (m, calls) = Manager::start(vec![off], world.options(Kernel::probe()));
    wait_status(&m, "p", |s| s.state == ServerState::Ready).await;
    let key = world.path("home/.ssh/id_rsa");
    let text = probe(&m, &calls, json!({"read": [key]})).await;
    assert!(
        line(&text, &format!("read {key}")).contains("allowed"),
        "{text}"
    );
    // The socket rules are the strict sandbox's: off, both sockets can be made.
    assert!(line(&text, "udp socket").ends_with(": allowed"), "{text}");
    assert!(
        line(&text, "unix socket").contains("no such socket"),
        "{text}"
    );
    assert_eq!(
        m.status(&ServerId::new("p"))
            .unwrap()
            .confinement
            .unwrap()
            .level,
        "off"
    );
    m.shutdown().await;
}

#[test]
fn a_project_file_that_widens_a_sandbox_or_turns_it_off_is_refused_at_its_key() {
    let sb = Sandbox::new();
    let project = sb.path().join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    let fake = fake();
    std::fs::write(
        project.join(".mcp.json"),
        format!(
            r#"{{"mcpServers": {{
  "off": {{"command": "{fake}", "sandbox": "off"}},
  "wide": {{"command": "{fake}", "sandbox": {{"filesystem": {{"write": ["~"]}}}}}},
  "reach": {{"command": "{fake}", "sandbox": {{"network": {{"allow": ["*.example.com"]}}}}}},
  "narrow": {{"command": "{fake}", "sandbox": {{"require": true, "argumentRoots": false}}}}
}}}}"#
        ),
    )
    .unwrap();
    let out = sb.run(&project, &["servers", "--json"]);
    let rows: Vec<serde_json::Value> = serde_json::from_slice(&out.stdout).unwrap();
    for (name, line, key) in [
        ("off", 2, "mcpServers.off.sandbox"),
        ("wide", 3, "mcpServers.wide.sandbox.filesystem.write"),
        ("reach", 4, "mcpServers.reach.sandbox.network.allow"),
    ] {
        let r = row(&rows, name);
        let error = r["error"].as_str().unwrap_or_default();
        assert_eq!(r["state"], "failed", "{r}");
        assert!(
            error.contains(&format!(".mcp.json:{line}:")) && error.contains(key),
            "{error}"
        );
        assert!(error.contains("never widen it"), "{error}");
    }
    // Narrowing is a project's to ask: the server waits for approval like any other.
    assert_eq!(row(&rows, "narrow")["state"], "pending_approval");
}

#[test]
fn policy_treats_a_sealed_servers_tools_as_read_only_and_explains_why() {
    let sb = Sandbox::new();
    let cfg = sb.config(
        "c.json",
        json!({
            "sealed": fake_server(&[]),
            "reaching": {"command": fake(), "sandbox": {"network": {"allow": ["example.test"]}}},
            "writing": fake_server(&["--root", sb.work_file("x").parent().unwrap().to_str().unwrap()]),
        }),
    );
    let explain = |name: &str| stdout(&sb.run_with(&["policy", "explain", name], &cfg));
    let sealed = explain("sealed__echo");
    assert!(
        sealed.starts_with("allow: the server is sandboxed"),
        "{sealed}"
    );
    assert!(
        sealed.contains(r#"decided by: {"by":"sealed"}"#),
        "{sealed}"
    );
    for open in ["reaching__echo", "writing__echo"] {
        let out = explain(open);
        assert!(out.starts_with("ask:"), "{open}: {out}");
    }
}

#[test]
fn a_command_that_only_looks_at_servers_still_audits_their_connections() {
    let sb = Sandbox::new();
    // Nothing listens behind these names: the allowed one fails to connect, the other is
    // refused; both are connections the audit log must hold.
    let cfg = sb.config(
        "c.json",
        json!({"f": {"command": fake(),
            "args": ["--fetch-at-start", "allowed.test:9", "--fetch-at-start", "other.test:9"],
            "sandbox": {"network": {"allow": ["allowed.test:9"], "allowPrivate": ["127.0.0.1"]}}}}),
    );
    let resolve = [(
        "MCP_HOST_EGRESS_RESOLVE",
        "allowed.test=127.0.0.1,other.test=127.0.0.1",
    )];
    let out = sb.run_with_env(&["servers", "--json"], &cfg, &resolve);
    assert!(out.status.success(), "{}", stderr(&out));
    let log = std::fs::read_to_string(sb.path().join("data/mcp-host/audit.jsonl")).unwrap();
    let egress: Vec<serde_json::Value> = (log.lines())
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|l: &serde_json::Value| l["event"] == "egress")
        .collect();
    let seen = |host: &str, allowed: bool| {
        egress
            .iter()
            .any(|l| l["host"] == host && l["allowed"] == allowed && l["server"] == "f")
    };
    assert!(
        seen("allowed.test", true) && seen("other.test", false),
        "{log}"
    );
}
