//! One pre-started supervisor that forks the others. A supervisor exec'd for every stdio
//! server paid the dynamic loader and a process start each time (some 260 k instructions
//! and a fresh set of page tables, a quarter of a server's whole start). The host starts
//! the zygote once, at its first stdio server, and each server's supervisor is a fork of
//! it: from its first instruction on it is the supervisor of `supervisor.rs`, with the same
//! fds, folder, environment, process group and arguments an exec'd one gets, so every
//! guarantee (the subreaper, the lifeline, the confinement) is the same code.
//!
//! The protocol runs on a `SOCK_SEQPACKET` pair, one message each way per server:
//! - host → zygote: the supervisor's folder, environment and arguments as length-prefixed
//!   byte strings, and by `SCM_RIGHTS` its stdin, stdout, stderr, lifeline, exit-status pipe
//!   and, when a network namespace is asked for, the namespace socket;
//! - zygote → host: the supervisor's pid and, by `SCM_RIGHTS`, a pidfd for it (the host
//!   signals it through that, never a pid that may have been reused), or why there is none.
//!
//! A zygote gone between requests (killed) is replaced, and the request sent to the new
//! one; one that keeps dying within a minute of its start is replaced at most three times,
//! then supervisors are exec'd.
//!
//! The zygote holds no server's fds between requests (it closes its copies right after the
//! fork), so a lifeline still closes exactly when the host lets go of it, and a `kill -9`
//! of the host leaves no orphan: every forked supervisor sees its own lifeline close, and
//! the zygote sees its socket close and exits. A forked supervisor tells the host how the
//! server ended through its exit-status pipe, since the host is not its parent.

use crate::sandbox::netns::NETNS_FD;
use crate::supervisor::{
    self, EXIT_SPAWN_FAILED, LIFELINE_FD, MAX_FIXED_FDS, SupervisorArgs, place_fds,
};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recvmsg, setsockopt, sockopt};
use std::collections::BTreeMap;
use std::ffi::OsString;
use std::io::IoSliceMut;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// The hidden first argument that turns the supervisor program into the zygote.
pub const ZYGOTE_ARG: &str = "__zygote";
/// Where a forked supervisor finds the write end of its exit-status pipe.
pub const STATUS_FD: RawFd = 5;
/// The most a request may carry: a supervisor's environment and arguments.
const MAX_REQUEST: usize = 256 * 1024;
/// The most fds a request carries: stdin, stdout, stderr, lifeline, status, namespace.
const MAX_FDS: usize = MAX_FIXED_FDS;
/// How long the host waits for the zygote to take a request or answer it. A fork answers
/// in well under a millisecond; a zygote that does not is stopped or broken.
const ANSWER_WITHIN: Duration = Duration::from_secs(5);
/// A zygote that is gone when a request comes (the OOM killer, a stray `kill`) is replaced
/// and the request sent to the new one. One that had run this long is always replaced; one
/// that dies sooner uses up one of [`QUICK_RESTARTS`], after which supervisors are exec'd.
const STEADY: Duration = Duration::from_secs(60);
const QUICK_RESTARTS: u8 = 3;

/// The fds a forked supervisor starts with.
pub struct SupervisorFds<'a> {
    pub stdin: BorrowedFd<'a>,
    pub stdout: BorrowedFd<'a>,
    pub stderr: BorrowedFd<'a>,
    pub lifeline: BorrowedFd<'a>,
    pub status: BorrowedFd<'a>,
    pub netns: Option<BorrowedFd<'a>>,
}

/// What a fork request asks for, besides its fds.
pub struct ForkRequest<'a> {
    pub cwd: &'a Path,
    pub env: &'a BTreeMap<String, String>,
    /// The arguments after `__supervise`.
    pub argv: &'a [OsString],
}

/// Why the zygote did not give a supervisor.
#[derive(Debug, thiserror::Error)]
pub enum ForkError {
    /// The request never reached a zygote (none could be started, or it is gone): nothing
    /// was forked, and the caller may start the supervisor another way.
    #[error("no zygote: {0}")]
    NotSent(String),
    /// The request was sent and no supervisor came of it, or none that the host can know of.
    #[error("the supervisor zygote {0}")]
    Failed(String),
}

/// The host's handle on its zygote, shared by every clone of the supervisor settings; the
/// zygote is started at the first fork and ends when the last handle is dropped.
#[derive(Clone, Default)]
pub struct Zygote(Arc<Mutex<State>>);

impl std::fmt::Debug for Zygote {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let state = match self.0.lock().as_deref() {
            Ok(State::Idle) => "idle",
            Ok(State::Running { .. }) => "running",
            Ok(State::Off) => "off",
            Err(_) => "poisoned",
        };
        write!(f, "Zygote({state})")
    }
}

#[derive(Default)]
enum State {
    /// Not started yet.
    #[default]
    Idle,
    Running {
        control: OwnedFd,
        /// Not killed on drop: it exits by itself when `control` closes, and tokio reaps it.
        /// Boxed: only held, and `Off` and `Idle` need none of its size.
        _process: Box<tokio::process::Child>,
        started: Instant,
        /// How many more times a zygote that dies within [`STEADY`] is replaced.
        quick_restarts: u8,
    },
    /// Never used: turned off, or it failed once (later supervisors are exec'd).
    Off,
}

impl Zygote {
    /// A handle that never forks: every supervisor is exec'd.
    pub fn off() -> Self {
        Self(Arc::new(Mutex::new(State::Off)))
    }

    /// Whether [`Zygote::fork`] may be tried: not once it is off.
    pub fn may_fork(&self) -> bool {
        !matches!(self.0.lock().as_deref(), Ok(State::Off) | Err(_))
    }

    /// Forks a supervisor from the zygote (starting it with `program` if need be); returns
    /// its pid, and a pidfd for it where the kernel has them (5.3 and later).
    pub fn fork(
        &self,
        program: &Path,
        request: &ForkRequest<'_>,
        fds: &SupervisorFds<'_>,
    ) -> Result<(u32, Option<OwnedFd>), ForkError> {
        let mut state = self
            .0
            .lock()
            .map_err(|_| ForkError::NotSent("its lock was poisoned".into()))?;
        if matches!(*state, State::Idle) {
            *state = start_or_off(program, QUICK_RESTARTS);
        }
        loop {
            let State::Running {
                control,
                started,
                quick_restarts,
                ..
            } = &*state
            else {
                return Err(ForkError::NotSent("not running".into()));
            };
            let result = ask(control.as_fd(), request, fds);
            let Err(e) = &result else {
                return result;
            };
            let left = match e {
                // Nothing was forked, so the request can go to a new zygote. Dropping the old
                // state closes its socket, which ends a zygote that is only stuck.
                ForkError::NotSent(_) if started.elapsed() >= STEADY => QUICK_RESTARTS,
                ForkError::NotSent(_) if *quick_restarts > 0 => quick_restarts - 1,
                _ => {
                    tracing::warn!("{e}; later supervisors are exec'd");
                    *state = State::Off;
                    return result;
                }
            };
            tracing::warn!("{e}; starting another");
            *state = start_or_off(program, left);
        }
    }
}

/// A forked supervisor, as the host holds it: its pid, and the pipe on which it writes its
/// exit code as it ends (the zygote is its parent, so the host cannot wait for it).
#[derive(Debug)]
pub struct Forked {
    pid: u32,
    /// Names this process and no other, even after it ended; `None` before Linux 5.3.
    pidfd: Option<OwnedFd>,
    status: tokio::net::unix::pipe::Receiver,
    code: [u8; 4],
    got: usize,
    exit: Option<crate::stdio::ProcessExit>,
}

impl Forked {
    pub fn new(pid: u32, pidfd: Option<OwnedFd>, status: OwnedFd) -> std::io::Result<Self> {
        Ok(Self {
            pid,
            pidfd,
            status: tokio::net::unix::pipe::Receiver::from_owned_fd(status)?,
            code: [0; 4],
            got: 0,
            exit: None,
        })
    }

    /// Its pid while it may still run; none once it has ended (the number may be reused).
    pub fn pid(&self) -> Option<u32> {
        self.exit.is_none().then_some(self.pid)
    }

    /// Sends it `signal`: through its pidfd, which can reach no other process; else by pid,
    /// and only until its end was read.
    #[allow(unsafe_code, reason = "the pidfd_send_signal system call")]
    pub fn signal(&self, signal: nix::sys::signal::Signal) {
        match &self.pidfd {
            // SAFETY: a plain system call on an fd this value owns; no siginfo is passed.
            Some(fd) => unsafe {
                libc::syscall(
                    libc::SYS_pidfd_send_signal,
                    fd.as_raw_fd(),
                    signal as libc::c_int,
                    std::ptr::null::<libc::siginfo_t>(),
                    0,
                );
            },
            None => {
                if let Some(pid) = self.pid() {
                    let _ = nix::sys::signal::kill(nix::unistd::Pid::from_raw(pid as i32), signal);
                }
            }
        }
    }

    /// Waits until it has ended: its code, then the pipe's end, which comes as the process
    /// exits. Cancel-safe: what was read is kept.
    pub async fn wait(&mut self) -> crate::stdio::ProcessExit {
        use tokio::io::AsyncReadExt;
        if let Some(exit) = self.exit {
            return exit;
        }
        let mut rest = [0u8; 64];
        loop {
            let into = if self.got < 4 {
                &mut self.code[self.got..]
            } else {
                &mut rest[..]
            };
            match self.status.read(into).await {
                Ok(0) | Err(_) => break,
                Ok(n) => self.got += n,
            }
        }
        // No code: it was killed (by a signal it could not outlive) before it could say.
        let exit = if self.got >= 4 {
            crate::stdio::ProcessExit::of_code(i32::from_le_bytes(self.code))
        } else {
            crate::stdio::ProcessExit::Unknown
        };
        self.exit = Some(exit);
        exit
    }
}

/// A running zygote, or `Off` (supervisors exec'd from then on) when none can be started.
fn start_or_off(program: &Path, quick_restarts: u8) -> State {
    start(program, quick_restarts).unwrap_or_else(|e| {
        tracing::warn!("cannot start the supervisor zygote ({e}); exec'ing supervisors");
        State::Off
    })
}

/// Starts the zygote; needs a tokio runtime (its process is reaped by tokio's driver).
fn start(program: &Path, quick_restarts: u8) -> std::io::Result<State> {
    use nix::sys::socket::{AddressFamily, SockFlag, SockType, socketpair};
    let (ours, theirs) = socketpair(
        AddressFamily::Unix,
        SockType::SeqPacket,
        None,
        SockFlag::SOCK_CLOEXEC,
    )?;
    setsockopt(&ours, sockopt::ReceiveTimeout, &timeval(ANSWER_WITHIN))?;
    setsockopt(&ours, sockopt::SendTimeout, &timeval(ANSWER_WITHIN))?;
    let process = tokio::process::Command::new(program)
        .arg(ZYGOTE_ARG)
        .stdin(std::process::Stdio::from(theirs))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .env_clear()
        // Holds no folder busy, and a Ctrl-C in the terminal is the host's to handle.
        .current_dir("/")
        .process_group(0)
        .spawn()?;
    Ok(State::Running {
        control: ours,
        _process: Box::new(process),
        started: Instant::now(),
        quick_restarts,
    })
}

fn timeval(d: Duration) -> nix::sys::time::TimeVal {
    nix::sys::time::TimeVal::new(d.as_secs() as _, d.subsec_micros() as _)
}

fn ask(
    control: BorrowedFd<'_>,
    request: &ForkRequest<'_>,
    fds: &SupervisorFds<'_>,
) -> Result<(u32, Option<OwnedFd>), ForkError> {
    let body = encode(request);
    let mut raw = vec![
        fds.stdin.as_raw_fd(),
        fds.stdout.as_raw_fd(),
        fds.stderr.as_raw_fd(),
        fds.lifeline.as_raw_fd(),
        fds.status.as_raw_fd(),
    ];
    raw.extend(fds.netns.map(|f| f.as_raw_fd()));
    // A SOCK_SEQPACKET message arrives whole or not at all: a failed send forked nothing.
    crate::sandbox::netns::send_with_fds(control, &body, &raw)
        .map_err(|e| ForkError::NotSent(format!("cannot be asked: {e}")))?;
    let mut answer = [0u8; 512];
    let (n, mut pidfds) = loop {
        match receive_with_fds(control, &mut answer, 1) {
            Err(nix::errno::Errno::EINTR) => continue,
            // The kernel says this only when the last holder of the zygote's end closed it
            // with the request still unread: nothing was forked. (A zygote that is gone can
            // still take a send while a process forked elsewhere in the host has not yet
            // exec'd and closed its copy of that end.)
            Err(nix::errno::Errno::ECONNRESET) => {
                return Err(ForkError::NotSent(
                    "was gone before it read the request".into(),
                ));
            }
            Err(e) => return Err(ForkError::Failed(format!("did not answer: {e}"))),
            Ok(Received { cut: true, .. }) => {
                return Err(ForkError::Failed(
                    "answered with more than an answer holds".into(),
                ));
            }
            Ok(Received { bytes, fds, .. }) => break (bytes, fds),
        }
    };
    match answer[..n].split_first() {
        Some((b'+', pid)) => {
            let pid = std::str::from_utf8(pid)
                .ok()
                .and_then(|p| p.parse().ok())
                .ok_or_else(|| ForkError::Failed("answered with no pid".into()))?;
            Ok((pid, pidfds.pop()))
        }
        Some((b'-', why)) => Err(ForkError::Failed(String::from_utf8_lossy(why).into_owned())),
        _ => Err(ForkError::Failed("is gone".into())),
    }
}

/// One message read from a `SOCK_SEQPACKET` socket, with the fds it carried (close-on-exec).
struct Received {
    bytes: usize,
    fds: Vec<OwnedFd>,
    /// The message or its fds did not fit: it must not be acted on.
    cut: bool,
}

#[allow(unsafe_code, reason = "owning the fds the kernel just installed")]
fn receive_with_fds(
    socket: BorrowedFd<'_>,
    buf: &mut [u8],
    max_fds: usize,
) -> nix::Result<Received> {
    let mut space = nix::cmsg_space!([RawFd; MAX_FDS]);
    let mut iov = [IoSliceMut::new(buf)];
    let msg = recvmsg::<()>(
        socket.as_raw_fd(),
        &mut iov,
        Some(&mut space),
        MsgFlags::MSG_CMSG_CLOEXEC,
    )?;
    let mut fds = Vec::new();
    for c in msg.cmsgs().into_iter().flatten() {
        if let ControlMessageOwned::ScmRights(raw) = c {
            // SAFETY: the kernel just installed these fds for this process.
            fds.extend(raw.into_iter().map(|f| unsafe { OwnedFd::from_raw_fd(f) }));
        }
    }
    let cut = msg
        .flags
        .intersects(MsgFlags::MSG_TRUNC | MsgFlags::MSG_CTRUNC)
        || fds.len() > max_fds;
    Ok(Received {
        bytes: msg.bytes,
        fds,
        cut,
    })
}

/// `[env count][argv count]` then the folder, each `KEY=VALUE` and each argument, every one
/// a little-endian `u32` length and its bytes.
fn encode(request: &ForkRequest<'_>) -> Vec<u8> {
    let mut out = Vec::with_capacity(4096);
    let field = |out: &mut Vec<u8>, bytes: &[&[u8]]| {
        let len: usize = bytes.iter().map(|b| b.len()).sum();
        out.extend_from_slice(&(len as u32).to_le_bytes());
        for b in bytes {
            out.extend_from_slice(b);
        }
    };
    out.extend_from_slice(&(request.env.len() as u32).to_le_bytes());
    out.extend_from_slice(&(request.argv.len() as u32).to_le_bytes());
    field(&mut out, &[request.cwd.as_os_str().as_bytes()]);
    for (k, v) in request.env {
        field(&mut out, &[k.as_bytes(), b"=", v.as_bytes()]);
    }
    for a in request.argv {
        field(&mut out, &[a.as_bytes()]);
    }
    out
}

/// A request as the zygote reads it.
#[derive(Debug, PartialEq, Eq)]
struct Decoded {
    cwd: OsString,
    env: Vec<(OsString, OsString)>,
    argv: Vec<OsString>,
}

fn decode(mut body: &[u8]) -> Option<Decoded> {
    let u32_at = |body: &mut &[u8]| -> Option<usize> {
        let (n, rest) = body.split_first_chunk::<4>()?;
        *body = rest;
        Some(u32::from_le_bytes(*n) as usize)
    };
    let env_count = u32_at(&mut body)?;
    let argv_count = u32_at(&mut body)?;
    let mut fields = Vec::new();
    // Each field takes at least its 4-byte length, which bounds the count by the body.
    if env_count.checked_add(argv_count)?.checked_add(1)? > body.len() / 4 {
        return None;
    }
    for _ in 0..1 + env_count + argv_count {
        let len = u32_at(&mut body)?;
        let (bytes, rest) = body.split_at_checked(len)?;
        body = rest;
        fields.push(OsString::from_vec(bytes.to_vec()));
    }
    if !body.is_empty() {
        return None;
    }
    let mut fields = fields.into_iter();
    let cwd = fields.next()?;
    let env = (fields.by_ref().take(env_count))
        .map(|kv| {
            let bytes = kv.into_vec();
            let eq = bytes.iter().position(|b| *b == b'=')?;
            Some((
                OsString::from_vec(bytes[..eq].to_vec()),
                OsString::from_vec(bytes[eq + 1..].to_vec()),
            ))
        })
        .collect::<Option<Vec<_>>>()?;
    Some(Decoded {
        cwd,
        env,
        argv: fields.collect(),
    })
}

/// The zygote's `main`: its stdin is the socket to the host. Serves fork requests until the
/// host's end closes.
#[allow(
    unsafe_code,
    reason = "the SIGCHLD handler, and taking ownership of fd 0 (the socket the host installed)"
)]
pub fn serve() -> u8 {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    // Its children are the supervisors, which report to the host, not here: they are reaped
    // as they end. Not by ignoring SIGCHLD, which would reap one the moment it ends, maybe
    // before its pidfd is taken (its pid then free for another process).
    let reap = SigAction::new(
        SigHandler::Handler(reap_supervisors),
        SaFlags::SA_RESTART | SaFlags::SA_NOCLDSTOP,
        SigSet::empty(),
    );
    // SAFETY: the handler only calls waitpid and saves errno, both async-signal-safe.
    if unsafe { sigaction(Signal::SIGCHLD, &reap) }.is_err() {
        return 1;
    }
    // SAFETY: fd 0 is the socket the host gave this process as its stdin, owned from here.
    let control = unsafe { OwnedFd::from_raw_fd(0) };
    let mut buf = vec![0u8; MAX_REQUEST];
    loop {
        let (n, fds, cut) = match receive_with_fds(control.as_fd(), &mut buf, MAX_FDS) {
            Err(nix::errno::Errno::EINTR) => continue,
            Err(_) => return 1,
            Ok(got) => (got.bytes, got.fds, got.cut),
        };
        if n == 0 && fds.is_empty() {
            return 0; // The host is gone.
        }
        let (answer, pidfd) = match decode(&buf[..n]).filter(|_| !cut) {
            None => ("-a request it could not read".to_string(), None),
            Some(_) if fds.len() < 5 => ("-a request with the wrong fds".to_string(), None),
            Some(request) => fork_supervisor(&request, fds),
        };
        // The request's fds were dropped (closed here) when the match ended.
        let pidfd: Vec<RawFd> = pidfd.iter().map(AsRawFd::as_raw_fd).collect();
        if crate::sandbox::netns::send_with_fds(control.as_fd(), answer.as_bytes(), &pidfd).is_err()
        {
            return 0;
        }
    }
}

/// Forks one supervisor; the answer for the host, and the child's pidfd. SIGCHLD is held
/// back from the fork until the pidfd is taken, so the child cannot be reaped before.
#[allow(unsafe_code, reason = "fork, and the pidfd_open system call")]
fn fork_supervisor(request: &Decoded, fds: Vec<OwnedFd>) -> (String, Option<OwnedFd>) {
    use nix::sys::signal::{SigSet, Signal};
    let chld = SigSet::from(Signal::SIGCHLD);
    if let Err(e) = chld.thread_block() {
        return (format!("-cannot hold SIGCHLD: {e}"), None);
    }
    // SAFETY: this process has one thread, so the child may do anything.
    let answer = match unsafe { nix::unistd::fork() } {
        Ok(nix::unistd::ForkResult::Child) => become_supervisor(request, fds),
        Ok(nix::unistd::ForkResult::Parent { child }) => {
            // SAFETY: a plain system call; on success it returns a new fd this code owns.
            let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, child.as_raw(), 0) };
            // Before 5.3 there are no pidfds: the host signals by pid.
            let pidfd = (fd >= 0).then(|| unsafe { OwnedFd::from_raw_fd(fd as RawFd) });
            (format!("+{child}"), pidfd)
        }
        Err(e) => (format!("-cannot fork: {e}"), None),
    };
    let _ = chld.thread_unblock();
    answer
}

/// The zygote's SIGCHLD handler: reaps every supervisor that has ended.
extern "C" fn reap_supervisors(_: libc::c_int) {
    use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
    let errno = nix::errno::Errno::last_raw();
    while let Ok(status) = waitpid(None, Some(WaitPidFlag::WNOHANG)) {
        if status == WaitStatus::StillAlive {
            break;
        }
    }
    nix::errno::Errno::set_raw(errno);
}

/// In the forked child: puts the fds in place and the environment, folder and group an
/// exec'd supervisor would have, then runs the supervisor and reports its exit code.
#[allow(unsafe_code, reason = "borrowing the status fd this process installed")]
fn become_supervisor(request: &Decoded, fds: Vec<OwnedFd>) -> ! {
    // Until its fds are in place nothing may be written: fd 2 or 5 may still be another of
    // the server's pipes. The host sees the status pipe end without a code.
    if install(fds).is_err() {
        std::process::exit(EXIT_SPAWN_FAILED);
    }
    let code = match prepare(request) {
        Ok(args) => supervisor::supervise(&args),
        Err(e) => {
            // The host reads this as the server's stderr, as it would from an exec'd one.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("mcp-host supervisor: {e}");
            }
            EXIT_SPAWN_FAILED
        }
    };
    // SAFETY: `install` put the status pipe at STATUS_FD, and nothing closes it.
    let status = unsafe { BorrowedFd::borrow_raw(STATUS_FD) };
    let _ = nix::unistd::write(status, &code.to_le_bytes());
    std::process::exit(code)
}

/// Puts the received fds at the numbers an exec'd supervisor finds them at.
#[allow(
    unsafe_code,
    reason = "the SIGCHLD disposition, and the status fd just placed"
)]
fn install(fds: Vec<OwnedFd>) -> std::io::Result<()> {
    use nix::sys::signal::{SigHandler, SigSet, Signal, signal};
    use std::os::fd::IntoRawFd;
    // As an exec'd supervisor starts: SIGCHLD neither handled as the zygote does nor held.
    // SAFETY: the default disposition, in a process with one thread.
    unsafe { signal(Signal::SIGCHLD, SigHandler::SigDfl) }?;
    SigSet::empty().thread_set_mask()?;
    let at: &[RawFd] = &[0, 1, 2, LIFELINE_FD, STATUS_FD, NETNS_FD][..fds.len()];
    // `place_fds` closes the originals. The socket to the host is fd 0, which stdin
    // replaces: the supervisor cannot reach it.
    let raw: Vec<RawFd> = fds.into_iter().map(IntoRawFd::into_raw_fd).collect();
    place_fds(&raw, at)?;
    // The server must not hold the status pipe: its end means the supervisor's.
    // SAFETY: STATUS_FD was just placed.
    let status = unsafe { BorrowedFd::borrow_raw(STATUS_FD) };
    nix::fcntl::fcntl(
        status,
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )?;
    Ok(())
}

/// The folder, group and environment an exec'd supervisor starts with; its arguments.
#[allow(unsafe_code, reason = "the environment of a single-threaded process")]
fn prepare(request: &Decoded) -> Result<SupervisorArgs, String> {
    nix::unistd::setpgid(nix::unistd::Pid::from_raw(0), nix::unistd::Pid::from_raw(0))
        .map_err(|e| format!("setpgid: {e}"))?;
    std::env::set_current_dir(&request.cwd)
        .map_err(|e| format!("cannot enter {}: {e}", Path::new(&request.cwd).display()))?;
    for (key, _) in std::env::vars_os() {
        // SAFETY: this process has one thread.
        unsafe { std::env::remove_var(key) };
    }
    for (key, value) in &request.env {
        // SAFETY: this process has one thread.
        unsafe { std::env::set_var(key, value) };
    }
    SupervisorArgs::parse(request.argv.iter().cloned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_round_trips() {
        let env = BTreeMap::from([
            ("PATH".to_string(), "/bin:/usr/bin".to_string()),
            ("EQ".to_string(), "a=b".to_string()),
            ("EMPTY".to_string(), String::new()),
        ]);
        let argv = vec![
            OsString::from("--grace-ms"),
            "1000".into(),
            "--".into(),
            "node".into(),
        ];
        let request = ForkRequest {
            cwd: Path::new("/tmp/a dir"),
            env: &env,
            argv: &argv,
        };
        let decoded = decode(&encode(&request)).unwrap();
        assert_eq!(decoded.cwd, "/tmp/a dir");
        assert_eq!(decoded.argv, argv);
        let env_back: BTreeMap<String, String> = (decoded.env.into_iter())
            .map(|(k, v)| (k.into_string().unwrap(), v.into_string().unwrap()))
            .collect();
        assert_eq!(env_back, env);
    }

    #[test]
    fn a_cut_or_padded_request_is_refused() {
        let env = BTreeMap::from([("A".to_string(), "1".to_string())]);
        let argv = vec![OsString::from("--"), "x".into()];
        let body = encode(&ForkRequest {
            cwd: Path::new("/"),
            env: &env,
            argv: &argv,
        });
        for cut in 0..body.len() {
            assert_eq!(decode(&body[..cut]), None, "cut at {cut}");
        }
        let mut padded = body.clone();
        padded.push(0);
        assert_eq!(decode(&padded), None);
        // Counts far beyond what the body holds are refused before anything is read.
        let mut huge = body;
        huge[..4].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(decode(&huge), None);
    }
}
