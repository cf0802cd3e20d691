//! The model streams' framers (SSE for four providers, newline-delimited JSON for Ollama):
//! the same bytes fed whole and in pieces (cut where the first byte says) must give the same
//! events, and nothing may panic or grow past the caps.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_models::{NdjsonParser, SseParser};

/// The items `feed` gives for `body` fed whole, and fed in `step`-byte pieces, must be the
/// same unless a piece was refused (over the cap).
fn same_however_cut<P: Default>(
    body: &[u8],
    step: usize,
    feed: impl Fn(&mut P, &[u8]) -> Result<Vec<String>, String>,
) {
    let whole = feed(&mut P::default(), body);
    let mut parser = P::default();
    let mut pieces = Vec::new();
    for chunk in body.chunks(step) {
        match feed(&mut parser, chunk) {
            Ok(items) => pieces.extend(items),
            Err(_) => return,
        }
    }
    if let Ok(whole) = whole {
        assert_eq!(
            whole, pieces,
            "the output depends on how the bytes were cut"
        );
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&step, body)) = data.split_first() else {
        return;
    };
    let step = usize::from(step).max(1);
    same_however_cut(body, step, SseParser::feed);
    same_however_cut(body, step, NdjsonParser::feed);
    let mut nd = NdjsonParser::default();
    let _ = nd.feed(body);
    let _ = nd.finish();
});
