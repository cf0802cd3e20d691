//! The floor the host is measured against: a raw MCP client over stdio with no SDK, no async
//! runtime and no policy, written for `scripts/bench-floor.sh`. It does only what the
//! protocol needs (JSON-RPC lines over pipes) and reports its own wall time and CPU.
//!
//!   mcp-raw-client list CONFIG.json   # every server of an `mcpServers` file, in parallel:
//!                                     # initialize, tools/list, close
//!   mcp-raw-client calls N TOOL ARGS_JSON -- CMD ARGS...   # N sequential tools/call
//!
//! Prints one JSON object: `{"servers", "tools", "wall_us", "cpu_us"}` for `list`,
//! `{"calls", "p50_us", "p90_us", "p99_us", "cpu_per_call_us"}` for `calls`.

#![allow(clippy::print_stdout, clippy::print_stderr)] // A command-line tool: it reports on the terminal.

use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitCode, Stdio};
use std::time::Instant;

struct Server {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    line: String,
}

/// One stdio server of a config file: its command line and the variables it adds.
struct Launch {
    argv: Vec<String>,
    env: Vec<(String, String)>,
}

fn read_config(path: &str) -> std::io::Result<Vec<Launch>> {
    let config: Value = serde_json::from_slice(&std::fs::read(path)?)?;
    let servers = config["mcpServers"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let strings = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_str)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    };
    Ok(servers
        .values()
        .filter_map(|s| {
            let mut argv = vec![s["command"].as_str()?.to_string()];
            argv.extend(strings(&s["args"]));
            let env = (s["env"].as_object().into_iter().flatten())
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
                .collect();
            Some(Launch { argv, env })
        })
        .collect())
}

impl Server {
    fn spawn(launch: &Launch) -> std::io::Result<Self> {
        let cmd = &launch.argv;
        // What a host passes a server (mcp-host's allow-list), so both start the same way.
        let inherited = std::env::vars().filter(|(k, _)| {
            k.starts_with("LC_")
                || [
                    "PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "TMPDIR", "TZ",
                ]
                .contains(&k.as_str())
                || k.starts_with("XDG_")
        });
        let mut child = Command::new(&cmd[0])
            .args(&cmd[1..])
            .env_clear()
            .envs(inherited)
            .envs(launch.env.iter().cloned())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("child pipes missing"));
        };
        Ok(Self {
            child,
            stdin,
            stdout: BufReader::new(stdout),
            line: String::new(),
        })
    }

    fn send(&mut self, message: &Value) -> std::io::Result<()> {
        let mut bytes = serde_json::to_vec(message)?;
        bytes.push(b'\n');
        self.stdin.write_all(&bytes)
    }

    /// Reads lines until the response to `id` (notifications and logs are skipped).
    fn response(&mut self, id: u64) -> std::io::Result<Value> {
        loop {
            self.line.clear();
            if self.stdout.read_line(&mut self.line)? == 0 {
                return Err(std::io::Error::other("server closed its stdout"));
            }
            let Ok(message) = serde_json::from_str::<Value>(&self.line) else {
                continue;
            };
            if message.get("id").and_then(Value::as_u64) == Some(id) {
                return Ok(message);
            }
        }
    }

    fn finish(mut self) {
        drop(self.stdin);
        let _ = self.child.wait();
    }
}

fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {},
        "clientInfo": {"name": "mcp-raw-client", "version": "0"}}})
}

fn initialized() -> Value {
    json!({"jsonrpc": "2.0", "method": "notifications/initialized"})
}

#[allow(unsafe_code)] // One libc call with no safe wrapper in this crate's dependencies.
fn cpu_us() -> u64 {
    // SAFETY: getrusage writes one plain struct it is given; RUSAGE_SELF needs nothing else.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut usage);
        usage
    };
    let us = |t: libc::timeval| t.tv_sec as u64 * 1_000_000 + t.tv_usec as u64;
    us(usage.ru_utime) + us(usage.ru_stime)
}

/// Every server is started before any is waited for, as a host starts them.
fn list(config: &str) -> std::io::Result<Value> {
    let wall = Instant::now();
    let cpu = cpu_us();
    let launches = read_config(config)?;
    let n = launches.len();
    let mut servers = launches
        .iter()
        .map(Server::spawn)
        .collect::<std::io::Result<Vec<_>>>()?;
    for s in &mut servers {
        s.send(&initialize())?;
    }
    for s in &mut servers {
        s.response(0)?;
        s.send(&initialized())?;
        s.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}))?;
    }
    let mut tools = 0;
    for s in &mut servers {
        let listed = s.response(1)?;
        tools += listed["result"]["tools"].as_array().map_or(0, Vec::len);
    }
    for s in servers {
        s.finish();
    }
    Ok(json!({"servers": n, "tools": tools,
        "wall_us": wall.elapsed().as_micros() as u64, "cpu_us": cpu_us() - cpu}))
}

fn calls(n: usize, tool: &str, args: &str, cmd: &[String]) -> std::io::Result<Value> {
    let arguments: Value = serde_json::from_str(args)?;
    let mut s = Server::spawn(&Launch {
        argv: cmd.to_vec(),
        env: Vec::new(),
    })?;
    s.send(&initialize())?;
    s.response(0)?;
    s.send(&initialized())?;
    let call = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": {"name": tool, "arguments": arguments}})
    };
    // Warm the server's own paths first, as the host's repeat does.
    for id in 1..=10 {
        s.send(&call(id))?;
        s.response(id)?;
    }
    let mut took = Vec::with_capacity(n);
    let cpu = cpu_us();
    for i in 0..n as u64 {
        let t = Instant::now();
        s.send(&call(100 + i))?;
        let reply = s.response(100 + i)?;
        took.push(t.elapsed().as_micros() as u64);
        if reply.get("result").is_none() {
            return Err(std::io::Error::other(format!("call failed: {reply}")));
        }
    }
    let cpu = cpu_us() - cpu;
    s.finish();
    took.sort_unstable();
    let at = |q: f64| took[((took.len() - 1) as f64 * q) as usize];
    Ok(
        json!({"calls": n, "p50_us": at(0.5), "p90_us": at(0.9), "p99_us": at(0.99),
        "cpu_per_call_us": cpu as f64 / n as f64}),
    )
}

const USAGE: &str = "usage: mcp-raw-client list CONFIG.json | calls N TOOL ARGS -- CMD...";

fn main() -> ExitCode {
    let argv: Vec<String> = std::env::args().skip(1).collect();
    let sep = argv.iter().position(|a| a == "--").unwrap_or(argv.len());
    let (head, cmd) = (&argv[..sep], argv.get(sep + 1..).unwrap_or_default());
    let count = head
        .get(1)
        .and_then(|s| s.parse::<usize>().ok())
        .filter(|n| *n > 0);
    let result = match (head.first().map(String::as_str), count) {
        (Some("list"), _) if head.len() == 2 => list(&head[1]),
        (Some("calls"), Some(n)) if head.len() == 4 && !cmd.is_empty() => {
            calls(n, &head[2], &head[3], cmd)
        }
        _ => {
            eprintln!("{USAGE}");
            return ExitCode::from(2);
        }
    };
    match result {
        Ok(report) => {
            println!("{report}");
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("mcp-raw-client: {e}");
            ExitCode::FAILURE
        }
    }
}
