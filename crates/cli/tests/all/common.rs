//! Shared helpers for the integration tests: an isolated HOME/XDG sandbox, config files that
//! point at the fake server, and running the real `mcp-host` binary.

use mcp_host_client::backoff::{Backoff, RetryPolicy};
use mcp_host_client::{Manager, ManagerOptions, SupervisorCommand};
use mcp_host_core::{ServerId, ServerStatus};
use serde_json::{Value, json};
use std::collections::HashMap;
use std::io::{Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::{Arc, Mutex};
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

    /// A file for a server to write, in a folder of its own: outside the home folder, so a
    /// confined server named it as an argument may write it.
    pub fn work_file(&self, name: &str) -> PathBuf {
        let dir = self.path().join("work");
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
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
        self.run_with_env(args, config, &[])
    }

    /// `run_with`, with these variables added to the sandbox's otherwise empty environment.
    pub fn run_with_env(&self, args: &[&str], config: &Path, env: &[(&str, &str)]) -> Output {
        let mut all = args.to_vec();
        all.extend([
            "--strict-mcp-config",
            "--mcp-config",
            config.to_str().unwrap(),
        ]);
        self.command(self.path())
            .args(&all)
            .envs(env.iter().copied())
            .output()
            .unwrap()
    }

    /// `run_with`, with `stdin` written to the command's standard input.
    pub fn run_with_stdin(&self, args: &[&str], config: &Path, stdin: &[u8]) -> Output {
        use std::io::Write;
        let mut child = self
            .command(self.path())
            .args(args)
            .args(["--strict-mcp-config", "--mcp-config"])
            .arg(config)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        // A command that fails early may not read it all; its output says why.
        let _ = child.stdin.take().unwrap().write_all(stdin);
        child.wait_with_output().unwrap()
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
            ..SupervisorCommand::default()
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
        http_client: mcp_host_client::http_client(Duration::from_secs(2))
            .unwrap()
            .into(),
        health_interval: Duration::from_secs(30),
        ask_person: None,
        sign_in_here: false,
        credentials: None,
        harness: None,
        log_dir: None,
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
    fake_http_with(port, &[])
}

/// The same, with more of the fake server's flags (fault modes).
pub fn fake_http_with(port: u16, extra: &[&str]) -> (std::process::Child, u16) {
    fake_listening(&["--http", &port.to_string()], extra)
}

/// The fake server speaking the legacy HTTP+SSE transport on a free port (its stream at
/// `/sse`), with `extra` flags; killed when the returned guard is dropped.
pub fn fake_sse(extra: &[&str]) -> (KillOnDrop, u16) {
    let (child, port) = fake_listening(&["--sse", "0"], extra);
    (KillOnDrop(child), port)
}

/// A child process that ends with the test, however the test ends.
pub struct KillOnDrop(pub std::process::Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The fake server started with `mode` (a listening one), and the port it printed.
fn fake_listening(mode: &[&str], extra: &[&str]) -> (std::process::Child, u16) {
    use std::io::BufRead;
    let mut child = Command::new(fake())
        .args(mode)
        .args(extra)
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

/// A request the fake model server read.
#[derive(Clone, Debug)]
pub struct SeenRequest {
    /// `POST /path?query HTTP/1.1`
    pub line: String,
    /// Header names lowercased.
    pub headers: HashMap<String, String>,
    /// The JSON body (`Null` when there was none or it was not JSON).
    pub body: Value,
}

impl SeenRequest {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// A fake model API on 127.0.0.1: answers each request, in the order they come, with what
/// `respond` makes of it, as a `content_type` stream sent one HTTP chunk per line; records
/// every request (line, headers, body).
pub fn fake_model_server(
    content_type: &'static str,
    respond: impl Fn(&SeenRequest) -> String + Send + 'static,
) -> (String, Arc<Mutex<Vec<SeenRequest>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let record = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut s) = stream else { continue };
            let Some(request) = read_request(&mut s) else {
                continue;
            };
            let body = respond(&request);
            record.lock().unwrap().push(request);
            // The client may have given up; that shows in the test's own assertions.
            let _ = write_chunked(&mut s, content_type, &body);
        }
    });
    (url, seen)
}

fn read_request(s: &mut std::net::TcpStream) -> Option<SeenRequest> {
    let mut raw = Vec::new();
    let mut buf = [0u8; 65536];
    let head_end = loop {
        let n = s.read(&mut buf).ok().filter(|n| *n > 0)?;
        raw.extend_from_slice(&buf[..n]);
        if let Some(i) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&raw[..head_end]).into_owned();
    let mut lines = head.split("\r\n");
    let line = lines.next().unwrap_or_default().to_string();
    let headers: HashMap<String, String> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    while raw.len() < head_end + length {
        let n = s.read(&mut buf).unwrap_or(0);
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let end = raw.len().min(head_end + length);
    let body = serde_json::from_slice(&raw[head_end..end]).unwrap_or_default();
    Some(SeenRequest {
        line,
        headers,
        body,
    })
}

fn write_chunked(
    s: &mut std::net::TcpStream,
    content_type: &str,
    body: &str,
) -> std::io::Result<()> {
    write!(
        s,
        "HTTP/1.1 200 OK\r\nContent-Type: {content_type}\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
    )?;
    for piece in body.split_inclusive('\n') {
        write!(s, "{:x}\r\n{piece}\r\n", piece.len())?;
    }
    write!(s, "0\r\n\r\n")?;
    s.flush()
}

/// Serves each POST with the next scripted SSE body (any wire format); records every request body.
pub fn fake_model(script: Vec<String>) -> (String, Arc<Mutex<Vec<Value>>>) {
    let script = Mutex::new(script.into_iter());
    fake_model_fn(move |_| script.lock().unwrap().next().unwrap_or_default())
}

/// Serves each POST with what `respond` makes of the request body (as `text/event-stream`);
/// records every request body.
pub fn fake_model_fn(
    respond: impl Fn(&Value) -> String + Send + 'static,
) -> (String, Arc<Mutex<Vec<Value>>>) {
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let record = bodies.clone();
    let (url, _) = fake_model_server("text/event-stream", move |request| {
        record.lock().unwrap().push(request.body.clone());
        respond(&request.body)
    });
    (url, bodies)
}

/// An SSE stream of Chat Completions chunks: tool calls split across chunks, as real servers do.
pub fn tool_calls_stream(calls: &[(&str, &str, &str)]) -> String {
    let mut out = String::new();
    for (i, (id, name, args)) in calls.iter().enumerate() {
        let (head, tail) = args.split_at(args.len() / 2);
        let first = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "id": id, "type": "function", "function": {"name": name, "arguments": head}}]}, "finish_reason": null}]});
        let second = json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": i, "function": {"arguments": tail}}]}, "finish_reason": null}]});
        out.push_str(&format!("data: {first}\n\ndata: {second}\n\n"));
    }
    out.push_str(&format!(
        "data: {}\n\ndata: [DONE]\n\n",
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]})
    ));
    out
}

/// An SSE stream of Chat Completions chunks answering `text` in two pieces.
pub fn text_stream(text: &str) -> String {
    let (a, b) = text.split_at(text.len() / 2);
    let chunk = |t: &str| json!({"choices": [{"index": 0, "delta": {"content": t}, "finish_reason": null}]});
    format!(
        "data: {}\n\n: keep-alive\n\ndata: {}\n\ndata: {}\n\ndata: [DONE]\n\n",
        chunk(a),
        chunk(b),
        json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    )
}

/// A stdio setup for the fake server under `name`, with `tweak` applied to its entry.
pub fn fake_setup(
    name: &str,
    args: &[&str],
    tweak: impl FnOnce(&mut mcp_host_config::RawServer),
) -> mcp_host_client::ServerSetup {
    let mut raw = mcp_host_config::RawServer {
        command: Some(fake()),
        args: args.iter().map(|s| s.to_string()).collect(),
        ..mcp_host_config::RawServer::default()
    };
    tweak(&mut raw);
    let spec = raw
        .to_spec(name, mcp_host_config::Scope::Flag, &|_| None)
        .unwrap();
    mcp_host_client::ServerSetup {
        id: ServerId::new(name),
        transport: mcp_host_core::TransportKind::Stdio,
        spec: Some(spec),
        initial: mcp_host_core::ServerState::Starting,
    }
}
