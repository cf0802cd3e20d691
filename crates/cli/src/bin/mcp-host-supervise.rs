//! The per-server supervisor as a program of its own, installed beside `mcp-host`: one runs
//! for every stdio server, so it is kept small (no async runtime, no TLS, no command line
//! parser, nothing of the host but `mcp_host_client::supervisor`). It takes the same
//! arguments as `mcp-host __supervise`, which remains the fallback when it is missing.

use mcp_host_client::supervisor::{SUPERVISE_ARG, main_with};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut argv = std::env::args_os().skip(1).peekable();
    if argv.peek().is_some_and(|a| a == SUPERVISE_ARG) {
        argv.next();
        return main_with(argv);
    }
    #[allow(clippy::print_stderr)] // No logger: its only words are this one line.
    {
        eprintln!("mcp-host-supervise is started by mcp-host, once per stdio server");
    }
    ExitCode::from(2)
}
