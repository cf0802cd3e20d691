//! The per-server supervisor: a tiny process the host re-executes itself as
//! (`mcp-host __supervise ...`), one per stdio server. It is a child subreaper, so every
//! descendant of the server (even one that called `setsid`) is re-parented to it; it watches
//! a lifeline pipe from the host, and when the host goes away for any reason (including
//! SIGKILL) or asks it to stop, it ends the server's whole tree: SIGTERM, a grace period,
//! SIGKILL, reap. When the server exits on its own, it ends the leftovers the same way and
//! exits with the server's status. The server's stdin, stdout and stderr are the
//! supervisor's own, so no byte is copied.
//!
//! This code runs in a fresh single-threaded process with no async runtime.

use crate::procs::{self, RunRecord};
use crate::sandbox::enforce::Prepared;
use crate::sandbox::profile::Profile;
use nix::poll::{PollFd, PollFlags, PollTimeout, poll};
use nix::sys::signal::{SigSet, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::wait::{WaitPidFlag, WaitStatus, waitpid};
use nix::unistd::Pid;
use std::ffi::OsString;
use std::os::fd::{AsFd, BorrowedFd, RawFd};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// The hidden first argument that turns the host binary into a supervisor.
pub const SUPERVISE_ARG: &str = "__supervise";
/// The file descriptor on which the supervisor finds the read end of the lifeline pipe.
pub const LIFELINE_FD: RawFd = 3;
/// Exit status when the server could not be started at all.
pub const EXIT_SPAWN_FAILED: i32 = 127;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SupervisorArgs {
    pub grace: Duration,
    pub record_dir: Option<PathBuf>,
    /// The confinement profile, as JSON (`sandbox::profile::Profile`).
    pub sandbox: Option<String>,
    /// `sandbox: "off"`: no filter, no `no_new_privs`, nothing.
    pub unconfined: bool,
    pub program: OsString,
    pub args: Vec<OsString>,
}

impl SupervisorArgs {
    /// The arguments after [`SUPERVISE_ARG`], as the host writes them.
    pub fn to_argv(&self) -> Vec<OsString> {
        let mut v = vec![
            OsString::from("--grace-ms"),
            self.grace.as_millis().to_string().into(),
        ];
        if let Some(d) = &self.record_dir {
            v.push("--record-dir".into());
            v.push(d.clone().into());
        }
        if let Some(s) = &self.sandbox {
            v.push("--sandbox".into());
            v.push(s.into());
        }
        if self.unconfined {
            v.push("--unconfined".into());
        }
        v.push("--".into());
        v.push(self.program.clone());
        v.extend(self.args.iter().cloned());
        v
    }

    pub fn parse(argv: impl IntoIterator<Item = OsString>) -> Result<Self, String> {
        let mut it = argv.into_iter();
        let mut grace = Duration::from_secs(1);
        let mut record_dir = None;
        let mut sandbox = None;
        let mut unconfined = false;
        loop {
            let arg = it.next().ok_or("missing `-- PROGRAM`")?;
            match arg.to_str() {
                Some("--grace-ms") => {
                    let v = it.next().ok_or("--grace-ms needs a value")?;
                    let ms = v
                        .to_str()
                        .and_then(|s| s.parse().ok())
                        .ok_or("bad --grace-ms")?;
                    grace = Duration::from_millis(ms);
                }
                Some("--record-dir") => {
                    record_dir = Some(PathBuf::from(
                        it.next().ok_or("--record-dir needs a value")?,
                    ));
                }
                Some("--sandbox") => {
                    let v = it.next().ok_or("--sandbox needs a value")?;
                    sandbox = Some(v.into_string().map_err(|_| "bad --sandbox")?);
                }
                Some("--unconfined") => unconfined = true,
                Some("--") => break,
                _ => return Err(format!("unexpected argument {arg:?}")),
            }
        }
        let program = it.next().ok_or("missing PROGRAM after --")?;
        Ok(Self {
            grace,
            record_dir,
            sandbox,
            unconfined,
            program,
            args: it.collect(),
        })
    }
}

enum Stop {
    /// The server exited by itself with this exit code.
    ServerExited(i32),
    /// The host went away or asked us to stop.
    Terminate,
}

/// The most fds a supervisor is given at fixed numbers.
pub(crate) const MAX_FIXED_FDS: usize = 6;

/// Puts each of `fds` at the number `at` gives for it, and closes the originals: all are
/// first copied above the fixed numbers, so placing one never overwrites another not yet
/// placed (an original may sit on any fixed number). `dup2` clears close-on-exec on the
/// placed fd. Allocates nothing and calls only async-signal-safe functions, so it runs
/// between fork and exec as well as in a forked supervisor.
#[allow(
    unsafe_code,
    reason = "fcntl, dup2 and close on raw fds this process owns"
)]
pub(crate) fn place_fds(fds: &[RawFd], at: &[RawFd]) -> std::io::Result<()> {
    let mut moved = [-1; MAX_FIXED_FDS];
    if fds.len() != at.len() || fds.len() > MAX_FIXED_FDS {
        return Err(std::io::Error::other("fds and places do not match"));
    }
    // SAFETY: fcntl, dup2 and close on fds this process holds; nothing else uses them here.
    unsafe {
        for (slot, &fd) in moved.iter_mut().zip(fds) {
            *slot = libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 10);
            if *slot < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(fd);
        }
        for (&fd, &to) in moved.iter().zip(at) {
            if libc::dup2(fd, to) < 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::close(fd);
        }
    }
    Ok(())
}

/// The `main` of whichever program holds the supervisor (`mcp-host` or the small
/// `mcp-host-supervise`): `Some(exit code)` when the arguments after the program's name ask
/// for a supervisor (`__supervise ARGS`) or for the zygote that forks them (`__zygote`).
pub fn dispatch(mut argv: impl Iterator<Item = OsString>) -> Option<u8> {
    let first = argv.next()?;
    if first == SUPERVISE_ARG {
        Some(main_with(argv))
    } else if first == crate::zygote::ZYGOTE_ARG {
        Some(crate::zygote::serve())
    } else {
        None
    }
}

/// The supervisor's `main`, whichever program it is in (`mcp-host __supervise ARGS`, or the
/// small `mcp-host-supervise __supervise ARGS`): `argv` is what follows `__supervise`.
pub fn main_with(argv: impl IntoIterator<Item = OsString>) -> u8 {
    match SupervisorArgs::parse(argv) {
        Ok(args) => u8::try_from(supervise(&args)).unwrap_or(1),
        Err(e) => {
            // No logger here: the host reads the supervisor's stderr as the server's.
            #[allow(clippy::print_stderr)]
            {
                eprintln!("mcp-host {SUPERVISE_ARG}: {e}");
            }
            2
        }
    }
}

/// Runs the supervisor; returns the process exit code.
pub fn supervise(args: &SupervisorArgs) -> i32 {
    match run(args) {
        Ok(code) => code,
        Err(e) => {
            // The supervisor is its own process with no logger: stderr is where it can say
            // why the server did not start (the host reads it as the server's stderr).
            #[allow(clippy::print_stderr)]
            {
                eprintln!("mcp-host supervisor: {e}");
            }
            EXIT_SPAWN_FAILED
        }
    }
}

#[allow(
    unsafe_code,
    reason = "pre_exec: masks signals, sets the death signal, no_new_privs and the seccomp filter in the child"
)]
fn run(args: &SupervisorArgs) -> Result<i32, String> {
    let me = std::process::id() as i32;
    nix::sys::prctl::set_child_subreaper(true).map_err(|e| format!("subreaper: {e}"))?;
    // Keep the lifeline out of the server: only our copy may hold it open.
    let lifeline_ok = nix::fcntl::fcntl(
        unsafe_borrow(LIFELINE_FD),
        nix::fcntl::FcntlArg::F_SETFD(nix::fcntl::FdFlag::FD_CLOEXEC),
    )
    .is_ok();

    let mut mask = SigSet::empty();
    for s in [
        Signal::SIGCHLD,
        Signal::SIGTERM,
        Signal::SIGINT,
        Signal::SIGHUP,
    ] {
        mask.add(s);
    }
    mask.thread_block()
        .map_err(|e| format!("sigprocmask: {e}"))?;
    let sfd = SignalFd::with_flags(&mask, SfdFlags::SFD_CLOEXEC | SfdFlags::SFD_NONBLOCK)
        .map_err(|e| format!("signalfd: {e}"))?;

    let Confinement {
        profile,
        mut landlock,
        filter,
    } = confinement(args)?;
    let unconfined = args.unconfined;
    let mut cmd = std::process::Command::new(&args.program);
    cmd.args(&args.args).process_group(0);
    // SAFETY: the closure calls sigprocmask, prctl, setrlimit and the Landlock and seccomp
    // system calls; this process is single-threaded, so no lock can be held across the fork.
    unsafe {
        cmd.pre_exec(move || {
            SigSet::all()
                .thread_unblock()
                .map_err(std::io::Error::from)?;
            // We are single-threaded, so this fires exactly when this supervisor dies.
            nix::sys::prctl::set_pdeathsig(Signal::SIGKILL).map_err(std::io::Error::from)?;
            if unconfined {
                return Ok(());
            }
            // The server and everything it runs can never gain privileges (no setuid or
            // file-capability binary elevates it). The first step of confining a server.
            nix::sys::prctl::set_no_new_privs().map_err(std::io::Error::from)?;
            // Its limits and its Landlock domain (see `sandbox/enforce.rs`).
            if let Some(landlock) = landlock.as_mut() {
                landlock.apply()?;
            }
            // Last, so the calls above are not filtered (see `seccomp.rs` for what is).
            if let Some(filter) = &filter {
                seccompiler::apply_filter(filter).map_err(std::io::Error::other)?;
            }
            Ok(())
        });
    }
    let child = cmd
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", args.program.to_string_lossy()))?;
    let server = child.id() as i32;
    let record_path = args.record_dir.as_ref().map(|d| RunRecord::path_in(d, me));
    if let (Some(path), Some(me_info), Some(srv)) =
        (&record_path, procs::read_proc(me), procs::read_proc(server))
    {
        let rec = RunRecord {
            supervisor_pid: me,
            supervisor_start_ticks: me_info.start_ticks,
            server_pid: server,
            server_start_ticks: srv.start_ticks,
            temp: profile.as_ref().and_then(|p| p.temp.clone()),
        };
        if let Ok(text) = serde_json::to_string(&rec) {
            let _ = std::fs::write(path, text);
        }
    }

    let mut server_code = None;
    let stop = wait_for_stop(&sfd, lifeline_ok, server, &mut server_code);
    end_tree(me, server, &sfd, args.grace, &mut server_code);
    if let Some(path) = record_path {
        let _ = std::fs::remove_file(path);
    }
    // The server's private temp folder goes with it.
    if let Some(temp) = profile.as_ref().and_then(|p| p.temp.as_ref()) {
        let _ = std::fs::remove_dir_all(temp);
    }
    Ok(match stop {
        Stop::ServerExited(code) => code,
        Stop::Terminate => server_code.unwrap_or(0),
    })
}

/// What the child will apply, built before the fork (the child only applies it).
struct Confinement {
    profile: Option<Profile>,
    landlock: Option<Prepared>,
    filter: Option<seccompiler::BpfProgram>,
}

/// Reads the profile, builds the Landlock ruleset and the seccomp filter, and moves this
/// process into the server's own network namespace when the profile asks (single-threaded,
/// before the server starts, so the server is born in it; the host learns either way, and a
/// failure is not fatal).
fn confinement(args: &SupervisorArgs) -> Result<Confinement, String> {
    let profile: Option<Profile> = (args.sandbox.as_deref())
        .map(serde_json::from_str)
        .transpose()
        .map_err(|e| format!("bad sandbox profile: {e}"))?;
    let landlock = profile.as_ref().map(Prepared::new).transpose()?;
    let filter = if args.unconfined {
        None
    } else {
        let strict = profile.is_some();
        Some(crate::seccomp::program(strict).map_err(|e| format!("seccomp filter: {e}"))?)
    };
    if let Some(p) = profile.as_ref().filter(|p| p.netns)
        && let Some(port) = p.connect.first()
        && let Err(e) = crate::sandbox::netns::enter_and_report(*port)
    {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("mcp-host supervisor: {e}");
        }
    }
    Ok(Confinement {
        profile,
        landlock,
        filter,
    })
}

/// Borrows a raw fd that this process owns for its whole life.
#[allow(
    unsafe_code,
    reason = "the lifeline fd is owned for the whole process life"
)]
fn unsafe_borrow(fd: RawFd) -> BorrowedFd<'static> {
    // SAFETY: fd 3 was installed by the host before exec and is never closed by this process.
    unsafe { BorrowedFd::borrow_raw(fd) }
}

fn wait_for_stop(sfd: &SignalFd, lifeline_ok: bool, server: i32, code: &mut Option<i32>) -> Stop {
    loop {
        let mut fds = vec![PollFd::new(sfd.as_fd(), PollFlags::POLLIN)];
        if lifeline_ok {
            fds.push(PollFd::new(unsafe_borrow(LIFELINE_FD), PollFlags::POLLIN));
        }
        if poll(&mut fds, PollTimeout::NONE).is_err() {
            continue; // EINTR
        }
        let lifeline_gone = fds
            .get(1)
            .and_then(|f| f.revents())
            .is_some_and(|r| !r.is_empty());
        if lifeline_gone {
            // The host never writes; readable or hung up both mean it is gone.
            return Stop::Terminate;
        }
        while let Ok(Some(info)) = sfd.read_signal() {
            if info.ssi_signo != Signal::SIGCHLD as u32 {
                return Stop::Terminate;
            }
        }
        reap(server, code);
        if let Some(c) = *code {
            return Stop::ServerExited(c);
        }
    }
}

/// Reaps every exited child; records the server's exit code when it is among them.
fn reap(server: i32, code: &mut Option<i32>) {
    loop {
        match waitpid(Pid::from_raw(-1), Some(WaitPidFlag::WNOHANG)) {
            Ok(WaitStatus::Exited(pid, c)) if pid.as_raw() == server => *code = Some(c),
            Ok(WaitStatus::Signaled(pid, sig, _)) if pid.as_raw() == server => {
                *code = Some(128 + sig as i32);
            }
            Ok(WaitStatus::StillAlive) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// SIGTERM to the server's group and every descendant, wait up to `grace`, then SIGKILL
/// whatever is left, and reap everything.
fn end_tree(me: i32, server: i32, sfd: &SignalFd, grace: Duration, code: &mut Option<i32>) {
    let group = Some(server);
    if procs::signal_tree(me, group, Signal::SIGTERM) == 0 {
        return;
    }
    let start = Instant::now();
    let mut killed = false;
    loop {
        reap(server, code);
        let left = procs::descendants_of(me);
        if left.is_empty() {
            return;
        }
        let elapsed = start.elapsed();
        if !killed && elapsed >= grace {
            procs::signal_tree(me, group, Signal::SIGKILL);
            killed = true;
        }
        if elapsed >= grace + Duration::from_secs(5) {
            return; // Unkillable (D state); the kernel will re-parent them to init.
        }
        let mut fds = [PollFd::new(sfd.as_fd(), PollFlags::POLLIN)];
        let _ = poll(&mut fds, PollTimeout::from(20u8));
        while let Ok(Some(_)) = sfd.read_signal() {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn argv_round_trips() {
        let a = SupervisorArgs {
            grace: Duration::from_millis(750),
            record_dir: Some("/run/x".into()),
            sandbox: Some("{\"exec\":[]}".into()),
            unconfined: true,
            program: "node".into(),
            args: vec!["--grace-ms".into(), "--".into()],
        };
        assert_eq!(SupervisorArgs::parse(a.to_argv()).unwrap(), a);
    }

    #[test]
    fn bad_argv_is_an_error() {
        assert!(SupervisorArgs::parse(vec![OsString::from("--")]).is_err());
        assert!(SupervisorArgs::parse(vec![OsString::from("--what")]).is_err());
    }
}
