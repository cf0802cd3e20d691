//! A fresh PostgreSQL database per test, on the server `MCP_HOST_TEST_POSTGRES_URL` names
//! (`scripts/test.sh` starts a private one with `scripts/postgres.sh` and exports its URL).
//! Without that variable the PostgreSQL tests are skipped, except in CI, where they must run.

use std::hash::{BuildHasher, Hasher};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};

/// The variable naming the test server: `postgres://USER@HOST:PORT/DB`, a role that may
/// create databases.
pub const URL_VAR: &str = "MCP_HOST_TEST_POSTGRES_URL";

/// Creates the database `<prefix>_<random hex>` on the test server and returns its URL, or
/// `None` when no test server is configured. Panics when the server refuses, and when `CI`
/// is set without a server: there, PostgreSQL tests are never skipped silently.
pub fn fresh_database(prefix: &str) -> Option<String> {
    let Some(base) = std::env::var(URL_VAR).ok().filter(|u| !u.is_empty()) else {
        assert!(
            !in_ci(),
            "{URL_VAR} is not set, but CI is: the PostgreSQL tests must run in CI. Start a \
             server with `scripts/postgres.sh start DIR` and export the URL it prints as \
             {URL_VAR} (scripts/test.sh does)"
        );
        return None;
    };
    assert!(
        !prefix.is_empty()
            && prefix
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_'),
        "a database prefix is lowercase letters, digits and `_`: {prefix:?}"
    );
    let name = format!("{prefix}_{:016x}", random_u64());
    let out = Command::new("psql")
        .arg(&base)
        .args(["-X", "-q", "-v", "ON_ERROR_STOP=1", "-c"])
        .arg(format!("CREATE DATABASE {name}"))
        .output()
        .unwrap_or_else(|e| panic!("cannot run psql (for {URL_VAR}): {e}"));
    assert!(
        out.status.success(),
        "psql could not create the test database {name} on {URL_VAR}: {}",
        String::from_utf8_lossy(&out.stderr).trim()
    );
    let mut url =
        url::Url::parse(&base).unwrap_or_else(|e| panic!("{URL_VAR} is not a URL ({e}): {base}"));
    url.set_path(&format!("/{name}"));
    Some(url.to_string())
}

/// Whether we run in CI: `CI` set to anything but empty, `0` or `false`.
fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "0" | "false"))
}

/// 64 bits that differ between calls and between test processes (std's hasher keys are
/// random per process; the counter and clock separate calls within one).
fn random_u64() -> u64 {
    static CALLS: AtomicU64 = AtomicU64::new(0);
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(CALLS.fetch_add(1, Ordering::Relaxed));
    h.write_u32(std::process::id());
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default()
        .as_nanos();
    h.write_u128(nanos);
    h.finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_differ_between_calls() {
        assert_ne!(random_u64(), random_u64());
    }
}
