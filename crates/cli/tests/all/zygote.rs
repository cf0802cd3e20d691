//! Supervisors forked from one zygote: each holds only its own server's fds, reports how
//! its server ended as an exec'd one does, and a zygote that dies is replaced (at most three
//! times within a minute, then supervisors are exec'd) without touching the servers it
//! already forked for.

use mcp_host_client::procs::read_proc;
use mcp_host_client::stdio::{ProcessExit, StdioLaunch, StdioProcess, SupervisorCommand};
use mcp_host_client::zygote::Zygote;
use mcp_host_config::SandboxSpec;
use mcp_host_core::confinement::SandboxLevel;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::collections::BTreeMap;
use std::time::{Duration, Instant};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::unix::pipe;

const SUPERVISE: &str = env!("CARGO_BIN_EXE_mcp-host-supervise");

fn supervisor(zygote: Zygote) -> SupervisorCommand {
    SupervisorCommand {
        program: SUPERVISE.into(),
        grace: Duration::from_millis(300),
        zygote,
        ..SupervisorCommand::default()
    }
}

/// A shell server, unconfined (the shell and its tools need no grants).
fn shell(script: &str) -> StdioLaunch {
    StdioLaunch {
        name: "sh".into(),
        command: "sh".into(),
        args: vec!["-c".into(), script.into()],
        env: BTreeMap::new(),
        cwd: None,
        sandbox: SandboxSpec {
            level: SandboxLevel::Off,
            ..SandboxSpec::default()
        },
        confined: Default::default(),
        log: None,
    }
}

fn host_env() -> BTreeMap<String, String> {
    std::env::vars().collect()
}

struct Running {
    process: StdioProcess,
    stdin: pipe::Sender,
    stdout: BufReader<pipe::Receiver>,
}

fn start(sup: &SupervisorCommand, script: &str) -> Running {
    let (process, stdin, stdout) = StdioProcess::spawn(&shell(script), sup, &host_env()).unwrap();
    Running {
        process,
        stdin,
        stdout: BufReader::new(stdout),
    }
}

impl Running {
    async fn line(&mut self) -> String {
        let mut line = String::new();
        tokio::time::timeout(Duration::from_secs(10), self.stdout.read_line(&mut line))
            .await
            .expect("a line within 10 s")
            .unwrap();
        line.trim().to_string()
    }

    /// Sends a line to a `cat`-like server and reads it back.
    async fn echo(&mut self, text: &str) -> String {
        self.stdin
            .write_all(format!("{text}\n").as_bytes())
            .await
            .unwrap();
        self.line().await
    }

    fn parent_of_supervisor(&self) -> i32 {
        read_proc(self.process.pid().unwrap() as i32).unwrap().ppid
    }
}

/// How the process ended, within 10 s.
async fn exit_of(process: &mut StdioProcess) -> ProcessExit {
    tokio::time::timeout(Duration::from_secs(10), process.wait_exit())
        .await
        .expect("an exit within 10 s")
}

fn cmdline(pid: i32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

fn gone(pid: i32) -> bool {
    read_proc(pid).is_none_or(|p| p.zombie)
}

async fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test]
async fn every_supervisor_is_a_fork_of_one_zygote() {
    let sup = supervisor(Zygote::default());
    let mut servers: Vec<Running> = (0..3).map(|_| start(&sup, "exec cat")).collect();
    let zygote = servers[0].parent_of_supervisor();
    assert!(cmdline(zygote).contains("__zygote"), "{}", cmdline(zygote));
    for (i, s) in servers.iter_mut().enumerate() {
        assert_eq!(s.parent_of_supervisor(), zygote);
        assert_eq!(s.echo(&format!("hello {i}")).await, format!("hello {i}"));
    }
    drop(servers);
    drop(sup);
    // The last handle closes its socket: the zygote ends and is reaped.
    wait_until("the zygote to end", || gone(zygote)).await;
}

#[tokio::test]
async fn a_forked_supervisor_holds_only_its_own_servers_fds() {
    let sup = supervisor(Zygote::default());
    let a = start(&sup, "exec cat");
    // Forked after `a`: had the zygote kept `a`'s ends of its pipes, `b` would hold them too.
    let mut b = start(&sup, "echo $$; exec cat");
    let b_server: i32 = b.line().await.parse().unwrap();
    let mut c = start(&sup, "echo $$; exec cat");
    let c_server: i32 = c.line().await.parse().unwrap();
    // `a` ends by itself at the end of its input: the host reads the end of its output and
    // its exit, which no other process's copy of a write end holds back.
    let Running {
        mut process,
        stdin,
        mut stdout,
    } = a;
    drop(stdin);
    let mut rest = String::new();
    let read = tokio::time::timeout(Duration::from_secs(10), stdout.read_line(&mut rest));
    assert_eq!(read.await.expect("the end of a's output").unwrap(), 0);
    assert_eq!(exit_of(&mut process).await, ProcessExit::Code(0));
    // `b` is stopped by letting go of it (its lifeline closes); `c` is untouched.
    drop(b);
    wait_until("b's server to end with its lifeline", || gone(b_server)).await;
    assert!(!gone(c_server));
    assert_eq!(c.echo("still here").await, "still here");
}

/// How a server ends, as the host learns it, is the same from a forked supervisor as from an
/// exec'd one.
#[tokio::test]
async fn exits_read_the_same_forked_or_execd() {
    let dir = tempfile::tempdir().unwrap();
    let not_a_program = dir.path().join("garbage");
    // Its interpreter is missing: exec fails (no shell runs it instead, as for ENOEXEC).
    std::fs::write(&not_a_program, b"#!/nonexistent/interpreter\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&not_a_program, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    for zygote in [Zygote::default(), Zygote::off()] {
        let sup = supervisor(zygote.clone());
        let mut code = start(&sup, "exit 3");
        assert_eq!(
            exit_of(&mut code.process).await,
            ProcessExit::Code(3),
            "{zygote:?}"
        );
        let mut killed = start(&sup, "kill -9 $$");
        assert_eq!(
            exit_of(&mut killed.process).await,
            ProcessExit::Code(128 + 9),
            "{zygote:?}"
        );
        let mut launch = shell("");
        launch.command = not_a_program.display().to_string();
        launch.args.clear();
        let (mut bad, _, _) = StdioProcess::spawn(&launch, &sup, &host_env()).unwrap();
        assert_eq!(
            exit_of(&mut bad).await,
            ProcessExit::SpawnFailed,
            "{zygote:?}"
        );
        bad.stderr_closed().await;
        assert!(
            bad.stderr_tail(5)
                .iter()
                .any(|l| l.contains("cannot start")),
            "{:?}",
            bad.stderr_tail(5)
        );
        // A server that ignores the closed stdin is stopped: TERM to the tree, then the exit.
        let mut stubborn = start(&sup, "trap '' HUP; while :; do sleep 1; done");
        drop(stubborn.stdin);
        let exit = tokio::time::timeout(Duration::from_secs(10), stubborn.process.shutdown())
            .await
            .expect("stopped within 10 s");
        assert!(
            matches!(exit, ProcessExit::Code(_)),
            "{exit:?} ({zygote:?})"
        );
    }
}

#[tokio::test]
async fn a_killed_zygote_is_replaced_until_it_keeps_dying_then_supervisors_are_execd() {
    let sup = supervisor(Zygote::default());
    let mut first = start(&sup, "exec cat");
    let mut zygote = first.parent_of_supervisor();
    let mut kept = Vec::new();
    // Three quick deaths: each time the next server's supervisor is forked by a new zygote.
    for round in 0..3 {
        kill(Pid::from_raw(zygote), Signal::SIGKILL).unwrap();
        wait_until("the zygote to die", || gone(zygote)).await;
        let mut next = start(&sup, "exec cat");
        let parent = next.parent_of_supervisor();
        assert_ne!(parent, zygote, "round {round}");
        assert!(cmdline(parent).contains("__zygote"), "{}", cmdline(parent));
        assert_eq!(next.echo("next").await, "next");
        zygote = parent;
        kept.push(next);
    }
    // A fourth within the minute: supervisors are exec'd from then on.
    kill(Pid::from_raw(zygote), Signal::SIGKILL).unwrap();
    wait_until("the zygote to die", || gone(zygote)).await;
    let mut after = start(&sup, "exec cat");
    assert_eq!(after.parent_of_supervisor(), std::process::id() as i32);
    assert_eq!(after.echo("after").await, "after");
    // Those forked before are untouched by their zygotes' deaths.
    assert_eq!(first.echo("first").await, "first");
    for server in &mut kept {
        assert_eq!(server.echo("kept").await, "kept");
    }
}

/// The pids this process holds a pidfd for (`/proc/self/fdinfo` names each one's process).
fn pidfd_targets() -> Vec<i32> {
    let mut pids = Vec::new();
    for fd in std::fs::read_dir("/proc/self/fd").unwrap().flatten() {
        let link = std::fs::read_link(fd.path()).unwrap_or_default();
        if link.to_string_lossy() != "anon_inode:[pidfd]" {
            continue;
        }
        let info = std::fs::read_to_string(format!(
            "/proc/self/fdinfo/{}",
            fd.file_name().to_string_lossy()
        ))
        .unwrap_or_default();
        pids.extend(
            info.lines()
                .filter_map(|l| l.strip_prefix("Pid:"))
                .filter_map(|p| p.trim().parse::<i32>().ok()),
        );
    }
    pids
}

/// The host signals a forked supervisor through a pidfd, which no reused pid can redirect,
/// and the zygote reaps the supervisors that end: none is left a zombie.
#[tokio::test]
async fn a_forked_supervisor_is_held_by_pidfd_and_reaped_by_its_zygote() {
    let sup = supervisor(Zygote::default());
    let mut server = start(&sup, "exec cat");
    let pid = server.process.pid().unwrap() as i32;
    assert_ne!(server.parent_of_supervisor(), std::process::id() as i32);
    assert!(pidfd_targets().contains(&pid), "{:?}", pidfd_targets());
    // Stopped by the host: SIGTERM through the pidfd, then the exit on the status pipe.
    let exit = tokio::time::timeout(Duration::from_secs(10), server.process.shutdown())
        .await
        .expect("stopped within 10 s");
    assert!(matches!(exit, ProcessExit::Code(_)), "{exit:?}");
    wait_until("the zygote to reap the supervisor", || {
        read_proc(pid).is_none()
    })
    .await;
}
