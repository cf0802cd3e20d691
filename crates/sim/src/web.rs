//! Simulated remote servers: a Streamable HTTP front over the same simulated server
//! instances the stdio pipes reach. `initialize` opens a session (its own instance, its id
//! in the answer); requests without a session (2026-07-28 is stateless) share one instance;
//! a request's answer comes as a JSON body or as an event stream that also carries what the
//! server sends meanwhile (its own requests, progress), and a GET opens the session's
//! stream for the rest. The faults are HTTP's: a refused connection, a 503, a connection
//! reset after the request was handled, a session that expires, a request that hangs, an
//! event stream cut before its answer, a corrupted body, a server that crashes (its
//! session is gone) and is unreachable for a while after, and a token that expires (every
//! request refused with 401 until a person signs in again). Every request must carry the
//! bearer token of this server's audience and no other.

use crate::server::{self, Instance};
use crate::world::Fleet;
use futures::FutureExt;
use futures::future::BoxFuture;
use futures::stream::{BoxStream, StreamExt};
use mcp_host_client::harness::{WebAnswer, WebKind, WebRequest, WebServers};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

/// How often each HTTP fault happens, per request (the rest are served).
#[derive(Clone, Copy, Debug, Default)]
pub struct WebFaults {
    pub refuse: f64,
    pub unavailable: f64,
    pub reset: f64,
    pub expire: f64,
    pub hang: f64,
    pub cut: f64,
    pub corrupt: f64,
}

impl WebFaults {
    pub fn all(rate: f64) -> Self {
        Self {
            refuse: rate,
            unavailable: rate,
            reset: rate,
            expire: rate,
            hang: rate / 4.0,
            cut: rate,
            corrupt: rate / 2.0,
        }
    }
}

/// How one remote server serves, drawn from the seed.
#[derive(Clone, Copy, Debug)]
pub struct WebProfile {
    pub faults: WebFaults,
    /// Answers come as event streams (else as JSON bodies; `subscriptions/listen` is
    /// always a stream).
    pub events: bool,
    /// A GET opens the session's stream (else 405).
    pub listen: bool,
    /// A session's requests are only accepted (202) and answered on its GET stream: not
    /// what the spec says, but what some servers do and rmcp waits for.
    pub answers_on_get: bool,
    /// The longest a crashed server stays unreachable.
    pub down_for: Duration,
    /// How long the host's token is honoured (from the start, and again from each time a
    /// person signs in): after it every request is refused with 401 until they do.
    pub token_life: Option<Duration>,
}

/// The bearer token a server of audience `server` accepts.
pub fn token_for(server: &str) -> String {
    format!("token-for-{server}")
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fate {
    Serve,
    Refuse,
    Unavailable,
    Reset,
    Expire,
    Hang,
    Cut,
}

/// Who waits for the answer to one request.
/// `corrupt` damages the answer; `cut` ends a stream just before the answer would come.
enum Waiter {
    Body {
        tx: oneshot::Sender<String>,
        corrupt: bool,
    },
    Events {
        tx: mpsc::UnboundedSender<String>,
        cut: bool,
        corrupt: bool,
    },
    /// Accepted; the answer goes on the session's GET stream.
    Listener { corrupt: bool },
}

/// One session (or the stateless pool) and the instance behind it.
struct Conn {
    serial: u64,
    input: mpsc::UnboundedSender<String>,
    /// By the id the instance saw (the exchange's number, as JSON text).
    pending: BTreeMap<String, Waiter>,
    /// The id the host gave each exchange's request, by the id the instance saw: a POST is
    /// its own exchange, so the answer goes back to the POST it answers even when the ids
    /// of two connections to the stateless pool collide (each counts from 0).
    exchanges: BTreeMap<String, Value>,
    listeners: Vec<mpsc::UnboundedSender<String>>,
}

impl Conn {
    /// What the server sends outside an answer (its requests, notifications, stray or
    /// duplicate answers): on an open request stream, else on a listening GET, else lost.
    fn push(&mut self, line: String) {
        let streams = (self.pending.values())
            .filter_map(|w| match w {
                Waiter::Events { tx, .. } => Some(tx),
                Waiter::Body { .. } | Waiter::Listener { .. } => None,
            })
            .chain(&self.listeners);
        for tx in streams {
            if tx.send(line.clone()).is_ok() {
                return;
            }
        }
    }
}

struct Front {
    name: String,
    profile: WebProfile,
    rng: StdRng,
    down_until: Option<Instant>,
    began: Instant,
    token_expires: Option<Instant>,
    /// By session id; `None` is the stateless pool.
    conns: BTreeMap<Option<String>, Conn>,
    serial: u64,
    /// Every event stream handed out (with what opened it, and when), to see after
    /// shutdown that the host let go of each.
    streams: Vec<(mpsc::UnboundedSender<String>, String)>,
    violations: Vec<String>,
}

/// Every remote server of a run.
pub struct Web {
    fleet: Fleet,
    fronts: BTreeMap<String, Arc<Mutex<Front>>>,
}

enum Reply {
    Now(WebAnswer),
    Body(oneshot::Receiver<String>, Option<String>),
    Hang,
}

impl Web {
    pub(crate) fn new(fleet: Fleet, profiles: &BTreeMap<String, WebProfile>) -> Self {
        let fronts = (profiles.iter())
            .map(|(name, profile)| {
                let front = Front {
                    name: name.clone(),
                    profile: *profile,
                    rng: StdRng::seed_from_u64(
                        server::instance_rng(fleet.seed, name, u32::MAX).random(),
                    ),
                    down_until: None,
                    began: Instant::now(),
                    token_expires: profile.token_life.map(|life| Instant::now() + life),
                    conns: BTreeMap::new(),
                    serial: 0,
                    streams: Vec::new(),
                    violations: Vec::new(),
                };
                (name.clone(), Arc::new(Mutex::new(front)))
            })
            .collect();
        Self { fleet, fronts }
    }

    /// After the host's shutdown: what each server saw that it should not have, and the
    /// event streams the host still holds.
    pub fn findings(&self) -> Vec<String> {
        let mut found = Vec::new();
        for (name, front) in &self.fronts {
            let Ok(f) = front.lock() else { continue };
            found.extend(f.violations.iter().map(|v| format!("{name}: {v}")));
            for (_, what) in f.streams.iter().filter(|(tx, _)| !tx.is_closed()) {
                found.push(format!(
                    "{name}: the host still holds the event stream of {what} after shutdown"
                ));
            }
        }
        found
    }

    /// A person signed in to `server` again: its token is honoured for another life.
    pub fn sign_in(&self, server: &str) {
        if let Some(front) = self.fronts.get(server)
            && let Ok(mut f) = front.lock()
        {
            f.token_expires = f.profile.token_life.map(|life| Instant::now() + life);
        }
    }

    /// Whether `server`'s token has expired (a person's sign-in is what helps).
    pub fn wants_sign_in(&self, server: &str) -> bool {
        (self.fronts.get(server))
            .and_then(|f| f.lock().ok().map(|f| f.expired()))
            .unwrap_or(false)
    }

    /// Takes every server down, so their instances end (a remote server outlives the host,
    /// but the run's tasks must not).
    pub fn stop(&self) {
        for front in self.fronts.values() {
            if let Ok(mut f) = front.lock() {
                f.conns.clear();
                f.streams.clear();
            }
        }
    }
}

impl WebServers for Web {
    fn request(&self, request: WebRequest) -> BoxFuture<'static, WebAnswer> {
        let Some(front) = self.fronts.get(&request.server) else {
            return std::future::ready(WebAnswer::Status(404)).boxed();
        };
        let reply = match front.lock() {
            Ok(mut f) => f.take(request, &self.fleet, front),
            Err(_) => Reply::Now(WebAnswer::Status(500)),
        };
        match reply {
            Reply::Now(answer) => std::future::ready(answer).boxed(),
            Reply::Body(rx, session) => async move {
                match rx.await {
                    Ok(body) => WebAnswer::Json { body, session },
                    // The instance died with the request open: the connection broke.
                    Err(_) => WebAnswer::Reset,
                }
            }
            .boxed(),
            Reply::Hang => std::future::pending().boxed(),
        }
    }
}

fn events(rx: mpsc::UnboundedReceiver<String>) -> BoxStream<'static, String> {
    futures::stream::unfold(rx, |mut rx| async move { rx.recv().await.map(|x| (x, rx)) }).boxed()
}

impl Front {
    fn expired(&self) -> bool {
        self.token_expires.is_some_and(|t| Instant::now() >= t)
    }

    /// Time since the run began, as the trace counts it.
    fn since(&self) -> Duration {
        Instant::now().duration_since(self.began)
    }

    fn fate(&mut self) -> Fate {
        let f = self.profile.faults;
        let chances = [f.refuse, f.unavailable, f.reset, f.expire, f.hang, f.cut];
        match crate::pick(&mut self.rng, &chances) {
            Some(0) => Fate::Refuse,
            Some(1) => Fate::Unavailable,
            Some(2) => Fate::Reset,
            Some(3) => Fate::Expire,
            Some(4) => Fate::Hang,
            Some(5) => Fate::Cut,
            _ => Fate::Serve,
        }
    }

    fn take(&mut self, r: WebRequest, fleet: &Fleet, me: &Arc<Mutex<Front>>) -> Reply {
        let mine = token_for(&self.name);
        match &r.bearer {
            Some(t) if *t == mine => {}
            other => self.violations.push(format!(
                "a request came with token {other:?}, not this server's own"
            )),
        }
        if self.down_until.is_some_and(|t| Instant::now() < t) {
            return Reply::Now(WebAnswer::Refused);
        }
        if self.expired() {
            let challenge = format!(
                "Bearer error=\"invalid_token\", resource_metadata=\"http://127.0.0.1:9/.well-known/oauth-protected-resource/{}\"",
                self.name
            );
            return Reply::Now(WebAnswer::Unauthorized(challenge));
        }
        let fate = self.fate();
        match fate {
            Fate::Refuse => return Reply::Now(WebAnswer::Refused),
            Fate::Unavailable => return Reply::Now(WebAnswer::Status(503)),
            Fate::Hang => return Reply::Hang,
            _ => {}
        }
        match r.kind {
            WebKind::Delete => {
                let gone = r.session.is_some() && self.conns.remove(&r.session).is_some();
                Reply::Now(if gone {
                    WebAnswer::Accepted
                } else {
                    WebAnswer::Status(404)
                })
            }
            WebKind::Listen => Reply::Now(self.listen(r.session)),
            WebKind::Post(body) => self.post(r.session, &body, fate, fleet, me),
        }
    }

    fn listen(&mut self, session: Option<String>) -> WebAnswer {
        if !self.profile.listen || session.is_none() {
            return WebAnswer::Status(405);
        }
        let Some(conn) = self.conns.get_mut(&session) else {
            return WebAnswer::Status(404);
        };
        let (tx, rx) = mpsc::unbounded_channel();
        conn.listeners.push(tx.clone());
        let what = format!("a GET of session {session:?} at {:?}", self.since());
        self.streams.push((tx, what));
        WebAnswer::Events {
            events: events(rx),
            session: None,
        }
    }

    fn post(
        &mut self,
        session: Option<String>,
        body: &str,
        fate: Fate,
        fleet: &Fleet,
        me: &Arc<Mutex<Front>>,
    ) -> Reply {
        let Ok(msg) = serde_json::from_str::<Value>(body) else {
            return Reply::Now(WebAnswer::Status(400));
        };
        let method = msg.get("method").and_then(Value::as_str);
        let initialize = session.is_none() && method == Some("initialize");
        let key = if initialize {
            self.serial += 1;
            let id = Some(format!("{}-session-{}", self.name, self.serial));
            self.open(id.clone(), fleet, me);
            id
        } else {
            if session.is_none() && !self.conns.contains_key(&None) {
                self.open(None, fleet, me);
            }
            session
        };
        if key.is_some() && fate == Fate::Expire && !initialize {
            self.conns.remove(&key);
        }
        let streamed = self.profile.events || method == Some("subscriptions/listen");
        let corrupt = self.profile.faults.corrupt;
        let (cut, corrupted) = (fate == Fate::Cut, self.rng.random_bool(corrupt));
        let since = self.since();
        self.serial += 1;
        let exchange = self.serial;
        let Some(conn) = self.conns.get_mut(&key) else {
            return Reply::Now(WebAnswer::Status(404));
        };
        let request_id = msg.get("id").filter(|_| method.is_some()).cloned();
        let Some(host_id) = request_id else {
            let _ = conn.input.send(body.to_string());
            return Reply::Now(if fate == Fate::Reset {
                WebAnswer::Reset
            } else {
                WebAnswer::Accepted
            });
        };
        let new_session = key.clone().filter(|_| initialize);
        let exchange = Value::from(exchange);
        let id = exchange.to_string();
        conn.exchanges.insert(id.clone(), host_id);
        let mut forwarded = msg.clone();
        forwarded["id"] = exchange;
        let line = forwarded.to_string();
        if fate == Fate::Reset {
            // Handled, but the answer never reaches the host (it comes later, unasked).
            let _ = conn.input.send(line);
            return Reply::Now(WebAnswer::Reset);
        }
        let reply = if self.profile.answers_on_get && key.is_some() && !initialize && !streamed {
            conn.pending
                .insert(id, Waiter::Listener { corrupt: corrupted });
            Reply::Now(WebAnswer::Accepted)
        } else if streamed {
            let (tx, rx) = mpsc::unbounded_channel();
            let what = format!("{method:?} of session {key:?} at {since:?}");
            self.streams.push((tx.clone(), what));
            let waiter = Waiter::Events {
                tx,
                cut,
                corrupt: corrupted,
            };
            conn.pending.insert(id, waiter);
            Reply::Now(WebAnswer::Events {
                events: events(rx),
                session: new_session,
            })
        } else {
            let (tx, rx) = oneshot::channel();
            let waiter = Waiter::Body {
                tx,
                corrupt: corrupted,
            };
            conn.pending.insert(id, waiter);
            Reply::Body(rx, new_session)
        };
        let _ = conn.input.send(line);
        reply
    }

    /// Starts an instance for a session (or the stateless pool) and the tasks that feed it
    /// and route what it says.
    fn open(&mut self, key: Option<String>, fleet: &Fleet, me: &Arc<Mutex<Front>>) {
        let Some((instance, _)) = fleet.instance(&self.name) else {
            return;
        };
        let (to_instance, instance_in) = tokio::io::duplex(64 * 1024);
        let (instance_out, from_instance) = tokio::io::duplex(64 * 1024);
        tokio::spawn(Instance::run(instance, instance_in, instance_out));
        let (input, lines) = mpsc::unbounded_channel();
        tokio::spawn(feed(to_instance, lines));
        self.serial += 1;
        let serial = self.serial;
        tokio::spawn(route(me.clone(), key.clone(), serial, from_instance));
        let conn = Conn {
            serial,
            input,
            pending: BTreeMap::new(),
            exchanges: BTreeMap::new(),
            listeners: Vec::new(),
        };
        self.conns.insert(key, conn);
    }

    fn deliver(&mut self, key: &Option<String>, serial: u64, line: String) {
        let Some(conn) = self.conns.get_mut(key).filter(|c| c.serial == serial) else {
            return;
        };
        let mut msg: Value = serde_json::from_str(&line).unwrap_or_default();
        let answer = msg.get("method").is_none() && msg.get("id").is_some();
        if !answer {
            return conn.push(line);
        }
        let exchange = msg["id"].to_string();
        let line = match conn.exchanges.get(&exchange) {
            Some(host_id) => {
                msg["id"] = host_id.clone();
                msg.to_string()
            }
            None => line,
        };
        let damaged = |line: String, corrupt: bool| if corrupt { corrupt_text(line) } else { line };
        match conn.pending.remove(&exchange) {
            Some(Waiter::Body { tx, corrupt }) => {
                let _ = tx.send(damaged(line, corrupt));
            }
            Some(Waiter::Events {
                tx,
                cut: false,
                corrupt,
            }) => {
                let _ = tx.send(damaged(line, corrupt));
            }
            // The stream ends (its sender dropped) without the answer.
            Some(Waiter::Events { cut: true, .. }) => {}
            Some(Waiter::Listener { corrupt }) => {
                let line = damaged(line, corrupt);
                let _ = (conn.listeners.iter()).any(|tx| tx.send(line.clone()).is_ok());
            }
            None => conn.push(line),
        }
    }

    /// The instance behind a session ended (it crashed, or its session was ended): the
    /// session is gone, and after a crash the server is unreachable for a while.
    fn lost(&mut self, key: &Option<String>, serial: u64) {
        if self.conns.get(key).is_some_and(|c| c.serial == serial) {
            self.conns.remove(key);
            let most = self.profile.down_for.as_millis() as u64;
            let down = Duration::from_millis(self.rng.random_range(0..=most));
            self.down_until = Some(Instant::now() + down);
        }
    }
}

/// A control character in the middle: invalid anywhere in JSON, so always detectable.
fn corrupt_text(text: String) -> String {
    let mut bytes = text.into_bytes();
    let at = bytes.len() / 2;
    if let Some(b) = bytes.get_mut(at) {
        *b = 0x01;
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

/// Writes the host's messages to the instance, a line each, until the session is dropped.
async fn feed(mut to: DuplexStream, mut lines: mpsc::UnboundedReceiver<String>) {
    while let Some(mut line) = lines.recv().await {
        line.push('\n');
        if to.write_all(line.as_bytes()).await.is_err() {
            return;
        }
    }
}

/// Routes what an instance says to whoever waits for it, until the instance ends.
async fn route(front: Arc<Mutex<Front>>, key: Option<String>, serial: u64, from: DuplexStream) {
    let mut lines = BufReader::new(from).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        match front.lock() {
            Ok(mut f) => f.deliver(&key, serial, line),
            Err(_) => return,
        }
    }
    if let Ok(mut f) = front.lock() {
        f.lost(&key, serial);
    }
}
