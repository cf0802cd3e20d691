//! A simulated MCP server: one instance per "process start", speaking newline-delimited
//! JSON-RPC over an in-memory pipe, in the era its profile says (or lying about it), with
//! the faults a real server has: it answers concurrent calls out of order, sends stray and
//! duplicate answers, crashes mid-call, hangs, changes its tool list, and answers a
//! corrupted line with a parse error. Every `tools/call` it receives is logged with the
//! nonce the simulation put in its arguments, so the checker can match it to a gate decision.

use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Which protocol a server speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaks {
    /// `initialize` only; `server/discover` is an unknown method.
    Legacy,
    /// 2026-07-28 only; `initialize` is refused with the unsupported-version error.
    Modern,
    /// Both, whichever comes first.
    Dual,
    /// Answers the handshake with a version no host speaks (the wrong era).
    Wrong,
}

/// How one simulated server behaves, drawn from the seed.
#[derive(Clone, Debug)]
pub struct Profile {
    pub speaks: Speaks,
    /// Chance that an instance crashes on any one request it reads.
    pub crash_chance: f64,
    /// Chance that an answer is sent twice, or preceded by a stray answer to no request.
    pub stray_chance: f64,
    /// Longest time an answer takes (answers to concurrent calls overtake each other).
    pub max_answer_delay: Duration,
    /// How long the handshake answer takes (past the start-up timeout, it is a hang).
    pub handshake_delay: Duration,
}

/// One `tools/call` a server instance received.
#[derive(Clone, Debug)]
pub struct Received {
    pub server: String,
    pub tool: String,
    pub nonce: Option<u64>,
}

/// What every instance of one server shares: the current tool list's generation (bumped
/// by the simulation to change it) and the live instances' stop handles.
#[derive(Debug, Default)]
pub struct Control {
    pub generation: u64,
    /// Tells the live instance its tool list changed (a `list_changed` notification).
    pub announce: Option<mpsc::UnboundedSender<()>>,
    pub started: u32,
    /// Instances running now.
    pub live: u32,
    /// Answers from the client to requests no instance made.
    pub wrong_answers: Vec<String>,
}

/// The tools of generation `generation`: the three every generation has, and one that
/// comes and goes (so a call decided on an old list can find its tool gone).
pub fn tools(generation: u64) -> Vec<Value> {
    let nonce = json!({"type": "object", "properties": {
        "nonce": {"type": "integer"}, "ms": {"type": "integer"}}});
    let mut tools = vec![
        json!({"name": "echo", "description": "Echoes the nonce", "inputSchema": nonce}),
        json!({"name": "slow", "description": "Echoes the nonce after ms", "inputSchema": nonce}),
        json!({"name": "hang", "description": "Never answers", "inputSchema": nonce}),
        json!({"name": "forbidden", "description": "Denied by policy", "inputSchema": nonce}),
        json!({"name": "chatty", "description": "Progress forever", "inputSchema": nonce}),
        json!({"name": "ask", "description": "Asks the client first", "inputSchema": nonce}),
    ];
    if generation % 2 == 1 {
        tools.push(json!({"name": "fleeting", "description": format!("Generation {generation}"), "inputSchema": nonce}));
    }
    tools
}

/// A running instance's ends and task handles, for the simulation's link to wire up.
pub struct Instance {
    pub name: String,
    pub profile: Profile,
    pub control: Arc<Mutex<Control>>,
    pub log: Arc<Mutex<Vec<Received>>>,
    pub rng: StdRng,
}

impl Instance {
    /// Serves requests from `input` and writes answers to `output` until the client closes
    /// `input` or the instance crashes (then both ends drop, as a dead process's pipes do).
    pub async fn run(mut self, input: DuplexStream, output: DuplexStream) {
        let (tx, rx) = mpsc::unbounded_channel::<String>();
        let crashed = CancellationToken::new();
        let writer = tokio::spawn(write_lines(output, rx, crashed.clone()));
        let (announce_tx, mut announce_rx) = mpsc::unbounded_channel();
        if let Ok(mut c) = self.control.lock() {
            c.announce = Some(announce_tx);
        }
        let mut lines = BufReader::new(input).lines();
        let mut state = State::default();
        loop {
            let line = tokio::select! {
                biased;
                () = crashed.cancelled() => break,
                Some(()) = announce_rx.recv() => {
                    self.announce(&state, &tx);
                    continue;
                }
                line = lines.next_line() => line,
            };
            let Ok(Some(line)) = line else { break };
            if self.rng.random_bool(self.profile.crash_chance) {
                crashed.cancel();
                break;
            }
            self.handle(&line, &mut state, &tx, &crashed);
        }
        // Whatever was still to come (late answers, progress) stops with the instance.
        crashed.cancel();
        drop(tx);
        let _ = writer.await;
        if let Ok(mut c) = self.control.lock() {
            c.live -= 1;
        }
    }

    fn handle(
        &mut self,
        line: &str,
        state: &mut State,
        tx: &mpsc::UnboundedSender<String>,
        crashed: &CancellationToken,
    ) {
        let Ok(msg) = serde_json::from_str::<Value>(line) else {
            let e = json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32700, "message": "Parse error"}});
            let _ = tx.send(e.to_string());
            return;
        };
        let method = msg["method"].as_str().unwrap_or_default().to_string();
        let Some(id) = msg.get("id").cloned() else {
            return; // A notification (initialized, cancelled): nothing to answer.
        };
        if msg.get("method").is_none() {
            return self.answered(&id, state);
        }
        if id.is_null() {
            return;
        }
        if method == "tools/call" && msg["params"]["name"] == "ask" {
            self.ask_client(state, tx);
        }
        let answer = match self.answer(&method, &msg["params"], state) {
            Answer::Now(result) => result,
            Answer::Never => return,
            Answer::Crash => {
                crashed.cancel();
                return;
            }
            Answer::ProgressForever(token) => {
                let tx = tx.clone();
                let crashed = crashed.clone();
                tokio::spawn(async move {
                    for n in 1u64.. {
                        tokio::select! {
                            () = tokio::time::sleep(Duration::from_secs(1)) => {}
                            () = crashed.cancelled() => return,
                        }
                        let note = json!({"jsonrpc": "2.0", "method": "notifications/progress",
                            "params": {"progressToken": token, "progress": n}});
                        if tx.send(note.to_string()).is_err() {
                            return;
                        }
                    }
                });
                return;
            }
            Answer::After(delay, result) => {
                let tx = tx.clone();
                let line = envelope(&id, result);
                let crashed = crashed.clone();
                tokio::spawn(async move {
                    tokio::select! {
                        () = tokio::time::sleep(delay) => { let _ = tx.send(line); }
                        () = crashed.cancelled() => {}
                    }
                });
                return;
            }
        };
        if self.rng.random_bool(self.profile.stray_chance) {
            // An answer to an id no request had (far past any the client used).
            let stray = json!({"jsonrpc": "2.0", "id": 1_000_000 + self.rng.random_range(0..1000), "result": {}});
            let _ = tx.send(stray.to_string());
        }
        let line = envelope(&id, answer);
        if self.rng.random_bool(self.profile.stray_chance) {
            let _ = tx.send(line.clone());
        }
        let _ = tx.send(line);
    }

    fn answer(&mut self, method: &str, params: &Value, state: &mut State) -> Answer {
        let handshake = |result: Value| match self.profile.handshake_delay {
            Duration::ZERO => Answer::Now(Ok(result)),
            d => Answer::After(d, Ok(result)),
        };
        let caps = json!({"tools": {"listChanged": true}});
        let info = json!({"name": self.name, "version": "1.0.0"});
        match (method, self.profile.speaks) {
            ("initialize", Speaks::Modern) => Answer::Now(Err(json!({"code": -32022,
                "message": "Unsupported protocol version", "data": {"supported": ["2026-07-28"]}}))),
            ("initialize", speaks) => {
                let version = match speaks {
                    Speaks::Wrong => "1999-01-01",
                    _ => params["protocolVersion"].as_str().unwrap_or("2025-11-25"),
                };
                state.modern = false;
                handshake(
                    json!({"protocolVersion": version, "capabilities": caps, "serverInfo": info}),
                )
            }
            ("server/discover", Speaks::Legacy) => Answer::Now(Err(method_not_found())),
            ("server/discover", speaks) => {
                let version = if speaks == Speaks::Wrong {
                    "1999-01-01"
                } else {
                    "2026-07-28"
                };
                state.modern = true;
                handshake(
                    json!({"resultType": "complete", "supportedVersions": [version],
                    "capabilities": caps, "ttlMs": 0, "cacheScope": "private",
                    "_meta": {"io.modelcontextprotocol/serverInfo": info}}),
                )
            }
            ("ping", _) => Answer::Now(Ok(json!({}))),
            ("subscriptions/listen", _) => {
                state.listen = Some(params.clone());
                Answer::Never // The stream stays open for the session's life.
            }
            ("tools/list", _) => {
                let generation = self.control.lock().map(|c| c.generation).unwrap_or(0);
                self.delayed(Ok(json!({"tools": tools(generation)})))
            }
            ("tools/call", _) => self.call(params),
            _ => Answer::Now(Err(method_not_found())),
        }
    }

    fn call(&mut self, params: &Value) -> Answer {
        let tool = params["name"].as_str().unwrap_or_default().to_string();
        let nonce = params["arguments"]["nonce"].as_u64();
        if let Ok(mut log) = self.log.lock() {
            log.push(Received {
                server: self.name.clone(),
                tool: tool.clone(),
                nonce,
            });
        }
        let text = |n: Option<u64>| {
            Ok(json!({"content": [{"type": "text", "text": format!("nonce:{}", n.unwrap_or(0))}]}))
        };
        if self.rng.random_bool(self.profile.crash_chance) {
            return Answer::Crash; // Mid-call: the request arrived, no answer will.
        }
        match tool.as_str() {
            "hang" => Answer::Never,
            // Reports progress every second and never answers: only the ceiling on a
            // request's whole time (not its idle deadline) can end it.
            "chatty" => match params.pointer("/_meta/progressToken") {
                Some(token) => Answer::ProgressForever(token.clone()),
                None => Answer::Never,
            },
            "slow" => {
                let ms = params["arguments"]["ms"].as_u64().unwrap_or(0);
                Answer::After(Duration::from_millis(ms), text(nonce))
            }
            _ => self.delayed(text(nonce)),
        }
    }

    fn delayed(&mut self, result: Result<Value, Value>) -> Answer {
        let most = self.profile.max_answer_delay.as_millis() as u64;
        match self.rng.random_range(0..=most) {
            0 => Answer::Now(result),
            ms => Answer::After(Duration::from_millis(ms), result),
        }
    }

    /// `ask`: before answering, the server asks the client two things of its own (a
    /// `ping`, and an elicitation the host declines, no person being there), with a string
    /// id and a number id that a client's own requests also use.
    fn ask_client(&mut self, state: &mut State, tx: &mpsc::UnboundedSender<String>) {
        state.asked_count += 1;
        let n = state.asked_count;
        let ping = json!({"jsonrpc": "2.0", "id": format!("srv-{n}"), "method": "ping"});
        let form = json!({"jsonrpc": "2.0", "id": n, "method": "elicitation/create",
            "params": {"message": "Which?", "requestedSchema": {"type": "object",
                "properties": {"x": {"type": "string"}}}}});
        for request in [ping, form] {
            state.asked.insert(request["id"].to_string());
            let _ = tx.send(request.to_string());
        }
    }

    /// An answer from the client: it must be to a request this instance made (the pipe may
    /// deliver one twice, so a second answer is not counted against the client).
    fn answered(&mut self, id: &Value, state: &mut State) {
        let key = id.to_string();
        if state.asked.remove(&key) {
            state.answered.insert(key);
        } else if !state.answered.contains(&key)
            && let Ok(mut c) = self.control.lock()
        {
            c.wrong_answers
                .push(format!("the client answered {key}, which was never asked"));
        }
    }

    /// `tools/list_changed`: pushed in the legacy era, on the open listen stream in the
    /// modern one (none open: nothing may be sent).
    fn announce(&self, state: &State, tx: &mpsc::UnboundedSender<String>) {
        let note = match (state.modern, &state.listen) {
            (true, None) => return,
            (true, Some(_)) => {
                json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed",
                "params": {"_meta": {"io.modelcontextprotocol/subscriptionId": "sim"}}})
            }
            (false, _) => json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}),
        };
        let _ = tx.send(note.to_string());
    }
}

#[derive(Default)]
struct State {
    modern: bool,
    listen: Option<Value>,
    asked_count: u64,
    /// The ids (as JSON text) of requests made to the client and not answered yet, and
    /// those answered.
    asked: std::collections::BTreeSet<String>,
    answered: std::collections::BTreeSet<String>,
}

enum Answer {
    Now(Result<Value, Value>),
    After(Duration, Result<Value, Value>),
    Never,
    ProgressForever(Value),
    Crash,
}

fn method_not_found() -> Value {
    json!({"code": -32601, "message": "Method not found"})
}

fn envelope(id: &Value, answer: Result<Value, Value>) -> String {
    match answer {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    }
    .to_string()
}

async fn write_lines(
    mut out: DuplexStream,
    mut rx: mpsc::UnboundedReceiver<String>,
    crashed: CancellationToken,
) {
    loop {
        let line = tokio::select! {
            biased;
            () = crashed.cancelled() => return,
            line = rx.recv() => line,
        };
        let Some(mut line) = line else { return };
        line.push('\n');
        if out.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// A fresh generator for an instance: the server's seed and its start count, so every
/// restart of every server draws its own, replayable sequence.
pub fn instance_rng(seed: u64, server: &str, start: u32) -> StdRng {
    let mixed = server.bytes().fold(
        seed ^ u64::from(start).wrapping_mul(0x9E37_79B9_7F4A_7C15),
        |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3),
    );
    StdRng::seed_from_u64(mixed)
}
