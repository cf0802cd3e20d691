//! The vocabulary of a local server's confinement, shared by the configuration (which writes
//! it), the connection layer (which enforces it), the egress proxy (which matches hosts and
//! addresses against it) and the front ends (which show it): the sandbox level, the host
//! rules of a network allow-list, the address ranges a server may reach although they are
//! private, the record of one proxied connection, and the summary a person reads.

use serde::{Deserialize, Serialize};
use std::net::IpAddr;

/// How much a stdio server is confined.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SandboxLevel {
    /// Least privilege: its roots, its runtime, its private temp folder, the network through
    /// the host's proxy to the hosts it is allowed.
    #[default]
    Strict,
    /// Runs with the user's full rights: a server the user trusts with everything.
    Off,
}

/// Which ports a host rule allows.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum PortRule {
    /// No port written: the web's two, 80 and 443.
    Web,
    /// `host:*`.
    Any,
    One(u16),
}

/// One entry of a network allow-list: `api.github.com`, `*.example.com:443`, `host:*`, or
/// an address literal. `*.example.com` matches every name below `example.com`, not the name
/// itself.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostRule {
    /// Lower case; starts with `*.` for a wildcard.
    pub host: String,
    pub port: PortRule,
}

impl HostRule {
    /// Reads one allow-list entry; the error says what is wrong with it.
    pub fn parse(text: &str) -> Result<Self, String> {
        let text = text.trim();
        let (host, port) = match text.rsplit_once(':') {
            // An IPv6 literal is written in brackets, `[::1]:443`; a bare one has no port.
            Some((h, p)) if !h.contains(':') || h.ends_with(']') => {
                let port = match p {
                    "*" => PortRule::Any,
                    p => PortRule::One(
                        p.parse()
                            .ok()
                            .filter(|p| *p != 0)
                            .ok_or_else(|| format!("`{p}` is not a port (1-65535 or *)"))?,
                    ),
                };
                (h, port)
            }
            _ => (text, PortRule::Web),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let name = host.strip_prefix("*.").unwrap_or(host);
        let valid = !name.is_empty()
            && (name.parse::<IpAddr>().is_ok()
                || name.split('.').all(|label| {
                    !label.is_empty()
                        && label.len() <= 63
                        && label
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
                }));
        if !valid || name.contains('*') {
            return Err(format!(
                "`{text}` is not a host: write `api.example.com`, `*.example.com`, `host:443` or `host:*`"
            ));
        }
        Ok(Self {
            host: host.to_ascii_lowercase(),
            port,
        })
    }

    /// Whether a request for `host:port` (a name or an address literal) is allowed by this rule.
    pub fn matches(&self, host: &str, port: u16) -> bool {
        let port_ok = match self.port {
            PortRule::Web => port == 80 || port == 443,
            PortRule::Any => true,
            PortRule::One(p) => p == port,
        };
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let host_ok = match self.host.strip_prefix("*.") {
            Some(domain) => host
                .strip_suffix(domain)
                .is_some_and(|rest| rest.len() > 1 && rest.ends_with('.')),
            None => host == self.host,
        };
        port_ok && host_ok
    }
}

impl std::fmt::Display for HostRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        match self.port {
            PortRule::Web => write!(f, "{host}"),
            PortRule::Any => write!(f, "{host}:*"),
            PortRule::One(p) => write!(f, "{host}:{p}"),
        }
    }
}

/// An address range a server may reach even though it is private: `10.0.0.0/8`,
/// `127.0.0.1`, `::1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct AddressRange {
    pub base: IpAddr,
    pub prefix: u8,
}

impl AddressRange {
    pub fn parse(text: &str) -> Result<Self, String> {
        let bad =
            || format!("`{text}` is not an address or range (e.g. `127.0.0.1`, `10.0.0.0/8`)");
        let (addr, prefix) = match text.trim().split_once('/') {
            Some((a, p)) => (a, Some(p.parse::<u8>().map_err(|_| bad())?)),
            None => (text.trim(), None),
        };
        let base: IpAddr = addr.parse().map_err(|_| bad())?;
        let max = if base.is_ipv4() { 32 } else { 128 };
        let prefix = prefix.unwrap_or(max);
        if prefix > max {
            return Err(bad());
        }
        Ok(Self { base, prefix })
    }

    pub fn contains(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match (self.base, ip) {
            (IpAddr::V4(b), IpAddr::V4(a)) => {
                let mask = u32::MAX
                    .checked_shl(32 - u32::from(self.prefix))
                    .unwrap_or(0);
                u32::from(b) & mask == u32::from(a) & mask
            }
            (IpAddr::V6(b), IpAddr::V6(a)) => {
                let mask = u128::MAX
                    .checked_shl(128 - u32::from(self.prefix))
                    .unwrap_or(0);
                u128::from(b) & mask == u128::from(a) & mask
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for AddressRange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let max = if self.base.is_ipv4() { 32 } else { 128 };
        if self.prefix == max {
            write!(f, "{}", self.base)
        } else {
            write!(f, "{}/{}", self.base, self.prefix)
        }
    }
}

/// An IPv4 address written as IPv6 (`::ffff:127.0.0.1`) is the IPv4 address.
fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// Whether an address is outside the public internet: loopback, private, link-local,
/// shared (CGNAT), unique-local, unspecified, multicast or broadcast, or reserved. (The
/// documentation ranges are not: they reach no one's own network, and some sites serve
/// package mirrors from them.) A proxy
/// that connects to one of these for a sandboxed server is how a server reaches into the
/// user's network (SSRF), so they are refused unless allowed by range.
pub fn is_private(ip: IpAddr) -> bool {
    match canonical(ip) {
        IpAddr::V4(v4) => {
            let [a, b, ..] = v4.octets();
            v4.is_loopback()
                || v4.is_private()
                || v4.is_link_local()
                || v4.is_unspecified()
                || v4.is_multicast()
                || v4.is_broadcast()
                || a == 0
                || (a == 100 && (64..128).contains(&b))
                || a >= 240
        }
        IpAddr::V6(v6) => {
            let first = v6.segments()[0];
            v6.is_loopback()
                || v6.is_unspecified()
                || v6.is_multicast()
                || (first & 0xfe00) == 0xfc00
                || (first & 0xffc0) == 0xfe80
                // NAT64 and 6to4 embed an IPv4 address that could be private.
                || first == 0x0064
                || first == 0x2002
        }
    }
}

/// What the egress proxy did with one connection a sandboxed server asked for; one line of
/// the audit log each, allowed or refused.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct EgressRecord {
    pub server: String,
    /// As the server asked for it: a name or an address literal.
    pub host: String,
    pub port: u16,
    /// `connect` (HTTP CONNECT, a tunnel) or the method of a plain HTTP request.
    pub method: String,
    pub allowed: bool,
    /// Why it was refused, or for an allowed one the address it reached.
    pub detail: String,
    pub bytes_up: u64,
    pub bytes_down: u64,
}

/// What a person reads about a server's confinement (`servers`, `/mcp`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ConfinementView {
    /// `strict`, `off`, or `strict (degraded: ...)`.
    pub level: String,
    pub read: Vec<String>,
    pub write: Vec<String>,
    /// Hosts it may reach through the proxy.
    pub reach: Vec<String>,
    /// The kernel mechanisms in force: `landlock v7`, `seccomp`, `rlimits`, ...
    pub mechanisms: Vec<String>,
    /// What it was refused, with how many times: `denied /etc/shadow ×2`, `connect evil.test:443`.
    pub denials: Vec<String>,
    /// What was named for it but not granted, and how to grant it.
    pub notes: Vec<String>,
}

impl ConfinementView {
    /// The level as a table cell: `strict`, `strict*` (degraded), `off`.
    pub fn short(&self) -> &str {
        match self.level.as_str() {
            "strict" | "off" => &self.level,
            _ => "strict*",
        }
    }

    /// The account as a person reads it, one line each: the level and mechanisms, what it
    /// may read, write and reach, what it was denied, and what was not granted.
    pub fn lines(&self) -> Vec<String> {
        let list = |items: &[String], none: &str| {
            if items.is_empty() {
                none.to_string()
            } else {
                items.join(", ")
            }
        };
        let mut out = vec![format!(
            "sandbox {} ({})",
            self.level,
            self.mechanisms.join(", ")
        )];
        if self.level != "off" {
            out.push(format!(
                "reads  {}",
                list(&self.read, "only the system and its runtime")
            ));
            out.push(format!("writes {}", list(&self.write, "nothing")));
            out.push(format!("reaches {}", list(&self.reach, "no host")));
        }
        if !self.denials.is_empty() {
            // Each denial names its own kind ("denied /path", "connect host:port").
            out.push(format!("blocked: {}", self.denials.join(", ")));
            out.extend(self.widen_hint());
        }
        out.extend(self.notes.iter().cloned());
        out
    }
}

impl ConfinementView {
    /// The one edit that would allow the first denied path and host, as `sandbox` JSON.
    fn widen_hint(&self) -> Option<String> {
        let bare = |d: &str| d.split(" ×").next().unwrap_or(d).to_string();
        let path = (self.denials.iter()).find_map(|d| d.strip_prefix("denied ").map(bare));
        let host = (self.denials.iter()).find_map(|d| d.strip_prefix("connect ").map(bare));
        let quote = |s: &str| serde_json::Value::String(s.to_string()).to_string();
        let parts: Vec<String> = [
            path.map(|p| format!("\"filesystem\": {{\"read\": [{}]}}", quote(&p))),
            host.map(|h| format!("\"network\": {{\"allow\": [{}]}}", quote(&h))),
        ]
        .into_iter()
        .flatten()
        .collect();
        (!parts.is_empty()).then(|| {
            format!(
                "to allow it, in your config: \"sandbox\": {{{}}} (or \"write\" for a path it must change)",
                parts.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn denials_come_with_the_edit_that_allows_them() {
        let view = ConfinementView {
            level: "strict".into(),
            denials: vec![
                "connect api.example.com:443 ×3".into(),
                "denied /home/u/.config/x".into(),
            ],
            ..ConfinementView::default()
        };
        let lines = view.lines();
        assert!(
            lines.contains(
                &"blocked: connect api.example.com:443 ×3, denied /home/u/.config/x".into()
            ),
            "{lines:?}"
        );
        let hint = lines.iter().find(|l| l.starts_with("to allow it")).unwrap();
        assert!(
            hint.contains(r#""filesystem": {"read": ["/home/u/.config/x"]}"#),
            "{hint}"
        );
        assert!(
            hint.contains(r#""network": {"allow": ["api.example.com:443"]}"#),
            "{hint}"
        );
        let quiet = ConfinementView {
            level: "strict".into(),
            ..ConfinementView::default()
        };
        assert!(!quiet.lines().iter().any(|l| l.starts_with("to allow it")));
    }

    #[test]
    fn host_rules_match_names_wildcards_and_ports() {
        let r = |s: &str| HostRule::parse(s).unwrap();
        assert!(r("api.github.com").matches("API.github.com", 443));
        assert!(r("api.github.com").matches("api.github.com", 80));
        assert!(!r("api.github.com").matches("api.github.com", 22));
        assert!(!r("api.github.com").matches("evilapi.github.com", 443));
        assert!(r("*.example.com:443").matches("a.b.example.com", 443));
        assert!(!r("*.example.com:443").matches("example.com", 443));
        assert!(!r("*.example.com:443").matches("badexample.com", 443));
        assert!(!r("*.example.com:443").matches("a.example.com", 8443));
        assert!(r("site.test:*").matches("site.test", 1234));
        assert!(r("[::1]:8080").matches("::1", 8080));
        assert_eq!(r("[::1]:8080").to_string(), "[::1]:8080");
        for bad in ["", "a..b", "*", "a:0", "a:x", "ev*l.com", "*.*.com", "a b"] {
            assert!(HostRule::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn private_addresses_and_ranges() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "100.64.0.1",
            "0.0.0.0",
            "::1",
            "fe80::1",
            "fd00::1",
            "::ffff:127.0.0.1",
        ] {
            assert!(is_private(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "2606:4700::1111",
            "1.1.1.1",
            "203.0.113.80",
        ] {
            assert!(!is_private(ip.parse().unwrap()), "{ip}");
        }
        let lo = AddressRange::parse("127.0.0.0/8").unwrap();
        assert!(lo.contains("127.9.9.9".parse().unwrap()));
        assert!(lo.contains("::ffff:127.0.0.1".parse().unwrap()));
        assert!(!lo.contains("10.0.0.1".parse().unwrap()));
        assert!(
            AddressRange::parse("0.0.0.0/0")
                .unwrap()
                .contains("8.8.8.8".parse().unwrap())
        );
        assert!(AddressRange::parse("10.0.0.0/33").is_err());
        assert_eq!(AddressRange::parse("::1").unwrap().to_string(), "::1");
    }
}
