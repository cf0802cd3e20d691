//! Deterministic simulation of mcp-host's client side. The real connection manager,
//! sessions, stdio wire, Streamable HTTP transport and call gate run on one thread under
//! tokio's paused clock; the servers are simulated in the same process, behind in-memory
//! pipes that drop, delay, duplicate, truncate, corrupt, close and hang, or behind a
//! simulated HTTP front that refuses, fails, resets, expires sessions, hangs and cuts
//! streams; a seed decides everything (servers, faults, schedule, retry jitter), so a
//! failing seed replays the same run. What it covers and what it does not is in
//! `docs/architecture.md`.

pub mod checker;
pub mod link;
pub mod server;
pub mod web;
pub mod world;

pub use world::{Outcome, run};

use mcp_host_client::backoff::{Backoff, RetryPolicy};
use mcp_host_client::{ManagerOptions, SupervisorCommand};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

/// Which of some exclusive events happens, given each one's chance (summing to at most 1):
/// its index, or `None` for none of them. One draw, so a seed's sequence stays the same
/// whatever the chances are.
pub(crate) fn pick(rng: &mut rand::rngs::StdRng, chances: &[f64]) -> Option<usize> {
    use rand::Rng;
    let roll: f64 = rng.random();
    let mut edge = 0.0;
    chances.iter().position(|p| {
        edge += p;
        roll < edge
    })
}

/// The manager's options for every run (the harness is added per seed): a short backoff
/// with jitter, so retries and restarts happen often inside a run.
pub fn base_options() -> Result<ManagerOptions, String> {
    Ok(ManagerOptions {
        supervisor: SupervisorCommand::default(),
        host_env: Arc::new(BTreeMap::new()),
        retry: RetryPolicy {
            backoff: Backoff {
                base: Duration::from_millis(200),
                max: Duration::from_secs(4),
                jitter: 0.2,
            },
            initial_retries: 3,
            restart_budget: 3,
            restart_window: Duration::from_secs(3600),
            http_reconnects: 3,
        },
        http_client: mcp_host_client::http_client(Duration::from_secs(1))
            .map_err(|e| e.to_string())?
            .into(),
        health_interval: Duration::from_secs(30),
        ask_person: None,
        sign_in_here: false,
        credentials: None,
        harness: None,
        log_dir: None,
    })
}

/// What every run of a budget of seeds reached, together.
#[derive(Debug, Default)]
pub struct Covered {
    pub seeds: u64,
    pub reached: BTreeSet<String>,
}

/// What a budget of seeds must reach between them: both eras on both transports ready,
/// calls answered on both, retries and failures on both, a remote server wanting a sign-in. A simulated server that cannot
/// get ready in an era (as happened: its `server/discover` answer lacked required fields)
/// would otherwise pass every invariant by never exercising that era.
pub const MUST_REACH: &[&str] = &[
    "stdio ready 2025-11-25",
    "stdio ready 2026-07-28",
    "http ready 2025-11-25",
    "http ready 2026-07-28",
    "stdio call answered",
    "http call answered",
    "stdio backoff",
    "http backoff",
    "stdio failed",
    "http failed",
    "http needs_auth",
];

impl Covered {
    /// What [`MUST_REACH`] names that no run reached.
    pub fn missing(&self) -> Vec<&'static str> {
        (MUST_REACH.iter().copied())
            .filter(|m| !self.reached.contains(*m))
            .collect()
    }
}

/// Runs seeds `first..first + count`, stopping at the first that breaks an invariant.
pub fn run_seeds(first: u64, count: u64) -> Result<Covered, Box<Outcome>> {
    let base = base_options().map_err(|e| {
        Box::new(Outcome {
            seed: first,
            trace: Vec::new(),
            violations: vec![e],
            covered: BTreeSet::new(),
        })
    })?;
    let mut covered = Covered::default();
    for seed in first..first.saturating_add(count) {
        let outcome = run(seed, &base);
        if !outcome.violations.is_empty() {
            return Err(Box::new(outcome));
        }
        covered.seeds += 1;
        covered.reached.extend(outcome.covered);
    }
    Ok(covered)
}

/// Runs `seed` twice and compares the traces line by line: `Err` names the first line
/// that differs. Exact only when tokio's draws are seeded (built with `tokio_unstable`).
pub fn replays(seed: u64, base: &ManagerOptions) -> Result<(), String> {
    let (a, b) = (run(seed, base).trace, run(seed, base).trace);
    match a.iter().zip(&b).position(|(x, y)| x != y) {
        Some(i) => Err(format!("line {i}: {:?} then {:?}", a[i], b[i])),
        None if a.len() != b.len() => Err(format!("{} lines then {}", a.len(), b.len())),
        None => Ok(()),
    }
}
