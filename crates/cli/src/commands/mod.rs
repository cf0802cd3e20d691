//! The model-free commands: `servers`, `tools`, `call`. Each one loads the config, starts only
//! the servers it needs, does its work (abandoned cleanly on SIGINT/SIGTERM), and stops every
//! server it started before returning.

pub(crate) mod auth;
mod call;
mod doctor;
mod mcp;
mod policy;
mod run;
#[cfg(feature = "hosted")]
mod serve;
#[cfg(not(feature = "hosted"))]
#[path = "serve_absent.rs"]
mod serve;
mod servers;
pub(crate) mod tools;

pub(crate) use servers::approval_text;

use crate::cli::{Cli, Command};
use crate::host::Host;
use mcp_host_engine::host::Connected;
use std::process::ExitCode;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    // The service handles its own signals: it drains for longer than a command may take.
    match cli.command {
        Some(Command::Serve(args)) => return serve::run(&cli.config, *args).await,
        // Made from the command line's own definitions; no config is read.
        Some(Command::Completions { shell }) => {
            let mut command = <Cli as clap::CommandFactory>::command();
            let mut out = Vec::new();
            clap_complete::generate(shell, &mut command, "mcp-host", &mut out);
            crate::output::write_raw(&out);
            return Ok(ExitCode::SUCCESS);
        }
        Some(Command::Man) => {
            let mut out = Vec::new();
            clap_mangen::Man::new(<Cli as clap::CommandFactory>::command()).render(&mut out)?;
            crate::output::write_raw(&out);
            return Ok(ExitCode::SUCCESS);
        }
        _ => {}
    }
    let mut host = Host::load(&cli.config)?;
    host.progress = cli.verbose == 0 && !host.env.contains_key("MCP_HOST_LOG");
    if makes_calls(cli.command.as_ref()) {
        host.refuse_if_unsound()?;
    }
    let code = match cli.command {
        None => crate::chat::run(&host, crate::cli::ChatArgs::default()).await,
        Some(Command::Chat(args)) => crate::chat::run(&host, args).await,
        Some(Command::Servers(args)) => servers::run(&host, args).await,
        Some(Command::Tools(args)) => tools::run(&host, args).await,
        Some(Command::Call(args)) => call::run(&host, args).await,
        Some(Command::Policy(command)) => policy::run(&host, command).await,
        Some(Command::Run(args)) => run::run(&host, args).await,
        Some(Command::Auth(command)) => auth::run(&host, command).await,
        Some(Command::Mcp(command)) => mcp::run(&host, command),
        Some(Command::Doctor(args)) => doctor::run(&host, args).await,
        Some(Command::Logs {
            server,
            lines,
            path,
        }) => logs(&host, &server, lines, path),
        // Dispatched above, before the command host and its signal handling exist.
        Some(Command::Serve(_) | Command::Completions { .. } | Command::Man) => {
            anyhow::bail!("this command runs without the command host")
        }
    }?;
    Ok(host.exit_status(code))
}

/// Whether a command could make a tool call, or reports the decision on one: such a command
/// must not run on a configuration with a fatal problem. (Exhaustive, so that a new command
/// has to be decided here.)
fn makes_calls(command: Option<&Command>) -> bool {
    use crate::cli::PolicyCommand;
    match command {
        None | Some(Command::Chat(_) | Command::Call(_) | Command::Run(_)) => true,
        Some(Command::Policy(p)) => match p {
            PolicyCommand::Explain { .. } | PolicyCommand::Test { .. } => true,
            PolicyCommand::Remember { .. } | PolicyCommand::Forget { .. } => false,
        },
        // These show what they could read (or change stored answers or files) and exit
        // non-zero; doctor makes its one harmless call only on a sound configuration.
        Some(
            Command::Servers(_)
            | Command::Tools(_)
            | Command::Auth(_)
            | Command::Mcp(_)
            | Command::Doctor(_)
            | Command::Logs { .. }
            | Command::Completions { .. }
            | Command::Man,
        ) => false,
        // Refuses to start on an unsound catalogue itself.
        Some(Command::Serve(_)) => true,
    }
}

/// `mcp-host logs SERVER`: the last lines of the server's stderr log (the rotated file's
/// first when the current one is short), sanitised like every other output.
fn logs(host: &Host, server: &str, lines: usize, path: bool) -> anyhow::Result<ExitCode> {
    let file = mcp_host_client::stdio::log_file(&host.logs_dir(), server);
    if path {
        crate::output::outln!("{}", file.display());
        return Ok(ExitCode::SUCCESS);
    }
    let read = |p: &std::path::Path| std::fs::read(p).ok();
    let Some(current) = read(&file) else {
        crate::output::errln!(
            "error: no log for `{}` in {} yet: it is written while the server runs (a stdio server started by this host)",
            mcp_host_config::visible(server),
            host.logs_dir().display()
        );
        return Ok(ExitCode::FAILURE);
    };
    let mut text = read(&file.with_extension("log.1")).unwrap_or_default();
    text.extend_from_slice(&current);
    let text = String::from_utf8_lossy(&text);
    let all: Vec<&str> = text.lines().collect();
    for line in &all[all.len().saturating_sub(lines)..] {
        crate::output::outln!("{line}");
    }
    Ok(ExitCode::SUCCESS)
}

/// Waits for the started servers to settle (ready, failed, needs a sign-in…) or `limit`.
/// On a terminal a line on stderr says which are ready and which are still starting,
/// redrawn as each settles, and is cleared before the command prints its answer.
async fn settle(host: &Host, m: &mcp_host_engine::host::Servers, limit: Duration) -> bool {
    use futures::StreamExt;
    use std::io::IsTerminal;
    if !host.progress || !std::io::stderr().is_terminal() {
        return m.wait_settled(limit).await;
    }
    let mut waiting: Vec<String> = m.ids().map(ToString::to_string).collect();
    let total = waiting.len();
    let mut settled = futures::stream::FuturesUnordered::new();
    for id in m.ids() {
        if let Some(mut rx) = m.watch(id) {
            settled.push(async move {
                let _ = rx.wait_for(|s| s.state.is_settled()).await;
                id.to_string()
            });
        }
    }
    let deadline = tokio::time::sleep(limit);
    tokio::pin!(deadline);
    let mut all = true;
    while !waiting.is_empty() {
        crate::output::status_line(&format!(
            "starting servers: {} of {total} settled; waiting for {}",
            total - waiting.len(),
            waiting.join(", ")
        ));
        tokio::select! {
            Some(id) = settled.next() => waiting.retain(|w| *w != id),
            () = &mut deadline => {
                all = false;
                break;
            }
            else => break,
        }
    }
    crate::output::clear_status_line();
    all
}

/// How long in-flight work gets to wind down (tell servers it was cancelled) after a signal;
/// shorter than `host::EXIT_GRACE`, after which the process exits whatever it is doing.
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// Runs `work` against the started servers, then always shuts them down. On SIGINT or
/// SIGTERM the work's cancellation token fires (in-flight requests send their cancellation),
/// the work gets a moment to return, every server is stopped in parallel, and the exit
/// status is 130.
async fn with_manager<F>(host: &Host, connected: Connected, work: F) -> anyhow::Result<ExitCode>
where
    F: AsyncFnOnce(&Connected, &CancellationToken) -> anyhow::Result<ExitCode>,
{
    let cancel = CancellationToken::new();
    let result = {
        let work = work(&connected, &cancel);
        tokio::pin!(work);
        tokio::select! {
            r = &mut work => r,
            () = host.interrupted.cancelled() => {
                crate::output::errln!("interrupted: cancelling and stopping servers");
                cancel.cancel();
                let _ = tokio::time::timeout(CANCEL_GRACE, work).await;
                Ok(ExitCode::from(130))
            }
        }
    };
    connected.servers.shutdown().await;
    result
}
