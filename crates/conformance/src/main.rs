//! `mcp-host-conformance [ARGS...] URL`: what the conformance suite runs as "the client".
//! It connects with the same client library the host uses (era probe and fallback included,
//! OAuth for the `auth/*` scenarios), then does what the scenario in
//! `MCP_CONFORMANCE_SCENARIO` expects, and exits 0 on success.

#![allow(clippy::print_stderr)] // A command-line driver: its report to the suite is stderr.

mod headless;

use anyhow::{Context, bail};
use mcp_host_auth::{AuthSettings, Grant, IdTokenSource, IdentityProvider, OAuth};
use mcp_host_client::{ClientFeatures, Endpoint, EraChoice, Session};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

const TIMEOUT: Duration = Duration::from_secs(20);
/// Nothing listens here: the headless authorizer reads the code from the redirect itself.
const REDIRECT_URI: &str = "http://localhost:3000/callback";
/// The client metadata document the suite expects a CIMD client to name (never fetched).
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

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
    let auth = if scenario.starts_with("auth/") {
        Some(oauth(&url, &scenario).await?)
    } else {
        None
    };
    let endpoint = Endpoint::Http {
        url,
        headers: BTreeMap::new(),
        client: mcp_host_client::http_client(Duration::from_secs(5))?.into(),
        auth,
        wire: mcp_host_client::HttpWire::Streamable,
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

/// OAuth as the scenario sets it up: the context (`MCP_CONFORMANCE_CONTEXT`) carries
/// pre-registered client credentials or a signing key where the scenario needs them.
async fn oauth(url: &str, scenario: &str) -> anyhow::Result<OAuth> {
    let context: Value = match std::env::var("MCP_CONFORMANCE_CONTEXT") {
        Ok(text) => serde_json::from_str(&text).context("MCP_CONFORMANCE_CONTEXT is not JSON")?,
        Err(_) => Value::Null,
    };
    let field = |k: &str| context.get(k).and_then(Value::as_str).map(str::to_string);
    let grant = match scenario {
        "auth/client-credentials-jwt" => Grant::PrivateKeyJwt {
            private_key_pem: field("private_key_pem").context("no private_key_pem in context")?,
            algorithm: field("signing_algorithm")
                .as_deref()
                .unwrap_or("ES256")
                .parse()?,
        },
        "auth/client-credentials-basic" => Grant::ClientSecret,
        "auth/cross-app-access-complete-flow" => Grant::IdentityAssertion(IdentityProvider {
            token_endpoint: field("idp_token_endpoint").context("no idp_token_endpoint")?,
            client_id: field("idp_client_id").context("no idp_client_id")?,
            client_secret: None,
            id_token: IdTokenSource::Value(field("idp_id_token").context("no idp_id_token")?),
        }),
        // SEP-1933: the workload's own JWT (the suite's valid one).
        "auth/wif-jwt-bearer" => Grant::WorkloadIdentity(IdTokenSource::Value(
            field("valid_jwt").context("no valid_jwt in context")?,
        )),
        _ => Grant::AuthorizationCode(Arc::new(headless::Authorizer::new()?)),
    };
    let mut settings = AuthSettings::new(REDIRECT_URI, grant);
    settings.client_id = field("client_id");
    settings.client_secret = field("client_secret");
    settings.client_metadata_url = Some(CLIENT_METADATA_URL.into());
    settings.client_name = "mcp-host-conformance".into();
    Ok(OAuth::new(url, settings).await?)
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
        // SEP-2322: every tool asks for input first; two run at once, so neither may carry
        // the other's answers or state.
        "sep-2322-client-request-state" => {
            let (a, b) = tokio::join!(
                call("test_mrtr_echo_state", json!({})),
                call("test_mrtr_unrelated", json!({}))
            );
            a.and(b)?;
            call("test_mrtr_no_state", json!({})).await?;
            call("test_mrtr_no_result_type", json!({})).await
        }
        // SEP-2243: the calls the suite names, with its arguments (rmcp's transport mirrors
        // the annotated ones into `Mcp-Param-*` headers).
        "http-custom-headers" => {
            let context: Value =
                serde_json::from_str(&std::env::var("MCP_CONFORMANCE_CONTEXT").unwrap_or_default())
                    .unwrap_or_default();
            for c in context["toolCalls"].as_array().into_iter().flatten() {
                call(
                    c["name"].as_str().unwrap_or_default(),
                    c["arguments"].clone(),
                )
                .await?;
            }
            Ok(())
        }
        // A tool with invalid header annotations is left out of the list; the rest work.
        "http-invalid-tool-headers" => {
            for t in &tools.items {
                call(&t.name, json!({})).await?;
            }
            Ok(())
        }
        // The tool's schema as listed, sent back: what the host keeps of it, verbatim.
        "json-schema-2020-12-preservation" => {
            let listed = (tools.items.iter())
                .find(|t| t.name == "json_schema_2020_12_tool")
                .context("json_schema_2020_12_tool is not listed")?;
            call("json_schema_echo", json!({"schema": listed.input_schema})).await
        }
        // The auth mocks guard a `test-tool`; calling it is what a step-up challenges.
        s if s.starts_with("auth/") && tools.items.iter().any(|t| t.name == "test-tool") => {
            call("test-tool", json!({})).await
        }
        // initialize and anything else: connecting and listing is the whole job.
        _ => {
            eprintln!("{} tools listed", tools.items.len());
            Ok(())
        }
    }
}
