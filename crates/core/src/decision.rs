//! The vocabulary of a call's decision, shared by the policy that makes it, the store that
//! remembers answers, the engine that records it and every front end that shows it: the
//! mode, the verdict, what decided it, and how long a person's answer holds. Data only.

use serde::{Deserialize, Serialize};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Interactive default: ask unless allowed.
    Ask,
    /// Allow unless a rule or a flag says otherwise.
    Auto,
    /// Headless default: deny unless allowed.
    Deny,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Allow,
    Ask,
    Deny,
}

/// What decided.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", rename_all = "snake_case")]
pub enum DecidedBy {
    DenyRule {
        rule: String,
    },
    AskRule {
        rule: String,
    },
    AllowRule {
        rule: String,
    },
    Drift,
    LookAlike,
    /// The tool's text reads as instructions to the model (lint flag `reads_as_instructions`).
    InstructionText,
    Taint {
        from: String,
    },
    Remembered,
    ReadOnlyHint,
    /// The server is sandboxed so that it can write nothing of the user's and reach no
    /// host: its tools count as read-only whatever their annotations say.
    Sealed,
    Mode {
        mode: Mode,
    },
    /// A `PreToolUse` hook answered (decided outside this function, recorded the same way).
    Hook {
        command: String,
    },
    /// A person answered the approval question (outside this function, recorded the same
    /// way).
    User {
        scope: AnswerScope,
    },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Decision {
    pub verdict: Verdict,
    pub decided_by: DecidedBy,
    /// One sentence for the person who has to answer or read the log.
    pub reason: String,
}

/// How long an answer to an approval question holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AnswerScope {
    /// This call only.
    Once,
    /// Until the session ends.
    Session,
    /// Persisted in the store.
    Always,
}

/// A remembered answer applies to one exact definition.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct MemoryKey {
    pub server: String,
    pub tool: String,
    pub definition_hash: String,
}
