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
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::time::{SystemTime, UNIX_EPOCH};

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

/// UTC time as `YYYY-MM-DDTHH:MM:SS.mmmZ` (civil-from-days, proleptic Gregorian).
pub fn rfc3339(t: SystemTime) -> String {
    let d = t.duration_since(UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        d.subsec_millis()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_996_800_123); // 2026-11-30T00:00:00.123Z
        assert_eq!(rfc3339(t), "2026-11-30T00:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
