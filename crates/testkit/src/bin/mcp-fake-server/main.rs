//! A fake MCP server over stdio for tests and benchmarks. It speaks the legacy era
//! (`initialize`), the modern era (`server/discover` + per-request `_meta`), or both with
//! era-locking like the Python SDK, and can misbehave on purpose (see `--help`).

#![allow(clippy::unwrap_used)] // A test fixture: failing loudly is what it should do.
#![allow(clippy::print_stdout, clippy::print_stderr)] // It speaks MCP on stdout, logs on stderr.

mod legacy_sse;
mod mrtr;
mod tasks;
mod tools;

use serde_json::{Value, json};
use std::io::{BufRead, Write};
use std::sync::{Arc, Mutex};
use std::time::Duration;

const HELP: &str =
    "mcp-fake-server [--era legacy|modern|dual|probe-locks] [--fault F]... [--tools N]
  [--page-size N] [--cursor-loop] [--broken-tool] [--spawn-log FILE] [--root DIR] [--fetch-at-start HOST:PORT] [--start-delay-ms N]
faults: crash-at-start, hang, garbage, stderr-flood, exit-on-probe,
  hostile-text (terminal escapes in descriptions, instructions, results, errors, stderr;
  NUL bytes and a 1 MiB line on stdout before every answer; adds the tool hostile_error)
  wire faults (the `add` tool's answer): bad-utf16, bad-envelope, result-and-error, deep-result;
  bad-utf16-handshake (the handshake answer), early-responses (stray answers before each one),
  invalid-id-request (a ping with an object id before `add` answers; the reply is logged),
  ask-roots (adds a `roots` tool that asks roots/list and returns the answer),
  probe (adds a `probe` tool that tries what a confinement allows or forbids: see
    testkit's probe.rs),
  fat-list (each of --tools N extra tools has a 1 MiB description),
  deaf (adds a tool `deaf{pings}` that answers, sends `pings` pings, then never reads
    its stdin again),
  announce (adds a tool `announce{times}` that sends tools/list_changed `times` times
    without changing anything),
  ask-storm (legacy: adds `ask_many{times}`, which sends `times` elicitation/create requests
    at once and answers at once, and `storm_tally`, the actions they were answered with),
  string-id (over --http: tools/call answered with its id as a string),
  silent-discover (server/discover is never answered), hang-list (tools/list is never answered)
  [--discover-delay-ms N] answers server/discover after N ms
  expansion-schema (tool `expand`), slow-schema (tool `deep`), hidden-instructions (tool `notes`)
  tasks (modern: tool `research{topic,polls,ask}` runs as a task; see tasks.rs), with
    task-forever, task-fail, task-wrong-id, task-repeat-ask
tools: echo{message}, add{a,b}, crash, hang, huge, slow{ms,progressEvery,progressFlood}, grow, error, evil, ask (elicitation), plus toolN";

#[derive(Clone, Copy, PartialEq)]
enum EraMode {
    Legacy,
    Modern,
    Dual,
    /// Answers `server/discover` with an error, then refuses `initialize` on that connection.
    ProbeLocks,
}

struct Opts {
    era: EraMode,
    faults: Vec<String>,
    extra_tools: usize,
    page_size: Option<usize>,
    cursor_loop: bool,
    broken_tool: bool,
    start_delay: Duration,
    /// Serve Streamable HTTP (stateless, JSON responses) on this port instead of stdio;
    /// 0 picks a free port. The address is printed on stdout.
    http_port: Option<u16>,
    /// Serve the legacy HTTP+SSE transport (2024-11-05) on this port instead: the event
    /// stream at `/sse`, messages POSTed to `/message`; 0 picks a free port.
    sse_port: Option<u16>,
    /// Answer `initialize` with this version whatever was asked.
    answer_version: Option<String>,
    /// Append one line per request received ("method" or "tools/call NAME") to this file.
    request_log: Option<String>,
    /// Description of the `echo` tool.
    echo_description: String,
    /// Name of the `echo` tool.
    echo_name: String,
    /// Tools that claim `readOnlyHint: true`.
    read_only: Vec<String>,
    /// `instructions` returned by `initialize` and `server/discover`.
    instructions: Option<String>,
    /// How long `server/discover` takes to answer (a server slow to start).
    discover_delay: Duration,
}

fn parse_opts() -> Opts {
    let mut o = Opts {
        era: EraMode::Legacy,
        faults: Vec::new(),
        extra_tools: 0,
        page_size: None,
        cursor_loop: false,
        broken_tool: false,
        start_delay: Duration::ZERO,
        http_port: None,
        sse_port: None,
        answer_version: None,
        request_log: None,
        echo_description: "Echoes the message".into(),
        echo_name: "echo".into(),
        read_only: Vec::new(),
        instructions: None,
        discover_delay: Duration::ZERO,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut val = || args.next().unwrap_or_default();
        match a.as_str() {
            "--era" => {
                o.era = match val().as_str() {
                    "modern" => EraMode::Modern,
                    "dual" => EraMode::Dual,
                    "probe-locks" => EraMode::ProbeLocks,
                    _ => EraMode::Legacy,
                }
            }
            "--fault" => o.faults.push(val()),
            "--tools" => o.extra_tools = val().parse().unwrap_or(0),
            "--page-size" => o.page_size = val().parse().ok(),
            "--cursor-loop" => o.cursor_loop = true,
            "--broken-tool" => o.broken_tool = true,
            "--http" => o.http_port = val().parse().ok(),
            "--sse" => o.sse_port = val().parse().ok(),
            "--answer-version" => o.answer_version = Some(val()),
            "--request-log" => o.request_log = Some(val()),
            "--describe-echo" => o.echo_description = val(),
            "--rename-echo" => o.echo_name = val(),
            "--annotate-readonly" => o.read_only.push(val()),
            "--instructions" => o.instructions = Some(val()),
            "--start-delay-ms" => o.start_delay = Duration::from_millis(val().parse().unwrap_or(0)),
            "--discover-delay-ms" => {
                o.discover_delay = Duration::from_millis(val().parse().unwrap_or(0))
            }
            // A folder named as an argument: a confined server's root. Nothing else.
            "--root" => {
                let _ = val();
            }
            // A request through the egress proxy while starting, before serving (as a
            // server that fetches its configuration would); the outcome goes to stderr.
            "--fetch-at-start" => {
                let target = val();
                let got = mcp_host_testkit::probe::fetch(&target);
                eprintln!("fetch {target} at start: {got:?}");
            }
            "--spawn-log" => {
                let path = val();
                let mut f = std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(path)
                    .unwrap();
                writeln!(f, "{}", std::process::id()).unwrap();
            }
            _ => {
                eprintln!("{HELP}");
                std::process::exit(2);
            }
        }
    }
    o
}

#[derive(Clone, Copy, PartialEq)]
enum Locked {
    None,
    Legacy,
    Modern,
    /// The probe was refused; this connection now refuses both eras.
    Broken,
}

/// Where replies go: stdout, or a buffer the HTTP loop reads back.
type Out = Arc<Mutex<Box<dyn Write + Send>>>;

#[derive(Clone, Default)]
struct SharedBuf(Arc<Mutex<Vec<u8>>>);

impl Write for SharedBuf {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(b);
        Ok(b.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

struct Server {
    opts: Opts,
    out: Out,
    locked: Locked,
    grown: bool,
    /// The id of an open `subscriptions/listen` request (modern era).
    listen: Option<Value>,
    /// Header block of the HTTP request being served (lower-cased), for the `headers` tool.
    http_head: String,
    /// The `ask` tool's call, waiting for the client's answer to our `elicitation/create`.
    asking: Option<Value>,
    /// The `roots` tool's call, waiting for the client's answer to our `roots/list`.
    asking_roots: Option<Value>,
    /// The actions the client answered `ask_many`'s questions with (`--fault ask-storm`).
    storm_answers: Vec<String>,
    /// The `research` tool's tasks, by id (`--fault tasks`).
    tasks: std::collections::BTreeMap<String, tasks::FakeTask>,
    next_task: u32,
}

fn main() {
    let opts = parse_opts();
    let has = |f: &str| opts.faults.iter().any(|x| x == f);
    eprintln!("fake server starting (pid {})", std::process::id());
    if has("crash-at-start") {
        eprintln!("fatal: configured to crash at start");
        std::process::exit(1);
    }
    if has("hostile-text") {
        eprintln!("stderr: {}", mcp_host_testkit::HOSTILE_TEXT);
    }
    std::thread::sleep(opts.start_delay);
    if has("stderr-flood") {
        std::thread::spawn(|| {
            let line = "x".repeat(1023);
            let mut err = std::io::stderr().lock();
            for _ in 0..64 * 1024 {
                if writeln!(err, "{line}").is_err() {
                    break;
                }
            }
        });
    }
    let (http, sse) = (opts.http_port, opts.sse_port);
    let buf = SharedBuf::default();
    let out: Box<dyn Write + Send> = if http.is_some() || sse.is_some() {
        Box::new(buf.clone())
    } else {
        Box::new(std::io::stdout())
    };
    let mut server = Server {
        opts,
        out: Arc::new(Mutex::new(out)),
        locked: Locked::None,
        grown: false,
        listen: None,
        http_head: String::new(),
        asking: None,
        asking_roots: None,
        storm_answers: Vec::new(),
        tasks: Default::default(),
        next_task: 0,
    };
    if let Some(port) = http {
        return serve_http(&mut server, port, &buf);
    }
    if let Some(port) = sse {
        return legacy_sse::serve(&mut server, port, &buf);
    }
    let stdin = std::io::stdin();
    let mut first = true;
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(msg) = serde_json::from_str::<Value>(&line) else {
            continue;
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default()
            .to_string();
        if first && server.has("exit-on-probe") && method != "initialize" {
            eprintln!("first message was {method}, not initialize: exiting");
            std::process::exit(4);
        }
        first = false;
        if server.has("hang") {
            continue;
        }
        if server.has("garbage") {
            server.write_raw("this is not json\n{\"half\": \n\u{1b}[31mred\u{1b}[0m\n");
        }
        if server.has("hostile-text") {
            // Not JSON: the host must skip it, and a log of it must not carry it raw.
            let long = format!(
                "{}{}\n",
                mcp_host_testkit::HOSTILE_TEXT,
                "z".repeat(1 << 20)
            );
            server.write_raw(&format!(
                "noise\0\0\0{}\n{long}",
                mcp_host_testkit::HOSTILE_TEXT
            ));
        }
        let Some(id) = msg.get("id").cloned() else {
            // Notifications are logged too: tests look for notifications/cancelled.
            server.log_request(&method, &msg.get("params").cloned().unwrap_or(json!({})));
            continue;
        };
        if id.is_null() && msg.get("error").is_some() {
            // What the client said to our request with an invalid id.
            server.log_request(
                &format!("response id=null {}", msg["error"]["code"]),
                &json!({}),
            );
            continue;
        }
        if msg.get("result").is_some() || msg.get("error").is_some() {
            // The answer to the `ask` tool's question ends that call with what came back;
            // any other response is to something we never sent.
            if id == json!("ask")
                && let Some(call) = server.asking.take()
            {
                let answer = msg
                    .get("result")
                    .cloned()
                    .unwrap_or_else(|| msg["error"].clone());
                server.reply(
                    call,
                    json!({"content": [{"type": "text", "text": answer.to_string()}]}),
                );
            }
            if id.as_str().is_some_and(|i| i.starts_with("storm-")) {
                let action = msg["result"]["action"].as_str().unwrap_or("error");
                server.storm_answers.push(action.to_string());
            }
            if id == json!("roots")
                && let Some(call) = server.asking_roots.take()
            {
                server.reply(
                    call,
                    json!({"content": [{"type": "text", "text": msg.to_string()}]}),
                );
            }
            continue;
        }
        server.handle(&method, id, msg.get("params").cloned().unwrap_or(json!({})));
    }
}

/// A minimal stateless Streamable HTTP endpoint: one JSON-RPC message per POST, answered
/// with `application/json`; GET and DELETE get 405; every connection is closed after use.
fn serve_http(server: &mut Server, port: u16, buf: &SharedBuf) {
    let listener = listen(port);
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { continue };
        let (head, body) = read_request(&mut stream);
        if !head.starts_with("post") {
            respond(&mut stream, "405 Method Not Allowed", "");
            continue;
        }
        let Ok(msg) = serde_json::from_slice::<Value>(&body) else {
            respond(&mut stream, "400 Bad Request", "");
            continue;
        };
        let Some(id) = msg.get("id").cloned() else {
            respond(&mut stream, "202 Accepted", "");
            continue;
        };
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        server.http_head = head;
        server.handle(
            &method,
            id.clone(),
            msg.get("params").cloned().unwrap_or(json!({})),
        );
        let written = std::mem::take(&mut *buf.0.lock().unwrap());
        let mut reply = String::from_utf8_lossy(&written)
            .lines()
            .find(|l| serde_json::from_str::<Value>(l).is_ok_and(|v| v.get("id") == Some(&id)))
            .map(str::to_string);
        // `string-id`: tools/call is answered with its integer id as a string.
        if server.has("string-id") && method == "tools/call" {
            reply = reply
                .and_then(|r| serde_json::from_str::<Value>(&r).ok())
                .map(|mut v| {
                    v["id"] = json!(id.to_string());
                    v.to_string()
                });
        }
        match reply {
            Some(r) => respond(&mut stream, "200 OK", &r),
            None => respond(&mut stream, "202 Accepted", ""),
        }
    }
}

/// Binds loopback at `port` (0: any) and prints the address for the test to read.
fn listen(port: u16) -> std::net::TcpListener {
    let listener = std::net::TcpListener::bind(("127.0.0.1", port)).unwrap();
    println!("listening on {}", listener.local_addr().unwrap());
    std::io::stdout().flush().unwrap();
    listener
}

/// One HTTP request: its head (lowercased) and its body.
fn read_request(stream: &mut std::net::TcpStream) -> (String, Vec<u8>) {
    mcp_host_testkit::read_http_request(stream)
}

/// A complete response with a JSON body (or none), closing the connection.
fn respond(stream: &mut std::net::TcpStream, status: &str, body: &str) {
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

impl Server {
    fn has(&self, fault: &str) -> bool {
        self.opts.faults.iter().any(|f| f == fault)
    }

    fn write_raw(&self, text: &str) {
        let mut out = self.out.lock().unwrap();
        let _ = out.write_all(text.as_bytes());
        let _ = out.flush();
    }

    fn send(&self, v: Value) {
        self.write_raw(&format!("{v}\n"));
    }

    fn reply(&self, id: Value, result: Value) {
        self.stray_answers(&id);
        self.send(json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    /// `early-responses`: before the real answer to `id`, an answer to the request the
    /// client has not sent yet (`id + 1`) and one with `id` as a string.
    fn stray_answers(&self, id: &Value) {
        if let (true, Some(n)) = (self.has("early-responses"), id.as_i64()) {
            self.send(json!({"jsonrpc": "2.0", "id": n + 1, "result": {"stray": true}}));
            self.send(json!({"jsonrpc": "2.0", "id": n.to_string(), "result": {"stray": true}}));
        }
    }

    /// The wire faults: raw answers to `add` that no decoder should accept. Returns whether
    /// it answered.
    fn wire_fault(&self, id: &Value) -> bool {
        let line = if self.has("bad-utf16") {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"\ud800"}}]}}}}"#
            )
        } else if self.has("bad-envelope") {
            format!(r#"{{"jsonrpc":"1.0","id":{id},"result":{{"content":[]}}}}"#)
        } else if self.has("result-and-error") {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[]}},"error":{{"code":1,"message":"both"}}}}"#
            )
        } else if self.has("deep-result") {
            let (open, close) = ("[".repeat(200), "]".repeat(200));
            format!(r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[],"x":{open}{close}}}}}"#)
        } else {
            return false;
        };
        self.write_raw(&format!("{line}\n"));
        true
    }

    fn error(&self, id: Value, code: i64, message: &str, data: Option<Value>) {
        self.stray_answers(&id);
        let mut e = json!({"code": code, "message": message});
        if let Some(d) = data {
            e["data"] = d;
        }
        self.send(json!({"jsonrpc": "2.0", "id": id, "error": e}));
    }

    fn modern_meta_ok(params: &Value) -> bool {
        params
            .pointer("/_meta/io.modelcontextprotocol~1protocolVersion")
            .is_some()
    }

    /// `tools/list_changed`: pushed in the legacy era, only on an open listen stream in the
    /// modern one (a modern server may only notify on a stream the client opened).
    fn notify_tools_changed(&self) {
        match (self.locked, &self.listen) {
            (Locked::Modern, Some(listen)) => {
                let meta = json!({"io.modelcontextprotocol/subscriptionId": listen});
                self.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed", "params": {"_meta": meta}}));
            }
            (Locked::Modern, None) => {}
            _ => self.send(json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"})),
        }
    }

    fn log_request(&self, method: &str, params: &Value) {
        let Some(path) = &self.opts.request_log else {
            return;
        };
        // A call's trace context (SEP-414) when the host sent one: tests match it to the
        // host's span of the call.
        let line = match (
            params["name"].as_str(),
            params["_meta"]["traceparent"].as_str(),
        ) {
            (Some(name), Some(tp)) if method == "tools/call" => {
                format!("{method} {name} traceparent={tp}")
            }
            (Some(name), None) if method == "tools/call" => format!("{method} {name}"),
            _ => method.to_string(),
        };
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap();
        writeln!(f, "{line}").unwrap();
    }

    fn handle(&mut self, method: &str, id: Value, params: Value) {
        self.log_request(method, &params);
        let modern_request = Self::modern_meta_ok(&params);
        match method {
            "initialize" => self.initialize(id, &params),
            // `silent-discover`: an old server that ignores what it does not know.
            "server/discover" if self.has("silent-discover") => {}
            "server/discover" => self.discover(id),
            // Like the Python SDK: without a handshake, only enveloped requests are served.
            _ if !modern_request
                && (self.locked == Locked::Modern
                    || (self.locked == Locked::None && self.opts.era != EraMode::Legacy)) =>
            {
                self.error(
                    id,
                    -32602,
                    "params._meta must carry the protocol envelope",
                    None,
                )
            }
            "ping" => self.reply(id, json!({})),
            // `hang-list`: the handshake is answered, the tool list never is.
            "tools/list" if self.has("hang-list") => {}
            // `list-error`: the handshake works, every listing is refused.
            "tools/list" if self.has("list-error") => {
                self.error(id, -32603, "the tool list is unavailable", None)
            }
            "tools/list" => self.tools_list(id, &params),
            "prompts/list" => {
                let prompts = vec![
                    json!({"name": "greet", "arguments": [{"name": "who", "required": true}]}),
                    json!({"name": "plain"}),
                    json!({"description": "a prompt without a name"}),
                ];
                self.paged(id, &params, "prompts", prompts)
            }
            "resources/templates/list" => {
                let templates = vec![json!({"uriTemplate": "mem://notes/{id}", "name": "note"})];
                self.paged(id, &params, "resourceTemplates", templates)
            }
            "resources/list" => {
                let resources = (0..5)
                    .map(|i| json!({"uri": format!("mem://r{i}"), "name": format!("r{i}"), "mimeType": "text/plain"}))
                    .collect();
                self.paged(id, &params, "resources", resources)
            }
            "prompts/get" => match params["name"].as_str() {
                Some("greet") => {
                    let who = params["arguments"]["who"].as_str().unwrap_or("nobody");
                    self.reply(id, json!({"description": "a greeting", "messages": [
                        {"role": "user", "content": {"type": "text", "text": format!("Say hello to {who}.")}}
                    ]}))
                }
                Some("plain") => self.reply(id, json!({"messages": [
                    {"role": "user", "content": {"type": "text", "text": "A plain prompt.\u{1b}]0;pwned\u{7}"}}
                ]})),
                _ => self.error(id, -32602, "Unknown prompt", None),
            },
            "resources/read" => {
                let uri = params["uri"].as_str().unwrap_or_default();
                if uri.starts_with("mem://") {
                    self.reply(id, json!({"contents": [
                        {"uri": uri, "mimeType": "text/plain", "text": format!("contents of {uri}")}
                    ]}))
                } else {
                    self.error(id, -32002, "Resource not found", None)
                }
            }
            "tools/call" => self.tools_call(id, &params),
            "tasks/get" | "tasks/update" | "tasks/cancel" if self.has("tasks") => {
                self.tasks_method(method, id, &params)
            }
            "subscriptions/listen" => {
                let meta = json!({"io.modelcontextprotocol/subscriptionId": id});
                self.send(
                    json!({"jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
                    "params": {"notifications": {"toolsListChanged": true}, "_meta": meta}}),
                );
                self.listen = Some(id);
            }
            "notifications/initialized" => {}
            _ => self.error(id, -32601, "Method not found", None),
        }
    }

    fn initialize(&mut self, id: Value, params: &Value) {
        match (self.opts.era, self.locked) {
            (EraMode::Modern, _) | (EraMode::Dual, Locked::Modern) => {
                return self.error(id, -32022, "Unsupported protocol version",
                    Some(json!({"supported": ["2026-07-28"], "requested": params["protocolVersion"]})));
            }
            (EraMode::ProbeLocks, Locked::Broken) => {
                return self.error(
                    id,
                    -32600,
                    "connection is locked to the era of its first request",
                    None,
                );
            }
            _ => {}
        }
        self.locked = Locked::Legacy;
        let asked = params["protocolVersion"].as_str().unwrap_or_default();
        let version = if let Some(v) = &self.opts.answer_version {
            v.as_str()
        } else if ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"].contains(&asked) {
            asked
        } else {
            "2025-11-25"
        };
        let mut result = json!({
            "protocolVersion": version,
            "capabilities": {"tools": {"listChanged": true}, "prompts": {}, "resources": {}},
            "serverInfo": {"name": "fake", "version": "1.0.0"}
        });
        if let Some(text) = &self.opts.instructions {
            result["instructions"] = json!(text);
        }
        if self.has("hostile-text") {
            result["instructions"] = json!(mcp_host_testkit::HOSTILE_TEXT);
            result["serverInfo"]["name"] = json!(format!("fake{}", mcp_host_testkit::HOSTILE_TEXT));
        }
        if self.has("bad-utf16-handshake") {
            return self.bad_handshake_answer(&id, &result);
        }
        self.reply(id, result);
    }

    /// `bad-utf16-handshake`: the answer with a lone surrogate in the server's name.
    fn bad_handshake_answer(&self, id: &Value, result: &Value) {
        let text = json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
        self.write_raw(&format!("{}\n", text.replace("\"fake\"", "\"\\ud800\"")));
    }

    fn discover(&mut self, id: Value) {
        match (self.opts.era, self.locked) {
            (EraMode::Legacy, _) => self.error(id, -32601, "Method not found", None),
            (EraMode::ProbeLocks, _) => {
                self.locked = Locked::Broken;
                self.error(id, -32601, "Method not found", None)
            }
            (EraMode::Dual, Locked::Legacy) => {
                self.error(id, -32600, "this connection serves the handshake era", None)
            }
            _ => {
                self.locked = Locked::Modern;
                std::thread::sleep(self.opts.discover_delay);
                if self.has("discover-missing-fields") {
                    // Valid JSON-RPC, but a DiscoverResult without its required `ttlMs`
                    // and `cacheScope`.
                    return self.reply(
                        id,
                        json!({"resultType": "complete",
                        "supportedVersions": ["2026-07-28"], "capabilities": {}}),
                    );
                }
                if self.has("bad-utf16-handshake") {
                    let answer = json!({"resultType": "complete", "supportedVersions": ["2026-07-28"], "capabilities": {},
                        "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1.0.0"}}});
                    return self.bad_handshake_answer(&id, &answer);
                }
                let mut capabilities =
                    json!({"tools": {"listChanged": true}, "prompts": {}, "resources": {}});
                if self.has("tasks") {
                    capabilities["extensions"] = json!({"io.modelcontextprotocol/tasks": {}});
                }
                self.reply(id, json!({
                    "resultType": "complete",
                    "supportedVersions": ["2026-07-28"],
                    "capabilities": capabilities,
                    "ttlMs": 0, "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "fake", "version": "1.0.0"}}
                }))
            }
        }
    }
}
