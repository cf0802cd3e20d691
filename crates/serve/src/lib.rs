//! `mcp-host serve`: the hosted host. Many users, each with their own engine session (their
//! own servers, started in the sandbox on first use and stopped when idle; their own store,
//! approvals and remembered answers), behind one HTTP service: a JSON API whose turns stream
//! as SSE from a numbered, persisted event log (so a client resumes with `Last-Event-ID` on
//! any replica), a web page embedded in the binary, `/healthz`, `/readyz` and `/metrics`.
//! The front end is thin like the others: every call still passes the engine's one gate.
//!
//! Files: `db` (the pool, SQLite or PostgreSQL), `users` (people, tokens, sign-ins, access),
//! `journal` (conversations, turns with leases, events, inboxes), `access` (Host, Origin,
//! CSRF, credentials, rate limits), `owned` (a conversation looked up with its owner), `hub` (live sessions, turns, answers, the event pump),
//! `start` (building one user's session), `workers` (the threads sessions run on), `api`
//! and `sse` (the routes), `signin` and `oidc` (browser sign-in), `remote` (signing a user
//! in to a remote MCP server), `page` (the embedded web page), `metrics`, `streams`.

pub mod access;
mod api;
mod bells;
mod credentials;
pub mod db;
pub mod hub;
pub mod journal;
pub mod listener;
pub mod metrics;
pub mod oidc;
mod owned;
mod page;
mod remote;
mod signin;
mod sse;
mod start;
mod streams;
pub mod users;
mod workers;

use crate::access::{Origins, RateLimit};
use crate::db::Db;
use crate::hub::Hub;
use mcp_host_config::LoadedConfig;
use mcp_host_core::decision::Mode;
use mcp_host_engine::session::ModelChoice;
use mcp_host_policy::Policy;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// What every user's session is made from; fixed while the service runs.
pub struct Service {
    /// The admin's catalogue: every server that exists, with the rules for everyone.
    pub catalogue: LoadedConfig,
    pub policy: Policy,
    pub data_dir: PathBuf,
    pub env: Arc<BTreeMap<String, String>>,
    /// The program that supervises stdio servers (the host's own executable).
    pub supervisor: PathBuf,
    /// Every user's supervisors are forked from this one zygote, started with the first.
    pub zygote: mcp_host_engine::host::Zygote,
    pub model: Option<ModelChoice>,
    pub mode: Mode,
    pub max_steps: usize,
    /// A session with no turn for this long is stopped (its servers with it).
    pub idle_stop: Duration,
    /// How long a running turn's lease lasts without renewal.
    pub lease_ms: i64,
    /// This replica's name in the turns table.
    pub replica: String,
    /// Servers one user may have enabled at once.
    pub max_servers_per_user: usize,
    /// How often a stream looks for events written by another replica.
    pub poll: Duration,
    /// What users' OAuth credentials for remote servers are sealed with.
    pub sealing: Arc<mcp_host_auth::SealingKey>,
}

impl Service {
    /// Everything of `user`'s under the data folder (its name is a host-made hex id).
    pub fn user_dir(&self, user: &users::User) -> PathBuf {
        self.data_dir.join("users").join(&user.id)
    }

    /// `user`'s own credential vault: their rows of the service database (`data`), sealed
    /// with the service key and bound to them, so no other user's vault (or a copy of the
    /// database) opens them.
    pub fn vault(&self, user: &users::User, data: &db::UserData) -> mcp_host_auth::CredentialVault {
        mcp_host_auth::CredentialVault::sealed_rows(
            data.credentials.clone(),
            self.sealing.clone(),
            format!("user {}", user.id),
        )
    }
}

/// How the service listens and protects itself.
pub struct Listen {
    pub addr: SocketAddr,
    /// The URL people reach this service at (for `Host`/`Origin` checks and cookies).
    pub public_url: String,
    /// Loopback-only, one admin user signed in with a link printed at start (its secret is
    /// in memory only and lasts as long as the process); no identity provider.
    pub single_user: bool,
    pub database_url: Option<String>,
    pub max_body: usize,
    pub requests_per_second: f64,
    pub burst: f64,
    /// How long in-flight turns may take to finish after SIGTERM.
    pub drain: Duration,
    pub workers: usize,
    /// Sign people in with this OpenID Connect provider.
    pub oidc: Option<oidc::OidcSettings>,
    pub connections: listener::ConnectionLimits,
    /// The bearer token `/metrics` asks for (none: it answers anyone who passes the Host
    /// check, as Prometheus scrapers usually expect).
    pub metrics_token: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    Db(#[from] db::DbError),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("--single-user listens on loopback only; {0} is not a loopback address")]
    NotLoopback(SocketAddr),
    #[error("cannot start the session threads: {0}")]
    Threads(std::io::Error),
    #[error("the HTTP server failed: {0}")]
    Http(std::io::Error),
}

/// Shared by every route.
#[derive(Clone)]
pub struct AppState {
    pub hub: Arc<Hub>,
    pub origins: Arc<Origins>,
    pub limits: Arc<RateLimit>,
    /// The budget of requests to the sign-in pages, shared by everyone not signed in.
    pub anonymous: Arc<RateLimit>,
    /// The single-user mode's sign-in secret (in memory only).
    pub signin: Option<Arc<String>>,
    pub oidc: Option<Arc<oidc::Oidc>>,
    /// Remote-server sign-ins waiting for their redirect.
    pub signins: Arc<remote::RemoteSignins>,
    /// Where people reach the service (the OpenID Connect callback is under it).
    pub public_url: String,
    pub secure_cookies: bool,
    /// When set, `/metrics` answers only a scraper presenting it as a bearer token.
    pub metrics_token: Option<Arc<String>>,
}

/// The name `--single-user` signs in as.
pub const LOCAL_USER: &str = "local";

/// Runs the service until `stop` is cancelled, then drains: no new turn, streams told to
/// reconnect elsewhere, running turns given until the drain deadline (then interrupted),
/// every session's servers stopped, and only then the listener closed. `announce` is told
/// the address and, in single-user mode, the sign-in link.
pub async fn serve(
    service: Service,
    listen: Listen,
    stop: CancellationToken,
    announce: impl Fn(&str),
) -> Result<(), ServeError> {
    if listen.single_user && !listen.addr.ip().is_loopback() {
        return Err(ServeError::NotLoopback(listen.addr));
    }
    let db = Db::open(
        listen.database_url.as_deref(),
        &service.data_dir.join("service.sqlite"),
    )
    .await?;
    db.check_sealing_key(&service.sealing).await?;
    let signin = if listen.single_user {
        let user = db.upsert_user(LOCAL_USER, true, &[]).await?;
        for entry in &service.catalogue.entries {
            db.grant(&entry.name, &format!("user:{LOCAL_USER}")).await?;
            db.set_enabled(&user, &entry.name, true).await?;
        }
        Some(Arc::new(db::new_secret()))
    } else {
        None
    };
    let workers = workers::Workers::start(listen.workers).map_err(ServeError::Threads)?;
    let service = Arc::new(service);
    let hub = Arc::new(Hub::new(db, service.clone(), workers));
    // Turns a previous process of this replica's name left running cannot be this one's:
    // they are interrupted now, as are other replicas' whose leases ran out.
    let mut swept = hub.db.interrupt_replica_turns(&hub.service.replica).await?;
    swept.extend(hub.db.sweep_expired(db::now_ms()).await?);
    if !swept.is_empty() {
        tracing::info!(
            count = swept.len(),
            "marked turns interrupted whose replica stopped"
        );
    }
    let listener = tokio::net::TcpListener::bind(listen.addr)
        .await
        .map_err(|source| ServeError::Bind {
            addr: listen.addr,
            source,
        })?;
    let addr = listener.local_addr().map_err(ServeError::Http)?;
    let public_url = if listen.public_url.is_empty() {
        format!("http://{addr}")
    } else {
        listen.public_url.clone()
    };
    let state = AppState {
        hub: hub.clone(),
        origins: Arc::new(Origins::for_service(&public_url, addr)),
        limits: Arc::new(RateLimit::new(listen.requests_per_second, listen.burst)),
        anonymous: Arc::new(RateLimit::new(
            access::ANONYMOUS_PER_SECOND,
            access::ANONYMOUS_PER_SECOND * 5.0,
        )),
        signin: signin.clone(),
        oidc: (listen.oidc.clone()).map(|o| Arc::new(oidc::Oidc::new(o, http_client()))),
        public_url: public_url.clone(),
        signins: Arc::default(),
        secure_cookies: public_url.starts_with("https://") || addr.ip().is_loopback(),
        metrics_token: listen.metrics_token.clone().map(Arc::new),
    };
    announce(&format!("mcp-host serve: listening on http://{addr}"));
    announce(&format!("database: {}", hub.db.describe().await?));
    if let Some(secret) = &signin {
        announce(&format!("sign in: {public_url}/signin?token={secret}"));
    }
    let housekeeping = tokio::spawn(housekeeping(hub.clone()));
    let bells = match (&listen.database_url, hub.db.backend) {
        (Some(url), db::Backend::Postgres) => {
            Some(tokio::spawn(bells::listen(hub.clone(), url.clone())))
        }
        _ => None,
    };
    let app = api::router(state, listen.max_body);
    let closed = CancellationToken::new();
    let server = tokio::spawn(listener::serve(
        listener,
        app,
        listen.connections,
        closed.clone(),
    ));
    stop.cancelled().await;
    drain(&hub, listen.drain).await;
    housekeeping.abort();
    if let Some(bells) = bells {
        bells.abort();
    }
    closed.cancel();
    let _ = server.await;
    Ok(())
}

/// The client the service talks to identity providers with.
fn http_client() -> reqwest::Client {
    // Redirects are not followed: a provider's endpoints answer where they are.
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap_or_default()
}

/// How often expired sessions, old tokens and refusals are deleted (every replica does it;
/// the deletes are idempotent).
const PRUNE_EVERY: Duration = Duration::from_secs(600);

/// Leases, the sweep of dead replicas' turns, other replicas' answers, idle sessions, and
/// pruning.
async fn housekeeping(hub: Arc<Hub>) {
    let lease = Duration::from_millis(u64::try_from(hub.service.lease_ms).unwrap_or(10_000));
    let mut renew = tokio::time::interval(lease / 3);
    let mut sweep = tokio::time::interval(lease / 2);
    let mut next_inbox = tokio::time::Instant::now();
    let mut idle = tokio::time::interval(Duration::from_secs(1).min(hub.service.idle_stop));
    let mut prune = tokio::time::interval(PRUNE_EVERY);
    for t in [&mut renew, &mut sweep, &mut idle, &mut prune] {
        t.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    }
    loop {
        let result = tokio::select! {
            _ = prune.tick() => hub.db.prune(db::now_ms()).await.map(drop),
            _ = renew.tick() => hub.db.renew_leases(&hub.service.replica, db::now_ms() + hub.service.lease_ms).await.map(drop),
            _ = sweep.tick() => match hub.db.sweep_others(db::now_ms(), &hub.service.replica).await {
                Ok(swept) => {
                    for c in swept {
                        hub.streams.notify(&c);
                    }
                    Ok(())
                }
                Err(e) => Err(e),
            },
            () = tokio::time::sleep_until(next_inbox) => {
                next_inbox = tokio::time::Instant::now() + hub.poll_interval();
                hub.take_inbox().await
            }
            () = hub.inbox_bell.notified() => {
                next_inbox = tokio::time::Instant::now() + hub.poll_interval();
                hub.take_inbox().await
            }
            _ = idle.tick() => {
                hub.stop_idle().await;
                Ok(())
            }
        };
        if let Err(e) = result {
            tracing::warn!("housekeeping: {e}");
        }
    }
}

/// The SIGTERM sequence (see [`serve`]).
async fn drain(hub: &Hub, deadline: Duration) {
    hub.draining.cancel();
    let until = tokio::time::Instant::now() + deadline;
    while hub.running_turns().await > 0 && tokio::time::Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    if hub.running_turns().await > 0 {
        hub.interrupt_all().await;
        // Interrupted turns end within moments (their servers are told to cancel); the pump
        // marks any that does not as interrupted when its session ends below.
        let grace = tokio::time::Instant::now() + Duration::from_secs(2);
        while hub.running_turns().await > 0 && tokio::time::Instant::now() < grace {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
    // Servers stop in the spec's order (stdin closed, SIGTERM, SIGKILL), each bounded; this
    // bounds the whole, so the drain ends even if a session is stuck.
    if tokio::time::timeout(STOP_SESSIONS, hub.stop_all())
        .await
        .is_err()
    {
        tracing::warn!("some sessions did not stop in time; their servers end with the host");
    }
}

/// How long stopping every session may take at the end of a drain.
const STOP_SESSIONS: Duration = Duration::from_secs(20);
