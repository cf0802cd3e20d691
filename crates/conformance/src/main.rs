//! `mcp-host-conformance [ARGS...] URL`: what the conformance suite runs as "the client".
//! It connects with the same client library the host uses (era probe and fallback included),
//! then does what the scenario in `MCP_CONFORMANCE_SCENARIO` expects, and exits 0 on success.

use anyhow::{Context, bail};
use mcp_host_client::{ClientFeatures, Endpoint, EraChoice, Session};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const TIMEOUT: Duration = Duration::from_secs(20);

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(std::env::var("MCP_HOST_LOG").unwrap_or_else(|_| "warn,rmcp=error".into()))
        .with_writer(std::io::stderr)
        .init();
    let url = std::env::args()
        .next_back()
        .context("usage: mcp-host-conformance URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    let endpoint = Endpoint::Http {
        url,
        headers: BTreeMap::new(),
        client: mcp_host_client::http_client(Duration::from_secs(5))?,
    };
    // Nobody sits at this client: forms are answered with their defaults.
    let features = ClientFeatures {
        elicitation_defaults: true,
        ask_person: None,
    };
    let session = Session::connect(&endpoint, EraChoice::Auto, TIMEOUT, features).await?;
    eprintln!("connected: era {}", session.era().version);
    let result = run_scenario(&session, &scenario).await;
    session.shutdown().await;
    result
}

async fn run_scenario(session: &Session, scenario: &str) -> anyhow::Result<()> {
    let tools = session.list_tools(TIMEOUT).await?;
    let call = |name: &str, args: Value| {
        let name = name.to_string();
        async move {
            let args: Map<String, Value> = args.as_object().cloned().unwrap_or_default();
            let out = session
                .call_tool(&name, Some(args), TIMEOUT, &CancellationToken::new(), None)
                .await?;
            if out.is_error {
                bail!("tool {name} reported an error: {:?}", out.content);
            }
            eprintln!("{name}: {:?}", out.content);
            Ok(())
        }
    };
    match scenario {
        "tools_call" => call("add_numbers", json!({"a": 5, "b": 3})).await,
        "sse-retry" => call("test_reconnection", json!({})).await,
        "elicitation-sep1034-client-defaults" => {
            call("test_client_elicitation_defaults", json!({})).await
        }
        // initialize and anything else: connecting and listing is the whole job.
        _ => {
            eprintln!("{} tools listed", tools.items.len());
            Ok(())
        }
    }
}
