//! The audit log: one JSON line per tool call, whoever made it and whatever became of it,
//! appended to `$XDG_DATA_HOME/mcp-host/audit.jsonl` by the call gate; and one line per
//! connection a confined server asked its egress proxy for (`"event": "egress"`: server,
//! host, port, allowed or why not, bytes each way), and the first of each other denial it ran
//! into (`"event": "denied"`: server, what). A call's line is the
//! call's [`CallRecord`] (the same record the store's tool-call row is made from) with a
//! timestamp. Arguments are recorded only as a hash and results only by size, so secrets in
//! them (and in env or headers, which are never passed here) cannot leak into the log.

use crate::events::{Observer, notice};
use mcp_host_core::confinement::EgressRecord;
use mcp_host_core::event::CallRecord;
use mcp_host_core::time::rfc3339;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::time::SystemTime;

#[derive(Clone, Debug)]
pub struct Audit {
    path: PathBuf,
}

impl Audit {
    pub fn new(data_dir: &std::path::Path) -> Self {
        Self {
            path: data_dir.join("audit.jsonl"),
        }
    }

    /// Appends one call's record. Best effort: a log that cannot be written is told to the
    /// observer, never fatal to the call.
    pub fn write(&self, record: &CallRecord, observer: &dyn Observer) {
        if let Err(e) = self.event("call", record) {
            observer.event(notice(format!(
                "cannot write the audit log {}: {e}",
                self.path.display()
            )));
        }
    }

    /// Appends one egress proxy connection. Best effort, as for calls; a failure is logged.
    pub fn egress(&self, record: &EgressRecord) {
        self.event_or_warn("egress", record);
    }

    /// Appends the first of a kind of denial a confined server ran into (a permission error
    /// it reported), so a headless run leaves the path to widen its sandbox with.
    pub fn denial(&self, server: &str, what: &str) {
        self.event_or_warn("denied", &json!({"server": server, "what": what}));
    }

    fn event_or_warn(&self, event: &str, fields: &impl serde::Serialize) {
        if let Err(e) = self.event(event, fields) {
            tracing::warn!(path = %self.path.display(), "cannot write the audit log: {e}");
        }
    }

    /// One line: the time, the kind of event, then the record's own fields.
    fn event(&self, event: &str, fields: &impl serde::Serialize) -> std::io::Result<()> {
        let mut line = json!({"ts": rfc3339(SystemTime::now()), "event": event});
        if let (Value::Object(line), Ok(Value::Object(fields))) =
            (&mut line, serde_json::to_value(fields))
        {
            line.extend(fields);
        }
        self.append(&line)
    }

    fn append(&self, line: &Value) -> std::io::Result<()> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        let mut f = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        // Read with `cat` and `tail -f`: the same terminal-safe JSON as every other output.
        let text = mcp_host_core::sanitize::to_json(line).map_err(std::io::Error::other)?;
        writeln!(f, "{text}")
    }
}

/// The hash an argument object is recorded by.
pub fn args_hash(args: &Value) -> String {
    mcp_host_registry::pins::definition_hash(args)
}
