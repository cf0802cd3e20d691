//! Per-conversation state the decision depends on, kept pure so the engine (and tests) own
//! it explicitly: the provenance of the current turn (which servers' output has entered the
//! context since the user last spoke, every result tagged with its origin), and answers
//! remembered once, for the session, or always.

use crate::decide::{MemoryKey, Remembered, Verdict};
use mcp_host_core::ServerId;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// Where a piece of context came from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Origin {
    pub server: ServerId,
    pub tool: String,
    pub call_id: String,
}

/// A value (a tool result) with its origin attached.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Tagged<T> {
    pub origin: Origin,
    pub value: T,
}

/// The provenance of one turn.
#[derive(Clone, Debug, Default)]
pub struct Turn {
    servers: BTreeSet<ServerId>,
    origins: Vec<Origin>,
}

impl Turn {
    /// The user spoke: a new turn starts with clean provenance.
    pub fn user_spoke(&mut self) {
        self.servers.clear();
        self.origins.clear();
    }

    /// A result enters the context: it is tagged, and its server taints later calls to
    /// other servers in this turn.
    pub fn record<T>(&mut self, origin: Origin, value: T) -> Tagged<T> {
        self.servers.insert(origin.server.clone());
        self.origins.push(origin.clone());
        Tagged { origin, value }
    }

    /// Servers whose output is in this turn's context (the `provenance` input of `decide`).
    pub fn provenance(&self) -> &BTreeSet<ServerId> {
        &self.servers
    }

    pub fn origins(&self) -> &[Origin] {
        &self.origins
    }
}

pub use mcp_host_core::decision::AnswerScope;

/// Answers in memory plus the persisted ones, merged for `decide`.
#[derive(Clone, Debug, Default)]
pub struct Answers {
    always: Remembered,
    session: BTreeMap<MemoryKey, Verdict>,
    once: BTreeMap<MemoryKey, Verdict>,
}

impl Answers {
    pub fn with_persisted(always: Remembered) -> Self {
        Self {
            always,
            ..Self::default()
        }
    }

    /// Records an answer. Returns it back when it must also be persisted (scope `Always`).
    pub fn record(
        &mut self,
        key: MemoryKey,
        verdict: Verdict,
        scope: AnswerScope,
    ) -> Option<(MemoryKey, Verdict)> {
        match scope {
            AnswerScope::Once => {
                self.once.insert(key, verdict);
                None
            }
            AnswerScope::Session => {
                self.session.insert(key, verdict);
                None
            }
            AnswerScope::Always => {
                self.always.answers.insert(key.clone(), verdict);
                Some((key, verdict))
            }
        }
    }

    /// The answers in force: once beats session beats always.
    pub fn current(&self) -> Remembered {
        let mut answers = self.always.answers.clone();
        answers.extend(self.session.iter().map(|(k, v)| (k.clone(), *v)));
        answers.extend(self.once.iter().map(|(k, v)| (k.clone(), *v)));
        Remembered { answers }
    }

    /// A call was made under a "once" answer: it is used up.
    pub fn used(&mut self, key: &MemoryKey) {
        self.once.remove(key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Call, Context, DecidedBy, Mode, Policy, ToolFacts, decide};
    use serde_json::json;

    fn origin(server: &str) -> Origin {
        Origin {
            server: ServerId::new(server),
            tool: "t".into(),
            call_id: "c1".into(),
        }
    }

    fn decide_for(server: &str, turn: &Turn, answers: &Answers) -> crate::Decision {
        let s = ServerId::new(server);
        let policy = Policy::default();
        let remembered = answers.current();
        let cx = Context {
            mode: Mode::Auto,
            policy: &policy,
            server_trusted: false,
            server_sealed: false,
            tool: ToolFacts {
                definition_hash: "h",
                drifted: false,
                look_alike: false,
                instruction_phrases: &[],
                annotations: None,
            },
            provenance: turn.provenance(),
            remembered: &remembered,
        };
        decide(
            Call {
                server: &s,
                tool: "t",
                name: &format!("{server}__t"),
                args: &json!({}),
            },
            cx,
        )
    }

    #[test]
    fn another_servers_output_taints_until_the_user_speaks() {
        let mut turn = Turn::default();
        let answers = Answers::default();
        assert_eq!(decide_for("b", &turn, &answers).verdict, Verdict::Allow);
        let tagged = turn.record(origin("a"), "web page text");
        assert_eq!(tagged.origin.server.as_str(), "a");
        let d = decide_for("b", &turn, &answers);
        assert_eq!(d.decided_by, DecidedBy::Taint { from: "a".into() });
        assert_eq!(
            decide_for("a", &turn, &answers).verdict,
            Verdict::Allow,
            "a server may use its own output"
        );
        turn.user_spoke();
        assert_eq!(decide_for("b", &turn, &answers).verdict, Verdict::Allow);
    }

    #[test]
    fn once_answers_are_used_up_and_always_answers_are_handed_back_for_storage() {
        let key = MemoryKey {
            server: "s".into(),
            tool: "t".into(),
            definition_hash: "h".into(),
        };
        let mut answers = Answers::default();
        assert!(
            answers
                .record(key.clone(), Verdict::Deny, AnswerScope::Once)
                .is_none()
        );
        assert_eq!(answers.current().answers.get(&key), Some(&Verdict::Deny));
        answers.used(&key);
        assert!(answers.current().answers.is_empty());
        assert!(
            answers
                .record(key.clone(), Verdict::Allow, AnswerScope::Session)
                .is_none()
        );
        answers.record(key.clone(), Verdict::Deny, AnswerScope::Once);
        assert_eq!(
            answers.current().answers.get(&key),
            Some(&Verdict::Deny),
            "once beats session"
        );
        answers.used(&key);
        assert_eq!(answers.current().answers.get(&key), Some(&Verdict::Allow));
        assert_eq!(
            answers.record(key.clone(), Verdict::Allow, AnswerScope::Always),
            Some((key, Verdict::Allow))
        );
    }
}
