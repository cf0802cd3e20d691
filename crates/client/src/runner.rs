//! The task that owns one server's lifecycle, as explicit phases: connect (unless a person
//! disabled the server), serve the session until it ends, then let the retry policy choose
//! between a backoff and giving up; `needs_auth`, `failed` and `disabled` wait for a person's
//! restart. Every wait also ends when the host stops. While serving, the task keeps the
//! server's tools and offers current and checks that a remote server is still there.

use crate::backoff::{Next, Retrier, RetryPolicy};
use crate::handler::ClientFeatures;
use crate::harness::{StateChange, jitter_source};
use crate::http::HttpWire;
use crate::manager::{ManagerOptions, Slot};
use crate::pace::Pace;
use crate::sandbox::Confined;
use crate::session::{ConnectError, Endpoint, EraChoice, RequestError, Session};
use crate::sign_in::AskInSession;
use crate::stdio::StdioLaunch;
use mcp_host_auth::OAuth;
use mcp_host_config::{ServerSpec, Transport};
use mcp_host_core::{ServerId, ServerState, ServerStatus};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

/// How many list warnings a status carries; the rest are counted (and in the log).
const MAX_WARNINGS: usize = 8;

/// How long a liveness check may take before the server counts as gone.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(10);

fn endpoint(spec: &ServerSpec, opts: &ManagerOptions, confined: &Confined) -> Endpoint {
    if let Some(harness) = &opts.harness {
        return match &spec.transport {
            Transport::Http {
                url,
                headers,
                legacy_sse,
            } => Endpoint::Http {
                url: url.clone(),
                headers: headers.clone(),
                client: crate::http::HttpClient::InProcess(crate::http::InProcessHttp {
                    server: spec.name.clone(),
                    web: harness.web.clone(),
                }),
                auth: None,
                wire: HttpWire::configured(*legacy_sse),
            },
            Transport::Stdio { .. } => Endpoint::InProcess {
                name: spec.name.clone(),
                dial: harness.dial.clone(),
            },
        };
    }
    match &spec.transport {
        Transport::Stdio {
            command,
            args,
            env,
            cwd,
            sandbox,
        } => Endpoint::Stdio {
            launch: Box::new(StdioLaunch {
                name: spec.name.clone(),
                command: command.clone(),
                args: args.clone(),
                env: env.clone(),
                cwd: cwd.clone(),
                sandbox: (**sandbox).clone(),
                confined: confined.clone(),
                log: (opts.log_dir.as_ref()).map(|d| crate::stdio::log_file(d, &spec.name)),
            }),
            supervisor: opts.supervisor.clone(),
            host_env: opts.host_env.clone(),
        },
        Transport::Http {
            url,
            headers,
            legacy_sse,
        } => Endpoint::Http {
            url: url.clone(),
            headers: headers.clone(),
            client: opts.http_client.clone().into(),
            auth: None,
            wire: HttpWire::configured(*legacy_sse),
        },
    }
}

/// The task that owns one server's lifecycle.
pub(crate) struct Runner {
    spec: ServerSpec,
    endpoint: Endpoint,
    slot: Arc<Slot>,
    status: watch::Sender<ServerStatus>,
    opts: ManagerOptions,
    /// Retry jitter: the OS's randomness, or the harness's seed.
    jitter: std::sync::Mutex<rand::rngs::StdRng>,
    /// Every server's count of state and revision changes ([`crate::Manager::changes`]).
    changes: Arc<AtomicU64>,
}

enum Ended {
    Stopped,
    Lost(String),
    /// A person asked for a restart (or disabled the server).
    Restart,
}

/// Where a server's task is.
enum Phase {
    /// About to connect, if the server is enabled.
    Connect,
    /// Connected: serving until the session ends.
    Serve(Arc<Session>),
    /// A person disabled the server: stopped until a restart enables it again.
    Disabled,
    /// Refused for want of a usable sign-in: waits for a restart (after `auth login`).
    NeedsAuth(String),
    /// The connection failed or the session was lost: the retry policy decides.
    Down { reason: String, transient: bool },
    /// Waits `delay` before the next attempt; a restart cuts it short.
    Backoff {
        attempt: u32,
        delay: Duration,
        reason: String,
    },
    /// Out of retries: waits for a restart.
    Failed(String),
}

/// What ended a wait that the host's stop did not end.
#[derive(PartialEq, Eq)]
enum Woken {
    Restart,
    Elapsed,
}

/// What one server's attempts carry from one to the next.
struct Attempts {
    policy: RetryPolicy,
    remote: bool,
    retrier: Retrier,
    /// Once an era worked, reconnects use it directly instead of probing again.
    era: EraChoice,
}

impl Attempts {
    fn new(policy: RetryPolicy, remote: bool) -> Self {
        Self {
            retrier: Retrier::new(policy.clone(), remote),
            policy,
            remote,
            era: EraChoice::Auto,
        }
    }

    /// A person asked for a restart: a fresh retry budget (the era stays known).
    fn reset(&mut self) {
        self.retrier = Retrier::new(self.policy.clone(), self.remote);
    }

    /// The handshake worked: reconnects use its era. The retry budget starts afresh only
    /// once the server is ready (its tools listed), so a server that shakes hands and then
    /// fails every listing still runs out of retries instead of being redialled forever.
    fn connected(&mut self, session: &Session) {
        self.era = if session.era().is_modern() {
            EraChoice::Modern
        } else {
            EraChoice::Legacy
        };
    }
}

impl Runner {
    pub(crate) fn new(
        spec: ServerSpec,
        slot: Arc<Slot>,
        status: watch::Sender<ServerStatus>,
        opts: ManagerOptions,
        changes: Arc<AtomicU64>,
    ) -> Self {
        Self {
            changes,
            endpoint: endpoint(&spec, &opts, &slot.confined),
            jitter: std::sync::Mutex::new(jitter_source(opts.harness.as_ref(), &spec.name)),
            spec,
            slot,
            status,
            opts,
        }
    }

    fn publish(&self, f: impl FnOnce(&mut ServerStatus)) {
        let mut changed = None;
        let mut revised = false;
        self.status.send_modify(|s| {
            let (before, revision) = (s.state.clone(), s.revision);
            f(s);
            revised = s.revision != revision;
            if s.state != before {
                changed = Some(s.state.clone());
            }
        });
        // After the change, so a reader that sees the count moved also sees what moved it.
        if changed.is_some() || revised {
            self.changes.fetch_add(1, Ordering::Release);
        }
        if let (Some(state), Some(h)) = (changed, &self.opts.harness) {
            let server = ServerId::new(&self.spec.name);
            // A simulation that stopped listening has nothing left to check.
            let at = tokio::time::Instant::now();
            let _ = h.states.send(StateChange { server, state, at });
        }
    }

    /// A draw in [0, 1) for the backoff's jitter.
    fn draw(&self) -> f64 {
        use rand::Rng;
        // A poisoned lock only means a panic elsewhere; the generator is still usable.
        let mut rng = self.jitter.lock().unwrap_or_else(|p| p.into_inner());
        rng.random()
    }

    fn set_state(&self, state: ServerState) {
        self.publish(|s| s.state = state);
    }

    pub(crate) async fn run(mut self, stop: CancellationToken) {
        self.attach_oauth().await;
        let remote = matches!(self.endpoint, Endpoint::Http { .. });
        let mut attempts = Attempts::new(self.opts.retry.clone(), remote);
        let mut phase = Phase::Connect;
        while let Some(next) = self.step(phase, &mut attempts, &stop).await {
            phase = next;
        }
        self.set_state(ServerState::Stopped);
    }

    /// Does what `phase` says and returns the phase after it; `None` once the host stops.
    async fn step(
        &self,
        phase: Phase,
        attempts: &mut Attempts,
        stop: &CancellationToken,
    ) -> Option<Phase> {
        match phase {
            Phase::Connect => {
                // This attempt answers every restart asked for until now: a second request
                // that came before it (a double click) must not cut the next wait short and
                // start the server again on its own (found by the simulation). Taken before
                // `enabled` is read: a disable that comes after the read wakes the next wait.
                let _ = futures::FutureExt::now_or_never(self.slot.restart.notified());
                if !self.slot.enabled.load(std::sync::atomic::Ordering::SeqCst) {
                    return Some(Phase::Disabled);
                }
                self.connect(attempts, stop).await
            }
            Phase::Serve(session) => match self.serve(session, &mut attempts.retrier, stop).await {
                Ended::Stopped => None,
                Ended::Lost(reason) => Some(Phase::Down {
                    reason,
                    transient: true,
                }),
                Ended::Restart => {
                    attempts.reset();
                    Some(Phase::Connect)
                }
            },
            Phase::Disabled => {
                // A held project server keeps saying what it waits for.
                let held = self.status.borrow().state == ServerState::PendingApproval;
                if !held {
                    self.set_state(ServerState::Disabled);
                }
                self.wait(None, stop).await?;
                Some(Phase::Connect)
            }
            Phase::NeedsAuth(reason) => {
                self.set_state(ServerState::NeedsAuth { reason });
                self.wait(None, stop).await?;
                Some(Phase::Connect)
            }
            Phase::Down { reason, transient } => {
                let now = tokio::time::Instant::now();
                Some(
                    match attempts.retrier.on_failure(transient, now, self.draw()) {
                        Next::GiveUp => Phase::Failed(reason),
                        Next::RetryAfter { attempt, delay } => Phase::Backoff {
                            attempt,
                            delay,
                            reason,
                        },
                    },
                )
            }
            Phase::Backoff {
                attempt,
                delay,
                reason,
            } => {
                tracing::info!(server = %self.spec.name, attempt, ?delay, %reason, "retrying");
                self.publish(|s| {
                    s.state = ServerState::Backoff {
                        attempt,
                        retry_in: delay,
                        reason,
                    };
                    s.restarts += 1;
                });
                if self.wait(Some(delay), stop).await? == Woken::Restart {
                    attempts.reset();
                }
                Some(Phase::Connect)
            }
            Phase::Failed(reason) => {
                self.set_state(ServerState::Failed { reason });
                self.wait(None, stop).await?;
                attempts.reset();
                Some(Phase::Connect)
            }
        }
    }

    /// One connection attempt, in the era that worked last (or probing for it).
    async fn connect(&self, attempts: &mut Attempts, stop: &CancellationToken) -> Option<Phase> {
        self.set_state(ServerState::Starting);
        let features = ClientFeatures {
            elicitation_defaults: self.spec.elicitation_defaults,
            ask_person: (self.opts.ask_person.clone())
                .map(|tx| (ServerId::new(&self.spec.name), tx)),
        };
        // Pinned where it is made and raced by reference: `select!` would otherwise move
        // the whole (13 KB) future into its own state, one more copy per start.
        let connect = std::pin::pin!(Session::connect(
            &self.endpoint,
            attempts.era,
            self.spec.startup_timeout,
            features,
        ));
        let result = tokio::select! {
            r = connect => r,
            () = stop.cancelled() => return None,
        };
        Some(match result {
            Ok(session) => {
                attempts.connected(&session);
                Phase::Serve(Arc::new(session))
            }
            Err(ConnectError::NeedsAuth(challenge)) => Phase::NeedsAuth(challenge),
            Err(e @ ConnectError::Auth(_)) => Phase::NeedsAuth(e.to_string()),
            Err(e) => {
                if let ConnectError::Handshake { stderr_tail, .. } = &e {
                    let tail = stderr_tail.clone();
                    self.publish(|s| s.stderr_tail = tail);
                }
                Phase::Down {
                    reason: e.to_string(),
                    transient: e.is_transient(),
                }
            }
        })
    }

    /// Waits for a person's restart (or for `delay` to pass, when given); `None` when the
    /// host stops first.
    async fn wait(&self, delay: Option<Duration>, stop: &CancellationToken) -> Option<Woken> {
        let elapsed = async {
            match delay {
                Some(delay) => tokio::time::sleep(delay).await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            () = elapsed => Some(Woken::Elapsed),
            () = self.slot.restart.notified() => Some(Woken::Restart),
            () = stop.cancelled() => None,
        }
    }

    /// Gives a remote server OAuth when a sign-in is stored or the grant is a machine one
    /// (see [`OAuth::for_server`]); otherwise a 401 leaves the server in `needs_auth`.
    async fn attach_oauth(&mut self) {
        let Some(vault) = self.opts.credentials.clone() else {
            return;
        };
        let Endpoint::Http { auth, .. } = &mut self.endpoint else {
            return;
        };
        // In a chat a person can approve a new round; elsewhere nobody is asked.
        let person = match self
            .opts
            .ask_person
            .as_ref()
            .filter(|_| self.opts.sign_in_here)
        {
            Some(asks) => {
                match AskInSession::person(ServerId::new(&self.spec.name), asks.clone()).await {
                    Ok(person) => Some(person),
                    Err(e) => {
                        tracing::warn!(server = %self.spec.name, error = %e, "no redirect listener");
                        None
                    }
                }
            }
            None => None,
        };
        match OAuth::for_server(vault, &self.spec, person).await {
            Ok(oauth) => *auth = oauth,
            Err(e) => tracing::warn!(server = %self.spec.name, error = %e, "OAuth not used"),
        }
    }

    /// Runs `work` (a list refresh or a liveness check, which may wait out a whole timeout)
    /// unless the host stops or a person restarts first: neither waits for a server.
    async fn unless_interrupted<T>(
        &self,
        work: impl std::future::Future<Output = T>,
        stop: &CancellationToken,
    ) -> Result<T, Ended> {
        tokio::select! {
            r = work => Ok(r),
            () = stop.cancelled() => Err(Ended::Stopped),
            () = self.slot.restart.notified() => Err(Ended::Restart),
        }
    }

    /// Runs a ready session until it ends or the host stops.
    async fn serve(
        &self,
        session: Arc<Session>,
        retrier: &mut Retrier,
        stop: &CancellationToken,
    ) -> Ended {
        // The first listing counts: a storm of changes right after it is paced too.
        let (mut tools_pace, mut offers_pace) = (Pace::default(), Pace::default());
        tools_pace.start_at(tokio::time::Instant::now());
        offers_pace.start_at(tokio::time::Instant::now());
        let listed = async {
            self.refresh_tools(&session, false).await?;
            self.refresh_offers(&session, false).await;
            Ok::<(), RequestError>(())
        };
        match self.unless_interrupted(listed, stop).await {
            Ok(Ok(())) => {}
            Ok(Err(e)) => {
                let reason = format!("listing tools failed: {e}");
                session.shutdown().await;
                return Ended::Lost(reason);
            }
            Err(ended) => {
                session.shutdown().await;
                return ended;
            }
        }
        self.now_ready(&session, retrier);
        let remote = matches!(self.endpoint, Endpoint::Http { .. });
        let every = self.opts.health_interval;
        let mut health = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
        health.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let ended = loop {
            let check = tokio::select! {
                _ = health.tick(), if remote => true,
                () = self.slot.suspect.notified() => true,
                () = session.closed() => {
                    let (how, tail) = session.reap().await;
                    self.publish(|s| s.stderr_tail = tail);
                    break Ended::Lost(how);
                }
                () = session.tools_changed.notified() => {
                    if let Err(ended) = self.relist_tools(&session, &mut tools_pace, stop).await {
                        session.shutdown().await;
                        break ended;
                    }
                    false
                }
                () = session.offers_changed.notified() => {
                    if let Err(ended) = self.relist_offers(&session, &mut offers_pace, stop).await {
                        session.shutdown().await;
                        break ended;
                    }
                    false
                }
                () = stop.cancelled() => {
                    session.shutdown().await;
                    break Ended::Stopped;
                }
                () = self.slot.restart.notified() => {
                    session.shutdown().await;
                    break Ended::Restart;
                }
            };
            if !check {
                continue;
            }
            // The liveness check may take its whole timeout too; stop and restart win.
            let ended = match self
                .unless_interrupted(session.check_alive(HEALTH_TIMEOUT), stop)
                .await
            {
                Ok(Ok(())) => continue,
                Ok(Err(e)) => Ended::Lost(format!("the server stopped answering ({e})")),
                Err(ended) => ended,
            };
            session.shutdown().await;
            break ended;
        };
        if let Ok(mut s) = self.slot.session.write() {
            *s = None;
        }
        ended
    }

    /// Publishes a session that listed its tools as the server's, ready.
    fn now_ready(&self, session: &Arc<Session>, retrier: &mut Retrier) {
        if let Ok(mut s) = self.slot.session.write() {
            *s = Some(session.clone());
        }
        let era = session.era().clone();
        let note = session.era_note().map(str::to_string);
        let (transport, why) = session.transport();
        let transport_note = why.map(|why| (transport, why.to_string()));
        retrier.on_ready();
        self.publish(|s| {
            s.state = ServerState::Ready;
            s.era = Some(era);
            s.transport_note = transport_note;
            // A reconnect in the known era makes no probe: the first one's reason stands.
            if note.is_some() {
                s.era_note = note;
            }
        });
    }

    /// Reads the tools again after the server said they changed; a failed listing is logged
    /// and the session goes on. `Err` when the host stopped or restarts the server meanwhile.
    async fn relist_tools(
        &self,
        session: &Session,
        pace: &mut Pace,
        stop: &CancellationToken,
    ) -> Result<(), Ended> {
        let listed = self.paced(session, pace, stop, self.refresh_tools(session, true));
        if let Err(e) = listed.await? {
            tracing::warn!(server = %self.spec.name, error = %e, "tool refresh failed");
        }
        Ok(())
    }

    /// The same for prompts and resources, whose failures are issues of their lists.
    async fn relist_offers(
        &self,
        session: &Session,
        pace: &mut Pace,
        stop: &CancellationToken,
    ) -> Result<(), Ended> {
        (self.paced(session, pace, stop, self.refresh_offers(session, true))).await
    }

    /// `relist` at the time `pace` gives a re-listing asked for now (sooner if the connection
    /// ends); `Err` when the host stopped or restarts the server meanwhile.
    async fn paced<T>(
        &self,
        session: &Session,
        pace: &mut Pace,
        stop: &CancellationToken,
        relist: impl std::future::Future<Output = T>,
    ) -> Result<T, Ended> {
        let at = pace.start_at(tokio::time::Instant::now());
        let waited = async {
            session.paced(at).await;
            relist.await
        };
        self.unless_interrupted(waited, stop).await
    }

    /// Reads the server's prompts and resources; `again` after it said they changed.
    async fn refresh_offers(&self, session: &Session, again: bool) {
        let offers = session.list_offers(self.spec.startup_timeout).await;
        for issue in offers
            .prompts
            .issues
            .iter()
            .chain(&offers.resources.issues)
            .chain(&offers.templates.issues)
        {
            tracing::warn!(server = %self.spec.name, item = %issue.item, reason = %issue.reason, "list entry skipped");
        }
        if let Ok(mut o) = self.slot.offers.write() {
            // The same lists again change nothing: no new revision, so nothing downstream
            // is rebuilt for a server that announces changes it did not make.
            if again && **o == offers {
                return;
            }
            *o = Arc::new(offers);
        }
        let warnings = self.list_warnings();
        self.publish(|s| {
            s.revision += 1;
            s.warnings = warnings;
        });
    }

    /// What the current lists left out, one line each (at most [`MAX_WARNINGS`]).
    fn list_warnings(&self) -> Vec<String> {
        let tools = self.slot.tools.read().ok().map(|t| t.clone());
        let offers = self.slot.offers.read().ok().map(|o| o.clone());
        let mut lists = Vec::new();
        if let Some(t) = &tools {
            lists.push(("tools/list", &t.issues));
        }
        if let Some(o) = &offers {
            lists.push(("prompts/list", &o.prompts.issues));
            lists.push(("resources/list", &o.resources.issues));
            lists.push(("resources/templates/list", &o.templates.issues));
        }
        // What cut a whole list first, so the truncation below never hides it.
        let mut all = Vec::new();
        for whole in [true, false] {
            for (what, issues) in &lists {
                all.extend(crate::listing::warnings(what, issues, whole));
            }
        }
        if all.len() > MAX_WARNINGS {
            let more = all.len() - (MAX_WARNINGS - 1);
            all.truncate(MAX_WARNINGS - 1);
            all.push(format!("… and {more} more (see the log)"));
        }
        all
    }

    /// Reads the server's tools; `again` after it said they changed.
    async fn refresh_tools(&self, session: &Session, again: bool) -> Result<(), RequestError> {
        let covers = session.tools_changed.refresh_begins();
        let list = session.list_tools(self.spec.startup_timeout).await?;
        for issue in &list.issues {
            tracing::warn!(server = %self.spec.name, tool = %issue.item, reason = %issue.reason, "tool skipped");
        }
        let count = list.items.len();
        if let Ok(mut t) = self.slot.tools.write() {
            // The same list again changes nothing, as for offers; the catalogue keeps the
            // listing's own `Arc`s, whose identity spares it comparing definitions.
            if again && **t == list {
                drop(t);
                session.tools_changed.refreshed(covers);
                return Ok(());
            }
            *t = Arc::new(list);
        }
        let warnings = self.list_warnings();
        self.publish(|s| {
            s.tool_count = count;
            s.revision += 1;
            s.warnings = warnings;
        });
        session.tools_changed.refreshed(covers);
        Ok(())
    }
}
