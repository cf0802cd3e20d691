//! The model streams' framers (SSE for four providers, newline-delimited JSON for Ollama):
//! the same bytes fed whole and in pieces (cut where the first byte says) must give the same
//! events, and nothing may panic or grow past the caps.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_models::{NdjsonParser, SseParser};

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    let whole_sse = SseParser::default().feed(body);
    let mut pieces = SseParser::default();
    let mut events = Vec::new();
    let mut failed = false;
    for chunk in body.chunks(step) {
        match pieces.feed(chunk) {
            Ok(e) => events.extend(e),
            Err(_) => failed = true,
        }
    }
    if let (Ok(whole), false) = (&whole_sse, failed) {
        assert_eq!(
            whole, &events,
            "SSE events depend on how the bytes were cut"
        );
    }
    let whole_nd = NdjsonParser::default().feed(body);
    let mut nd = NdjsonParser::default();
    let mut lines = Vec::new();
    let mut failed = false;
    for chunk in body.chunks(step) {
        match nd.feed(chunk) {
            Ok(l) => lines.extend(l),
            Err(_) => failed = true,
        }
    }
    if let (Ok(whole), false) = (&whole_nd, failed) {
        assert_eq!(
            whole, &lines,
            "NDJSON lines depend on how the bytes were cut"
        );
    }
    let _ = nd.finish();
});
