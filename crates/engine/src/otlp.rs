//! Exporting the host's spans (target [`TARGET`]: a turn, each model request, each gate
//! decision, each tool call) over OTLP/HTTP with the JSON encoding, when
//! `OTEL_EXPORTER_OTLP_ENDPOINT` (or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set; off
//! otherwise, at no cost. A `tracing` layer gives each span its [`SpanIds`] (its parent's
//! trace, or a new one) and hands each closed span to one exporter thread, which posts
//! batches with its own small runtime, so a slow or absent collector never holds up a turn
//! (a full queue drops spans and counts them). [`OtlpGuard::flush`] sends what is left
//! before the process exits.

use mcp_host_client::trace::SpanIds;
pub use mcp_host_client::trace::TARGET;
use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::sync::mpsc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tracing::Subscriber;
use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// Spans waiting for the exporter; more are dropped (a collector that stopped answering
/// must not grow the host without bound).
const QUEUE: usize = 4096;
/// Spans per POST.
const BATCH: usize = 512;
/// How long finished spans wait for more before they are sent.
const LINGER: Duration = Duration::from_millis(500);
/// How long a POST, and the flush at exit, may take.
const SEND_TIMEOUT: Duration = Duration::from_secs(5);

/// Where and how to export, from the standard OpenTelemetry variables.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OtlpConfig {
    /// The full `/v1/traces` URL.
    pub url: String,
    pub headers: BTreeMap<String, String>,
    pub service: String,
}

impl OtlpConfig {
    /// `None` when no endpoint is set (or it is not http(s)): traces are off.
    pub fn from_env(env: &dyn Fn(&str) -> Option<String>) -> Option<Self> {
        let set = |k: &str| env(k).filter(|v| !v.trim().is_empty());
        let url = match set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") {
            Some(url) => url,
            None => format!(
                "{}/v1/traces",
                set("OTEL_EXPORTER_OTLP_ENDPOINT")?.trim_end_matches('/')
            ),
        };
        if !(url.starts_with("http://") || url.starts_with("https://")) {
            tracing::warn!(%url, "OTLP endpoint is not an http(s) URL; traces are off");
            return None;
        }
        let headers = set("OTEL_EXPORTER_OTLP_HEADERS")
            .map(|h| {
                h.split(',')
                    .filter_map(|kv| kv.split_once('='))
                    .map(|(k, v)| (k.trim().to_string(), v.trim().to_string()))
                    .collect()
            })
            .unwrap_or_default();
        let service = set("OTEL_SERVICE_NAME").unwrap_or_else(|| "mcp-host".into());
        Some(Self {
            url,
            headers,
            service,
        })
    }
}

/// A span as it is recorded.
struct Open {
    ids: SpanIds,
    parent: Option<u64>,
    name: &'static str,
    start: u128,
    attrs: BTreeMap<&'static str, Value>,
}

enum Message {
    Span(Value),
    Flush(mpsc::SyncSender<()>),
}

/// The layer that records and exports spans of [`TARGET`] (give it a filter that passes
/// only those).
pub struct OtlpLayer {
    to_exporter: mpsc::SyncSender<Message>,
}

/// Keeps the exporter thread; [`OtlpGuard::flush`] waits until what was recorded is sent.
pub struct OtlpGuard {
    to_exporter: mpsc::SyncSender<Message>,
}

/// The layer and its guard, with the exporter thread started.
pub fn layer(config: OtlpConfig) -> std::io::Result<(OtlpLayer, OtlpGuard)> {
    let (tx, rx) = mpsc::sync_channel(QUEUE);
    std::thread::Builder::new()
        .name("otlp-export".into())
        .spawn(move || export_loop(&config, &rx))?;
    Ok((
        OtlpLayer {
            to_exporter: tx.clone(),
        },
        OtlpGuard { to_exporter: tx },
    ))
}

impl OtlpGuard {
    /// Sends every span recorded so far, waiting at most a few seconds.
    pub fn flush(&self) {
        let (done, wait) = mpsc::sync_channel(1);
        if self.to_exporter.send(Message::Flush(done)).is_ok() {
            let _ = wait.recv_timeout(SEND_TIMEOUT + Duration::from_secs(1));
        }
    }
}

fn now_nanos() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Collects a span's fields as OTLP attribute values.
struct Fields<'a>(&'a mut BTreeMap<&'static str, Value>);

impl Visit for Fields<'_> {
    fn record_str(&mut self, f: &Field, v: &str) {
        self.0.insert(f.name(), json!({"stringValue": v}));
    }
    fn record_i64(&mut self, f: &Field, v: i64) {
        self.0.insert(f.name(), json!({"intValue": v.to_string()}));
    }
    fn record_u64(&mut self, f: &Field, v: u64) {
        self.0.insert(f.name(), json!({"intValue": v.to_string()}));
    }
    fn record_bool(&mut self, f: &Field, v: bool) {
        self.0.insert(f.name(), json!({"boolValue": v}));
    }
    fn record_f64(&mut self, f: &Field, v: f64) {
        self.0.insert(f.name(), json!({"doubleValue": v}));
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        self.0
            .insert(f.name(), json!({"stringValue": format!("{v:?}")}));
    }
}

impl<S> Layer<S> for OtlpLayer
where
    S: Subscriber + for<'a> LookupSpan<'a>,
{
    fn on_new_span(&self, attrs: &Attributes<'_>, id: &Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(id) else { return };
        let parent = span
            .parent()
            .and_then(|p| p.extensions().get::<SpanIds>().copied());
        let ids = SpanIds {
            trace_id: parent.map_or_else(rand::random::<u128>, |p| p.trace_id),
            span_id: rand::random::<u64>().max(1),
        };
        let mut open = Open {
            ids,
            parent: parent.map(|p| p.span_id),
            name: attrs.metadata().name(),
            start: now_nanos(),
            attrs: BTreeMap::new(),
        };
        attrs.record(&mut Fields(&mut open.attrs));
        let mut ext = span.extensions_mut();
        ext.insert(ids);
        ext.insert(open);
    }

    fn on_record(&self, id: &Id, values: &Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id)
            && let Some(open) = span.extensions_mut().get_mut::<Open>()
        {
            values.record(&mut Fields(&mut open.attrs));
        }
    }

    fn on_close(&self, id: Id, ctx: Context<'_, S>) {
        let Some(span) = ctx.span(&id) else { return };
        let Some(open) = span.extensions_mut().remove::<Open>() else {
            return;
        };
        // A full queue drops the span: tracing must never slow the host down.
        let _ = self.to_exporter.try_send(Message::Span(otlp_span(open)));
    }
}

/// One span in OTLP's JSON encoding (ids as hex, times as decimal strings).
fn otlp_span(open: Open) -> Value {
    let failed = open.attrs.get("is_error") == Some(&json!({"boolValue": true}));
    let attributes: Vec<Value> = (open.attrs.into_iter())
        .map(|(k, v)| json!({"key": k, "value": v}))
        .collect();
    let mut span = json!({
        "traceId": format!("{:032x}", open.ids.trace_id),
        "spanId": format!("{:016x}", open.ids.span_id),
        "name": open.name,
        "kind": if open.name == "tools/call" || open.name == "model.request" { 3 } else { 1 },
        "startTimeUnixNano": open.start.to_string(),
        "endTimeUnixNano": now_nanos().to_string(),
        "attributes": attributes,
        "status": {"code": if failed { 2 } else { 0 }},
    });
    if let Some(parent) = open.parent {
        span["parentSpanId"] = json!(format!("{parent:016x}"));
    }
    span
}

/// The exporter thread: batches spans and posts them once they stop coming for a moment
/// (or a batch is full); a flush posts at once and answers.
fn export_loop(config: &OtlpConfig, from_layer: &mpsc::Receiver<Message>) {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        return;
    };
    mcp_host_client::install_crypto_provider();
    let Ok(http) = reqwest::Client::builder().timeout(SEND_TIMEOUT).build() else {
        return;
    };
    let mut batch = Vec::new();
    let send = |batch: &mut Vec<Value>| {
        if !batch.is_empty() {
            runtime.block_on(post(&http, config, std::mem::take(batch)));
        }
    };
    loop {
        match from_layer.recv_timeout(LINGER) {
            Ok(Message::Span(span)) => {
                batch.push(span);
                if batch.len() >= BATCH {
                    send(&mut batch);
                }
            }
            Ok(Message::Flush(done)) => {
                send(&mut batch);
                let _ = done.send(());
            }
            Err(mpsc::RecvTimeoutError::Timeout) => send(&mut batch),
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                send(&mut batch);
                return;
            }
        }
    }
}

async fn post(http: &reqwest::Client, config: &OtlpConfig, spans: Vec<Value>) {
    let count = spans.len();
    let body = json!({"resourceSpans": [{
        "resource": {"attributes": [
            {"key": "service.name", "value": {"stringValue": config.service}},
            {"key": "service.version", "value": {"stringValue": env!("CARGO_PKG_VERSION")}},
        ]},
        "scopeSpans": [{"scope": {"name": "mcp-host"}, "spans": spans}],
    }]});
    let mut request = http.post(&config.url).json(&body);
    for (k, v) in &config.headers {
        request = request.header(k, v);
    }
    match request.send().await {
        Ok(r) if r.status().is_success() => {}
        Ok(r) => tracing::debug!(status = %r.status(), count, "the OTLP collector refused spans"),
        Err(e) => tracing::debug!(error = %e, count, "could not send spans to the OTLP collector"),
    }
}

/// A span of [`TARGET`] with the fields every exported span of that name may record later.
#[macro_export]
macro_rules! trace_span {
    ($name:literal $(, $($fields:tt)*)?) => {
        tracing::info_span!(target: "mcp_host::trace", $name $(, $($fields)*)?)
    };
}

/// The span of one tool call: what is known when it is sent; the session records the era
/// and [`record_call`] the rest from the call's record.
pub(crate) fn call_span(
    entry: &mcp_host_registry::catalogue::Entry,
    source: &str,
) -> tracing::Span {
    crate::trace_span!(
        "tools/call",
        tool = %entry.name,
        server = %entry.key.server,
        server_tool = %entry.key.tool,
        source,
        era = tracing::field::Empty,
        status = tracing::field::Empty,
        is_error = tracing::field::Empty,
        result_bytes = tracing::field::Empty,
        truncated = tracing::field::Empty,
        duration_ms = tracing::field::Empty,
        input_rounds = tracing::field::Empty,
    )
}

/// Puts what a call's record says of its outcome on its span.
pub(crate) fn record_call(span: &tracing::Span, record: &mcp_host_core::event::CallRecord) {
    span.record("status", tracing::field::debug(record.status));
    span.record("is_error", record.is_error);
    span.record("truncated", record.truncated);
    if let Some(bytes) = record.result_bytes {
        span.record("result_bytes", bytes);
    }
    if let Some(ms) = record.duration_ms {
        span.record("duration_ms", ms);
    }
    if !record.input_rounds.is_empty() {
        span.record("input_rounds", record.input_rounds.len());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_endpoint_comes_from_the_standard_variables() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                pairs
                    .iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        assert_eq!(OtlpConfig::from_env(&env(&[])), None, "off unless set");
        let c = OtlpConfig::from_env(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318/"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "x-key=a, other = b"),
        ]))
        .unwrap();
        assert_eq!(c.url, "http://127.0.0.1:4318/v1/traces");
        assert_eq!(c.headers["x-key"], "a");
        assert_eq!(c.headers["other"], "b");
        assert_eq!(c.service, "mcp-host");
        let c = OtlpConfig::from_env(&env(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://ignored"),
            ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://h/custom"),
            ("OTEL_SERVICE_NAME", "agent"),
        ]))
        .unwrap();
        assert_eq!(
            (c.url.as_str(), c.service.as_str()),
            ("http://h/custom", "agent")
        );
        let bad = env(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "grpc://h:4317")]);
        assert_eq!(OtlpConfig::from_env(&bad), None);
    }
}

#[cfg(test)]
mod layer_tests {
    use super::*;
    use tracing_subscriber::layer::SubscriberExt;

    #[test]
    fn a_span_of_ours_has_ids_and_its_children_share_its_trace() {
        let config = OtlpConfig {
            url: "http://127.0.0.1:9/v1/traces".into(),
            headers: BTreeMap::new(),
            service: "t".into(),
        };
        let (layer, _guard) = super::layer(config).unwrap();
        let only_ours = tracing_subscriber::filter::Targets::new()
            .with_target(TARGET, tracing_subscriber::filter::LevelFilter::INFO);
        let subscriber = tracing_subscriber::registry().with(layer.with_filter(only_ours));
        tracing::subscriber::with_default(subscriber, || {
            assert_eq!(mcp_host_client::trace::current_ids(), None);
            let turn = crate::trace_span!("turn");
            let _in_turn = turn.enter();
            let outer = mcp_host_client::trace::current_ids().expect("the turn has ids");
            let call = crate::trace_span!("tools/call");
            let _in_call = call.enter();
            let inner = mcp_host_client::trace::current_ids().unwrap();
            assert_eq!(inner.trace_id, outer.trace_id);
            assert_ne!(inner.span_id, outer.span_id);
        });
    }
}
