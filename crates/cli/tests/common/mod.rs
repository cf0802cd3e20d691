//! Shared helpers for the integration tests: an isolated HOME/XDG sandbox, config files that
//! point at the fake server, and running the real `mcp-host` binary.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

use mcp_host_client::backoff::{Backoff, RetryPolicy};
use mcp_host_client::{Manager, ManagerOptions, SupervisorCommand};
use mcp_host_core::{ServerId, ServerStatus};
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

pub const HOST: &str = env!("CARGO_BIN_EXE_mcp-host");

pub fn fake() -> String {
    mcp_host_testkit::fake_server()
        .to_string_lossy()
        .into_owned()
}

/// A temporary HOME with XDG dirs, so tests never read or write the real user's config.
pub struct Sandbox {
    pub dir: tempfile::TempDir,
}

impl Default for Sandbox {
    fn default() -> Self {
        Self::new()
    }
}

impl Sandbox {
    pub fn new() -> Self {
        Self {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn write(&self, name: &str, text: &str) -> PathBuf {
        let p = self.path().join(name);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        p
    }

    pub fn config(&self, name: &str, servers: Value) -> PathBuf {
        self.write(
            name,
            &serde_json::to_string_pretty(&json!({"mcpServers": servers})).unwrap(),
        )
    }

    pub fn command(&self, cwd: &Path) -> Command {
        let mut c = Command::new(HOST);
        c.current_dir(cwd)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.path())
            .env("XDG_CONFIG_HOME", self.path().join("config"))
            .env("XDG_DATA_HOME", self.path().join("data"))
            .env("XDG_RUNTIME_DIR", self.path().join("run"));
        c
    }

    pub fn run(&self, cwd: &Path, args: &[&str]) -> Output {
        self.command(cwd).args(args).output().unwrap()
    }

    /// Runs `mcp-host ARGS --strict-mcp-config --mcp-config CONFIG` in the sandbox.
    pub fn run_with(&self, args: &[&str], config: &Path) -> Output {
        let mut all = args.to_vec();
        all.extend([
            "--strict-mcp-config",
            "--mcp-config",
            config.to_str().unwrap(),
        ]);
        self.run(self.path(), &all)
    }

    /// `mcp-host servers --json` with only the given config file.
    pub fn servers_json(&self, config: &Path) -> Vec<Value> {
        let out = self.run(
            self.path(),
            &[
                "servers",
                "--json",
                "--strict-mcp-config",
                "--mcp-config",
                config.to_str().unwrap(),
            ],
        );
        assert!(
            out.status.success(),
            "stderr: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    }
}

pub fn fake_server(args: &[&str]) -> Value {
    json!({"command": fake(), "args": args})
}

pub fn row<'a>(rows: &'a [Value], name: &str) -> &'a Value {
    rows.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name} in {rows:?}"))
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// Manager options for tests: supervisors are the real `mcp-host`, retries are fast.
pub fn manager_options(base: Duration, max: Duration) -> ManagerOptions {
    ManagerOptions {
        supervisor: SupervisorCommand {
            program: HOST.into(),
            grace: Duration::from_millis(500),
            record_dir: None,
        },
        host_env: std::sync::Arc::new(std::env::vars().collect()),
        retry: RetryPolicy {
            backoff: Backoff {
                base,
                max,
                jitter: 0.0,
            },
            ..RetryPolicy::default()
        },
        http_client: mcp_host_client::http_client(Duration::from_secs(2)).unwrap(),
        health_interval: Duration::from_secs(30),
    }
}

/// Waits (at most 20 s) until server `name` publishes a status that satisfies `cond`.
pub async fn wait_status(
    m: &Manager,
    name: &str,
    cond: impl Fn(&ServerStatus) -> bool,
) -> ServerStatus {
    let mut rx = m.watch(&ServerId::new(name)).unwrap();
    match tokio::time::timeout(Duration::from_secs(20), rx.wait_for(|s| cond(s))).await {
        Ok(Ok(s)) => s.clone(),
        _ => panic!(
            "{name} never reached the expected state; now {:?}",
            m.status(&ServerId::new(name))
        ),
    }
}

pub fn signal(pid: u32, sig: nix::sys::signal::Signal) {
    nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), sig).unwrap();
}

/// Starts the fake server in HTTP mode (port 0: any free port); returns it and its port.
pub fn fake_http(port: u16) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let mut child = Command::new(fake())
        .args(["--http", &port.to_string()])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let port = line.trim().rsplit(':').next().unwrap().parse().unwrap();
    (child, port)
}
