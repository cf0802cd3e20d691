//! `mcp-host serve` in a build without the hosted mode (the default): the command is still
//! parsed, so its help and flags are the same in every build, and refuses with how to get a
//! build that has it.

use crate::cli::{ConfigArgs, ServeArgs};
use std::process::ExitCode;

pub async fn run(_config: &ConfigArgs, _args: ServeArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!(
        "this mcp-host was built without the hosted mode; build one that has it with \
         `cargo build --release -p mcp-host --features hosted`"
    )
}
