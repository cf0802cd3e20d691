//! What OAuth reads from URLs others control: the server URL a resource indicator is made
//! from, and the redirect an authorization server sends the browser back with. Never a
//! panic; a resource indicator is canonical (the same when made again from itself).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_host_auth::oauth::{AuthorizationResponse, canonical_resource};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(resource) = canonical_resource(text) {
        assert_eq!(
            canonical_resource(&resource).ok().as_deref(),
            Some(resource.as_str())
        );
    }
    let _ = AuthorizationResponse::from_redirect(text);
});
