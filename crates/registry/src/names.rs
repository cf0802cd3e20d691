//! Model-visible tool names: `server__tool`, sanitised to `[A-Za-z0-9_-]` and at most 64
//! characters, as the model APIs require. Names are allocated from a sorted set of
//! (server id, tool) pairs and resolved by table lookup; nothing ever splits a name to find
//! its server. A name that would be too long, or that collides with another after
//! sanitising, gets a short hash of its exact (server, tool) pair instead, so it is stable
//! across sessions and never depends on which other server happened to start first.

use mcp_host_core::ServerId;
use sha2::{Digest, Sha256};
use std::collections::{BTreeMap, HashMap};

pub const MAX_NAME_LEN: usize = 64;
const SEPARATOR: &str = "__";

/// A tool's identity in the host: the server it lives on and the server's own name for it.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ToolKey {
    pub server: ServerId,
    pub tool: String,
}

/// Replaces every character outside `[A-Za-z0-9_-]` with `_`.
pub fn sanitize(s: &str) -> String {
    let out: String = s
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    if out.is_empty() { "_".into() } else { out }
}

fn hash_hex(key: &ToolKey, len: usize) -> String {
    let mut h = Sha256::new();
    h.update(key.server.as_str().as_bytes());
    h.update([0]);
    h.update(key.tool.as_bytes());
    let mut text = mcp_host_core::hex::lower(&h.finalize());
    text.truncate(len);
    text
}

/// `base` cut to leave room for `_<hash>`; `base` is ASCII after sanitising.
fn hashed(base: &str, key: &ToolKey, hash_len: usize) -> String {
    let keep = MAX_NAME_LEN - hash_len - 1;
    format!(
        "{}_{}",
        &base[..base.len().min(keep)],
        hash_hex(key, hash_len)
    )
}

/// Whether a tool of `server` could have been given the model-visible `name`, whatever the
/// other servers' tools are: true for every server whose tools' names could be `name`, so a
/// command that starts only these servers resolves `name` to the same tool as with all of
/// them started (a property test holds this). It decides only which servers to start; the
/// name itself is still resolved through the table.
pub fn may_own(server: &str, name: &str) -> bool {
    let prefix = format!("{}{SEPARATOR}", sanitize(server));
    let common = prefix
        .bytes()
        .zip(name.bytes())
        .take_while(|(a, b)| a == b)
        .count();
    // A plain name starts with the whole prefix, and so does a hashed one that was not cut
    // (`plain_hash`). A cut one is exactly the longest a name may be, and keeps at least
    // the part of the prefix that fits before the longest hash (`_` and 40 hex digits).
    let uncut_part = MAX_NAME_LEN - 41;
    common == prefix.len() || (name.len() == MAX_NAME_LEN && common >= prefix.len().min(uncut_part))
}

/// The two-way map between model-visible names and tools.
#[derive(Clone, Debug, Default)]
pub struct NameTable {
    by_name: HashMap<String, ToolKey>,
    by_key: HashMap<ToolKey, String>,
}

impl NameTable {
    /// Allocates a name for every key. The result depends only on the set of keys.
    pub fn allocate(keys: impl IntoIterator<Item = ToolKey>) -> Self {
        let mut by_plain: BTreeMap<String, Vec<ToolKey>> = BTreeMap::new();
        for key in keys {
            let plain = format!(
                "{}{SEPARATOR}{}",
                sanitize(key.server.as_str()),
                sanitize(&key.tool)
            );
            by_plain.entry(plain).or_default().push(key);
        }
        let mut table = Self::default();
        let mut deferred = Vec::new();
        for (plain, mut keys) in by_plain {
            keys.sort();
            keys.dedup();
            if keys.len() == 1 && plain.len() <= MAX_NAME_LEN {
                table.insert(plain, keys.remove(0));
            } else {
                deferred.extend(keys.into_iter().map(|k| (plain.clone(), k)));
            }
        }
        for (plain, key) in deferred {
            // 8 hex digits make a clash unlikely; lengthen until the name is free.
            let name = (8..=32)
                .map(|n| hashed(&plain, &key, n))
                .find(|n| !table.by_name.contains_key(n))
                .unwrap_or_else(|| hashed(&plain, &key, 40));
            table.insert(name, key);
        }
        table
    }

    fn insert(&mut self, name: String, key: ToolKey) {
        self.by_key.insert(key.clone(), name.clone());
        self.by_name.insert(name, key);
    }

    pub fn resolve(&self, name: &str) -> Option<&ToolKey> {
        self.by_name.get(name)
    }

    pub fn name_of(&self, key: &ToolKey) -> Option<&str> {
        self.by_key.get(key).map(String::as_str)
    }

    pub fn len(&self) -> usize {
        self.by_name.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_name.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(server: &str, tool: &str) -> ToolKey {
        ToolKey {
            server: ServerId::new(server),
            tool: tool.into(),
        }
    }

    fn valid(name: &str) -> bool {
        name.len() <= MAX_NAME_LEN
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
    }

    #[test]
    fn plain_names_are_server_double_underscore_tool_sanitised() {
        let t = NameTable::allocate([key("my.server", "get-thing"), key("git", "git_status")]);
        assert_eq!(
            t.name_of(&key("my.server", "get-thing")),
            Some("my_server__get-thing")
        );
        assert_eq!(
            t.resolve("git__git_status"),
            Some(&key("git", "git_status"))
        );
    }

    #[test]
    fn collisions_after_sanitising_both_get_stable_hashed_names() {
        let a = key("a.b", "t");
        let b = key("a_b", "t");
        let t = NameTable::allocate([a.clone(), b.clone()]);
        let (na, nb) = (t.name_of(&a).unwrap(), t.name_of(&b).unwrap());
        assert_ne!(na, nb);
        assert!(
            na.starts_with("a_b__t_") && valid(na) && valid(nb),
            "{na} {nb}"
        );
        // The same pair always gets the same name, whatever else is in the table.
        let again = NameTable::allocate([b.clone(), key("zz", "other"), a.clone()]);
        assert_eq!(again.name_of(&a), Some(na));
    }

    #[test]
    fn long_and_unicode_names_are_cut_with_a_hash_and_stay_distinct() {
        let long1 = key("server-with-a-rather-long-name", &"x".repeat(80));
        let long2 = key(
            "server-with-a-rather-long-name",
            &format!("{}y", "x".repeat(80)),
        );
        let uni = key("s", "créer_fichier");
        let t = NameTable::allocate([long1.clone(), long2.clone(), uni.clone()]);
        let (n1, n2) = (t.name_of(&long1).unwrap(), t.name_of(&long2).unwrap());
        assert!(valid(n1) && valid(n2) && n1 != n2, "{n1} {n2}");
        assert_eq!(n1.len(), MAX_NAME_LEN);
        assert_eq!(t.name_of(&uni), Some("s__cr_er_fichier"));
        assert_eq!(t.len(), 3);
    }

    #[test]
    fn only_servers_whose_names_lead_a_name_may_own_it() {
        assert!(may_own("time", "time__get_current_time"));
        assert!(may_own("a.b", "a_b__t_0123abcd"));
        assert!(!may_own("timer", "time__get_current_time"));
        assert!(!may_own("git", "time__get_current_time"));
        assert!(!may_own("s", "s3__echo"));
        // Cut to fit: the name keeps only the start of a long server's name.
        let long = "s".repeat(70);
        let name = format!("{}_{}", "s".repeat(55), "0".repeat(8));
        assert!(may_own(&long, &name));
    }

    #[test]
    fn same_tool_name_on_two_servers_stays_reachable() {
        let t = NameTable::allocate([key("a", "search"), key("b", "search")]);
        assert_eq!(t.resolve("a__search").unwrap().server.as_str(), "a");
        assert_eq!(t.resolve("b__search").unwrap().server.as_str(), "b");
    }

    mod properties {
        use super::*;
        use proptest::collection::vec;
        use proptest::prelude::*;
        use std::collections::BTreeSet;

        /// Server and tool names from a small alphabet (so that names collide after
        /// sanitising all the time), with non-ASCII, empty and over-long ones among them.
        fn any_key() -> impl Strategy<Value = ToolKey> {
            let part = || prop_oneof!["[ab._ é-]{0,5}", "[a-z]{50,70}"];
            (part(), part()).prop_map(|(server, tool)| key(&server, &tool))
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(400))]

            /// Every distinct tool gets exactly one name the model APIs accept, that name
            /// resolves back to it, and the names depend only on the set of tools, never on
            /// the order they came in.
            #[test]
            fn every_tool_gets_one_valid_name_that_resolves_to_it_whatever_the_order(
                keys in vec(any_key(), 0..40),
                turn in any::<usize>(),
            ) {
                let table = NameTable::allocate(keys.clone());
                let distinct: BTreeSet<ToolKey> = keys.iter().cloned().collect();
                prop_assert_eq!(table.len(), distinct.len());
                for k in &distinct {
                    let name = table.name_of(k).expect("every tool is named");
                    prop_assert!(valid(name), "{name:?}");
                    prop_assert_eq!(table.resolve(name), Some(k));
                }
                let mut reordered = keys;
                reordered.reverse();
                if !reordered.is_empty() {
                    let by = turn % reordered.len();
                    reordered.rotate_left(by);
                }
                let again = NameTable::allocate(reordered);
                for k in &distinct {
                    prop_assert_eq!(again.name_of(k), table.name_of(k));
                }
            }

            /// Starting only the servers that may own a name finds the same tool under it
            /// as starting them all, and the server that owns it is always among them.
            #[test]
            fn the_servers_that_may_own_a_name_resolve_it_as_all_of_them_do(
                keys in vec(any_key(), 1..40),
            ) {
                let table = NameTable::allocate(keys.clone());
                for k in &keys {
                    let name = table.name_of(k).expect("every tool is named");
                    prop_assert!(may_own(k.server.as_str(), name), "{k:?} {name}");
                    let some: Vec<ToolKey> = (keys.iter())
                        .filter(|o| may_own(o.server.as_str(), name))
                        .cloned()
                        .collect();
                    let started = NameTable::allocate(some);
                    prop_assert_eq!(started.resolve(name), Some(k));
                }
            }
        }
    }
}
