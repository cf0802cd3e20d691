//! No process outlives the host: servers that start grandchildren (one in its own session
//! via `setsid`) leave nothing behind when the host exits normally, when it is killed with
//! SIGKILL, or when even its supervisor is SIGKILLed (the next host cleans up).

#![allow(clippy::print_stdout, clippy::print_stderr)] // Reports its measurements or findings on the terminal.

use crate::common::*;
use nix::sys::signal::Signal;
use serde_json::json;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

/// Pids of live (non-zombie) `sleep <mark>` processes.
fn sleepers(mark: u64) -> Vec<i32> {
    let needle = format!("sleep\0{mark}\0");
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<i32>() else {
            continue;
        };
        let cmd = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        let zombie = stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'));
        if String::from_utf8_lossy(&cmd) == needle && !zombie {
            out.push(pid);
        }
    }
    out
}

fn alive(pid: i32) -> bool {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    !stat.is_empty()
        && !stat
            .rsplit(')')
            .next()
            .is_some_and(|r| r.trim_start().starts_with('Z'))
}

fn wait_for(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let start = Instant::now();
    while !cond() {
        assert!(
            start.elapsed() < limit,
            "timed out after {limit:?} waiting for {what}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two `sleep` durations no other test (in this process or another) uses.
fn marks() -> (u64, u64) {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let base = 70_000_000 + u64::from(std::process::id()) * 64 + n * 2;
    (base, base + 1)
}

/// A server that leaves a grandchild in its process group and another in a new session.
fn family_config(sb: &Sandbox, m1: u64, m2: u64, spawn_log: &Path) -> std::path::PathBuf {
    let script = format!(
        "sleep {m1} & setsid sleep {m2} & exec {} --spawn-log {}",
        fake(),
        spawn_log.display()
    );
    sb.config(
        "family.json",
        // The program and its log are named inside a shell script, not as arguments: both
        // are granted explicitly.
        json!({"fam": {"command": "sh", "args": ["-c", script], "toolTimeout": 600000,
            "sandbox": {"filesystem": {
                "read": [Path::new(&fake()).parent().unwrap()],
                "write": [spawn_log.parent().unwrap()]}}}}),
    )
}

fn start_long_call(sb: &Sandbox, cfg: &Path) -> Child {
    sb.command(sb.path())
        .args([
            "call",
            "fam",
            "slow",
            "--args",
            r#"{"ms": 600000}"#,
            "--strict-mcp-config",
            "--mcp-config",
            cfg.to_str().unwrap(),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn server_pid(log: &Path) -> Option<i32> {
    std::fs::read_to_string(log)
        .ok()?
        .lines()
        .next()?
        .trim()
        .parse()
        .ok()
}

/// A host running a long call on a server that has a grandchild in its process group
/// (`sleep m1`) and one in its own session (`setsid sleep m2`).
struct Family {
    sb: Sandbox,
    host: Child,
    server: i32,
    m1: u64,
    m2: u64,
}

impl Family {
    fn start() -> Self {
        let sb = Sandbox::new();
        let (m1, m2) = marks();
        let log = sb.work_file("spawn.log");
        let cfg = family_config(&sb, m1, m2, &log);
        let host = start_long_call(&sb, &cfg);
        wait_for(
            "the server family to start",
            Duration::from_secs(15),
            || sleepers(m1).len() == 1 && sleepers(m2).len() == 1 && server_pid(&log).is_some(),
        );
        let server = server_pid(&log).unwrap();
        Self {
            sb,
            host,
            server,
            m1,
            m2,
        }
    }

    fn all_gone(&self) -> bool {
        sleepers(self.m1).is_empty() && sleepers(self.m2).is_empty() && !alive(self.server)
    }
}

#[test]
fn sigkill_of_the_host_leaves_no_survivors_within_two_seconds() {
    let mut f = Family::start();
    // The server runs under the small supervisor program, not a second copy of the host.
    let supervisor = mcp_host_client::procs::read_proc(f.server).unwrap().ppid;
    let exe = std::fs::read_link(format!("/proc/{supervisor}/exe")).unwrap();
    assert_eq!(
        exe.file_name().and_then(|n| n.to_str()),
        Some("mcp-host-supervise"),
        "{}",
        exe.display()
    );
    signal(f.host.id(), Signal::SIGKILL);
    f.host.wait().unwrap();
    let killed_at = Instant::now();
    wait_for("every descendant to die", Duration::from_secs(2), || {
        f.all_gone() && !alive(supervisor)
    });
    eprintln!("all gone {:?} after SIGKILL", killed_at.elapsed());
}

/// With more than one stdio server the supervisors are forks of one zygote: a SIGKILL of the
/// host ends the zygote, every supervisor and every server's tree all the same.
#[test]
fn sigkill_of_a_host_with_a_zygote_leaves_no_survivors() {
    let sb = Sandbox::new();
    let (m1, m2) = marks();
    let (m3, _) = marks();
    let log = sb.work_file("spawn.log");
    let script = format!(
        "sleep {m1} & setsid sleep {m2} & exec {} --spawn-log {}",
        fake(),
        log.display()
    );
    // `fam` starts; `mute` never answers, so `tools` waits for it until it is killed.
    let cfg = sb.config(
        "two.json",
        json!({
            "fam": {"command": "sh", "args": ["-c", script], "sandbox": "off"},
            "mute": {"command": "sh", "args": ["-c", format!("exec sleep {m3}")], "sandbox": "off"},
        }),
    );
    let mut host = sb
        .command(sb.path())
        .args(["tools", "--strict-mcp-config", "--mcp-config"])
        .arg(&cfg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("both servers to start", Duration::from_secs(15), || {
        sleepers(m1).len() == 1
            && sleepers(m2).len() == 1
            && sleepers(m3).len() == 1
            && server_pid(&log).is_some()
    });
    let server = server_pid(&log).unwrap();
    let supervisor = mcp_host_client::procs::read_proc(server).unwrap().ppid;
    let zygote = mcp_host_client::procs::read_proc(supervisor).unwrap().ppid;
    let zygote_args = std::fs::read(format!("/proc/{zygote}/cmdline")).unwrap();
    assert!(
        String::from_utf8_lossy(&zygote_args).contains("__zygote"),
        "{}",
        String::from_utf8_lossy(&zygote_args)
    );
    signal(host.id(), Signal::SIGKILL);
    host.wait().unwrap();
    wait_for("every descendant to die", Duration::from_secs(2), || {
        [m1, m2, m3].iter().all(|m| sleepers(*m).is_empty())
            && !alive(server)
            && !alive(supervisor)
            && !alive(zygote)
    });
}

#[test]
fn sigint_cancels_the_call_stops_the_servers_and_exits_130() {
    let mut f = Family::start();
    signal(f.host.id(), Signal::SIGINT);
    assert_eq!(f.host.wait().unwrap().code(), Some(130));
    // The host waited for its servers: nothing is left the moment it returns.
    assert!(f.all_gone());
}

#[test]
fn a_normal_exit_leaves_no_survivors() {
    let sb = Sandbox::new();
    let (m1, m2) = marks();
    let log = sb.work_file("spawn.log");
    let cfg = family_config(&sb, m1, m2, &log);
    let out = sb.run_with(&["servers"], &cfg);
    assert!(out.status.success());
    assert!(stdout(&out).contains("ready"), "{}", stdout(&out));
    // The supervisor reaped everything before the host returned.
    assert!(sleepers(m1).is_empty() && sleepers(m2).is_empty());
    assert!(!alive(server_pid(&log).unwrap()));
}

#[test]
fn the_next_host_ends_what_a_killed_supervisor_left_behind() {
    let mut f = Family::start();
    let supervisor = mcp_host_client::procs::read_proc(f.server).unwrap().ppid;
    // Kill the supervisor first so it cannot clean up, then the host.
    signal(supervisor as u32, Signal::SIGKILL);
    signal(f.host.id(), Signal::SIGKILL);
    f.host.wait().unwrap();
    wait_for(
        "the server to die of its parent's death",
        Duration::from_secs(2),
        || !alive(f.server),
    );
    assert_eq!(
        sleepers(f.m1).len(),
        1,
        "the grandchild in the server's group is orphaned"
    );
    // The record names the server's private temp folder, which nobody removed.
    let record = std::fs::read_to_string(mcp_host_client::procs::RunRecord::path_in(
        &f.sb.path().join("run/mcp-host"),
        supervisor,
    ))
    .unwrap();
    let record: mcp_host_client::procs::RunRecord = serde_json::from_str(&record).unwrap();
    let temp = record.temp.expect("a confined server's temp folder");
    assert!(temp.is_dir(), "{}", temp.display());
    // A new host with the same runtime dir finds the record and ends the group.
    let other = f.sb.config("other.json", json!({}));
    f.sb.run_with(&["servers"], &other);
    wait_for("the orphan to be ended", Duration::from_secs(2), || {
        sleepers(f.m1).is_empty()
    });
    assert!(
        !temp.exists(),
        "its temp folder went with it: {}",
        temp.display()
    );
    for pid in sleepers(f.m2) {
        // Out of reach once both host and supervisor are gone (own session); tidy up.
        signal(pid as u32, Signal::SIGKILL);
    }
}

/// SIGPIPE's disposition (bit 13 of a `SigIgn` mask in `/proc/PID/status`) in `line`.
fn ignores_sigpipe(line: &str) -> bool {
    let mask = line.trim().strip_prefix("SigIgn:").unwrap().trim();
    u64::from_str_radix(mask, 16).unwrap() & (1 << (Signal::SIGPIPE as u32 - 1)) != 0
}

/// The supervisor ignores SIGPIPE, so telling a host that is gone fails with EPIPE instead
/// of killing it before it ends the server's tree; the server starts with the default, as a
/// program started from a shell would.
#[test]
fn the_supervisor_ignores_sigpipe_and_the_server_starts_with_the_default() {
    let sb = Sandbox::new();
    let seen = sb.path().join("dispositions");
    let script = format!(
        "grep SigIgn /proc/self/status > {seen}; grep SigIgn /proc/$PPID/status >> {seen}; exec {}",
        fake(),
        seen = seen.display(),
    );
    let cfg = sb.config(
        "sig.json",
        json!({"s": {"command": "sh", "args": ["-c", script], "sandbox": "off"}}),
    );
    let out = sb.run_with(&["tools"], &cfg);
    assert!(out.status.success(), "{}", stderr(&out));
    let lines = std::fs::read_to_string(&seen).unwrap();
    let lines: Vec<&str> = lines.lines().collect();
    assert_eq!(lines.len(), 2, "{lines:?}");
    assert!(!ignores_sigpipe(lines[0]), "the server's: {lines:?}");
    assert!(ignores_sigpipe(lines[1]), "the supervisor's: {lines:?}");
}
