//! The host's side of starting a confined server: its private temp folder, its egress
//! proxy on a loopback port of its own, the profile the supervisor will enforce, the
//! variables that point the server at both, and the account a person reads. A `require`d
//! sandbox the kernel cannot enforce stops here, before anything runs.

use super::profile::{self, Launch};
use super::{Confined, DenialReport, Kernel, netns};
use mcp_host_config::SandboxSpec;
use mcp_host_core::confinement::{ConfinementView, EgressRecord, SandboxLevel};
use mcp_host_egress::{Proxy, Report, Resolve, Resolver, Rules};
use std::collections::BTreeMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use tokio_util::sync::{CancellationToken, DropGuard};

/// What every confined server shares: how its proxy resolves names and where its
/// connections are reported, and the folders no argument may grant.
#[derive(Clone)]
pub struct SandboxOptions {
    pub resolver: Arc<dyn Resolve>,
    /// Where every proxied connection is reported (the audit log).
    pub report: Option<Report>,
    /// Where the first of each other denial is reported (the audit log).
    pub denials: Option<DenialReport>,
    /// The host's own data and configuration folders.
    pub protected: Vec<PathBuf>,
    pub kernel: Kernel,
    /// Give each confined server a network namespace of its own where the kernel allows.
    pub netns: bool,
}

impl Default for SandboxOptions {
    fn default() -> Self {
        Self {
            resolver: Arc::new(Resolver::default()),
            report: None,
            denials: None,
            protected: Vec::new(),
            kernel: Kernel::probe(),
            netns: true,
        }
    }
}

impl std::fmt::Debug for SandboxOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SandboxOptions")
            .field("protected", &self.protected)
            .field("kernel", &self.kernel)
            .finish_non_exhaustive()
    }
}

/// A confined launch, ready for the supervisor.
pub struct Prepared {
    /// The profile, as the supervisor's `--sandbox` argument.
    pub profile_json: String,
    /// Variables set for the server over everything else (temp folder, proxy).
    pub env: BTreeMap<String, String>,
    /// Stops the proxy when the process is dropped.
    pub proxy: DropGuard,
    /// The supervisor's end of the socket its network namespace's listener comes back on.
    pub netns: Option<OwnedFd>,
}

#[derive(Debug, thiserror::Error)]
pub enum SandboxError {
    #[error("the sandbox is required but cannot be enforced: {0}")]
    Required(&'static str),
    #[error("cannot prepare the sandbox: {0}")]
    Io(#[from] std::io::Error),
}

/// The server's inputs, as the stdio launcher resolved them.
pub struct Inputs<'a> {
    pub name: &'a str,
    pub spec: &'a SandboxSpec,
    pub program: &'a Path,
    pub args: &'a [String],
    pub declared_env: &'a BTreeMap<String, String>,
    pub env: &'a BTreeMap<String, String>,
    pub cwd: &'a Path,
}

/// Records what an unconfined server is (`off`); nothing to prepare.
pub fn unconfined(confined: &Confined) {
    confined.set(ConfinementView {
        level: "off".into(),
        mechanisms: vec!["none: runs with your full rights".into()],
        ..ConfinementView::default()
    });
}

/// Makes the temp folder, starts the proxy and builds the profile.
pub fn prepare(
    inputs: &Inputs<'_>,
    options: &SandboxOptions,
    confined: &Confined,
) -> Result<Prepared, SandboxError> {
    debug_assert_eq!(inputs.spec.level, SandboxLevel::Strict);
    let shortfall = options.kernel.shortfall();
    if let (true, Some(why)) = (inputs.spec.require, shortfall) {
        return Err(SandboxError::Required(why));
    }
    let temp = private_temp(inputs.name)?;
    let listener = std::net::TcpListener::bind(("127.0.0.1", 0))?;
    listener.set_nonblocking(true)?;
    let port = listener.local_addr()?.port();
    let listener = tokio::net::TcpListener::from_std(listener)?;

    let launch = Launch {
        program: inputs.program,
        args: inputs.args,
        declared_env: inputs.declared_env,
        env: inputs.env,
        cwd: inputs.cwd,
        protected: &options.protected,
    };
    let mut built = profile::build(inputs.spec, &launch, &temp, port);
    built.profile.netns = options.netns;
    for dir in &built.make {
        use std::os::unix::fs::DirBuilderExt;
        std::fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(dir)?;
    }
    let mut hosts = inputs.spec.hosts.clone();
    hosts.extend(built.launcher_hosts.iter().cloned());
    let rules = Rules {
        hosts,
        private: inputs.spec.private.clone(),
    };
    confined.set(view(&built, &rules, options.kernel, shortfall));
    if let Some(report) = &options.denials {
        confined.report_to(inputs.name, report.clone());
    }

    let report = denial_counter(confined.clone(), options.report.clone());
    let proxy = Arc::new(Proxy::new(
        inputs.name,
        rules,
        options.resolver.clone(),
        report,
    ));
    let stop = CancellationToken::new();
    let netns = if options.netns {
        let (host_end, supervisor_end) = std::os::unix::net::UnixStream::pair()?;
        tokio::spawn(serve_namespace(
            host_end,
            proxy.clone(),
            stop.clone(),
            confined.clone(),
        ));
        Some(OwnedFd::from(supervisor_end))
    } else {
        None
    };
    tokio::spawn(proxy.serve(listener, stop.clone()));

    let url = format!("http://127.0.0.1:{port}");
    let temp_str = temp.display().to_string();
    let mut env = BTreeMap::new();
    for var in ["TMPDIR", "TMP", "TEMP"] {
        env.insert(var.to_string(), temp_str.clone());
    }
    for var in [
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "npm_config_proxy",
        "npm_config_https_proxy",
    ] {
        env.insert(var.to_string(), url.clone());
    }
    // Node 24 and later read the variables above only when asked to.
    env.insert("NODE_USE_ENV_PROXY".into(), "1".into());
    let profile_json = serde_json::to_string(&built.profile)
        .map_err(|e| SandboxError::Io(std::io::Error::other(e)))?;
    Ok(Prepared {
        profile_json,
        env,
        proxy: stop.drop_guard(),
        netns,
    })
}

/// Serves the listener the supervisor made in the server's network namespace, once it
/// arrives; says in the server's account which way its network is confined.
async fn serve_namespace(
    channel: std::os::unix::net::UnixStream,
    proxy: Arc<Proxy>,
    stop: CancellationToken,
    confined: Confined,
) {
    let outcome = tokio::select! {
        () = stop.cancelled() => return,
        outcome = netns::receive(channel) => outcome,
    };
    let listener = match outcome {
        netns::Outcome::Made(listener) => listener,
        netns::Outcome::NotMade(why) => {
            confined.amend(|v| {
                v.notes.push(format!(
                    "no network namespace ({why}): only Landlock confines its TCP"
                ));
            });
            return;
        }
    };
    let listener = listener
        .set_nonblocking(true)
        .and_then(|()| tokio::net::TcpListener::from_std(listener));
    match listener {
        Ok(listener) => {
            confined.amend(|v| v.mechanisms.push("netns".into()));
            proxy.serve(listener, stop).await;
        }
        Err(e) => confined.amend(|v| v.notes.push(format!("its network namespace: {e}"))),
    }
}

/// A fresh folder only this server may write, under the host's temp folder.
fn private_temp(name: &str) -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    let base = crate::procs::sandbox_temp_root();
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&base)?;
    let safe: String = (name.chars())
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    let dir = base.join(format!("{safe}-{:016x}", rand::random::<u64>()));
    std::fs::DirBuilder::new().mode(0o700).create(&dir)?;
    Ok(dir)
}

/// Counts the proxy's refusals in the server's account, then reports every connection.
fn denial_counter(confined: Confined, report: Option<Report>) -> Report {
    Arc::new(move |record: EgressRecord| {
        if !record.allowed {
            confined.deny(format!("connect {}:{}", record.host, record.port));
        }
        if let Some(report) = &report {
            report(record);
        }
    })
}

fn view(
    built: &profile::Built,
    rules: &Rules,
    kernel: Kernel,
    shortfall: Option<&str>,
) -> ConfinementView {
    let p = &built.profile;
    let shown = |paths: &[PathBuf]| -> Vec<String> {
        (paths.iter())
            .filter(|x| !profile::is_system(x) && p.temp.as_ref() != Some(*x))
            .map(|x| x.display().to_string())
            .collect()
    };
    let mut read = shown(&p.exec);
    read.extend(shown(&p.read));
    let mut write = shown(&p.write);
    write.push("its own temp folder".into());
    let mut reach: Vec<String> = rules.hosts.iter().map(ToString::to_string).collect();
    reach.extend(rules.private.iter().map(|r| format!("private {r}")));
    let mut mechanisms = Vec::new();
    if kernel.landlock_abi > 0 {
        mechanisms.push(format!("landlock v{}", kernel.landlock_abi));
    }
    mechanisms.extend(["seccomp", "no_new_privs", "rlimits", "egress proxy"].map(String::from));
    ConfinementView {
        level: match shortfall {
            Some(why) => format!("strict (degraded: {why})"),
            None => "strict".into(),
        },
        read,
        write,
        reach,
        mechanisms,
        denials: Vec::new(),
        notes: built
            .not_granted
            .iter()
            .map(|n| format!("not granted: {n}; add it to sandbox.filesystem.write to allow it"))
            .collect(),
    }
}
