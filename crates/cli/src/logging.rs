//! The `-v`/`-vv` log on stderr. Log fields carry what servers send (a line of stdout
//! garbage, an error message, a stderr line), so the writer itself sanitises: every event
//! passes the one sanitiser and each line is capped, whatever field or crate it came from.
//! No colours: the log is plain text, and a sanitiser cannot tell our escapes from a server's.

use mcp_host_core::sanitize::strip_terminal_escapes;
use mcp_host_engine::otlp::{self, OtlpGuard};
use std::io::Write;
use tracing_subscriber::fmt::MakeWriter;

/// A log line longer than this is cut, with a note of how much was left out.
pub const LOG_LINE_MAX_CHARS: usize = 4096;
/// Bytes of one event kept before sanitising; the rest is only counted.
const EVENT_MAX_BYTES: usize = 64 * 1024;

/// The log on stderr, and the trace exporter when `OTEL_EXPORTER_OTLP_ENDPOINT` asks for
/// one (its guard is flushed before the process exits). Each has its own filter: `-v`
/// does not decide what is traced, nor tracing what is logged.
pub fn init(verbose: u8) -> Option<OtlpGuard> {
    use tracing_subscriber::layer::SubscriberExt;
    use tracing_subscriber::util::SubscriberInitExt;
    use tracing_subscriber::{Layer, filter::Targets};
    let default = match verbose {
        0 => "warn,rmcp=off",
        1 => "info,rmcp=error",
        _ => "debug",
    };
    let filter = tracing_subscriber::EnvFilter::try_from_env("MCP_HOST_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let log = tracing_subscriber::fmt::layer()
        .with_ansi(false)
        .with_writer(SafeStderr)
        .with_filter(filter);
    let config = otlp::OtlpConfig::from_env(&|k| std::env::var(k).ok());
    let (traces, guard) = match config.map(otlp::layer) {
        Some(Ok((layer, guard))) => {
            let only_ours = Targets::new()
                .with_target(otlp::TARGET, tracing_subscriber::filter::LevelFilter::INFO);
            (Some(layer.with_filter(only_ours)), Some(guard))
        }
        Some(Err(e)) => {
            crate::output::errln!("warning: traces are off: cannot start their exporter: {e}");
            (None, None)
        }
        None => (None, None),
    };
    tracing_subscriber::registry().with(log).with(traces).init();
    guard
}

/// Hands the formatter one [`SafeEvent`] per event.
pub struct SafeStderr;

impl<'a> MakeWriter<'a> for SafeStderr {
    type Writer = SafeEvent;

    fn make_writer(&'a self) -> SafeEvent {
        SafeEvent::default()
    }
}

/// Collects one formatted event and writes it, sanitised and capped, when dropped (the
/// formatter drops its writer after each event).
#[derive(Default)]
pub struct SafeEvent {
    buf: Vec<u8>,
    dropped: usize,
}

impl Write for SafeEvent {
    fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
        let room = EVENT_MAX_BYTES.saturating_sub(self.buf.len());
        self.buf.extend_from_slice(&b[..b.len().min(room)]);
        self.dropped += b.len().saturating_sub(room);
        Ok(b.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Drop for SafeEvent {
    fn drop(&mut self) {
        if self.buf.is_empty() {
            return;
        }
        let text = safe_log_text(&self.buf, self.dropped);
        let _ = std::io::stderr().lock().write_all(text.as_bytes());
    }
}

/// The sanitised, capped form of one event's bytes (`dropped` bytes were not kept).
fn safe_log_text(raw: &[u8], dropped: usize) -> String {
    let clean = strip_terminal_escapes(&String::from_utf8_lossy(raw));
    let mut out = String::with_capacity(clean.len().min(2 * LOG_LINE_MAX_CHARS));
    let lines: Vec<&str> = clean.trim_end_matches('\n').split('\n').collect();
    let last = lines.len().saturating_sub(1);
    for (i, line) in lines.into_iter().enumerate() {
        let end = line
            .char_indices()
            .nth(LOG_LINE_MAX_CHARS)
            .map_or(line.len(), |(i, _)| i);
        let mut cut = line.len() - end;
        if i == last {
            // Bytes past the event cap belong to its last kept line.
            cut += dropped;
        }
        out.push_str(&line[..end]);
        if cut > 0 {
            out.push_str(&format!(" … ({cut} more bytes cut)"));
        }
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log_text_is_sanitised_and_each_line_capped() {
        let raw = format!(
            "a\x1b]0;t\x07b\0\u{9b}2Jc\n{}\n",
            "z".repeat(LOG_LINE_MAX_CHARS + 10)
        );
        let text = safe_log_text(raw.as_bytes(), 0);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines[0], "abc");
        assert!(lines[1].ends_with(" … (10 more bytes cut)"), "{}", lines[1]);
        assert!(!text.chars().any(|c| c.is_control() && c != '\n'));
    }

    #[test]
    fn a_huge_event_is_kept_only_up_to_its_cap() {
        let mut w = SafeEvent::default();
        w.write_all(&vec![b'x'; EVENT_MAX_BYTES + 5]).unwrap();
        assert_eq!(w.buf.len(), EVENT_MAX_BYTES);
        assert_eq!(w.dropped, 5);
        w.buf.clear(); // nothing to print from a test
    }
}
