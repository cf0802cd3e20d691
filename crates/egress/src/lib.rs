//! The egress proxy: the only way a sandboxed server reaches the network. One proxy per
//! server, on a loopback port that server's Landlock rules let it connect to and nothing
//! else. It speaks HTTP CONNECT (a tunnel, for TLS) and absolute-form HTTP; it allows only
//! the hosts on the server's allow-list, resolves names itself and refuses private,
//! loopback and link-local addresses unless their range is allowed (no SSRF into the
//! user's network), checks that a tunnel's TLS ClientHello names the host it was allowed,
//! and reports every connection, allowed or refused, with its bytes.

mod proxy;
mod resolve;
pub mod sni;

pub use proxy::{Proxy, Report, Rules};
pub use resolve::{Resolve, ResolveError, Resolver};
