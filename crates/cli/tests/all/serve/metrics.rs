//! `/metrics` keeps an HDR latency histogram per MCP server: making one server slow moves
//! its quantiles and not the other's.

use super::*;
use crate::common::Sandbox;
use serde_json::json;

/// The value of one sample line, e.g. `mcp_host_tool_call_latency_ms{server="a",quantile="0.99"}`.
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines()
        .find_map(|l| l.strip_prefix(series)?.trim().parse().ok())
}

fn quantile(text: &str, server: &str, q: &str) -> f64 {
    sample(
        text,
        &format!("mcp_host_tool_call_latency_ms{{server=\"{server}\",quantile=\"{q}\"}}"),
    )
    .unwrap_or_else(|| panic!("no {server} {q} in\n{text}"))
}

#[test]
fn a_slow_server_moves_its_own_latency_histogram() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(
        &sb,
        json!({"a": fake_entry(&[], false), "b": fake_entry(&[], false)}),
    );
    let setup = Setup::new(&sb, &cat, &model);
    let token = setup.add_user("u", false);
    setup.grant("a", "*");
    setup.grant("b", "*");
    let service = setup.start();
    let api = Api::new(&service, &token);
    api.enable("a");
    api.enable("b");
    let conv = api.conversation();
    let mut events = api.events(&conv, None);
    let turn = |text: &str, events: &mut Events| {
        assert_eq!(api.turn(&conv, text).status, 202);
        events.until("turn_ended");
    };
    turn(
        "call a__slow {\"ms\": 1}\ncall b__slow {\"ms\": 1}",
        &mut events,
    );
    let before = request(&service.addr, "GET", "/metrics", &[], None).body;
    for _ in 0..3 {
        turn("call b__slow {\"ms\": 300}", &mut events);
    }
    let after = request(&service.addr, "GET", "/metrics", &[], None).body;
    assert!(quantile(&before, "b", "0.99") < 300.0, "{before}");
    assert!(quantile(&after, "b", "0.99") >= 300.0, "{after}");
    assert!(quantile(&after, "b", "0.5") >= 300.0, "{after}");
    assert_eq!(
        quantile(&after, "a", "0.99"),
        quantile(&before, "a", "0.99"),
        "a did not move"
    );
    assert_eq!(
        sample(&after, "mcp_host_tool_calls_total{server=\"b\"}"),
        Some(4.0)
    );
    assert_eq!(sample(&after, "mcp_host_active_users"), Some(1.0));
    assert!(
        after.contains("mcp_host_server_connections{server=\"a\",state=\"ready\"} 1"),
        "{after}"
    );
}

#[test]
fn with_a_metrics_token_only_a_scraper_presenting_it_reads_metrics() {
    let sb = Sandbox::new();
    let model = Model::start(0);
    let cat = catalogue(&sb, json!({}));
    let file = sb.write("metrics.token", "scrape-secret\n");
    let mut setup = Setup::new(&sb, &cat, &model);
    setup.extra = vec!["--metrics-token-file".into(), file.display().to_string()];
    let service = setup.start();
    let get = |auth: &[(&str, &str)]| request(&service.addr, "GET", "/metrics", auth, None);
    assert_eq!(get(&[]).status, 401);
    assert_eq!(get(&[("Authorization", "Bearer wrong")]).status, 401);
    let ok = get(&[("Authorization", "Bearer scrape-secret")]);
    assert_eq!(ok.status, 200);
    assert!(ok.body.contains("mcp_host_"), "{}", ok.body);
    // An empty token file is a mistake, not "no token": the service does not start.
    let empty = sb.write("empty.token", "\n");
    setup.extra = vec!["--metrics-token-file".into(), empty.display().to_string()];
    assert!(setup.start_refused().contains("is empty"));
}
