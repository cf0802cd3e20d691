//! Load on `mcp-host serve`: N simulated users on loopback, each with their own session of
//! the real fake MCP server (confined as usual) and the scripted model, driven over the HTTP
//! API with an SSE stream per turn. Reports, per N: turns per second (first turns, which
//! start each user's session and server, and warm turns), p50/p99 of event delivery (the
//! time from the service writing an event to the client reading it), the service's memory
//! per idle and per active user, and the number of server processes while active and after
//! the idle stop (idle users cost none). Bounded: at most 100 turns in flight, a deadline per
//! phase. `LOAD_USERS=10,100,1000` (the default) picks the sizes. Run: `scripts/bench.sh`.

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements on the terminal.
#![allow(clippy::unwrap_used, clippy::expect_used)] // A benchmark: a panic is the report.

use hdrhistogram::Histogram;
use serde_json::{Value, json};
use std::io::BufRead as _;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{Mutex, Semaphore};

const HOST: &str = env!("CARGO_BIN_EXE_mcp-host");
/// Turns in flight at once.
const IN_FLIGHT: usize = 100;
/// The longest one phase may take.
const PHASE: Duration = Duration::from_secs(600);

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// Server processes (the fake server itself) and their supervisors whose command line
/// holds `marker`, and the resident memory of both, in KiB.
fn processes_with(marker: &str) -> (usize, usize, u64) {
    let (mut servers, mut supervisors, mut kib) = (0, 0, 0);
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd);
        if !cmd.contains(marker) {
            continue;
        }
        let argv0 = cmd.split('\0').next().unwrap_or_default();
        if argv0.ends_with("mcp-fake-server") {
            servers += 1;
        } else {
            supervisors += 1;
        }
        kib += rss_kib(e.file_name().to_string_lossy().parse().unwrap_or(0));
    }
    (servers, supervisors, kib)
}

async fn http(
    addr: &str,
    method: &str,
    path: &str,
    token: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let body = body.map(|b| b.to_string()).unwrap_or_default();
    let mut s = TcpStream::connect(addr).await.unwrap();
    let ct = if body.is_empty() {
        ""
    } else {
        "Content-Type: application/json\r\n"
    };
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n{ct}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).await.unwrap();
    let text = String::from_utf8_lossy(&raw);
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split(' ').nth(1).unwrap_or("0").parse().unwrap_or(0);
    let body = if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        let mut out = String::new();
        let mut b = rest;
        while let Some((size, tail)) = b.split_once("\r\n") {
            let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
            if n == 0 || tail.len() < n {
                break;
            }
            out.push_str(&tail[..n]);
            b = tail[n..].strip_prefix("\r\n").unwrap_or(&tail[n..]);
        }
        out
    } else {
        rest.to_string()
    };
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// One turn with its stream open: the delivery delays (ms) of its events.
async fn turn(addr: &str, token: &str, conversation: &str, after: i64) -> (Vec<i64>, i64) {
    let mut s = TcpStream::connect(addr).await.unwrap();
    let req = format!(
        "GET /api/conversations/{conversation}/events?after={after} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nAccept: text/event-stream\r\n\r\n"
    );
    s.write_all(req.as_bytes()).await.unwrap();
    let mut lines = BufReader::new(s).lines();
    let (status, _) = http(
        addr,
        "POST",
        &format!("/api/conversations/{conversation}/turns"),
        token,
        Some(json!({"text": "call f__echo {\"message\": \"load\"}"})),
    )
    .await;
    assert_eq!(status, 202);
    let mut delays = Vec::new();
    let mut last = after;
    let (mut kind, mut data) = (String::new(), String::new());
    // An event ends at its blank line, whatever order its fields came in.
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(id) = line.strip_prefix("id: ") {
            last = id.trim().parse().unwrap_or(last);
        } else if let Some(k) = line.strip_prefix("event: ") {
            kind = k.to_string();
        } else if let Some(d) = line.strip_prefix("data: ") {
            data = d.to_string();
        } else if line.is_empty() && !data.is_empty() {
            let v: Value = serde_json::from_str(&data).unwrap_or(Value::Null);
            if let Some(at) = v["at_ms"].as_i64() {
                delays.push(now_ms() - at);
            }
            if kind == "turn_ended" || kind == "turn_failed" {
                assert_eq!(kind, "turn_ended", "{data}");
                break;
            }
            data.clear();
        }
    }
    (delays, last)
}

struct User {
    token: String,
    conversation: String,
    last: i64,
}

/// Runs one turn for every user, at most IN_FLIGHT at once: (seconds, delays).
async fn round(addr: &str, users: &Arc<Vec<Mutex<User>>>) -> (f64, Vec<i64>) {
    let gate = Arc::new(Semaphore::new(IN_FLIGHT));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for i in 0..users.len() {
        let (gate, users, addr) = (gate.clone(), users.clone(), addr.to_string());
        tasks.push(tokio::spawn(async move {
            let _permit = gate.acquire().await.unwrap();
            let mut u = users[i].lock().await;
            let (delays, last) = turn(&addr, &u.token, &u.conversation, u.last).await;
            u.last = last;
            delays
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(
            tokio::time::timeout(PHASE, t)
                .await
                .expect("a round took too long")
                .unwrap(),
        );
    }
    (started.elapsed().as_secs_f64(), all)
}

fn quantiles(delays: &[i64]) -> (u64, u64) {
    let mut h = Histogram::<u64>::new(3).unwrap();
    for d in delays {
        h.record((*d).max(0) as u64).unwrap();
    }
    (h.value_at_quantile(0.5), h.value_at_quantile(0.99))
}

struct Row {
    users: usize,
    first_tps: f64,
    warm_tps: f64,
    p50: u64,
    p99: u64,
    idle_kib: f64,
    active_kib: f64,
    server_kib: f64,
    processes_active: usize,
    processes_after_idle: usize,
}

async fn measure(n: usize) -> Row {
    let dir = tempfile::tempdir().unwrap();
    let marker = format!("load-marker-{}-{n}", std::process::id());
    let mut model = Command::new(mcp_host_testkit::fake_model())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufReader::new(model.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let model_url = line
        .trim()
        .strip_prefix("listening on ")
        .unwrap()
        .to_string();
    // Long enough that no user's session stops between its two turns (a round of 1,000 first
    // turns takes about a minute here), short enough to wait for at the end.
    let idle_stop = 20 + n * 3 / 20;
    let fake = mcp_host_testkit::fake_server();
    let catalogue = dir.path().join("catalogue.json");
    std::fs::write(
        &catalogue,
        json!({"mcpServers": {"f": {"command": fake, "args": ["--instructions", marker]}}})
            .to_string(),
    )
    .unwrap();
    let base = |c: &mut Command| {
        c.env("HOME", dir.path())
            .env("XDG_DATA_HOME", dir.path().join("data"))
            .env("XDG_CONFIG_HOME", dir.path().join("config"))
            .args(["serve", "--data-dir"])
            .arg(dir.path().join("serve"));
    };
    let mut add = Command::new(HOST);
    base(&mut add);
    let out = add.args(["add-user", "admin", "--admin"]).output().unwrap();
    let admin = String::from_utf8(out.stdout).unwrap().trim().to_string();
    let mut serve = Command::new(HOST);
    base(&mut serve);
    let mut serve: Child = serve
        .args(["--listen", "127.0.0.1:0", "--catalogue"])
        .arg(&catalogue)
        .args([
            "-m",
            "openai-compatible:fake",
            "--base-url",
            &model_url,
            "--rate",
            "100000",
            "--idle-stop",
            &idle_stop.to_string(),
        ])
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut err = std::io::BufReader::new(serve.stderr.take().unwrap());
    let addr = loop {
        let mut l = String::new();
        assert!(
            err.read_line(&mut l).unwrap() > 0,
            "the service did not start"
        );
        if let Some(a) = l
            .trim()
            .strip_prefix("mcp-host serve: listening on http://")
        {
            break a.to_string();
        }
    };
    std::thread::spawn(move || for _ in err.lines() {});
    let pid = serve.id();
    let base_kib = rss_kib(pid);
    assert_eq!(
        http(
            &addr,
            "PUT",
            "/api/admin/servers/f/access",
            &admin,
            Some(json!({"principals": ["*"]}))
        )
        .await
        .0,
        204
    );
    let mut users = Vec::new();
    for i in 0..n {
        let (_, made) = http(
            &addr,
            "POST",
            "/api/admin/users",
            &admin,
            Some(json!({"name": format!("u{i}")})),
        )
        .await;
        let token = made["token"].as_str().unwrap().to_string();
        assert_eq!(
            http(
                &addr,
                "PUT",
                "/api/servers/f",
                &token,
                Some(json!({"enabled": true}))
            )
            .await
            .0,
            204
        );
        let (_, conv) = http(&addr, "POST", "/api/conversations", &token, Some(json!({}))).await;
        users.push(Mutex::new(User {
            token,
            conversation: conv["id"].as_str().unwrap().to_string(),
            last: 0,
        }));
    }
    let idle_kib = rss_kib(pid).saturating_sub(base_kib) as f64 / n as f64;
    assert_eq!(processes_with(&marker).0, 0, "idle users cost no process");
    let users = Arc::new(users);
    let (first_secs, mut delays) = round(&addr, &users).await;
    let (warm_secs, warm_delays) = round(&addr, &users).await;
    delays.extend(warm_delays);
    let (processes_active, _, server_kib) = processes_with(&marker);
    let active_kib = rss_kib(pid).saturating_sub(base_kib) as f64 / n as f64;
    // The idle stop ends every session and its server.
    let until = Instant::now() + Duration::from_secs(idle_stop as u64 + 120);
    while processes_with(&marker).0 > 0 && Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let processes_after_idle = processes_with(&marker).0;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(pid as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let status = serve.wait().unwrap();
    assert!(status.success(), "the service exits 0 after SIGTERM");
    let _ = model.kill();
    let _ = model.wait();
    let (p50, p99) = quantiles(&delays);
    Row {
        users: n,
        first_tps: n as f64 / first_secs,
        warm_tps: n as f64 / warm_secs,
        p50,
        p99,
        idle_kib,
        active_kib,
        server_kib: server_kib as f64 / processes_active.max(1) as f64,
        processes_active,
        processes_after_idle,
    }
}

fn main() {
    let sizes: Vec<usize> = std::env::var("LOAD_USERS")
        .unwrap_or_else(|_| "10,100,1000".into())
        .split(',')
        .filter_map(|s| s.trim().parse().ok())
        .collect();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let mut rows = Vec::new();
    for n in sizes {
        eprintln!("load: {n} users");
        rows.push(runtime.block_on(measure(n)));
    }
    println!(
        "| users | first turns/s | warm turns/s | event delivery p50 / p99 | host memory per idle user | per active user | server processes active / after idle stop | memory per active user's server (supervisor + server) |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for r in rows {
        println!(
            "| {} | {:.1} | {:.1} | {} ms / {} ms | {:.1} KiB | {:.1} KiB | {} / {} | {:.0} KiB |",
            r.users,
            r.first_tps,
            r.warm_tps,
            r.p50,
            r.p99,
            r.idle_kib,
            r.active_kib,
            r.processes_active,
            r.processes_after_idle,
            r.server_kib
        );
    }
}
