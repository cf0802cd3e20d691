//! The fake server's `probe` tool: tries, from inside a supervised server, each act a
//! confinement must allow or forbid, and reports one line per act (`read /etc/shadow:
//! denied (Permission denied (os error 13))`). Also the process's `NoNewPrivs` and
//! `Seccomp` state, and the calls only a filter forbids. A denial is also written to stderr
//! in the form C programs use, so the host's account of the server counts it.
//!
//! Always tried: `ptrace`, `mount`, `process_vm_readv`, creating a UDP socket, and a unix
//! socket connected by path (refused when creating the socket is; `no such socket` when not).
//!
//! Arguments (all optional): `read` and `write` (paths), `connect` (loopback ports), and
//! `fetch` (`host:port` targets asked of the egress proxy in `HTTP_PROXY`, by plain HTTP).

use serde_json::Value;
use std::io::{Read, Write};

fn outcome(act: &str, result: std::io::Result<String>) -> String {
    match result {
        Ok(detail) if detail.is_empty() => format!("{act}: allowed"),
        Ok(detail) => format!("{act}: allowed ({detail})"),
        Err(e) => {
            #[allow(clippy::print_stderr)]
            {
                eprintln!("probe: {act}: {e}");
            }
            format!("{act}: denied ({e})")
        }
    }
}

fn strings(args: &Value, key: &str) -> Vec<String> {
    (args[key].as_array().into_iter().flatten())
        .map(|v| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        })
        .collect()
}

/// A system call's result as an outcome: 0 is allowed, -1 is denied with its errno.
fn syscall_result(rc: i64) -> std::io::Result<String> {
    if rc < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(String::new())
    }
}

/// Runs every act `args` asks for, and the fixed ones; one line each.
#[allow(
    unsafe_code,
    reason = "the probe makes raw system calls a filter must refuse"
)]
pub fn run(args: &Value) -> String {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let mut lines: Vec<String> = status
        .lines()
        .filter(|l| l.starts_with("NoNewPrivs:") || l.starts_with("Seccomp:"))
        .map(str::to_string)
        .collect();
    // Reading no bytes of its own memory changes nothing and succeeds unless a filter
    // forbids `process_vm_readv` (container runtimes' default filters allow it).
    // SAFETY: zero iovecs, null pointers the kernel never dereferences.
    let rc = unsafe {
        libc::process_vm_readv(libc::getpid(), std::ptr::null(), 0, std::ptr::null(), 0, 0)
    };
    lines.push(outcome("process_vm_readv", syscall_result(rc as i64)));
    // Seizing a process that cannot exist: ESRCH when allowed, EPERM when filtered; it
    // never attaches to anything.
    // SAFETY: ptrace with a pid no process has; no memory is passed.
    let rc = unsafe { libc::ptrace(libc::PTRACE_SEIZE, i32::MAX, 0usize, 0usize) };
    let ptrace = match syscall_result(rc) {
        Err(e) if e.raw_os_error() == Some(libc::ESRCH) => Ok("no such process".to_string()),
        other => other,
    };
    lines.push(outcome("ptrace", ptrace));
    // Null source and target: EFAULT when the call is allowed, EPERM when it is not.
    // SAFETY: null pointers; the kernel rejects them before using them.
    let rc = unsafe {
        libc::mount(
            std::ptr::null(),
            std::ptr::null(),
            std::ptr::null(),
            0,
            std::ptr::null(),
        )
    };
    let mount = match syscall_result(i64::from(rc)) {
        Err(e) if e.raw_os_error() == Some(libc::EFAULT) => Ok("reached the kernel".to_string()),
        other => other,
    };
    lines.push(outcome("mount", mount));
    // Sockets Landlock cannot see: a UDP socket (a way around the proxy) and a unix socket
    // connected by path (another program's control socket). Only creating them is tried.
    let udp = std::net::UdpSocket::bind("127.0.0.1:0").map(|_| String::new());
    lines.push(outcome("udp socket", udp));
    let unix = match std::os::unix::net::UnixStream::connect("/nonexistent/mcp-host-probe.sock") {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok("no such socket".to_string()),
        other => other.map(|_| String::new()),
    };
    lines.push(outcome("unix socket", unix));
    for path in strings(args, "read") {
        let read = std::fs::read(&path).map(|b| format!("{} bytes", b.len()));
        lines.push(outcome(&format!("read {path}"), read));
    }
    for path in strings(args, "write") {
        let write = std::fs::write(&path, b"probe").map(|()| String::new());
        lines.push(outcome(&format!("write {path}"), write));
    }
    for port in strings(args, "connect") {
        let connect =
            std::net::TcpStream::connect(format!("127.0.0.1:{port}")).map(|_| String::new());
        lines.push(outcome(&format!("connect 127.0.0.1:{port}"), connect));
    }
    for target in strings(args, "fetch") {
        lines.push(outcome(&format!("fetch {target}"), fetch(&target)));
    }
    lines.join("\n")
}

/// `GET http://TARGET/` through the proxy in `HTTP_PROXY`; its status line and body.
pub fn fetch(target: &str) -> std::io::Result<String> {
    let proxy = std::env::var("HTTP_PROXY").map_err(|_| std::io::Error::other("no HTTP_PROXY"))?;
    let proxy = proxy.trim_start_matches("http://").trim_end_matches('/');
    let mut s = std::net::TcpStream::connect(proxy)?;
    write!(s, "GET http://{target}/ HTTP/1.1\r\nHost: {target}\r\n\r\n")?;
    let mut answer = String::new();
    s.read_to_string(&mut answer)?;
    let status = answer.lines().next().unwrap_or_default().to_string();
    let body = answer.split("\r\n\r\n").nth(1).unwrap_or_default().trim();
    if status.contains(" 200 ") {
        Ok(format!("{status}: {body}"))
    } else {
        Err(std::io::Error::other(format!("{status}: {body}")))
    }
}
