//! Pure policy for mcp-host: who may run which tool call, and why. A function of config
//! rules, server trust, the tool's catalogue facts (definition hash, drift, look-alike
//! flags, annotations), the turn's provenance, remembered answers and the mode. No I/O, no
//! async: every path (interactive, headless, direct `call`) asks the same function.

mod decide;
pub mod rules;
mod turn;

pub use decide::{
    Call, Context, DecidedBy, Decision, Hints, MemoryKey, Mode, Policy, Remembered, ToolFacts,
    Verdict, decide, hints,
};
pub use rules::{Condition, Rule, RuleSource};
pub use turn::{AnswerScope, Answers, Origin, Tagged, Turn};

#[cfg(test)]
mod properties;
#[cfg(test)]
mod tests;
