//! The model-free commands: `servers`, `tools`, `call`. Each one loads the config, starts only
//! the servers it needs, does its work (abandoned cleanly on SIGINT/SIGTERM), and stops every
//! server it started before returning.

mod call;
mod servers;
mod tools;

use crate::cli::{Cli, Command};
use crate::host::{Host, interrupted};
use mcp_host_client::Manager;
use std::process::ExitCode;

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let host = Host::load(&cli.config)?;
    match cli.command {
        Command::Servers(args) => servers::run(&host, args).await,
        Command::Tools(args) => tools::run(&host, args).await,
        Command::Call(args) => call::run(&host, args).await,
    }
}

/// Runs `work` against a started manager, then always shuts the manager down. A signal
/// abandons the work (in-flight requests are cancelled by the shutdown) and exits 130.
async fn with_manager<F>(manager: Manager, work: F) -> anyhow::Result<ExitCode>
where
    F: AsyncFnOnce(&Manager) -> anyhow::Result<ExitCode>,
{
    let result = tokio::select! {
        r = work(&manager) => r,
        () = interrupted() => {
            eprintln!("interrupted: stopping servers");
            Ok(ExitCode::from(130))
        }
    };
    manager.shutdown().await;
    result
}
