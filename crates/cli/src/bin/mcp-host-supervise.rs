//! The per-server supervisor as a program of its own, installed beside `mcp-host`: one runs
//! for every stdio server, so it is kept small (no async runtime, no TLS, no command line
//! parser, nothing of the host but `mcp_host_client::supervisor`). The host starts it once
//! as the zygote (`__zygote`, see `mcp_host_client::zygote`) and forks each server's
//! supervisor from it; it also takes the same arguments as `mcp-host __supervise`, which
//! remains the fallback when it is missing.
//!
//! It skips std's start-up (`lang_start`): all that did here was ignore SIGPIPE, done
//! below, and install a stack-overflow handler, which finds the main thread's stack by
//! reading `/proc/self/maps` and was a quarter of this process's instructions at every
//! server start. Arguments still come from std (glibc hands them to it before `main`).
//! A test build keeps the harness's own `main` (it has no tests to run).

#![cfg_attr(not(test), no_main)]
// Exporting `main` by name, and setting one signal's disposition, are the unsafe parts.
#![allow(unsafe_code)]

#[cfg(not(test))]
mod entry {
    use mcp_host_client::supervisor::dispatch;
    use nix::sys::signal::{SigHandler, Signal, signal};
    use std::ffi::{c_char, c_int};

    #[unsafe(no_mangle)]
    extern "C" fn main(_argc: c_int, _argv: *const *const c_char) -> c_int {
        // A write to a host that is gone must fail with EPIPE, not kill the supervisor
        // before it ends the server's tree. The server itself starts with the default
        // again: std's spawn resets SIGPIPE in the child.
        // SAFETY: no handler code is installed (SIG_IGN), and no other thread exists yet.
        let _ = unsafe { signal(Signal::SIGPIPE, SigHandler::SigIgn) };
        if let Some(code) = dispatch(std::env::args_os().skip(1)) {
            return c_int::from(code);
        }
        #[allow(clippy::print_stderr)] // No logger: its only words are this one line.
        {
            eprintln!("mcp-host-supervise is started by mcp-host, once per stdio server");
        }
        2
    }
}
