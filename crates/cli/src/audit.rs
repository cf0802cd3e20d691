//! The audit log: one JSON line per policy decision and per tool call, appended to
//! `$XDG_DATA_HOME/mcp-host/audit.jsonl`. Arguments are recorded only as a hash and results
//! only by size, so secrets in them (and in env or headers, which are never passed here)
//! cannot leak into the log.

use mcp_host_core::CallOutcome;
use mcp_host_policy::Decision;
use serde_json::{Value, json};
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

pub struct Audit {
    path: PathBuf,
}

/// Who the call is for and what it carries.
pub struct Subject<'a> {
    pub name: &'a str,
    pub server: &'a str,
    pub tool: &'a str,
    pub args: &'a Value,
}

impl Audit {
    pub fn new(data_dir: &std::path::Path) -> Self {
        Self {
            path: data_dir.join("audit.jsonl"),
        }
    }

    pub fn decision(&self, s: &Subject<'_>, d: &Decision, answered_by: &str) {
        self.append(json!({
            "ts": rfc3339(SystemTime::now()),
            "event": "decision",
            "name": s.name, "server": s.server, "tool": s.tool,
            "args_sha256": args_hash(s.args),
            "verdict": d.verdict,
            "decided_by": d.decided_by,
            "reason": d.reason,
            "answered_by": answered_by,
        }));
    }

    /// One call's end; `truncated`: the model was given less than the whole result.
    pub fn call(
        &self,
        s: &Subject<'_>,
        outcome: Result<&CallOutcome, String>,
        took: Duration,
        truncated: bool,
    ) {
        let (status, bytes) = match &outcome {
            Ok(o) => (
                if o.is_error { "tool_error" } else { "ok" },
                serde_json::to_vec(o).map_or(0, |b| b.len()),
            ),
            Err(_) => ("failed", 0),
        };
        self.append(json!({
            "ts": rfc3339(SystemTime::now()),
            "event": "call",
            "name": s.name, "server": s.server, "tool": s.tool,
            "args_sha256": args_hash(s.args),
            "status": status,
            "error": outcome.err(),
            "duration_ms": took.as_millis() as u64,
            "result_bytes": bytes,
            "truncated": truncated,
        }));
    }

    /// Best effort: a log that cannot be written is reported, never fatal to the call.
    fn append(&self, line: Value) {
        let write = || -> std::io::Result<()> {
            if let Some(dir) = self.path.parent() {
                std::fs::create_dir_all(dir)?;
            }
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(&self.path)?;
            // Read with `cat` and `tail -f`: the same terminal-safe JSON as every other output.
            let text = mcp_host_core::sanitize::to_json(&line).map_err(std::io::Error::other)?;
            writeln!(f, "{text}")
        };
        if let Err(e) = write() {
            crate::output::errln!(
                "warning: cannot write the audit log {}: {e}",
                self.path.display()
            );
        }
    }
}

/// The engine's decisions and calls, written to the audit log (headless: policy answers).
impl mcp_host_engine::Observer for Audit {
    fn decided(
        &self,
        entry: &mcp_host_registry::catalogue::Entry,
        args: &Value,
        decision: &Decision,
    ) {
        let s = Subject {
            name: &entry.name,
            server: entry.key.server.as_str(),
            tool: &entry.key.tool,
            args,
        };
        self.decision(&s, decision, "policy");
    }

    fn called(
        &self,
        entry: &mcp_host_registry::catalogue::Entry,
        args: &Value,
        outcome: Result<&CallOutcome, String>,
        took: Duration,
        truncated: bool,
    ) {
        let s = Subject {
            name: &entry.name,
            server: entry.key.server.as_str(),
            tool: &entry.key.tool,
            args,
        };
        self.call(&s, outcome, took, truncated);
    }
}

fn args_hash(args: &Value) -> String {
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

    #[test]
    fn timestamps_are_rfc3339_utc() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_795_996_800_123); // 2026-11-30T00:00:00.123Z
        assert_eq!(rfc3339(t), "2026-11-30T00:00:00.123Z");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(rfc3339(leap), "2000-02-29T00:00:00.000Z");
    }
}
