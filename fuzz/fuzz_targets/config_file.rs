//! A repository's `.mcp.json` (or any config file) as text, and `${VAR}` expansion over
//! it: parsing reports problems with a position and never panics; expansion never panics
//! and, without a `$`, changes nothing.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = mcp_host_config::parse_config_text(Path::new("/project/.mcp.json"), text);
    let lookup = |name: &str| match name {
        "HOME" => Some("/home/me".to_string()),
        "EMPTY" => Some(String::new()),
        "DOLLAR" => Some("${HOME}".to_string()),
        _ => None,
    };
    if let Ok(expanded) = mcp_host_config::expand(text, &lookup) {
        if !text.contains('$') {
            assert_eq!(expanded, text);
        }
    }
});
