//! Shared helpers for the integration tests: an isolated HOME/XDG sandbox, config files that
//! point at the fake server, and running the real `mcp-host` binary.

#![allow(dead_code, clippy::unwrap_used, clippy::expect_used)] // Test code: a panic is the failure report.

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

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
