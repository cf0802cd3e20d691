//! `mcp-host serve` end to end: the real binary on a loopback port, the scripted model
//! (`mcp-fake-model`), the fake MCP server, real sockets, and a small HTTP/SSE client of
//! its own (so each test sees exactly the bytes a browser or script would).

mod drain;
mod guard;
mod isolation;
mod metrics;
mod remote;
mod replicas;
mod sessions;
mod signin;
mod stream;

use crate::common::{Sandbox, fake};
use serde_json::{Value, json};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long anything in these tests may take before it counts as hung.
pub const DEADLINE: Duration = Duration::from_secs(30);

/// The scripted model on a loopback port; killed when dropped.
pub struct Model {
    child: Child,
    pub url: String,
}

impl Model {
    pub fn start(delay_ms: u64) -> Self {
        let mut child = Command::new(mcp_host_testkit::fake_model())
            .args(["--delay-ms", &delay_ms.to_string()])
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let url = line
            .trim()
            .strip_prefix("listening on ")
            .unwrap()
            .to_string();
        Self { child, url }
    }
}

impl Drop for Model {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A catalogue entry for the fake server. `reaching` gives it a network allowance, so it is
/// not sealed and its calls need a person's yes in ask mode.
pub fn fake_entry(args: &[&str], reaching: bool) -> Value {
    let mut entry = json!({"command": fake(), "args": args});
    if reaching {
        entry["sandbox"] = json!({"network": {"allow": ["example.invalid:443"]}});
    }
    entry
}

/// One running service.
pub struct Service {
    pub child: Child,
    pub addr: String,
    /// stderr after the listening line (kept open: the service may still write to it).
    _stderr: mpsc::Receiver<String>,
    pub signin: Option<String>,
}

/// What a service is started with.
pub struct Setup<'a> {
    pub sb: &'a Sandbox,
    pub catalogue: &'a Path,
    pub model: &'a Model,
    /// Defaults to `<sandbox>/serve`.
    pub data: Option<PathBuf>,
    pub database_url: Option<String>,
    pub extra: Vec<String>,
    /// Environment variables the service starts with (beside the sandbox's own).
    pub env: Vec<(String, String)>,
}

impl<'a> Setup<'a> {
    pub fn new(sb: &'a Sandbox, catalogue: &'a Path, model: &'a Model) -> Self {
        Self {
            sb,
            catalogue,
            model,
            data: None,
            database_url: None,
            extra: Vec::new(),
            env: Vec::new(),
        }
    }

    fn data(&self) -> PathBuf {
        self.data
            .clone()
            .unwrap_or_else(|| self.sb.path().join("serve"))
    }

    fn command(&self) -> Command {
        let mut c = self.sb.command(self.sb.path());
        c.envs(self.env.iter().map(|(k, v)| (k, v)));
        c.arg("serve").arg("--data-dir").arg(self.data());
        if let Some(url) = &self.database_url {
            c.args(["--database-url", url]);
        }
        c
    }

    /// `mcp-host serve add-user NAME [--admin]`: the new user's API token.
    pub fn add_user(&self, name: &str, admin: bool) -> String {
        let mut c = self.command();
        c.args(["add-user", name]);
        if admin {
            c.arg("--admin");
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_string()
    }

    pub fn grant(&self, server: &str, principal: &str) {
        let out = self
            .command()
            .args(["grant", server, principal])
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    fn serve_command(&self) -> Command {
        let mut c = self.command();
        c.args(["--listen", "127.0.0.1:0", "--catalogue"])
            .arg(self.catalogue)
            .args([
                "-m",
                "openai-compatible:fake",
                "--base-url",
                &self.model.url,
            ])
            .args(&self.extra);
        c
    }

    /// Starts the service, expecting it to refuse: what it said.
    pub fn start_refused(&self) -> String {
        let out = self.serve_command().output().unwrap();
        let said = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(!out.status.success(), "started: {said}");
        said
    }

    pub fn start(&self) -> Service {
        let mut c = self.serve_command();
        c.stderr(Stdio::piped());
        let mut child = c.spawn().unwrap();
        let (tx, rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        // MCP_HOST_TEST_SERVE_LOG=1 shows the service's own log, for debugging a test.
        let show = std::env::var_os("MCP_HOST_TEST_SERVE_LOG").is_some();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                #[allow(clippy::print_stderr)]
                if show {
                    eprintln!("serve: {line}");
                }
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut addr = None;
        let mut signin = None;
        let until = Instant::now() + DEADLINE;
        while addr.is_none()
            || (self.extra.iter().any(|a| a == "--single-user") && signin.is_none())
        {
            let left = until.saturating_duration_since(Instant::now());
            let line = rx
                .recv_timeout(left)
                .expect("the service did not say where it listens");
            if let Some(a) = line.strip_prefix("mcp-host serve: listening on http://") {
                addr = Some(a.to_string());
            }
            if let Some(s) = line.strip_prefix("sign in: ") {
                signin = Some(s.to_string());
            }
        }
        Service {
            child,
            addr: addr.unwrap(),
            _stderr: rx,
            signin,
        }
    }
}

impl Drop for Service {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// An HTTP answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

fn head(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> String {
    let mut req = format!("{method} {path} HTTP/1.1\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("host")) {
        req.push_str(&format!("Host: {addr}\r\n"));
    }
    for (k, v) in headers {
        req.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() {
        req.push_str("Content-Type: application/json\r\n");
    }
    req.push_str(&format!(
        "Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    ));
    req
}

/// One request with exactly these headers (plus Host, unless given, and Content-Length).
pub fn request(
    addr: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&Value>,
) -> Reply {
    let body = body.map(Value::to_string).unwrap_or_default();
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(DEADLINE)).unwrap();
    s.write_all(head(addr, method, path, headers, &body).as_bytes())
        .unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    parse_reply(&raw)
}

fn parse_reply(raw: &[u8]) -> Reply {
    let text = String::from_utf8_lossy(raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let mut lines = head.split("\r\n");
    let status = lines
        .next()
        .unwrap_or_default()
        .split(' ')
        .nth(1)
        .unwrap_or("0")
        .parse()
        .unwrap();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
        .collect();
    let chunked = headers
        .iter()
        .any(|(k, v)| k.eq_ignore_ascii_case("transfer-encoding") && v.contains("chunked"));
    let body = if chunked {
        dechunk(body)
    } else {
        body.to_string()
    };
    Reply {
        status,
        headers,
        body,
    }
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].strip_prefix("\r\n").unwrap_or(&rest[n..]);
    }
    out
}

/// A caller with an API token.
#[derive(Clone)]
pub struct Api {
    pub addr: String,
    pub token: String,
}

impl Api {
    pub fn new(service: &Service, token: &str) -> Self {
        Self {
            addr: service.addr.clone(),
            token: token.to_string(),
        }
    }

    fn auth(&self) -> String {
        format!("Bearer {}", self.token)
    }

    pub fn get(&self, path: &str) -> Reply {
        request(
            &self.addr,
            "GET",
            path,
            &[("Authorization", &self.auth())],
            None,
        )
    }

    pub fn send(&self, method: &str, path: &str, body: Value) -> Reply {
        request(
            &self.addr,
            method,
            path,
            &[("Authorization", &self.auth())],
            Some(&body),
        )
    }

    pub fn enable(&self, server: &str) {
        let r = self.send(
            "PUT",
            &format!("/api/servers/{server}"),
            json!({"enabled": true}),
        );
        assert_eq!(r.status, 204, "{r:?}");
    }

    pub fn conversation(&self) -> String {
        let r = self.send("POST", "/api/conversations", json!({}));
        assert_eq!(r.status, 201, "{r:?}");
        r.json()["id"].as_str().unwrap().to_string()
    }

    pub fn turn(&self, conversation: &str, text: &str) -> Reply {
        self.send(
            "POST",
            &format!("/api/conversations/{conversation}/turns"),
            json!({"text": text}),
        )
    }

    pub fn events(&self, conversation: &str, last: Option<i64>) -> Events {
        Events::open(
            &self.addr,
            &format!("/api/conversations/{conversation}/events"),
            &self.auth(),
            last,
        )
    }

    /// Answers the approval of `call_id` in `conversation`.
    pub fn approve(&self, conversation: &str, call_id: &str, allow: bool) -> Reply {
        self.send(
            "POST",
            &format!("/api/conversations/{conversation}/answers"),
            json!({"kind": "approval", "call_id": call_id, "allow": allow}),
        )
    }
}

/// One SSE event.
#[derive(Clone, Debug)]
pub struct Sse {
    pub id: Option<i64>,
    pub event: String,
    pub data: Value,
}

impl Sse {
    /// The call an `approval_requested` event asks about.
    pub fn call_id(&self) -> String {
        self.data["subject"]["call_id"]
            .as_str()
            .unwrap_or_else(|| panic!("not an approval: {self:?}"))
            .to_string()
    }
}

/// A conversation's event stream, read line by line.
pub struct Events {
    reader: BufReader<TcpStream>,
}

impl Events {
    pub fn open(addr: &str, path: &str, auth: &str, last: Option<i64>) -> Self {
        let last = last.map(|l| l.to_string());
        let mut headers = vec![("Authorization", auth), ("Accept", "text/event-stream")];
        if let Some(l) = &last {
            headers.push(("Last-Event-ID", l));
        }
        let mut s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(DEADLINE)).unwrap();
        s.write_all(head(addr, "GET", path, &headers, "").as_bytes())
            .unwrap();
        let mut reader = BufReader::new(s);
        let mut status_line = String::new();
        reader.read_line(&mut status_line).unwrap();
        assert!(
            status_line.contains(" 200 "),
            "the stream was refused: {status_line}"
        );
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap() == 0 || h.trim().is_empty() {
                break;
            }
        }
        Self { reader }
    }

    /// A stream whose status line was already read (and was 200): kept open, unread.
    pub fn from_accepted(stream: TcpStream) -> Self {
        Self {
            reader: BufReader::new(stream),
        }
    }

    /// The next event (keep-alive comments skipped); `None` when the stream ended, or when
    /// no event came for [`DEADLINE`] (keep-alive comments alone do not count).
    pub fn next(&mut self) -> Option<Sse> {
        let quiet_until = Instant::now() + DEADLINE;
        let mut id = None;
        let mut event = String::from("message");
        let mut data = String::new();
        loop {
            let mut line = String::new();
            // The body is chunked; chunk-size lines are not SSE fields and are skipped.
            if self.reader.read_line(&mut line).ok()? == 0 || Instant::now() > quiet_until {
                return None;
            }
            let line = line.trim_end_matches(['\r', '\n']);
            if line.is_empty() {
                if !data.is_empty() {
                    return Some(Sse {
                        id,
                        event,
                        data: serde_json::from_str(&data).unwrap_or(Value::Null),
                    });
                }
                continue;
            }
            if let Some(v) = line.strip_prefix("id:") {
                id = v.trim().parse().ok();
            } else if let Some(v) = line.strip_prefix("event:") {
                event = v.trim().to_string();
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            } else if line.chars().all(|c| c.is_ascii_hexdigit()) {
                continue;
            }
        }
    }

    /// Events up to and including the first of kind `kind`.
    pub fn until(&mut self, kind: &str) -> Vec<Sse> {
        let mut seen = Vec::new();
        while let Some(e) = self.next() {
            let done = e.event == kind;
            seen.push(e);
            if done {
                return seen;
            }
        }
        panic!("the stream ended before a `{kind}` event; saw {seen:#?}");
    }
}

/// GET an absolute `http://` URL (the service's or another loopback server's), with `cookie`.
pub fn get_url(url: &str, cookie: Option<&str>) -> Reply {
    let rest = url.strip_prefix("http://").unwrap();
    let (addr, path) = rest.split_once('/').unwrap_or((rest, ""));
    let headers: Vec<(&str, &str)> = cookie.map(|c| ("Cookie", c)).into_iter().collect();
    request(addr, "GET", &format!("/{path}"), &headers, None)
}

/// The `name=value` of the cookie `name` that `reply` sets (and does not clear).
pub fn cookie_of(reply: &Reply, name: &str) -> Option<String> {
    reply
        .headers
        .iter()
        .filter(|(k, _)| k.eq_ignore_ascii_case("set-cookie"))
        .map(|(_, v)| v.split(';').next().unwrap().to_string())
        .find(|c| c.starts_with(&format!("{name}=")) && c.len() > name.len() + 1)
}

/// `GET /api/me` with a browser session's `cookie` (`name=value`): who it signs in.
pub fn me(addr: &str, cookie: &str) -> Value {
    request(addr, "GET", "/api/me", &[("Cookie", cookie)], None).json()
}

/// Waits for `cond` with a deadline, checking ten times a second: a check that asks the
/// API spends a request of the user's budget (20 a second by default), and checking every
/// 20 ms spent it all while a server was slow to start under the suite's load, so the
/// check itself was refused (429) instead of seeing the server come up.
pub fn wait_for(what: &str, mut cond: impl FnMut() -> bool) {
    let until = Instant::now() + DEADLINE;
    while !cond() {
        assert!(Instant::now() < until, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// A catalogue file of these servers.
pub fn catalogue(sb: &Sandbox, servers: Value) -> PathBuf {
    sb.config("catalogue.json", servers)
}

/// Whether any process's command line holds `marker`.
pub fn process_with(marker: &str) -> bool {
    std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
        std::fs::read(e.path().join("cmdline"))
            .map(|c| String::from_utf8_lossy(&c).contains(marker))
            .unwrap_or(false)
    })
}

/// A fresh PostgreSQL database for a test, or `None` (said on stderr) when there is no
/// server to test against outside CI (`fresh_database` refuses to skip in CI).
#[allow(clippy::print_stderr)]
pub fn postgres(prefix: &str) -> Option<String> {
    let url = mcp_host_testkit::postgres::fresh_database(prefix);
    if url.is_none() {
        eprintln!("skipped: no PostgreSQL (set MCP_HOST_TEST_POSTGRES_URL; scripts/test.sh does)");
    }
    url
}
