//! Wiring shared by every command: reading the environment once, loading the config scopes,
//! reporting config problems (and refusing calls while one is fatal), and connecting the
//! chosen servers through the engine (which puts their calls behind the gate).

use crate::cli::ConfigArgs;
use anyhow::Context;
use mcp_host_auth::{CredentialVault, VaultChoice};
use mcp_host_config::{ConfigPaths, LoadOptions, LoadedConfig, ServerReadiness, TrustLedger};
use mcp_host_engine::Audit;
use mcp_host_engine::host::{Connected, ElicitationAsk, Guards, HostSetup};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The host's view of its world for one command.
pub struct Host {
    /// Cancelled on SIGINT/SIGTERM.
    pub interrupted: CancellationToken,
    pub env: Arc<BTreeMap<String, String>>,
    pub paths: ConfigPaths,
    pub config: LoadedConfig,
    /// OAuth credentials: the OS keyring, else 0600 files in the data dir
    /// (`MCP_HOST_CREDENTIAL_STORE=auto|keyring|file`). Probed on first use.
    pub credentials: CredentialVault,
    /// Whether a live progress line may be drawn on stderr: not while logs go there.
    pub progress: bool,
    /// The one HTTP client of the command, for its model and its remote servers alike,
    /// built at its first use: a command with stdio servers only never loads CA roots.
    pub http: mcp_host_client::NetworkClient,
}

impl Host {
    pub fn load(args: &ConfigArgs) -> anyhow::Result<Self> {
        let interrupted = interrupt_token()?;
        let env: BTreeMap<String, String> = std::env::vars().collect();
        let lookup = |k: &str| env.get(k).cloned();
        let cwd = std::env::current_dir().context("cannot read the current directory")?;
        let paths = ConfigPaths::from_env(&lookup, cwd);
        let ledger = TrustLedger::open(&paths.trust_file())?;
        let opts = LoadOptions {
            extra_files: args.mcp_config.clone(),
            strict: args.strict_mcp_config,
        };
        let config = mcp_host_config::load(&paths, &opts, &ledger, &lookup);
        report_problems(&config);
        let choice: VaultChoice = env
            .get("MCP_HOST_CREDENTIAL_STORE")
            .map(|v| v.parse())
            .transpose()
            .map_err(|e: String| anyhow::anyhow!("MCP_HOST_CREDENTIAL_STORE: {e}"))?
            .unwrap_or_default();
        let credentials = CredentialVault::choosing(paths.data_dir.join("credentials"), choice);
        Ok(Self {
            interrupted,
            env: Arc::new(env),
            paths,
            config,
            credentials,
            progress: true,
            http: mcp_host_engine::host::lazy_http_client(),
        })
    }

    /// Stops a command that could make a call (or report what decides one) while a config
    /// file, rule or hook could not be read as written: the rule that was lost might have
    /// forbidden the call. Called before any server starts; the problems were printed by
    /// [`Host::load`].
    pub fn refuse_if_unsound(&self) -> anyhow::Result<()> {
        let fatal = self.config.fatal_problems().count();
        if fatal == 0 {
            return Ok(());
        }
        anyhow::bail!(
            "the configuration has {fatal} fatal problem{} (above); no server was started and no call made",
            if fatal == 1 { "" } else { "s" }
        )
    }

    /// The exit status of a command that ran with what it could read: a failure while any
    /// file, rule or hook could not be read, whatever the command itself achieved.
    pub fn exit_status(&self, code: std::process::ExitCode) -> std::process::ExitCode {
        if self.config.is_sound() {
            code
        } else {
            std::process::ExitCode::FAILURE
        }
    }

    /// The SQLite store of remembered answers.
    pub async fn store(&self) -> anyhow::Result<mcp_host_store::Store> {
        Ok(mcp_host_store::Store::open(&self.paths.data_dir.join("store.sqlite")).await?)
    }

    pub fn ledger(&self) -> anyhow::Result<TrustLedger> {
        Ok(TrustLedger::open(&self.paths.trust_file())?)
    }

    fn record_dir(&self) -> PathBuf {
        match self.env.get("XDG_RUNTIME_DIR").filter(|d| !d.is_empty()) {
            Some(d) => PathBuf::from(d).join("mcp-host"),
            None => self.paths.data_dir.join("run"),
        }
    }

    /// Where servers' stderr is kept: `NAME.log` and `NAME.log.1` per server.
    pub fn logs_dir(&self) -> PathBuf {
        self.paths.data_dir.join("logs")
    }

    /// What connecting the servers needs from this host.
    fn setup<'a>(
        &'a self,
        only: Option<&'a [String]>,
        ask_person: Option<tokio::sync::mpsc::UnboundedSender<ElicitationAsk>>,
    ) -> anyhow::Result<HostSetup<'a>> {
        Ok(HostSetup {
            config: &self.config,
            env: self.env.clone(),
            supervisor: supervisor_program()?,
            record_dir: self.record_dir(),
            credentials: self.credentials.clone(),
            http: self.http.clone(),
            only,
            log_dir: Some(self.logs_dir()),
            // Whoever answers questions here is at this machine, with its browser.
            sign_in_here: ask_person.is_some(),
            ask_person,
            protected: (self.paths.user_file.parent().into_iter())
                .map(Path::to_path_buf)
                .chain([self.paths.data_dir.clone()])
                .collect(),
            zygote: None,
        })
    }

    /// Starts the configured servers (only `only` when given) for a command that only looks
    /// at them: no rule or hook is needed, since nothing is called. The audit log is kept all
    /// the same: what the servers' egress proxies let through or refused while they started
    /// belongs in it whichever command started them.
    pub fn look(&self, only: Option<&[String]>) -> anyhow::Result<Connected> {
        let setup = self.setup(only, None)?;
        let guards = Guards {
            policy: mcp_host_policy::Policy::default(),
            hooks: mcp_host_engine::Hooks::default(),
            audit: Some(Audit::new(&self.paths.data_dir)),
        };
        Ok(mcp_host_engine::host::connect(setup, guards)?)
    }

    /// Starts the configured servers (only `only` when given) behind the gate of every
    /// call: the config's rules and hooks, and the audit log.
    pub fn connect(
        &self,
        only: Option<&[String]>,
        policy: mcp_host_policy::Policy,
        ask_person: Option<tokio::sync::mpsc::UnboundedSender<ElicitationAsk>>,
    ) -> anyhow::Result<Connected> {
        let setup = self.setup(only, ask_person)?;
        let guards = Guards {
            policy,
            hooks: self.hooks()?,
            audit: Some(Audit::new(&self.paths.data_dir)),
        };
        Ok(mcp_host_engine::host::connect(setup, guards)?)
    }

    /// The scope label of a configured server.
    pub fn scope_of(&self, name: &str) -> &'static str {
        self.config
            .entries
            .iter()
            .find(|e| e.name == name)
            .map_or("?", |e| e.scope.label())
    }

    /// The model and base URL a command uses: the command line's, else `MCP_HOST_MODEL`
    /// (read by the provider choice itself), else the user config's `defaults`. The
    /// config's base URL goes with the config's model only: it would send another
    /// provider's requests to the wrong place.
    pub fn model_and_url(
        &self,
        model: Option<&str>,
        base_url: Option<&str>,
    ) -> (Option<String>, Option<String>) {
        let d = &self.config.defaults;
        if model.is_some()
            || self
                .env
                .get("MCP_HOST_MODEL")
                .is_some_and(|v| !v.is_empty())
        {
            return (model.map(str::to_string), base_url.map(str::to_string));
        }
        let url = base_url.map(str::to_string).or_else(|| d.base_url.clone());
        (d.model.clone(), url)
    }

    /// The configured servers whose tools could carry the model-visible `name`: what a
    /// command about one tool starts (see `names::may_own`).
    pub fn servers_owning(&self, name: &str) -> Vec<String> {
        (self.config.entries.iter())
            .filter(|e| mcp_host_registry::names::may_own(&e.name, name))
            .map(|e| e.name.clone())
            .collect()
    }

    /// Refuses, with what to do, a command about servers that cannot start as configured
    /// (waiting for approval, denied, disabled, broken); `Ok` when any of them can.
    pub fn startable(&self, names: &[String], asked: &str) -> anyhow::Result<()> {
        use ServerReadiness as R;
        let entries: Vec<_> = (self.config.entries.iter())
            .filter(|e| names.contains(&e.name))
            .collect();
        if entries.iter().any(|e| matches!(e.readiness, R::Start(_))) {
            return Ok(());
        }
        let Some(e) = entries.first() else {
            anyhow::bail!("no configured server has a tool named `{asked}` (see `mcp-host tools`)");
        };
        let name = mcp_host_config::visible(&e.name);
        match &e.readiness {
            R::PendingApproval => anyhow::bail!(
                "server `{name}` is from this project's .mcp.json and waits for your approval: mcp-host servers approve {name}"
            ),
            R::Denied => anyhow::bail!(
                "server `{name}` is from this project's .mcp.json and you denied it: mcp-host servers approve {name} to allow it"
            ),
            R::Disabled => anyhow::bail!(
                "server `{name}` is disabled (`\"enabled\": false` in {})",
                e.file.display()
            ),
            R::Invalid(p) => anyhow::bail!("server `{name}` cannot start: {p}"),
            R::Start(_) => Ok(()),
        }
    }

    /// The longest a one-shot command should wait for servers to settle.
    pub fn settle_limit(&self) -> Duration {
        let longest = (self.config.entries.iter())
            .filter_map(|e| match &e.readiness {
                ServerReadiness::Start(s) => Some(s.startup_timeout),
                _ => None,
            })
            .max()
            .unwrap_or_default();
        // The first connection may be retried (see RetryPolicy::initial_retries).
        longest * 2 + Duration::from_secs(20)
    }
}

/// Prints every problem of a loaded configuration on stderr, the fatal ones first (they are
/// why a command stops), then each server that cannot be used and why.
pub fn report_problems(config: &LoadedConfig) {
    let mut problems: Vec<_> = config.problems.iter().collect();
    problems.sort_by_key(|p| p.severity);
    for p in problems {
        crate::output::errln!("{}: {p}", p.severity.label());
    }
    for e in &config.entries {
        if let ServerReadiness::Invalid(p) = &e.readiness {
            crate::output::errln!("error: server `{}`: {p}", mcp_host_config::visible(&e.name));
        }
    }
}

/// How long the host may take to stop after SIGINT/SIGTERM before it exits anyway.
/// Servers die with it: each supervisor watches its lifeline pipe (see
/// `client/src/supervisor.rs`) and ends its server's process tree when the host is gone.
pub const EXIT_GRACE: Duration = Duration::from_millis(1_500);

/// A token cancelled on the first SIGINT or SIGTERM. The handlers are installed before this
/// returns, so a signal that arrives while servers are still starting is not lost (and does
/// not kill the host before it can stop them).
///
/// Signals are read on a plain thread, not a tokio task: a task cannot run while every
/// worker is busy (a long validation, a blocking call), and a signal must still end the host.
/// The first signal cancels the token and starts a watchdog that exits the process with
/// status 130 after [`EXIT_GRACE`] unless it ended by then; a second signal exits at once.
pub fn interrupt_token() -> anyhow::Result<CancellationToken> {
    use signal_hook::consts::{SIGINT, SIGTERM};
    let mut signals = signal_hook::iterator::Signals::new([SIGINT, SIGTERM])
        .context("cannot install the SIGINT/SIGTERM handlers")?;
    let token = CancellationToken::new();
    let fire = token.clone();
    std::thread::Builder::new()
        .name("signals".into())
        .spawn(move || {
            let mut received = signals.forever();
            if received.next().is_none() {
                return;
            }
            fire.cancel();
            let watchdog = std::thread::Builder::new()
                .name("exit-watchdog".into())
                .spawn(|| {
                    std::thread::sleep(EXIT_GRACE);
                    exit_now("did not stop in time");
                });
            if watchdog.is_err() {
                exit_now("cannot start the exit watchdog");
            }
            if received.next().is_some() {
                exit_now("second signal");
            }
        })
        .context("cannot start the signal thread")?;
    Ok(token)
}

/// The program each stdio server runs under: the small `mcp-host-supervise` installed
/// beside this executable (under 1 MiB of memory each), else this executable itself, which
/// does the same as `mcp-host __supervise` at several times the cost per server. A small
/// program much older than this one is a leftover of an earlier build (`cargo run` builds
/// only the host) and is passed over: the two must speak the same arguments.
pub fn supervisor_program() -> anyhow::Result<std::path::PathBuf> {
    const SAME_BUILD: std::time::Duration = std::time::Duration::from_secs(600);
    let exe = std::env::current_exe().context("cannot find the mcp-host executable")?;
    let small = exe.with_file_name("mcp-host-supervise");
    let modified = |p: &Path| std::fs::metadata(p).and_then(|m| m.modified()).ok();
    let current = match (modified(&small), modified(&exe)) {
        (Some(small_at), Some(host_at)) => small_at + SAME_BUILD >= host_at,
        _ => false,
    };
    Ok(if current { small } else { exe })
}

impl Host {
    /// The user's pins of tool definitions.
    pub async fn pins(&self) -> anyhow::Result<mcp_host_store::pins::PinStore> {
        let path = self.paths.data_dir.join("pins.sqlite");
        Ok(mcp_host_store::pins::PinStore::open(&path).await?)
    }

    /// The hooks of every scope that may define them. A hook that cannot be used is an
    /// error: hooks guard calls, and a guard left out would let calls through.
    pub fn hooks(&self) -> anyhow::Result<mcp_host_engine::Hooks> {
        Ok(mcp_host_engine::Hooks::compile(&self.config)?)
    }
}

/// Ends the process without unwinding the runtime; the terminal is given back first (raw
/// mode off and, on a terminal, the alternate screen left).
fn exit_now(why: &str) -> ! {
    use std::io::IsTerminal;
    if std::io::stdout().is_terminal() {
        crate::chat::restore_terminal();
    } else {
        let _ = crossterm::terminal::disable_raw_mode();
    }
    crate::output::errln!("interrupted: exiting ({why}); servers stop with the host");
    std::process::exit(130)
}
