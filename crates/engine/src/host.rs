//! Connecting the host to its configured servers, for every front end alike: which servers
//! start (and in what state the others are shown), the connection manager's options, each
//! started server's facts kept beside the manager (`Servers`, read when a catalogue is
//! built, so nobody asks the connection layer for configuration), and the gate that takes
//! the manager's one capability to call tools. This is the only place the manager is
//! started, so no front end ever holds that capability. Also the one connection `auth login`
//! makes to run a server's sign-in.

use crate::audit::Audit;
use crate::gate::Gate;
use crate::hooks::Hooks;
use mcp_host_auth::{CredentialVault, OAuth};
use mcp_host_client::sandbox::{DenialReport, Kernel, LANDLOCK_NET_ABI, launch::SandboxOptions};
pub use mcp_host_client::zygote::Zygote;
use mcp_host_client::{ClientFeatures, ConnectError, Endpoint, EraChoice, Session};
use mcp_host_client::{ManagerOptions, ServerSetup, SupervisorCommand, backoff::RetryPolicy};
use mcp_host_config::{LoadedConfig, ServerEntry, ServerReadiness, ServerSpec, Transport};
use mcp_host_core::confinement::EgressRecord;
use mcp_host_core::{ServerFacts, ServerId, ServerState, TransportKind};
use mcp_host_egress::{Report, Resolver};
use mcp_host_policy::Policy;
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

pub use mcp_host_client::{ElicitationAsk, ElicitationKind, ElicitationReply, Manager};

/// How long a connection to a remote server or a model provider may take to open.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// What connecting needs from the front end: the configuration, the environment read once,
/// where the supervisor program is, and where secrets live.
pub struct HostSetup<'a> {
    pub config: &'a LoadedConfig,
    pub env: Arc<BTreeMap<String, String>>,
    /// The program that supervises stdio servers (the host's own executable).
    pub supervisor: PathBuf,
    /// Where the supervisors record their servers, so a later host can end leftovers.
    pub record_dir: PathBuf,
    pub credentials: CredentialVault,
    /// The client remote servers are reached through (built when the first one is).
    pub http: mcp_host_client::NetworkClient,
    /// Start only these servers (a command that needs only some).
    pub only: Option<&'a [String]>,
    /// Where each stdio server's stderr is kept (`mcp-host logs SERVER`).
    pub log_dir: Option<PathBuf>,
    /// Where servers' questions for a person go; `None` answers them with their defaults.
    pub ask_person: Option<tokio::sync::mpsc::UnboundedSender<ElicitationAsk>>,
    /// A sign-in a stored credential needs may be put to that person here (a chat).
    pub sign_in_here: bool,
    /// The host's own data and configuration folders, which no server's argument grants.
    pub protected: Vec<PathBuf>,
    /// A zygote shared beyond this connection (the hosted service's, for every user's
    /// supervisors). `None`: one of its own when two or more stdio servers are started here.
    pub zygote: Option<Zygote>,
}

/// The rules every call passes, compiled by the front end from the configuration.
pub struct Guards {
    pub policy: Policy,
    pub hooks: Hooks,
    /// `None`: no audit log (tests that read the records from the report).
    pub audit: Option<Audit>,
}

/// The started servers and the gate over their calls.
pub struct Connected {
    pub servers: Servers,
    pub gate: Gate,
}

/// The connection manager, and what the configuration says about each started server's
/// tools. The manager gets only what it needs to connect; the facts stay here, on the
/// host's side, and go into every catalogue built from these servers.
#[derive(Debug)]
pub struct Servers {
    manager: Manager,
    facts: BTreeMap<ServerId, Arc<ServerFacts>>,
}

impl Servers {
    pub fn new(manager: Manager, facts: BTreeMap<ServerId, Arc<ServerFacts>>) -> Self {
        Self { manager, facts }
    }

    /// The configured facts of a started server (`None` for one that was not started).
    pub fn facts(&self, id: &ServerId) -> Option<&Arc<ServerFacts>> {
        self.facts.get(id)
    }

    pub fn manager(&self) -> &Manager {
        &self.manager
    }
}

/// Whoever holds the started servers uses the manager's own API on them (states, lists,
/// reconnects, shutdown); only building a catalogue needs the facts beside it.
impl std::ops::Deref for Servers {
    type Target = Manager;

    fn deref(&self) -> &Manager {
        &self.manager
    }
}

#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("cannot build the HTTP client: {0}")]
    Http(#[from] reqwest::Error),
    #[error(transparent)]
    Connect(#[from] ConnectError),
    #[error("{RESOLVE_VAR}: {0}")]
    Resolve(String),
}

/// Fixed answers for the egress proxy's resolver, `name=address,...` (like curl's
/// `--resolve`): how a test or an air-gapped setup points names at local sites.
pub const RESOLVE_VAR: &str = "MCP_HOST_EGRESS_RESOLVE";

/// Starts the configured servers (only `setup.only` when given) and puts the capability to
/// call their tools into the gate.
pub fn connect(setup: HostSetup<'_>, guards: Guards) -> Result<Connected, HostError> {
    let kernel = Kernel::probe();
    let resolver = match setup.env.get(RESOLVE_VAR) {
        Some(spec) => Resolver::with_fixed(spec).map_err(HostError::Resolve)?,
        None => Resolver::default(),
    };
    // Every connection a confined server makes through its proxy is a line of the audit log.
    let report = guards
        .audit
        .clone()
        .map(|audit| -> Report { Arc::new(move |record: EgressRecord| audit.egress(&record)) });
    let denials = guards.audit.clone().map(|audit| -> DenialReport {
        Arc::new(move |server: &str, what: &str| audit.denial(server, what))
    });
    let chosen = |e: &&ServerEntry| setup.only.is_none_or(|names| names.contains(&e.name));
    // One stdio server has nothing to share a zygote with: its supervisor is exec'd, as a
    // zygote would be (a command about one tool starts only the server that owns it).
    let stdio_servers = (setup.config.entries.iter().filter(chosen))
        .filter(|e| e.transport == TransportKind::Stdio)
        .count();
    let zygote = match setup.zygote {
        Some(shared) => shared,
        None if stdio_servers > 1 => Zygote::default(),
        None => Zygote::off(),
    };
    let opts = ManagerOptions {
        supervisor: SupervisorCommand {
            program: setup.supervisor,
            grace: Duration::from_secs(1),
            record_dir: Some(setup.record_dir),
            sandbox: SandboxOptions {
                resolver: Arc::new(resolver),
                report,
                denials,
                protected: setup.protected,
                kernel,
                netns: true,
            },
            zygote,
        },
        host_env: setup.env,
        retry: RetryPolicy::default(),
        http_client: setup.http,
        health_interval: Duration::from_secs(30),
        ask_person: setup.ask_person,
        sign_in_here: setup.sign_in_here,
        credentials: Some(setup.credentials),
        harness: None,
        log_dir: setup.log_dir,
    };
    let mut facts = BTreeMap::new();
    let setups = (setup.config.entries.iter().filter(chosen))
        .map(|e| {
            // A project server waiting for a person is held with its spec (the manager
            // starts nothing until it is enabled), so approving it starts it at once.
            let held = e.on_approval.as_deref().cloned();
            let (spec, initial) = match &e.readiness {
                ServerReadiness::Start(spec) => (Some(spec.clone()), ServerState::Starting),
                // A denied server is not held: enabling it must not get round the answer.
                ServerReadiness::Disabled | ServerReadiness::Denied => {
                    (None, ServerState::Disabled)
                }
                ServerReadiness::PendingApproval => (held, ServerState::PendingApproval),
                ServerReadiness::Invalid(p) => (
                    None,
                    ServerState::Failed {
                        reason: p.to_string(),
                    },
                ),
            };
            if let Some(spec) = &spec {
                let mut f = spec.facts.clone();
                f.sealed = sealed(spec, kernel);
                facts.insert(ServerId::new(&e.name), Arc::new(f));
            }
            ServerSetup {
                id: ServerId::new(&e.name),
                transport: e.transport,
                spec,
                initial,
            }
        })
        .collect();
    let (manager, caller) = Manager::start(setups, opts);
    let gate = Gate::new(caller, guards.policy, guards.hooks, guards.audit);
    Ok(Connected {
        servers: Servers::new(manager, facts),
        gate,
    })
}

/// Whether a server will run sealed: a strict sandbox this kernel enforces in full (files
/// and TCP), with nothing to write and no host to reach (see `profile::sealed`).
fn sealed(spec: &ServerSpec, kernel: Kernel) -> bool {
    let Transport::Stdio {
        command,
        args,
        env: declared,
        cwd,
        sandbox,
    } = &spec.transport
    else {
        return false;
    };
    let here = std::env::current_dir().unwrap_or_default();
    let cwd = cwd.as_deref().unwrap_or(&here);
    kernel.landlock_abi >= LANDLOCK_NET_ABI
        && mcp_host_client::sandbox::profile::sealed(sandbox, command, args, declared, cwd)
}

/// The HTTP client for model providers and remote servers, built at its first use.
pub fn lazy_http_client() -> mcp_host_client::NetworkClient {
    mcp_host_client::NetworkClient::lazy(CONNECT_TIMEOUT)
}

/// The HTTP client for model providers and remote servers.
pub fn http_client() -> Result<reqwest::Client, reqwest::Error> {
    mcp_host_client::http_client(CONNECT_TIMEOUT)
}

/// The HTTP client for model providers (it loads CA roots only when it first speaks TLS).
pub fn model_client() -> mcp_host_models::ModelClient {
    mcp_host_models::ModelClient::new(CONNECT_TIMEOUT)
}

/// A run whose configured servers all failed is an error, not a model turn without tools:
/// the servers that failed, with why, or `None` when any is usable (or none was meant to
/// start).
pub fn every_server_failed(servers: &Manager) -> Option<Vec<String>> {
    let mut failed = Vec::new();
    for id in servers.ids() {
        let Some(status) = servers.status(id) else {
            continue;
        };
        match &status.state {
            ServerState::Disabled | ServerState::PendingApproval => {}
            ServerState::Failed { reason } | ServerState::NeedsAuth { reason } => failed.push(
                format!("`{id}`: {}", mcp_host_core::sanitize::one_line(reason, 200)),
            ),
            _ => return None,
        }
    }
    (!failed.is_empty()).then_some(failed)
}

/// Connects once to the remote server at `url` through `oauth` and closes the session again,
/// so that whatever authorization the server asks for runs now, with `oauth`'s authorizer
/// (`mcp-host auth login`), waiting at most `limit`.
pub async fn sign_in(
    url: &str,
    headers: &BTreeMap<String, String>,
    oauth: &OAuth,
    limit: Duration,
) -> Result<(), HostError> {
    let endpoint = Endpoint::Http {
        url: url.to_string(),
        headers: headers.clone(),
        client: mcp_host_client::http_client(Duration::from_secs(30))?.into(),
        auth: Some(oauth.clone()),
        wire: mcp_host_client::HttpWire::Streamable,
    };
    let session =
        Session::connect(&endpoint, EraChoice::Auto, limit, ClientFeatures::default()).await?;
    session.shutdown().await;
    Ok(())
}
