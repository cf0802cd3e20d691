//! What a deterministic simulation installs in the connection manager, and nothing in the
//! host's own configuration can: servers reached through in-memory pipes instead of
//! processes, retry jitter drawn from a seed instead of the OS, and every state change a
//! server's task publishes reported in order (a `watch` receiver sees only the latest).
//! The code under test is the same: the pipe carries the same newline-delimited JSON-RPC
//! through the same [`Wire`](crate::wire::Wire), session and runner as a process's stdio.
//! A remote server is reached through [`WebServers`] instead of sockets: its answers are
//! HTTP's outcomes (a JSON body, an event stream, a status, a refused or reset connection)
//! and the same Streamable HTTP transport, session and runner as a real server's handle them.

use futures::future::BoxFuture;
use futures::stream::BoxStream;
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

/// One HTTP request to a simulated remote server, as its server sees it.
#[derive(Clone, Debug)]
pub struct WebRequest {
    /// The server's configured name (its URL says nothing a simulation needs).
    pub server: String,
    /// The `Mcp-Session-Id` the request carried.
    pub session: Option<String>,
    /// The bearer token the request carried (OAuth's, or a configured `Authorization`
    /// header's), if any.
    pub bearer: Option<String>,
    /// What the request is: a POST's JSON body, a GET of the event stream, or a DELETE.
    pub kind: WebKind,
}

#[derive(Clone, Debug)]
pub enum WebKind {
    Post(String),
    Listen,
    Delete,
}

/// How a simulated remote server answered (or failed to).
pub enum WebAnswer {
    /// 202: a notification or response was taken.
    Accepted,
    /// 200 with a JSON body, and the session id header if it set one.
    Json {
        body: String,
        session: Option<String>,
    },
    /// 200 with an event stream: each item one event's data; the stream's end is the
    /// server closing it.
    Events {
        events: BoxStream<'static, String>,
        session: Option<String>,
    },
    /// Any other status (a 404 to a request with a session id is that session's expiry).
    Status(u16),
    /// 401 with this `WWW-Authenticate` challenge: the server wants (new) authorization.
    Unauthorized(String),
    /// The connection was refused: nothing reached the server.
    Refused,
    /// The connection broke after the request was sent: it may have been handled.
    Reset,
}

/// The remote servers of a simulation. An answer that never comes is a future that never
/// completes (the transport's own deadlines must end it).
pub trait WebServers: Send + Sync {
    fn request(&self, request: WebRequest) -> BoxFuture<'static, WebAnswer>;
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
    /// Where servers configured with an HTTP transport are reached.
    pub web: Arc<dyn WebServers>,
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
