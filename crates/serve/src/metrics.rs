//! `/metrics` in the Prometheus text format: per MCP server, an HDR histogram of tool-call
//! latency (exported as p50/p90/p99/max quantiles with a count), call and error counts, and
//! connection states across users; active users, running turns, HTTP requests refused.

use hdrhistogram::Histogram;
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

/// Latency is recorded in milliseconds, up to an hour, at 3 significant figures.
const MAX_MS: u64 = 3_600_000;

struct ServerCalls {
    latency: Histogram<u64>,
    calls: u64,
    errors: u64,
}

#[derive(Default)]
pub struct Metrics {
    servers: Mutex<BTreeMap<String, ServerCalls>>,
    turns_started: AtomicU64,
    turns_ended: AtomicU64,
    refused: AtomicU64,
}

/// What the hub knows at scrape time.
pub struct Gauges {
    pub active_users: usize,
    pub running_turns: usize,
    /// (server, state) for every live session's server.
    pub connections: Vec<(String, String)>,
    pub draining: bool,
}

impl Metrics {
    pub fn call(&self, server: &str, took_ms: u64, is_error: bool) {
        let mut servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        let entry = servers
            .entry(server.to_string())
            .or_insert_with(|| ServerCalls {
                // Bounds are constants that `new_with_bounds` accepts (low 1, high > 2, 3 figures).
                latency: Histogram::new_with_bounds(1, MAX_MS, 3)
                    .unwrap_or_else(|_| unreachable_histogram()),
                calls: 0,
                errors: 0,
            });
        entry.latency.saturating_record(took_ms.clamp(1, MAX_MS));
        entry.calls += 1;
        entry.errors += u64::from(is_error);
    }

    pub fn turn_started(&self) {
        self.turns_started.fetch_add(1, Ordering::Relaxed);
    }

    pub fn turn_ended(&self) {
        self.turns_ended.fetch_add(1, Ordering::Relaxed);
    }

    pub fn refused(&self) {
        self.refused.fetch_add(1, Ordering::Relaxed);
    }

    pub fn render(&self, gauges: &Gauges) -> String {
        let mut out = String::new();
        {
            let servers = self.servers.lock().unwrap_or_else(|e| e.into_inner());
            render_calls(&mut out, &servers);
        }
        render_connections(&mut out, &gauges.connections);
        let gauge = |out: &mut String, name: &str, help: &str, v: u64| {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {v}");
        };
        gauge(
            &mut out,
            "mcp_host_active_users",
            "Users with a live session on this replica.",
            gauges.active_users as u64,
        );
        gauge(
            &mut out,
            "mcp_host_running_turns",
            "Turns running on this replica.",
            gauges.running_turns as u64,
        );
        gauge(
            &mut out,
            "mcp_host_draining",
            "1 while this replica drains for shutdown.",
            u64::from(gauges.draining),
        );
        let counter = |out: &mut String, name: &str, v: u64| {
            let _ = writeln!(out, "# TYPE {name} counter\n{name} {v}");
        };
        counter(
            &mut out,
            "mcp_host_turns_started_total",
            self.turns_started.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "mcp_host_turns_ended_total",
            self.turns_ended.load(Ordering::Relaxed),
        );
        counter(
            &mut out,
            "mcp_host_requests_refused_total",
            self.refused.load(Ordering::Relaxed),
        );
        out
    }
}

/// One per-server series: its name, its type, and its value for a server.
type Series = (&'static str, &'static str, fn(&ServerCalls) -> u64);

/// Per server: latency quantiles with their count, the maximum, calls and errors.
fn render_calls(out: &mut String, servers: &BTreeMap<String, ServerCalls>) {
    out.push_str(
        "# HELP mcp_host_tool_call_latency_ms Tool-call latency by MCP server (HDR histogram).\n",
    );
    out.push_str("# TYPE mcp_host_tool_call_latency_ms summary\n");
    for (name, s) in servers {
        let label = escape(name);
        for q in [0.5, 0.9, 0.99] {
            let _ = writeln!(
                out,
                "mcp_host_tool_call_latency_ms{{server=\"{label}\",quantile=\"{q}\"}} {}",
                s.latency.value_at_quantile(q)
            );
        }
        let _ = writeln!(
            out,
            "mcp_host_tool_call_latency_ms{{server=\"{label}\",quantile=\"1\"}} {}",
            s.latency.max()
        );
        let _ = writeln!(
            out,
            "mcp_host_tool_call_latency_ms_count{{server=\"{label}\"}} {}",
            s.calls
        );
    }
    let series: [Series; 3] = [
        ("mcp_host_tool_call_latency_max_ms", "gauge", |s| {
            s.latency.max()
        }),
        ("mcp_host_tool_calls_total", "counter", |s| s.calls),
        ("mcp_host_tool_call_errors_total", "counter", |s| s.errors),
    ];
    for (metric, kind, value) in series {
        let _ = writeln!(out, "# TYPE {metric} {kind}");
        for (name, s) in servers {
            let _ = writeln!(out, "{metric}{{server=\"{}\"}} {}", escape(name), value(s));
        }
    }
}

/// Live connections by server and state, across users.
fn render_connections(out: &mut String, connections: &[(String, String)]) {
    let mut states: BTreeMap<(&str, &str), u64> = BTreeMap::new();
    for (server, state) in connections {
        *states.entry((server, state)).or_default() += 1;
    }
    out.push_str(
        "# HELP mcp_host_server_connections Live per-user connections by server and state.\n",
    );
    out.push_str("# TYPE mcp_host_server_connections gauge\n");
    for ((server, state), n) in states {
        let _ = writeln!(
            out,
            "mcp_host_server_connections{{server=\"{}\",state=\"{}\"}} {n}",
            escape(server),
            escape(state)
        );
    }
}

/// `Histogram::new_with_bounds` only fails for bounds this file never passes.
fn unreachable_histogram() -> Histogram<u64> {
    // `new(3)` auto-resizes and cannot fail for 3 significant figures.
    Histogram::new(3).unwrap_or_else(|_| unreachable!("3 significant figures are always valid"))
}

/// A label value as the text format wants it.
fn escape(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_server_gets_its_own_latency_quantiles() {
        let m = Metrics::default();
        for ms in [10, 20, 30] {
            m.call("fast", ms, false);
        }
        m.call("slow", 900, true);
        let text = m.render(&Gauges {
            active_users: 1,
            running_turns: 0,
            connections: vec![("fast".into(), "ready".into())],
            draining: false,
        });
        assert!(
            text.contains("mcp_host_tool_call_latency_ms{server=\"slow\",quantile=\"0.99\"} 900"),
            "{text}"
        );
        assert!(
            text.contains("mcp_host_tool_call_latency_ms{server=\"fast\",quantile=\"0.5\"} 20"),
            "{text}"
        );
        assert!(
            text.contains("mcp_host_tool_call_errors_total{server=\"slow\"} 1"),
            "{text}"
        );
        assert!(
            text.contains("mcp_host_server_connections{server=\"fast\",state=\"ready\"} 1"),
            "{text}"
        );
    }
}
