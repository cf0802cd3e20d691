//! What a deterministic simulation installs in the connection manager, and nothing in the
//! host's own configuration can: servers reached through in-memory pipes instead of
//! processes, retry jitter drawn from a seed instead of the OS, and every state change a
//! server's task publishes reported in order (a `watch` receiver sees only the latest).
//! The code under test is the same: the pipe carries the same newline-delimited JSON-RPC
//! through the same [`Wire`](crate::wire::Wire), session and runner as a process's stdio.

use mcp_host_core::{ServerId, ServerState};
use rand::SeedableRng;
use rand::rngs::StdRng;
use std::sync::Arc;
use tokio::io::DuplexStream;
use tokio::sync::mpsc;

/// The two ends a server in this process is reached through (each one end of a
/// `tokio::io::duplex`).
pub struct Pipe {
    /// What the server writes (its "stdout").
    pub from_server: DuplexStream,
    /// What the server reads (its "stdin"); closing it tells the server to stop.
    pub to_server: DuplexStream,
}

/// Starts one server instance (one "process") by name and returns its ends, or why it
/// could not start (counted as a spawn failure: not worth retrying).
#[derive(Clone)]
pub struct Dial(pub Arc<dyn Fn(String) -> Result<Pipe, String> + Send + Sync>);

impl Dial {
    pub fn open(&self, server: &str) -> Result<Pipe, String> {
        (self.0)(server.to_string())
    }
}

impl std::fmt::Debug for Dial {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Dial")
    }
}

/// One state a server's task published, in publication order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StateChange {
    pub server: ServerId,
    pub state: ServerState,
    /// When it was published (tokio's clock, which a simulation pauses and advances).
    pub at: tokio::time::Instant,
}

/// The simulation's hold on the manager.
#[derive(Clone)]
pub struct Harness {
    pub dial: Dial,
    /// Seeds each server's retry jitter (mixed with its name), so a run replays exactly.
    pub seed: u64,
    pub states: mpsc::UnboundedSender<StateChange>,
}

impl std::fmt::Debug for Harness {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Harness")
            .field("seed", &self.seed)
            .finish_non_exhaustive()
    }
}

/// The source of one server's retry jitter: the OS's, or the harness's seed.
pub(crate) fn jitter_source(harness: Option<&Harness>, server: &str) -> StdRng {
    match harness {
        Some(h) => StdRng::seed_from_u64(h.seed ^ fnv1a(server.as_bytes())),
        None => StdRng::from_os_rng(),
    }
}

/// A stable hash (std's hashers are seeded per process, which would defeat replay).
fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}
