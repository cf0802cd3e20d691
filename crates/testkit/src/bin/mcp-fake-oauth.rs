//! The local authorization server and its protected MCP server (`oauth_server`) as a
//! process, for scripts that drive the real host (scripts/tui-e2e.sh): prints the MCP
//! server's URL on the first line of stdout and serves until it is killed.
//!
//!   mcp-fake-oauth [--require-scope SCOPE] [--dpop]

use mcp_host_testkit::oauth_server::LocalAuthServer;
use std::io::Write;
use std::time::Duration;

fn main() {
    let server = LocalAuthServer::start(&["/mcp"], Duration::ZERO);
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--require-scope" => server.state().required_scope = args.next(),
            "--dpop" => server.state().dpop = true,
            other => {
                let _ = writeln!(
                    std::io::stderr(),
                    "mcp-fake-oauth: unknown argument {other}"
                );
                std::process::exit(2);
            }
        }
    }
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{}", server.url("/mcp"));
    let _ = out.flush();
    loop {
        std::thread::park();
    }
}
