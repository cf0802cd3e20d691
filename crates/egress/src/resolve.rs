//! How the proxy turns a name into addresses: the system's resolver, with fixed answers
//! for names the user maps (`MCP_HOST_EGRESS_RESOLVE=name=addr,...`, like curl's
//! `--resolve`), which is also how tests point names at loopback test sites without ever
//! touching a real address.

use futures::future::BoxFuture;
use std::collections::BTreeMap;
use std::net::IpAddr;

#[derive(Debug)]
pub struct ResolveError(pub String);

impl std::fmt::Display for ResolveError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Name resolution as the proxy needs it.
pub trait Resolve: Send + Sync + std::fmt::Debug {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<Vec<IpAddr>, ResolveError>>;
}

/// The system resolver with the user's fixed answers in front.
#[derive(Clone, Debug, Default)]
pub struct Resolver {
    fixed: BTreeMap<String, IpAddr>,
}

impl Resolver {
    /// Reads `name=addr,name=addr`; a malformed entry is an error naming it.
    pub fn with_fixed(spec: &str) -> Result<Self, String> {
        let mut fixed = BTreeMap::new();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let parsed = entry
                .split_once('=')
                .and_then(|(name, addr)| Some((name.trim(), addr.trim().parse::<IpAddr>().ok()?)));
            match parsed {
                Some((name, addr)) if !name.is_empty() => {
                    fixed.insert(name.to_ascii_lowercase(), addr);
                }
                _ => return Err(format!("`{entry}` is not name=address")),
            }
        }
        Ok(Self { fixed })
    }
}

impl Resolve for Resolver {
    fn resolve<'a>(&'a self, host: &'a str) -> BoxFuture<'a, Result<Vec<IpAddr>, ResolveError>> {
        Box::pin(async move {
            if let Some(addr) = self.fixed.get(&host.to_ascii_lowercase()) {
                return Ok(vec![*addr]);
            }
            let found = tokio::net::lookup_host((host, 0))
                .await
                .map_err(|e| ResolveError(format!("cannot resolve {host}: {e}")))?;
            Ok(found.map(|a| a.ip()).collect())
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fixed_answers_come_first_and_bad_entries_are_named() {
        let r = Resolver::with_fixed("Site.test=127.0.0.1, other.test=::1").unwrap();
        assert_eq!(
            r.resolve("site.TEST").await.unwrap(),
            vec!["127.0.0.1".parse::<IpAddr>().unwrap()]
        );
        assert!(
            Resolver::with_fixed("site.test")
                .unwrap_err()
                .contains("site.test")
        );
        assert!(Resolver::with_fixed("a=not-an-ip").is_err());
    }
}
