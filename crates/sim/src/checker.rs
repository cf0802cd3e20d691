//! The invariants, checked as the run goes and once more after shutdown:
//!
//! - a call's answer is its own (the server echoes the nonce the call carried), and every
//!   call ends, by its deadline;
//! - nothing reaches a server that the gate did not permit: every `tools/call` a server
//!   received carries the nonce of a permitted call, for that server and tool;
//! - each server's published states follow the runner's transitions, and one that waits
//!   for a person (failed, needing a sign-in, disabled) starts again only when a person
//!   asked; a backoff's delay is
//!   inside the policy's bounds and is waited out; retries before the first connection and
//!   restarts after it stay inside their budgets (counted from the last restart a person
//!   asked for; a remote server's reconnects from the last time it was ready); a server that lies about its era is never ready, and a ready one speaks
//!   an era its server speaks;
//! - the host answers only requests a server made (its pings and elicitations), by their id;
//! - every request to a remote server carries that server's own bearer token (the web
//!   checks it);
//! - shutdown is quick whatever the servers do (the world times it), and after it every
//!   server's state is `stopped`, no stdio server instance is still running, the host holds
//!   no remote server's event stream (the web checks), and no task is left (the world
//!   counts the runtime's tasks).

use crate::server::{Control, Received, Speaks};
use crate::world::{Drawn, TOOL_TIMEOUT};
use mcp_host_client::backoff::RetryPolicy;
use mcp_host_client::harness::StateChange;
use mcp_host_core::{ServerState, ServerStatus};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// The longest a permitted call may take in all: the wait for an announced tool list, the
/// idle deadline (for a tool that reports progress, the ceiling of
/// [`MAX_TOTAL_FACTOR`](mcp_host_client::session::MAX_TOTAL_FACTOR) deadlines), and the
/// cancellation notice's second.
pub fn call_deadline(tool: &str) -> Duration {
    let answering = match tool {
        "chatty" => TOOL_TIMEOUT * mcp_host_client::session::MAX_TOTAL_FACTOR,
        _ => TOOL_TIMEOUT,
    };
    mcp_host_engine::gate::LIST_REFRESH_WAIT + answering + Duration::from_secs(2)
}

/// What the gate decided on one call.
#[derive(Clone, Debug)]
pub enum Decided {
    Permitted { server: String, tool: String },
    Refused,
}

/// How one permitted call ended.
#[derive(Debug)]
pub struct CallEnd {
    pub nonce: u64,
    pub server: String,
    pub tool: &'static str,
    pub began: Instant,
    pub ended: Instant,
    /// The content as JSON, or the failure.
    pub result: Result<String, String>,
}

/// One server's published history, as far as the checks need it.
#[derive(Debug)]
struct Track {
    speaks: Speaks,
    /// A remote server: after a connection, its reconnects are counted from the last
    /// time it was ready (`http_reconnects`), not in a restart window.
    remote: bool,
    last: ServerState,
    /// When the last backoff was published and how long it said to wait.
    waiting: Option<(Instant, Duration)>,
    ever_ready: bool,
    /// Backoffs since the last person restart, before and after the first ready.
    retries: u32,
    restarts: u32,
    /// A person asked for a restart that the runner has not taken yet: it takes it at
    /// its next wait (at once, unless it is busy refreshing a list), and the first
    /// `starting` after the request is where it did.
    restart_pending: bool,
}

pub struct Checker {
    policy: RetryPolicy,
    tracks: BTreeMap<String, Track>,
    decided: BTreeMap<u64, Decided>,
    ended: BTreeSet<u64>,
    received_seen: usize,
    violations: Vec<String>,
}

impl Checker {
    pub fn new(policy: RetryPolicy, drawn: &[Drawn]) -> Self {
        let tracks = (drawn.iter())
            .map(|d| {
                let track = Track {
                    speaks: d.profile.speaks,
                    remote: d.web.is_some(),
                    last: ServerState::Starting,
                    waiting: None,
                    ever_ready: false,
                    retries: 0,
                    restarts: 0,
                    restart_pending: false,
                };
                (d.name.clone(), track)
            })
            .collect();
        Self {
            policy,
            tracks,
            decided: BTreeMap::new(),
            ended: BTreeSet::new(),
            received_seen: 0,
            violations: Vec::new(),
        }
    }

    pub fn violation(&mut self, what: String) {
        self.violations.push(what);
    }

    pub fn into_violations(self) -> Vec<String> {
        self.violations
    }

    pub fn decided(&mut self, nonce: u64, decided: Decided) {
        self.decided.insert(nonce, decided);
    }

    /// A person's restart (or enable/disable): once taken, the retry budget starts again.
    pub fn restart_requested(&mut self, server: &str) {
        if let Some(t) = self.tracks.get_mut(server) {
            t.restart_pending = true;
        }
    }

    pub fn call_ended(&mut self, end: CallEnd) {
        let nonce = end.nonce;
        if !self.ended.insert(nonce) {
            self.violation(format!("call {nonce} ended twice"));
        }
        let took = end.ended.duration_since(end.began);
        let deadline = call_deadline(end.tool);
        if took > deadline {
            self.violation(format!(
                "call {nonce} ({}) took {took:?}, past its deadline {deadline:?}",
                end.tool
            ));
        }
        if let Ok(content) = &end.result {
            let mine = format!("nonce:{nonce}\"");
            let answers = content.matches("nonce:").count();
            if answers != 1 || !content.contains(&mine) {
                self.violation(format!(
                    "call {nonce} was given another call's answer: {content}"
                ));
            }
        }
    }

    pub fn received(&mut self, received: &[Received]) {
        for r in &received[self.received_seen.min(received.len())..] {
            let verdict = r.nonce.and_then(|n| self.decided.get(&n).cloned());
            let fine = matches!(&verdict,
                Some(Decided::Permitted { server, tool }) if *server == r.server && *tool == r.tool);
            if !fine {
                let what = format!(
                    "server {} received tools/call {} (nonce {:?}) without a permit: {verdict:?}",
                    r.server, r.tool, r.nonce
                );
                self.violations.push(what);
            }
        }
        self.received_seen = received.len();
    }

    /// What the manager shows now: a ready server's era is one its server speaks.
    pub fn status(&mut self, server: &str, status: &ServerStatus) {
        let Some(track) = self.tracks.get(server) else {
            return;
        };
        if status.state != ServerState::Ready {
            return;
        }
        let version = status.era.as_ref().map(|e| e.version.as_str());
        let fits = match (track.speaks, version) {
            (Speaks::Wrong, _) | (_, None) => false,
            (Speaks::Legacy, Some(v)) => v != "2026-07-28",
            (Speaks::Modern, Some(v)) => v == "2026-07-28",
            (Speaks::Dual, Some(_)) => true,
        };
        if !fits {
            self.violation(format!(
                "{server} is ready in era {version:?}, but its server speaks {:?}",
                track.speaks
            ));
        }
    }

    pub fn state(&mut self, change: &StateChange) {
        let policy = self.policy.clone();
        let Some(track) = self.tracks.get_mut(change.server.as_str()) else {
            return;
        };
        let mut found = Vec::new();
        let (from, to) = (track.last.label(), change.state.label());
        if !allowed(&track.last, &change.state) {
            found.push(format!(
                "{}: {from} → {to} is not a transition",
                change.server
            ));
        }
        let waits_for_a_person = matches!(
            track.last,
            ServerState::Failed { .. } | ServerState::NeedsAuth { .. } | ServerState::Disabled
        );
        if change.state == ServerState::Starting && waits_for_a_person && !track.restart_pending {
            found.push(format!(
                "{}: left {from} on its own, though only a person's restart may end it",
                change.server
            ));
        }
        if change.state == ServerState::Starting && track.restart_pending {
            // Taken: the runner made a fresh retrier (first-connection retries again,
            // then a fresh restart budget), and a backoff it cut short is no fault.
            track.restart_pending = false;
            track.ever_ready = false;
            track.retries = 0;
            track.restarts = 0;
            track.waiting = None;
        }
        if let (ServerState::Starting, Some((since, delay))) = (&change.state, track.waiting) {
            let waited = change.at.duration_since(since);
            if waited < delay {
                found.push(format!(
                    "{}: retried after {waited:?}, before its backoff of {delay:?}",
                    change.server
                ));
            }
        }
        match &change.state {
            ServerState::Ready => {
                track.ever_ready = true;
                if track.remote {
                    track.restarts = 0;
                }
            }
            ServerState::Backoff {
                attempt, retry_in, ..
            } => {
                let (lo, hi) = bounds(&policy, *attempt);
                if *retry_in < lo || *retry_in > hi {
                    found.push(format!(
                        "{}: backoff {retry_in:?} for attempt {attempt} outside [{lo:?}, {hi:?}]",
                        change.server
                    ));
                }
                track.waiting = Some((change.at, *retry_in));
                let (spent, budget) = if track.ever_ready {
                    track.restarts += 1;
                    let budget = if track.remote {
                        policy.http_reconnects
                    } else {
                        policy.restart_budget as u32
                    };
                    (track.restarts, budget)
                } else {
                    track.retries += 1;
                    (track.retries, policy.initial_retries)
                };
                if spent > budget {
                    found.push(format!(
                        "{}: {spent} retries since the last restart, budget {budget}",
                        change.server
                    ));
                }
            }
            _ => {}
        }
        if !matches!(change.state, ServerState::Backoff { .. }) {
            track.waiting = None;
        }
        track.last = change.state.clone();
        self.violations.extend(found);
    }

    pub fn after_shutdown(&mut self, controls: &BTreeMap<String, Arc<Mutex<Control>>>) {
        let mut found = Vec::new();
        for (name, track) in &self.tracks {
            if track.last != ServerState::Stopped {
                found.push(format!("{name} is {} after shutdown", track.last.label()));
            }
        }
        for (name, control) in controls {
            let (live, wrong) = (control.lock())
                .map(|c| (c.live, c.wrong_answers.clone()))
                .unwrap_or_default();
            // A remote server's sessions are its own to end (the web checks the host let
            // go of their streams).
            let remote = self.tracks.get(name).is_some_and(|t| t.remote);
            if live != 0 && !remote {
                found.push(format!(
                    "{live} instances of {name} still run after shutdown"
                ));
            }
            found.extend(wrong.into_iter().map(|w| format!("{name}: {w}")));
        }
        for (nonce, d) in &self.decided {
            if matches!(d, Decided::Permitted { .. }) && !self.ended.contains(nonce) {
                found.push(format!("call {nonce} has no end"));
            }
        }
        self.violations.extend(found);
    }
}

/// The runner's transitions (`runner.rs`): connect, serve, back off, fail, wait for a
/// person, stop.
fn allowed(from: &ServerState, to: &ServerState) -> bool {
    use ServerState as S;
    matches!(
        (from, to),
        (_, S::Stopped)
            | (
                S::Starting,
                S::Ready | S::Backoff { .. } | S::Failed { .. } | S::NeedsAuth { .. }
            )
            | (
                S::Ready,
                S::Starting | S::Backoff { .. } | S::Failed { .. } | S::Disabled
            )
            | (
                S::Backoff { .. } | S::Failed { .. } | S::NeedsAuth { .. },
                S::Starting | S::Disabled
            )
            | (S::Disabled, S::Starting)
    ) && *from != S::Stopped
}

/// The shortest and longest delay the policy allows for `attempt`, worked out here rather
/// than by the code under test: `base · 2^(attempt-1)`, capped at `max`, times
/// `1 ± jitter` (a millisecond either way for rounding).
fn bounds(policy: &RetryPolicy, attempt: u32) -> (Duration, Duration) {
    let b = policy.backoff;
    let doublings = attempt.saturating_sub(1).min(30) as i32;
    let raw = (b.base.as_secs_f64() * 2f64.powi(doublings)).min(b.max.as_secs_f64());
    let ms = Duration::from_millis(1);
    let lo = Duration::from_secs_f64(raw * (1.0 - b.jitter)).saturating_sub(ms);
    let hi = Duration::from_secs_f64(raw * (1.0 + b.jitter)) + ms;
    (lo, hi)
}
