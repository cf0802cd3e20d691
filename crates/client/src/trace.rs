//! Trace context (W3C Trace Context, OpenTelemetry's ids) for the host's own spans: the
//! spans of target [`TARGET`] carry [`SpanIds`] in their extensions (put there by the
//! exporter's layer when one is installed), and a request sent inside such a span tells
//! the server its `traceparent` in `_meta` (SEP-414), so the server's spans join the trace.
//! Without an exporter no span has ids and nothing is sent.

/// The `tracing` target of the spans that are exported.
pub const TARGET: &str = "mcp_host::trace";

/// A span's place in its trace.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SpanIds {
    pub trace_id: u128,
    pub span_id: u64,
}

impl SpanIds {
    /// `traceparent` for a request made inside this span (sampled).
    pub fn traceparent(&self) -> String {
        format!("00-{:032x}-{:016x}-01", self.trace_id, self.span_id)
    }
}

/// The ids of the innermost current span that has them.
pub fn current_ids() -> Option<SpanIds> {
    tracing::Span::current()
        .with_subscriber(|(id, dispatch)| {
            use tracing_subscriber::registry::LookupSpan;
            let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
            let span = registry.span(id)?;
            span.scope()
                .find_map(|s| s.extensions().get::<SpanIds>().copied())
        })
        .flatten()
}

/// The `traceparent` of a request sent now, if a trace is being recorded.
pub fn current_traceparent() -> Option<String> {
    current_ids().map(|ids| ids.traceparent())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn traceparent_is_w3c_version_00_sampled() {
        let ids = SpanIds {
            trace_id: 0x0af7651916cd43dd8448eb211c80319c,
            span_id: 0x00f067aa0ba902b7,
        };
        assert_eq!(
            ids.traceparent(),
            "00-0af7651916cd43dd8448eb211c80319c-00f067aa0ba902b7-01"
        );
        assert_eq!(current_traceparent(), None, "no span, no exporter: nothing");
    }
}
