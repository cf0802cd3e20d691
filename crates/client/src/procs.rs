//! Reading the Linux process table (`/proc`) to find every descendant of a process, even one
//! that left its process group with `setsid`, and signalling them. Also the run records that
//! let a new host end servers a crashed host left behind.

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// The fields of `/proc/<pid>/stat` the host needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ProcInfo {
    pub pid: i32,
    pub ppid: i32,
    pub pgid: i32,
    /// Start time in clock ticks since boot: with the pid, identifies a process uniquely.
    pub start_ticks: u64,
    /// Exited but not yet reaped: it holds a pid and nothing else.
    pub zombie: bool,
}

/// Parses one `/proc/<pid>/stat` line. The command name is in parentheses and may itself
/// contain spaces and parentheses, so fields are counted from the last `)`.
pub fn parse_stat(line: &str) -> Option<ProcInfo> {
    let pid = line.split_ascii_whitespace().next()?.parse().ok()?;
    // The fields after the command's closing parenthesis, from field 3 (state): ppid is
    // field 4, pgrp 5, starttime 22. Read in passing, not collected: every supervisor
    // parses two of these at start.
    let mut fields = line[line.rfind(')')? + 1..].split_ascii_whitespace();
    let zombie = fields.next()? == "Z";
    let ppid = fields.next()?.parse().ok()?;
    let pgid = fields.next()?.parse().ok()?;
    let start_ticks = fields.nth(16)?.parse().ok()?;
    Some(ProcInfo {
        zombie,
        pid,
        ppid,
        pgid,
        start_ticks,
    })
}

pub fn read_proc(pid: i32) -> Option<ProcInfo> {
    parse_stat(&std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?)
}

/// Every process currently visible.
pub fn all_processes() -> Vec<ProcInfo> {
    let Ok(dir) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    dir.filter_map(|e| e.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter_map(read_proc)
        .collect()
}

/// All descendants of `root` in `procs`, children before grandchildren.
pub fn descendants(root: i32, procs: &[ProcInfo]) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    for p in procs {
        children.entry(p.ppid).or_default().push(p.pid);
    }
    let mut out = Vec::new();
    let mut queue = vec![root];
    while let Some(pid) = queue.pop() {
        if let Some(kids) = children.get(&pid) {
            for &k in kids {
                if k != root && !out.contains(&k) {
                    out.push(k);
                    queue.push(k);
                }
            }
        }
    }
    out
}

/// The pids the kernel lists as children of `pid` (`/proc/PID/task/TID/children`, one
/// file per thread), or `None` when this kernel does not keep the lists.
fn children_of(pid: i32) -> Option<Vec<i32>> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).ok()?;
    let mut kids = Vec::new();
    let mut listed = false;
    for task in tasks.flatten() {
        let Ok(text) = std::fs::read_to_string(task.path().join("children")) else {
            continue;
        };
        listed = true;
        kids.extend(
            text.split_whitespace()
                .filter_map(|p| p.parse::<i32>().ok()),
        );
    }
    listed.then_some(kids)
}

/// All living or unreaped descendants of `root`, children before grandchildren. Walks the
/// kernel's child lists from `root` down, which costs a few reads for a server's tree where
/// a scan of every process on a busy machine costs thousands (the supervisor checks after
/// every signal until its tree is gone). Without the lists, the whole table is scanned.
pub fn descendants_of(root: i32) -> Vec<i32> {
    let Some(first) = children_of(root) else {
        return descendants(root, &all_processes());
    };
    let mut out = Vec::new();
    let mut queue = first;
    while let Some(pid) = queue.pop() {
        if pid == root || out.contains(&pid) {
            continue;
        }
        out.push(pid);
        // A process that exited since it was listed has no list: nothing below it.
        queue.extend(children_of(pid).unwrap_or_default());
    }
    out
}

/// Signals every descendant of `root` and the process group `pgid` (when given).
/// Returns how many descendants were found.
pub fn signal_tree(root: i32, pgid: Option<i32>, signal: Signal) -> usize {
    if let Some(g) = pgid {
        let _ = kill(Pid::from_raw(-g), signal);
    }
    let found = descendants_of(root);
    for &pid in &found {
        let _ = kill(Pid::from_raw(pid), signal);
    }
    found.len()
}

/// What a supervisor writes while its server runs, so that a later host can end the server's
/// process group if both the host and the supervisor died without cleaning up.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunRecord {
    pub supervisor_pid: i32,
    pub supervisor_start_ticks: u64,
    pub server_pid: i32,
    pub server_start_ticks: u64,
    /// A confined server's private temp folder, removed with its leftovers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub temp: Option<PathBuf>,
}

/// Where confined servers' private temp folders live; only folders below it are removed on
/// a record's say.
pub fn sandbox_temp_root() -> PathBuf {
    std::env::temp_dir().join("mcp-host-sandbox")
}

impl RunRecord {
    pub fn path_in(dir: &Path, supervisor_pid: i32) -> PathBuf {
        dir.join(format!("supervisor-{supervisor_pid}.json"))
    }
}

fn same_process(pid: i32, start_ticks: u64) -> bool {
    read_proc(pid).is_some_and(|p| p.start_ticks == start_ticks && !p.zombie)
}

/// Ends servers whose supervisor is gone, and removes stale records. Returns the number of
/// processes signalled. Safe against pid reuse: a process is touched only when its pid and
/// start time both match the record, or it is in the recorded server's process group and
/// started after it.
pub fn reap_leftovers(dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let mut signalled = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let Some(rec) = std::fs::read_to_string(&path)
            .ok()
            .and_then(|t| serde_json::from_str::<RunRecord>(&t).ok())
        else {
            continue;
        };
        if same_process(rec.supervisor_pid, rec.supervisor_start_ticks) {
            continue; // A live supervisor (ours or another host's) owns it.
        }
        for p in all_processes().into_iter().filter(|p| !p.zombie) {
            let is_server = p.pid == rec.server_pid && p.start_ticks == rec.server_start_ticks;
            let in_group = p.pgid == rec.server_pid && p.start_ticks >= rec.server_start_ticks;
            if is_server || in_group {
                let _ = kill(Pid::from_raw(p.pid), Signal::SIGKILL);
                signalled += 1;
            }
        }
        if let Some(temp) = rec.temp.filter(|t| t.starts_with(sandbox_temp_root())) {
            let _ = std::fs::remove_dir_all(temp);
        }
        let _ = std::fs::remove_file(&path);
    }
    signalled
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_stat_with_hostile_command_names() {
        let line = "4242 (evil) 1 2 (x) S 17 4242 4242 0 -1 4194560 100 0 0 0 0 0 0 0 20 0 1 0 987654 1000 10";
        let p = parse_stat(line).unwrap();
        assert_eq!(
            (p.pid, p.ppid, p.pgid, p.start_ticks),
            (4242, 17, 4242, 987654)
        );
        assert!(!p.zombie);
        let z = parse_stat("7 (z) Z 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 5 0 0").unwrap();
        assert!(z.zombie);
    }

    #[test]
    fn descendants_walk_the_whole_tree() {
        let p = |pid, ppid| ProcInfo {
            pid,
            ppid,
            pgid: pid,
            start_ticks: 0,
            zombie: false,
        };
        let procs = [p(10, 1), p(11, 10), p(12, 11), p(13, 1), p(14, 12)];
        let mut d = descendants(10, &procs);
        d.sort();
        assert_eq!(d, vec![11, 12, 14]);
    }

    #[test]
    fn the_kernels_child_lists_find_grandchildren() {
        let mut sh = std::process::Command::new("sh")
            .args(["-c", "sleep 30 & sleep 30 & wait"])
            .spawn()
            .unwrap();
        let sh_pid = sh.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        let grandchildren = loop {
            let below: Vec<i32> = all_processes()
                .iter()
                .filter(|p| p.ppid == sh_pid)
                .map(|p| p.pid)
                .collect();
            if below.len() == 2 || std::time::Instant::now() > deadline {
                break below;
            }
            std::thread::yield_now();
        };
        assert_eq!(
            grandchildren.len(),
            2,
            "the shell did not start its two sleeps"
        );
        let found = descendants_of(std::process::id() as i32);
        let _ = kill(Pid::from_raw(-sh_pid), Signal::SIGKILL);
        for pid in &grandchildren {
            let _ = kill(Pid::from_raw(*pid), Signal::SIGKILL);
        }
        let _ = sh.kill();
        let _ = sh.wait();
        assert!(
            found.contains(&sh_pid),
            "{found:?} lacks the child {sh_pid}"
        );
        for pid in grandchildren {
            assert!(found.contains(&pid), "{found:?} lacks the grandchild {pid}");
        }
    }

    #[test]
    fn reads_our_own_process() {
        let me = read_proc(std::process::id() as i32).unwrap();
        assert_eq!(me.pid, std::process::id() as i32);
    }
}
