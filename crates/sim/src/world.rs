//! One simulated run: a seed draws the servers (era, crashes, stray answers, delays, a
//! faulty pipe each way), the policy mode and trust, and a schedule of operations (calls
//! through the gate, approvals and refusals, cancellations, tool-list changes, restarts,
//! disabling); the real connection manager and gate run them on one thread under tokio's
//! paused clock, and the checker looks at what happened after every operation and once
//! more after shutdown.

use crate::checker::{CallEnd, Checker, Decided};
use crate::link::{self, Faults};
use crate::server::{self, Control, Instance, Profile, Received, Speaks};
use crate::web::{self, Web, WebFaults, WebProfile};
use mcp_host_client::harness::{Dial, Harness, Pipe, StateChange};
use mcp_host_client::{Manager, ManagerOptions, ServerSetup, ToolCaller};
use mcp_host_core::decision::Mode;
use mcp_host_core::event::CallSource;
use mcp_host_core::{ServerId, ServerState, TransportKind};
use mcp_host_engine::{CallFacts, Gate, Gated, Hooks};
use mcp_host_policy::{Policy, Remembered, Rule, RuleSource};
use mcp_host_registry::catalogue::{Catalogue, ServerTools};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::json;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

/// How long a server may take to start, and a call to answer, in every run.
pub const STARTUP_TIMEOUT: Duration = Duration::from_secs(5);
pub const TOOL_TIMEOUT: Duration = Duration::from_secs(3);
/// The longest the manager's shutdown may take.
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(3);

/// A server as the seed drew it.
#[derive(Clone, Debug)]
pub struct Drawn {
    pub name: String,
    pub profile: Profile,
    pub to_server: Faults,
    pub from_server: Faults,
    pub trusted: bool,
    /// A remote server (Streamable HTTP) and how it serves; `None` is a stdio server.
    pub web: Option<WebProfile>,
}

/// What a run did, and what the checker found.
#[derive(Debug)]
pub struct Outcome {
    pub seed: u64,
    /// One line per operation, state change and call end, with simulated times: two runs
    /// of one seed must produce the same trace.
    pub trace: Vec<String>,
    pub violations: Vec<String>,
    /// What the run reached ("http ready 2026-07-28", "stdio call answered", ...), so a
    /// budget of seeds can be required to reach everything it is meant to exercise.
    pub covered: BTreeSet<String>,
}

/// Runs seed `seed` to the end on a fresh single-threaded runtime with a paused clock.
pub fn run(seed: u64, base: &ManagerOptions) -> Outcome {
    let mut builder = tokio::runtime::Builder::new_current_thread();
    builder.enable_time().start_paused(true);
    // Which ready branch of a `select!` goes first is tokio's random draw; seeded, a run
    // replays exactly (the API is behind tokio's unstable flag, which scripts/sim.sh sets).
    #[cfg(tokio_unstable)]
    builder.rng_seed(tokio::runtime::RngSeed::from_bytes(&seed.to_le_bytes()));
    let rt = builder.build();
    match rt {
        Ok(rt) => rt.block_on(simulate(seed, base.clone())),
        Err(e) => Outcome {
            seed,
            trace: Vec::new(),
            violations: vec![format!("no runtime: {e}")],
            covered: BTreeSet::new(),
        },
    }
}

fn draw_servers(rng: &mut StdRng) -> Vec<Drawn> {
    let count = rng.random_range(1..=3);
    (0..count)
        .map(|i| {
            let speaks = match rng.random_range(0..20) {
                0..=5 => Speaks::Legacy,
                6..=11 => Speaks::Modern,
                12..=18 => Speaks::Dual,
                _ => Speaks::Wrong,
            };
            let faulty = |rng: &mut StdRng| match rng.random_range(0..3) {
                0 => Faults::none(),
                1 => Faults::all(0.01),
                _ => Faults::all(0.04),
            };
            let profile = Profile {
                speaks,
                crash_chance: [0.0, 0.02, 0.08][rng.random_range(0..3)],
                stray_chance: [0.0, 0.1][rng.random_range(0..2)],
                max_answer_delay: Duration::from_millis(rng.random_range(0..2000)),
                handshake_delay: match rng.random_range(0..10) {
                    0 => STARTUP_TIMEOUT + Duration::from_secs(1),
                    1 => Duration::from_millis(rng.random_range(1..4000)),
                    _ => Duration::ZERO,
                },
            };
            let to_server = faulty(rng);
            let from_server = faulty(rng);
            let trusted = rng.random_bool(0.5);
            let web = rng.random_bool(0.35).then(|| {
                let listen = rng.random_bool(0.7);
                WebProfile {
                    faults: match rng.random_range(0..3) {
                        0 => WebFaults::default(),
                        1 => WebFaults::all(0.01),
                        _ => WebFaults::all(0.04),
                    },
                    events: rng.random_bool(0.5),
                    listen,
                    answers_on_get: listen && rng.random_bool(0.2),
                    down_for: Duration::from_millis(rng.random_range(0..4000)),
                    token_life: rng
                        .random_bool(0.3)
                        .then(|| Duration::from_secs(rng.random_range(5..60))),
                }
            });
            Drawn {
                name: format!("s{i}"),
                profile,
                to_server,
                from_server,
                trusted,
                web,
            }
        })
        .collect()
}

/// The servers' shared state, as the dial, the web and the operations see it.
#[derive(Clone)]
pub(crate) struct Fleet {
    pub(crate) seed: u64,
    drawn: Arc<BTreeMap<String, Drawn>>,
    controls: Arc<BTreeMap<String, Arc<Mutex<Control>>>>,
    received: Arc<Mutex<Vec<Received>>>,
}

impl Fleet {
    /// A new instance of `name` (one process start, or one remote session), counted, and
    /// which start of that server it is.
    pub(crate) fn instance(&self, name: &str) -> Option<(Instance, u32)> {
        let (drawn, control) = (self.drawn.get(name)?, self.controls.get(name)?);
        let start = (control.lock())
            .map(|mut c| {
                c.started += 1;
                c.live += 1;
                c.started
            })
            .unwrap_or(0);
        let instance = Instance {
            name: name.to_string(),
            profile: drawn.profile.clone(),
            control: control.clone(),
            log: self.received.clone(),
            rng: server::instance_rng(self.seed, name, start * 3),
        };
        Some((instance, start))
    }

    /// Starts an instance of `name` behind a faulty link each way.
    fn dial(&self, name: &str) -> Result<Pipe, String> {
        let (Some(drawn), Some((instance, start))) = (self.drawn.get(name), self.instance(name))
        else {
            return Err(format!("no simulated server `{name}`"));
        };
        let rng = |salt: u32| server::instance_rng(self.seed, name, start * 3 + salt);
        // host ⇄ link ⇄ server, each arrow one duplex.
        let (host_out, link_in) = tokio::io::duplex(64 * 1024);
        let (link_out, server_in) = tokio::io::duplex(64 * 1024);
        let (server_out, link_back_in) = tokio::io::duplex(64 * 1024);
        let (link_back_out, host_in) = tokio::io::duplex(64 * 1024);
        tokio::spawn(link::carry(link_in, link_out, drawn.to_server, rng(1)));
        tokio::spawn(link::carry(
            link_back_in,
            link_back_out,
            drawn.from_server,
            rng(2),
        ));
        tokio::spawn(instance.run(server_in, server_out));
        Ok(Pipe {
            from_server: host_in,
            to_server: host_out,
        })
    }
}

fn policy() -> Policy {
    let rule = |pattern: &str, key: &str| Rule {
        pattern: pattern.into(),
        when: None,
        source: RuleSource {
            scope: "flag".into(),
            file: "simulation".into(),
            key: key.into(),
        },
    };
    Policy {
        allow: vec![rule("*echo", "allow[0]")],
        ask: vec![rule("*slow", "ask[0]")],
        deny: vec![rule("*forbidden", "deny[0]")],
        taint_exempt: Default::default(),
    }
}

fn setup(d: &Drawn) -> Result<ServerSetup, String> {
    let raw = match d.web {
        // The address is never dialled: the harness reaches remote servers in process.
        Some(_) => mcp_host_config::RawServer {
            url: Some(format!("http://127.0.0.1:9/{}", d.name)),
            headers: BTreeMap::from([(
                "Authorization".to_string(),
                format!("Bearer {}", web::token_for(&d.name)),
            )]),
            ..mcp_host_config::RawServer::default()
        },
        None => mcp_host_config::RawServer {
            command: Some("simulated".into()),
            ..mcp_host_config::RawServer::default()
        },
    };
    let mut spec = raw
        .to_spec(&d.name, mcp_host_config::Scope::Flag, &|_| None)
        .map_err(|e| e.to_string())?;
    spec.startup_timeout = STARTUP_TIMEOUT;
    spec.tool_timeout = TOOL_TIMEOUT;
    spec.facts.trusted = d.trusted;
    Ok(ServerSetup {
        id: ServerId::new(&d.name),
        transport: if d.web.is_some() {
            TransportKind::Http
        } else {
            TransportKind::Stdio
        },
        spec: Some(spec),
        initial: ServerState::Starting,
    })
}

/// The catalogue of what the ready servers list now.
fn catalogue(m: &Manager, drawn: &BTreeMap<String, Drawn>) -> Catalogue {
    let servers = (m.ids())
        .filter(|id| m.status(id).is_some_and(|s| s.state == ServerState::Ready))
        .filter_map(|id| {
            let tools = m.tools(id)?;
            let facts = mcp_host_core::ServerFacts {
                trusted: drawn.get(id.as_str()).is_some_and(|d| d.trusted),
                ..Default::default()
            };
            Some(ServerTools {
                facts: Arc::new(facts),
                ..ServerTools::new(id.clone(), tools.items.clone())
            })
        })
        .collect();
    Catalogue::build(servers)
}

struct Sim {
    rng: StdRng,
    fleet: Fleet,
    web: Arc<Web>,
    manager: Manager,
    gate: Gate,
    mode: Mode,
    checker: Checker,
    states: mpsc::UnboundedReceiver<StateChange>,
    ends: mpsc::UnboundedSender<CallEnd>,
    ended: mpsc::UnboundedReceiver<CallEnd>,
    calls: Vec<(u64, CancellationToken, JoinHandle<()>)>,
    next_nonce: u64,
    covered: BTreeSet<String>,
    started: Instant,
    trace: Vec<String>,
}

async fn simulate(seed: u64, mut opts: ManagerOptions) -> Outcome {
    let mut rng = StdRng::seed_from_u64(seed);
    let drawn = draw_servers(&mut rng);
    let mode = [Mode::Ask, Mode::Auto, Mode::Deny][rng.random_range(0..3)];
    let fleet = Fleet {
        seed,
        controls: Arc::new(
            (drawn.iter())
                .map(|d| (d.name.clone(), Arc::default()))
                .collect(),
        ),
        drawn: Arc::new(drawn.iter().map(|d| (d.name.clone(), d.clone())).collect()),
        received: Arc::default(),
    };
    let (states_tx, states) = mpsc::unbounded_channel();
    let dialer = fleet.clone();
    let remote = (drawn.iter())
        .filter_map(|d| Some((d.name.clone(), d.web?)))
        .collect();
    let web = Arc::new(Web::new(fleet.clone(), &remote));
    opts.harness = Some(Harness {
        dial: Dial(Arc::new(move |name: String| dialer.dial(&name))),
        web: web.clone(),
        seed,
        states: states_tx,
    });
    let retry = opts.retry.clone();
    let setups: Result<Vec<_>, _> = drawn.iter().map(setup).collect();
    let setups = match setups {
        Ok(s) => s,
        Err(e) => {
            return Outcome {
                seed,
                trace: Vec::new(),
                violations: vec![e],
                covered: BTreeSet::new(),
            };
        }
    };
    let (manager, caller) = Manager::start(setups, opts);
    let gate = gate(caller);
    let (ends, ended) = mpsc::unbounded_channel();
    let mut sim = Sim {
        checker: Checker::new(retry, &drawn),
        rng,
        fleet,
        web,
        manager,
        gate,
        mode,
        states,
        ends,
        ended,
        calls: Vec::new(),
        next_nonce: 1,
        covered: BTreeSet::new(),
        started: Instant::now(),
        trace: vec![format!("servers {drawn:?} mode {mode:?}")],
    };
    let steps = sim.rng.random_range(20..60);
    for step in 0..steps {
        let pause = Duration::from_millis(sim.rng.random_range(0..3000));
        tokio::time::sleep(pause).await;
        // What happened before this operation is checked before it (a restart request
        // must come after the states published before it).
        sim.observe();
        sim.operate(step).await;
        sim.observe();
    }
    sim.finish().await
}

fn gate(caller: ToolCaller) -> Gate {
    Gate::new(caller, policy(), Hooks::default(), None)
}

impl Sim {
    fn now_ms(&self) -> u128 {
        self.started.elapsed().as_millis()
    }

    fn note(&mut self, line: String) {
        let at = self.now_ms();
        self.trace.push(format!("{at:>7} {line}"));
    }

    fn transport(&self, server: &str) -> &'static str {
        match self.fleet.drawn.get(server).and_then(|d| d.web) {
            Some(_) => "http",
            None => "stdio",
        }
    }

    fn pick_server(&mut self) -> String {
        let names: Vec<&String> = self.fleet.drawn.keys().collect();
        names[self.rng.random_range(0..names.len())].clone()
    }

    /// Every draw is made whatever the servers' states, so a seed's schedule of draws
    /// never depends on how the run went.
    async fn operate(&mut self, step: usize) {
        let name = self.pick_server();
        let pick: u32 = self.rng.random();
        match self.rng.random_range(0..100) {
            0..=59 => self.call(name).await,
            60..=69 => {
                if let Some(control) = self.fleet.controls.get(&name)
                    && let Ok(mut c) = control.lock()
                {
                    c.generation += 1;
                    if let Some(tx) = &c.announce {
                        let _ = tx.send(());
                    }
                }
                self.note(format!("step {step}: {name} changes its tools"));
            }
            70..=79 => {
                if self.settled(&name) {
                    // What a person does for a server that wants a sign-in: sign in, then
                    // have it connect again.
                    let sign_in = self.web.wants_sign_in(&name);
                    if sign_in {
                        self.web.sign_in(&name);
                    }
                    self.checker.restart_requested(&name);
                    self.manager.reconnect(&ServerId::new(&name));
                    let what = if sign_in {
                        "sign in and restart"
                    } else {
                        "restart"
                    };
                    self.note(format!("step {step}: {what} {name}"));
                }
            }
            80..=87 => {
                if self.settled(&name) {
                    let id = ServerId::new(&name);
                    let enable =
                        self.manager.status(&id).map(|s| s.state) == Some(ServerState::Disabled);
                    self.checker.restart_requested(&name);
                    self.manager.set_enabled(&id, enable);
                    self.note(format!("step {step}: set {name} enabled={enable}"));
                }
            }
            _ => {
                if !self.calls.is_empty() {
                    let i = pick as usize % self.calls.len();
                    let nonce = self.calls[i].0;
                    self.calls[i].1.cancel();
                    self.note(format!("step {step}: cancel call {nonce}"));
                }
            }
        }
    }

    /// Whether the server's task is waiting where a restart is taken at once (so the
    /// checker knows where the new retry budget starts).
    fn settled(&self, name: &str) -> bool {
        let state = self.manager.status(&ServerId::new(name)).map(|s| s.state);
        matches!(
            state,
            Some(
                ServerState::Ready
                    | ServerState::Failed { .. }
                    | ServerState::NeedsAuth { .. }
                    | ServerState::Disabled
            )
        )
    }

    async fn call(&mut self, server: String) {
        let tools = [
            "echo",
            "echo",
            "slow",
            "hang",
            "forbidden",
            "fleeting",
            "chatty",
            "ask",
        ];
        let tool = tools[self.rng.random_range(0..tools.len())];
        let ms = self.rng.random_range(0..5000);
        let approve = self.rng.random_bool(0.7);
        // A person's own call (a direct tool command) is its own approval; a model's may
        // be asked about. Neither gets past a deny rule.
        let source = if self.rng.random_bool(0.2) {
            CallSource::Person
        } else {
            CallSource::Model
        };
        let nonce = self.next_nonce;
        self.next_nonce += 1;
        let catalogue = catalogue(&self.manager, &self.fleet.drawn);
        let Some(entry) = catalogue.find(&ServerId::new(&server), tool) else {
            self.note(format!("call {nonce}: {server}/{tool} not offered"));
            return;
        };
        let args = json!({"nonce": nonce, "ms": ms});
        let facts = CallFacts {
            mode: self.mode,
            provenance: &Default::default(),
            remembered: &Remembered::default(),
        };
        let gated = self.gate.decide(entry, &args, facts, source).await;
        let permit = match gated {
            Gated::Allowed(permit, _) => Some(permit),
            Gated::Ask(asked, _) if approve => Some(self.gate.approved(asked)),
            Gated::Ask(..) | Gated::Denied(_) => None,
        };
        let verdict = if permit.is_some() { "sent" } else { "refused" };
        self.note(format!(
            "call {nonce}: {server}/{tool} by {source:?} {verdict}"
        ));
        if tool == "forbidden" && permit.is_some() {
            self.checker.violation(format!(
                "call {nonce}: a tool a rule denies was let through"
            ));
        }
        let Some(permit) = permit else {
            self.checker.decided(nonce, Decided::Refused);
            return;
        };
        self.checker.decided(
            nonce,
            Decided::Permitted {
                server: server.clone(),
                tool: tool.to_string(),
            },
        );
        let cancel = CancellationToken::new();
        let sent = self.gate.send(permit, cancel.clone(), None);
        let ends = self.ends.clone();
        let began = Instant::now();
        let called = server.clone();
        let task = tokio::spawn(async move {
            let outcome = sent.await;
            let result = match outcome {
                Ok(o) => Ok(serde_json::to_string(&o.content).unwrap_or_default()),
                Err(e) => Err(e.to_string()),
            };
            let _ = ends.send(CallEnd {
                nonce,
                server: called,
                tool,
                began,
                ended: Instant::now(),
                result,
            });
        });
        self.calls.push((nonce, cancel, task));
    }

    /// Feeds the checker what happened since the last look.
    fn observe(&mut self) {
        while let Ok(change) = self.states.try_recv() {
            let at = change.at.duration_since(self.started).as_millis();
            let why = change
                .state
                .error()
                .map(|e| format!(" ({e})"))
                .unwrap_or_default();
            self.trace.push(format!(
                "{at:>7} {} → {}{why}",
                change.server,
                change.state.label()
            ));
            if change.state == ServerState::Ready
                && let Some(era) = self.manager.status(&change.server).and_then(|s| s.era)
            {
                let transport = self.transport(change.server.as_str());
                self.covered
                    .insert(format!("{transport} ready {}", era.version));
            }
            if let ServerState::Failed { .. }
            | ServerState::Backoff { .. }
            | ServerState::NeedsAuth { .. } = change.state
            {
                let transport = self.transport(change.server.as_str());
                let what = change.state.label();
                self.covered.insert(format!("{transport} {what}"));
            }
            self.checker.state(&change);
        }
        while let Ok(end) = self.ended.try_recv() {
            let at = end.ended.duration_since(self.started).as_millis();
            let how = match &end.result {
                Ok(_) => "answered".to_string(),
                Err(e) => format!("failed: {e}"),
            };
            self.trace.push(format!("{at:>7} call {} {how}", end.nonce));
            if end.result.is_ok() {
                let transport = self.transport(&end.server);
                self.covered.insert(format!("{transport} call answered"));
            }
            self.calls.retain(|(n, ..)| *n != end.nonce);
            self.checker.call_ended(end);
        }
        if let Ok(received) = self.fleet.received.lock() {
            self.checker.received(&received);
        }
        for id in self.manager.ids() {
            if let Some(status) = self.manager.status(id) {
                self.checker.status(id.as_str(), &status);
            }
        }
    }

    async fn finish(mut self) -> Outcome {
        // Every call ends by its deadline; waiting longer than the longest shows one that did not.
        let open: Vec<(u64, JoinHandle<()>)> =
            self.calls.drain(..).map(|(n, _, t)| (n, t)).collect();
        let longest = crate::checker::call_deadline("chatty") + Duration::from_secs(1);
        for (nonce, task) in open {
            if tokio::time::timeout(longest, task).await.is_err() {
                self.checker.violation(format!("call {nonce} never ended"));
            }
        }
        self.observe();
        // Stopping waits for nothing a server does: at most the 2 s a session gives its
        // transport to close (a stdio server's process gets its own grace, not simulated).
        let began = Instant::now();
        self.manager.shutdown().await;
        let took = began.elapsed();
        if took > SHUTDOWN_LIMIT {
            self.checker
                .violation(format!("shutdown took {took:?}, over {SHUTDOWN_LIMIT:?}"));
        }
        self.note("shut down".into());
        // What shutdown started (a server's last answers, links draining) gets its time.
        tokio::time::sleep(Duration::from_secs(30)).await;
        self.observe();
        for finding in self.web.findings() {
            self.checker.violation(finding);
        }
        // A remote server outlives the host, but not the run: its sessions end here.
        self.web.stop();
        drop(self.gate);
        drop(self.manager);
        tokio::time::sleep(Duration::from_secs(1)).await;
        let alive = tokio::runtime::Handle::current()
            .metrics()
            .num_alive_tasks();
        if alive != 0 {
            self.checker
                .violation(format!("{alive} tasks still alive after shutdown"));
        }
        self.checker.after_shutdown(&self.fleet.controls);
        Outcome {
            seed: self.fleet.seed,
            trace: self.trace,
            violations: self.checker.into_violations(),
            covered: self.covered,
        }
    }
}
