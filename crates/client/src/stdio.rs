//! Starting a stdio server under its supervisor, with a filtered environment, a lifeline
//! pipe, and its stderr drained into a bounded ring of recent lines; and stopping it in the
//! spec's order: close stdin, wait, SIGTERM (the supervisor passes it to the whole tree),
//! wait, SIGKILL, always reap.

use crate::sandbox::launch::{self, Inputs, SandboxError, SandboxOptions};
use crate::sandbox::netns::NETNS_FD;
use crate::sandbox::{Confined, denial_in_stderr};
use crate::supervisor::{LIFELINE_FD, SUPERVISE_ARG, SupervisorArgs, place_fds};
use crate::zygote::{ForkError, ForkRequest, Forked, SupervisorFds, Zygote};
use mcp_host_config::SandboxSpec;
use mcp_host_core::confinement::SandboxLevel;
use mcp_host_core::sanitize::strip_terminal_escapes;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::{BTreeMap, VecDeque};
use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::AsyncReadExt;
use tokio::net::unix::pipe;
use tokio::process::{Child, Command};
use tokio_util::sync::CancellationToken;

/// The variables a server inherits from the host; everything else must be declared in the
/// server's `env`. Secrets in the host's environment stay in the host.
pub const ENV_ALLOW_LIST: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "TMPDIR",
    "TZ",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
];

/// Whether a host variable passes the allow-list (`LC_*` is a prefix rule).
pub fn env_allowed(name: &str) -> bool {
    ENV_ALLOW_LIST.contains(&name) || name.starts_with("LC_")
}

/// How to run the supervisor: normally the host's own executable with [`SUPERVISE_ARG`].
#[derive(Clone, Debug, Default)]
pub struct SupervisorCommand {
    pub program: PathBuf,
    pub grace: Duration,
    /// Where supervisors leave run records (see `procs::reap_leftovers`).
    pub record_dir: Option<PathBuf>,
    /// What every confined server shares (its proxy's resolver and reports, the host's
    /// folders no argument grants, the kernel's abilities).
    pub sandbox: SandboxOptions,
    /// The one process the supervisors are forked from (started at the first server);
    /// [`Zygote::off`] exec's each one instead.
    pub zygote: Zygote,
}

/// Everything needed to start one stdio server.
#[derive(Clone, Debug)]
pub struct StdioLaunch {
    /// The server's name (its proxy's records, its temp folder).
    pub name: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    pub sandbox: SandboxSpec,
    /// Its confinement as it stands, for whoever shows it.
    pub confined: Confined,
    /// The file its stderr is also kept in, when it is kept.
    pub log: Option<PathBuf>,
}

/// Where a server's stderr is kept in `dir`: its name with anything but letters, digits,
/// `.`, `_` and `-` replaced, so a name cannot reach outside the folder.
pub fn log_file(dir: &Path, server: &str) -> PathBuf {
    let safe: String = server
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    dir.join(format!("{safe}.log"))
}

/// A log file grows to this many bytes, then becomes `NAME.log.1` (replacing the previous
/// one) and a new file starts: at most twice this per server.
const LOG_ROTATE_BYTES: u64 = 1 << 20;

/// Appends a server's stderr lines to its log file, rotating it. Lines are buffered and
/// written once per read of the pipe (a flooding server costs one write per read, not one
/// per line). Failing to write is not the server's failure: the log is dropped and the ring
/// still holds the last lines.
struct ServerLog {
    path: PathBuf,
    file: Option<std::io::BufWriter<std::fs::File>>,
    size: u64,
}

impl ServerLog {
    fn open(path: PathBuf, pid: Option<u32>) -> Self {
        let mut log = Self {
            path,
            file: None,
            size: 0,
        };
        log.reopen();
        let stamp = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let pid = pid.map_or_else(String::new, |p| format!(" (supervisor pid {p})"));
        log.line(format!("--- started at unix time {stamp}{pid}").as_bytes());
        log.flush();
        log
    }

    fn reopen(&mut self) {
        use std::os::unix::fs::OpenOptionsExt;
        if let Some(dir) = self.path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .mode(0o600)
            .open(&self.path)
            .ok();
        self.size = file
            .as_ref()
            .and_then(|f| f.metadata().ok())
            .map_or(0, |m| m.len());
        self.file = file.map(std::io::BufWriter::new);
    }

    fn line(&mut self, line: &[u8]) {
        use std::io::Write;
        if self.size >= LOG_ROTATE_BYTES {
            self.flush();
            let _ = std::fs::rename(&self.path, self.path.with_extension("log.1"));
            self.reopen();
        }
        if let Some(f) = &mut self.file {
            if f.write_all(line).and_then(|()| f.write_all(b"\n")).is_err() {
                self.file = None;
            }
            self.size += line.len() as u64 + 1;
        }
    }

    fn flush(&mut self) {
        use std::io::Write;
        if let Some(f) = &mut self.file
            && f.flush().is_err()
        {
            self.file = None;
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SpawnError {
    #[error("command `{command}` not found{}", searched_hint(.path))]
    NotFound {
        command: String,
        path: Option<String>,
    },
    #[error("working directory {0} does not exist")]
    BadCwd(PathBuf),
    #[error(transparent)]
    Sandbox(#[from] SandboxError),
    #[error("cannot start supervisor: {0}")]
    Io(#[from] std::io::Error),
    #[error("in-process server `{name}` did not start: {reason}")]
    InProcess { name: String, reason: String },
}

fn searched_hint(path: &Option<String>) -> String {
    match path {
        Some(p) => format!(" on PATH ({p})"),
        None => String::new(),
    }
}

/// The last lines a server wrote to stderr, each capped, sanitised for display.
#[derive(Debug)]
pub struct StderrRing {
    lines: VecDeque<String>,
    max_lines: usize,
    pub total_bytes: u64,
}

const MAX_STDERR_LINE: usize = 2048;

impl StderrRing {
    pub fn new(max_lines: usize) -> Self {
        Self {
            lines: VecDeque::new(),
            max_lines,
            total_bytes: 0,
        }
    }

    fn push(&mut self, raw: &[u8]) {
        let text = strip_terminal_escapes(&String::from_utf8_lossy(raw));
        let text = text.trim_end();
        if text.is_empty() {
            return;
        }
        if self.lines.len() == self.max_lines {
            self.lines.pop_front();
        }
        self.lines.push_back(text.to_string());
    }

    pub fn tail(&self, n: usize) -> Vec<String> {
        self.lines
            .iter()
            .skip(self.lines.len().saturating_sub(n))
            .cloned()
            .collect()
    }
}

/// A running supervised server process. Dropping it closes the lifeline, which makes the
/// supervisor end the server's tree even if nobody calls [`StdioProcess::shutdown`].
#[derive(Debug)]
pub struct StdioProcess {
    supervisor: Supervisor,
    _lifeline: OwnedFd,
    pub stderr: Arc<Mutex<StderrRing>>,
    stderr_done: CancellationToken,
    grace: Duration,
    /// Ends the server's egress proxy with the process.
    _proxy: Option<tokio_util::sync::DropGuard>,
}

/// How a server process ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ProcessExit {
    Code(i32),
    Signal(i32),
    /// The supervisor could not start the server's program.
    SpawnFailed,
    /// Did not stop when asked; killed.
    Killed,
    /// Waiting failed (should not happen).
    Unknown,
}

impl ProcessExit {
    /// A supervisor's exit code: the server's, or that it could not start it.
    pub fn of_code(code: i32) -> Self {
        if code == crate::supervisor::EXIT_SPAWN_FAILED {
            Self::SpawnFailed
        } else {
            Self::Code(code)
        }
    }
}

impl std::fmt::Display for ProcessExit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Code(c) => write!(f, "exited with status {c}"),
            Self::Signal(s) => write!(f, "was killed by signal {s}"),
            Self::SpawnFailed => write!(f, "could not be started"),
            Self::Killed => write!(f, "did not stop and was killed"),
            Self::Unknown => write!(f, "ended"),
        }
    }
}

/// Resolves `command` the way `execvp` will in the child, so a typo is a clear, permanent
/// error instead of a crash loop.
pub fn resolve(command: &str, path_var: Option<&str>, cwd: &Path) -> Result<PathBuf, SpawnError> {
    let executable = |p: &Path| {
        use std::os::unix::fs::PermissionsExt;
        p.metadata()
            .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if command.contains('/') {
        let p = cwd.join(command);
        return if executable(&p) {
            Ok(p)
        } else {
            Err(SpawnError::NotFound {
                command: command.into(),
                path: None,
            })
        };
    }
    for dir in path_var
        .unwrap_or_default()
        .split(':')
        .filter(|d| !d.is_empty())
    {
        let p = cwd.join(dir).join(command);
        if executable(&p) {
            return Ok(p);
        }
    }
    Err(SpawnError::NotFound {
        command: command.into(),
        path: path_var.map(str::to_string),
    })
}

impl StdioProcess {
    /// Starts the server under a supervisor. `host_env` is the host's environment, filtered
    /// here through the allow-list.
    pub fn spawn(
        launch: &StdioLaunch,
        supervisor: &SupervisorCommand,
        host_env: &BTreeMap<String, String>,
    ) -> Result<(Self, pipe::Sender, pipe::Receiver), SpawnError> {
        let mut env: BTreeMap<String, String> = host_env
            .iter()
            .filter(|(k, _)| env_allowed(k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        env.extend(launch.env.clone());
        let cwd = match &launch.cwd {
            Some(c) if !c.is_dir() => return Err(SpawnError::BadCwd(c.clone())),
            Some(c) => c.clone(),
            None => std::env::current_dir()?,
        };
        let program = resolve(&launch.command, env.get("PATH").map(String::as_str), &cwd)?;
        let strict = launch.sandbox.level == SandboxLevel::Strict;
        let (profile_json, proxy, netns) = match confine(launch, supervisor, &program, &env, &cwd)?
        {
            Some(prepared) => {
                env.extend(prepared.env);
                (
                    Some(prepared.profile_json),
                    Some(prepared.proxy),
                    prepared.netns,
                )
            }
            None => (None, None, None),
        };
        let sup_args = SupervisorArgs {
            grace: supervisor.grace,
            record_dir: supervisor.record_dir.clone(),
            sandbox: profile_json,
            unconfined: !strict,
            program: program.into_os_string(),
            args: launch.args.iter().map(OsString::from).collect(),
        };
        let argv = sup_args.to_argv();
        let (lifeline_read, lifeline_write) = cloexec_pipe()?;
        let (stdin_read, stdin_write) = cloexec_pipe()?;
        let (stdout_read, stdout_write) = cloexec_pipe()?;
        let (stderr_read, stderr_write) = cloexec_pipe()?;
        let request = ForkRequest {
            cwd: &cwd,
            env: &env,
            argv: &argv,
        };
        let netns_fd = netns.as_ref().map(AsFd::as_fd);
        // Without a zygote, no exit-status pipe is made.
        let forked = if supervisor.zygote.may_fork() {
            let ends = [&stdin_read, &stdout_write, &stderr_write, &lifeline_read];
            fork_supervisor(supervisor, &request, ends, netns_fd)?
        } else {
            None
        };
        let handle = match forked {
            Some(forked) => Supervisor::Forked(forked),
            None => Supervisor::Exec(exec_supervisor(
                &supervisor.program,
                &request,
                [stdin_read, stdout_write, stderr_write],
                lifeline_read.as_raw_fd(),
                netns_fd.map(|f| f.as_raw_fd()),
            )?),
        };
        // Only the supervisor may hold these ends now.
        drop((lifeline_read, netns));
        let stdin = pipe::Sender::from_owned_fd(stdin_write)?;
        let stdout = pipe::Receiver::from_owned_fd(stdout_read)?;
        let stderr = pipe::Receiver::from_owned_fd(stderr_read)?;
        let ring = Arc::new(Mutex::new(StderrRing::new(64)));
        let stderr_done = CancellationToken::new();
        let denials = strict.then(|| launch.confined.clone());
        let log = (launch.log.clone()).map(|path| ServerLog::open(path, handle.pid()));
        tokio::spawn(drain_stderr(
            stderr,
            ring.clone(),
            denials,
            log,
            stderr_done.clone(),
        ));
        let process = Self {
            supervisor: handle,
            _lifeline: lifeline_write,
            stderr: ring,
            stderr_done,
            grace: supervisor.grace,
            _proxy: proxy,
        };
        Ok((process, stdin, stdout))
    }

    pub fn stderr_tail(&self, n: usize) -> Vec<String> {
        self.stderr.lock().map(|r| r.tail(n)).unwrap_or_default()
    }

    pub fn pid(&self) -> Option<u32> {
        self.supervisor.pid()
    }

    /// Waits for the server (its supervisor) to exit.
    pub async fn wait_exit(&mut self) -> ProcessExit {
        self.supervisor.wait().await
    }

    /// Waits (briefly) until everything the server wrote to stderr has been read.
    pub async fn stderr_closed(&self) {
        let _ = tokio::time::timeout(Duration::from_secs(1), self.stderr_done.cancelled()).await;
    }

    /// Stops the server. The caller has already closed stdin (by closing the transport).
    pub async fn shutdown(&mut self) -> ProcessExit {
        if let Ok(exit) = tokio::time::timeout(self.grace, self.supervisor.wait()).await {
            return exit;
        }
        self.supervisor.signal(Signal::SIGTERM);
        // The supervisor needs its own grace period to TERM and then KILL the tree.
        let budget = self.grace * 2 + Duration::from_secs(1);
        if let Ok(exit) = tokio::time::timeout(budget, self.supervisor.wait()).await {
            return exit;
        }
        self.supervisor.kill().await;
        ProcessExit::Killed
    }
}

/// A supervisor as the host holds it.
#[derive(Debug)]
enum Supervisor {
    /// Exec'd by the host, which is its parent.
    Exec(Child),
    /// Forked by the zygote; it tells the host how it ended.
    Forked(Forked),
}

impl Supervisor {
    fn pid(&self) -> Option<u32> {
        match self {
            Self::Exec(child) => child.id(),
            Self::Forked(f) => f.pid(),
        }
    }

    async fn wait(&mut self) -> ProcessExit {
        match self {
            Self::Exec(child) => match child.wait().await {
                Ok(status) => describe_exit(status),
                Err(_) => ProcessExit::Unknown,
            },
            Self::Forked(f) => f.wait().await,
        }
    }

    fn signal(&self, signal: Signal) {
        match self {
            Self::Exec(child) => {
                // The host is its parent: until it is reaped, its pid is its own.
                if let Some(pid) = child.id() {
                    let _ = kill(Pid::from_raw(pid as i32), signal);
                }
            }
            Self::Forked(f) => f.signal(signal),
        }
    }

    async fn kill(&mut self) {
        match self {
            Self::Exec(child) => {
                let _ = child.kill().await;
            }
            Self::Forked(_) => self.signal(Signal::SIGKILL),
        }
    }
}

fn cloexec_pipe() -> std::io::Result<(OwnedFd, OwnedFd)> {
    Ok(nix::unistd::pipe2(nix::fcntl::OFlag::O_CLOEXEC)?)
}

/// Asks the zygote for a supervisor with these ends (stdin, stdout, stderr, lifeline); `None`
/// when the request never reached one, and the caller exec's the supervisor instead.
fn fork_supervisor(
    supervisor: &SupervisorCommand,
    request: &ForkRequest<'_>,
    [stdin, stdout, stderr, lifeline]: [&OwnedFd; 4],
    netns: Option<std::os::fd::BorrowedFd<'_>>,
) -> Result<Option<Forked>, SpawnError> {
    let (status_read, status_write) = cloexec_pipe()?;
    let fds = SupervisorFds {
        stdin: stdin.as_fd(),
        stdout: stdout.as_fd(),
        stderr: stderr.as_fd(),
        lifeline: lifeline.as_fd(),
        status: status_write.as_fd(),
        netns,
    };
    match supervisor.zygote.fork(&supervisor.program, request, &fds) {
        Ok((pid, pidfd)) => Ok(Some(Forked::new(pid, pidfd, status_read)?)),
        Err(ForkError::NotSent(_)) => Ok(None),
        Err(e @ ForkError::Failed(_)) => Err(SpawnError::Io(std::io::Error::other(e))),
    }
}

/// Exec's a supervisor (when no zygote forks one) with `ends` as its stdin, stdout and stderr.
fn exec_supervisor(
    program: &Path,
    request: &ForkRequest<'_>,
    ends: [OwnedFd; 3],
    lifeline: RawFd,
    netns: Option<RawFd>,
) -> std::io::Result<Child> {
    let [stdin, stdout, stderr] = ends;
    let mut cmd = Command::new(program);
    cmd.arg(SUPERVISE_ARG)
        .args(request.argv)
        .env_clear()
        .envs(request.env)
        .current_dir(request.cwd)
        .stdin(Stdio::from(stdin))
        .stdout(Stdio::from(stdout))
        .stderr(Stdio::from(stderr))
        // Its own group: a Ctrl-C in the terminal is the host's to handle.
        .process_group(0)
        .kill_on_drop(true);
    install_fixed_fds(&mut cmd, lifeline, netns);
    // The command, and its copies of the supervisor's ends, are dropped on return.
    cmd.spawn()
}

/// Puts the lifeline's read end (and the network namespace socket) at their fixed fds in
/// the supervisor, between fork and exec.
#[allow(
    unsafe_code,
    reason = "pre_exec: moves the lifeline pipe and the namespace socket to their fixed fds"
)]
fn install_fixed_fds(cmd: &mut Command, read_fd: i32, netns_fd: Option<i32>) {
    // SAFETY: `place_fds` allocates nothing and is async-signal-safe.
    unsafe {
        cmd.pre_exec(move || match netns_fd {
            Some(netns) => place_fds(&[read_fd, netns], &[LIFELINE_FD, NETNS_FD]),
            None => place_fds(&[read_fd], &[LIFELINE_FD]),
        });
    }
}

/// A strict server's sandbox, prepared on the host's side; `None` (and the account says so)
/// for one that runs `off`.
fn confine(
    launch: &StdioLaunch,
    supervisor: &SupervisorCommand,
    program: &Path,
    env: &BTreeMap<String, String>,
    cwd: &Path,
) -> Result<Option<launch::Prepared>, SpawnError> {
    if launch.sandbox.level != SandboxLevel::Strict {
        launch::unconfined(&launch.confined);
        return Ok(None);
    }
    let inputs = Inputs {
        name: &launch.name,
        spec: &launch.sandbox,
        program,
        args: &launch.args,
        declared_env: &launch.env,
        env,
        cwd,
    };
    Ok(Some(launch::prepare(
        &inputs,
        &supervisor.sandbox,
        &launch.confined,
    )?))
}

fn describe_exit(status: std::process::ExitStatus) -> ProcessExit {
    use std::os::unix::process::ExitStatusExt;
    match (status.code(), status.signal()) {
        (Some(c), _) => ProcessExit::of_code(c),
        (None, Some(s)) => ProcessExit::Signal(s),
        _ => ProcessExit::Unknown,
    }
}

/// Reads stderr continuously so the server never blocks on a full pipe; keeps whole lines,
/// each capped, and drops the rest of an over-long line. A confined server's permission
/// errors are counted in its account (`denials`).
async fn drain_stderr(
    mut stderr: pipe::Receiver,
    ring: Arc<Mutex<StderrRing>>,
    denials: Option<Confined>,
    mut log: Option<ServerLog>,
    done: CancellationToken,
) {
    let _done = done.drop_guard();
    let mut buf = vec![0u8; 8192];
    let mut line: Vec<u8> = Vec::new();
    loop {
        let n = match stderr.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        let Ok(mut r) = ring.lock() else { return };
        r.total_bytes += n as u64;
        for chunk in buf[..n].split_inclusive(|b| *b == b'\n') {
            let room = MAX_STDERR_LINE.saturating_sub(line.len());
            let body = chunk.strip_suffix(b"\n").unwrap_or(chunk);
            line.extend_from_slice(&body[..body.len().min(room)]);
            if chunk.ends_with(b"\n") {
                if let Some(d) = &denials
                    && let Some(path) = denial_in_stderr(&String::from_utf8_lossy(&line))
                {
                    d.deny_and_report(format!("denied {path}"));
                }
                if let Some(log) = &mut log {
                    log.line(&line);
                }
                r.push(&line);
                line.clear();
            }
        }
        // Written outside the ring's lock, once per read.
        drop(r);
        if let Some(log) = &mut log {
            log.flush();
        }
    }
    if !line.is_empty()
        && let Ok(mut r) = ring.lock()
    {
        if let Some(log) = &mut log {
            log.line(&line);
            log.flush();
        }
        r.push(&line);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn allow_list_keeps_locale_and_path_and_drops_secrets() {
        assert!(env_allowed("PATH") && env_allowed("LC_ALL"));
        assert!(!env_allowed("AWS_SECRET_ACCESS_KEY") && !env_allowed("ANTHROPIC_API_KEY"));
    }

    #[test]
    fn a_servers_log_rotates_and_its_name_stays_in_its_folder() {
        let dir = tempfile::tempdir().unwrap();
        let path = log_file(dir.path(), "../evil/name");
        assert_eq!(path.parent(), Some(dir.path()));
        let mut log = ServerLog::open(path.clone(), Some(1));
        let line = vec![b'x'; 1000];
        for _ in 0..1100 {
            log.line(&line);
        }
        let rotated = std::fs::metadata(path.with_extension("log.1"))
            .unwrap()
            .len();
        let current = std::fs::metadata(&path).unwrap().len();
        assert!(
            rotated >= LOG_ROTATE_BYTES && current < LOG_ROTATE_BYTES,
            "{rotated} {current}"
        );
        let first = std::fs::read_to_string(path.with_extension("log.1")).unwrap();
        assert!(
            first.starts_with("--- started at unix time"),
            "{}",
            &first[..40]
        );
    }

    #[test]
    fn ring_keeps_the_last_lines_sanitised() {
        let mut r = StderrRing::new(2);
        r.push(b"one");
        r.push(b"\x1b[31mtwo\x1b[0m");
        r.push(b"three");
        assert_eq!(r.tail(5), vec!["two", "three"]);
    }

    #[test]
    fn resolve_finds_commands_on_path_and_reports_misses() {
        let cwd = std::env::current_dir().unwrap();
        assert!(resolve("sh", Some("/usr/bin:/bin"), &cwd).is_ok());
        let e = resolve("no-such-binary-xyz", Some("/bin"), &cwd).unwrap_err();
        assert!(e.to_string().contains("no-such-binary-xyz"), "{e}");
        assert!(e.to_string().contains("/bin"), "{e}");
    }
}
