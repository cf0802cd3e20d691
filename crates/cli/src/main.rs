//! The `mcp-host` binary: a thin front end over the engine crates. It also doubles as the
//! per-server supervisor (`mcp-host __supervise ...`) and its zygote, dispatched before any
//! runtime starts, for when the small `mcp-host-supervise` beside it is missing
//! (`host::supervisor_program`).
// Every line for a terminal goes through `output` (sanitised); a raw print is a lint error.
#![deny(clippy::print_stdout, clippy::print_stderr)]

mod argv;
mod catalogue;
mod chat;
mod cli;
mod commands;
mod host;
mod logging;
mod login;
mod output;

use clap::Parser;
use std::process::ExitCode;

fn main() -> ExitCode {
    if let Some(code) = mcp_host_client::supervisor::dispatch(std::env::args_os().skip(1)) {
        return ExitCode::from(code);
    }
    let cli = cli::Cli::parse_from(argv::normalise(std::env::args_os().collect()));
    let traces = logging::init(cli.verbose);
    // One person's commands run on one thread: a turn's model request, tool call, audit line
    // and store commit hand each other the work in turn, and on a thread pool every hand-over
    // was a wake-up of another thread (some 30 futex calls and 10 epoll waits per call). The
    // service serves many people at once and keeps the pool.
    let serves = matches!(cli.command, Some(cli::Command::Serve(_)));
    let mut builder = if serves {
        tokio::runtime::Builder::new_multi_thread()
    } else {
        tokio::runtime::Builder::new_current_thread()
    };
    let runtime = match builder.enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            output::errln!("error: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    // The command runs as a task, not as `block_on`'s own future: a task woken by another
    // task (a server's answer read by its connection's task) is run next in the same tick,
    // while the `block_on` future, once woken, is polled only after a look at the driver
    // (one more `epoll_wait` per call).
    let ran = runtime.block_on(async {
        match tokio::spawn(commands::run(cli)).await {
            Ok(ran) => ran,
            Err(e) => match e.try_into_panic() {
                Ok(panic) => std::panic::resume_unwind(panic),
                Err(e) => Err(anyhow::anyhow!("the command was cancelled: {e}")),
            },
        }
    });
    if let Some(traces) = &traces {
        traces.flush();
    }
    match ran {
        Ok(code) => code,
        Err(e) => {
            // An error's chain can quote a server or a config file: sanitised like all output.
            output::errln!("error: {e:#}");
            ExitCode::FAILURE
        }
    }
}
