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
use mcp_host_core::time::push_rfc3339;
use serde_json::{Value, json};
use std::fs::File;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::SystemTime;

/// Cloned into every front end's gate and the egress reports; the clones share one open
/// file, so a line costs one `stat` (is the path still this file?) and one `write`.
#[derive(Clone, Debug)]
pub struct Audit {
    path: PathBuf,
    file: Arc<Mutex<Option<Open>>>,
}

/// The log as opened, and which file that was: a log moved away (rotated) or removed is
/// noticed at the next line, which starts a new file at the path, as `tail -F` follows it.
#[derive(Debug)]
struct Open {
    file: File,
    id: (u64, u64),
}

fn file_id(meta: &std::fs::Metadata) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (meta.dev(), meta.ino())
}

impl Audit {
    pub fn new(data_dir: &std::path::Path) -> Self {
        Self {
            path: data_dir.join("audit.jsonl"),
            file: Arc::default(),
        }
    }

    /// Appends one call's record. Best effort: a log that cannot be written is told to the
    /// observer, never fatal to the call.
    pub fn write(&self, record: &CallRecord, observer: &dyn Observer) {
        if let Err(e) = self.line("call", |line| record.append_json(line)) {
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

    fn event_or_warn(&self, event: &'static str, fields: &impl serde::Serialize) {
        if let Err(e) = self.event(event, fields) {
            tracing::warn!(path = %self.path.display(), "cannot write the audit log: {e}");
        }
    }

    /// One line: the time, the kind of event, then the record's own fields (none of which
    /// is called `ts` or `event`), written straight from the record into the line.
    fn event(&self, event: &'static str, fields: &impl serde::Serialize) -> std::io::Result<()> {
        // Read with `cat` and `tail -f`: the same terminal-safe JSON as every other output.
        self.line(event, |line| {
            mcp_host_core::sanitize::append_json(fields, line)
        })
    }

    /// One line of `event` whose fields `object` appends as one JSON object.
    fn line(
        &self,
        event: &'static str,
        object: impl FnOnce(&mut Vec<u8>) -> serde_json::Result<()>,
    ) -> std::io::Result<()> {
        let mut line = Vec::with_capacity(512);
        // `ts` (digits and punctuation) and `event` (this file's constants) need no escaping.
        let mut head = String::with_capacity(64);
        head.push_str("{\"ts\":\"");
        push_rfc3339(SystemTime::now(), &mut head);
        head.push_str("\",\"event\":\"");
        head.push_str(event);
        head.push('"');
        line.extend_from_slice(head.as_bytes());
        let at = line.len();
        object(&mut line).map_err(std::io::Error::other)?;
        // The record's own braces close the line; its `{` becomes the separator.
        match &line[at..] {
            b"{}" => {
                line.truncate(at);
                line.push(b'}');
            }
            [b'{', ..] => line[at] = b',',
            _ => {
                return Err(std::io::Error::other(
                    "an audit record is not a JSON object",
                ));
            }
        }
        line.push(b'\n');
        self.append(&line)
    }

    fn append(&self, line: &[u8]) -> std::io::Result<()> {
        // A poisoned lock only means another writer panicked mid-line; the file is still good.
        let mut open = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let current = std::fs::metadata(&self.path).ok().map(|m| file_id(&m));
        let f = match open.as_mut() {
            Some(o) if Some(o.id) == current => &mut o.file,
            _ => {
                let file = self.open()?;
                let id = file_id(&file.metadata()?);
                &mut open.insert(Open { file, id }).file
            }
        };
        // One `write` of the whole line to a file opened for appending: lines from several
        // processes (a chat and a `run` side by side) never interleave.
        f.write_all(line)
    }

    fn open(&self) -> std::io::Result<File> {
        if let Some(dir) = self.path.parent() {
            std::fs::create_dir_all(dir)?;
        }
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)
    }
}

/// The hash an argument object is recorded by.
pub fn args_hash(args: &Value) -> String {
    mcp_host_registry::pins::definition_hash(args)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Lines from many writers at once (threads of one host, and a second handle as another
    /// process would have) arrive whole: each is one `write` to a file opened for appending.
    #[test]
    fn concurrent_writers_never_split_a_line() {
        let dir = tempfile::tempdir().unwrap();
        let (one, other) = (Audit::new(dir.path()), Audit::new(dir.path()));
        let what = "x".repeat(3000);
        std::thread::scope(|scope| {
            for t in 0..8 {
                let audit = if t % 2 == 0 {
                    one.clone()
                } else {
                    other.clone()
                };
                let what = &what;
                scope.spawn(move || {
                    for i in 0..200 {
                        audit.denial(&format!("s{t}-{i}"), what);
                    }
                });
            }
        });
        let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 1600);
        for line in lines {
            let v: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("{e}: {line}"));
            assert_eq!(v["event"], "denied");
            assert_eq!(v["what"].as_str().map(str::len), Some(3000));
        }
    }

    /// A line starts with the time and the kind of event, then has the record's fields, and
    /// is one JSON object however many fields the record has (none included); a record that
    /// is not an object is refused, not written as half a line.
    #[test]
    fn a_line_is_the_time_the_event_and_the_records_fields() {
        let dir = tempfile::tempdir().unwrap();
        let audit = Audit::new(dir.path());
        audit.event("empty", &json!({})).unwrap();
        audit
            .event("some", &json!({"a": 1, "b": "\u{1b}[31m"}))
            .unwrap();
        assert!(audit.event("bad", &json!([1])).is_err());
        let text = std::fs::read_to_string(dir.path().join("audit.jsonl")).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2, "{text}");
        assert!(lines[0].starts_with("{\"ts\":\"") && lines[0].ends_with("\"event\":\"empty\"}"));
        assert!(
            lines[1].ends_with("\"event\":\"some\",\"a\":1,\"b\":\"\\u001b[31m\"}"),
            "{}",
            lines[1]
        );
        for line in lines {
            let v: Value = serde_json::from_str(line).unwrap();
            assert!(v["ts"].as_str().is_some_and(|t| t.ends_with('Z')), "{line}");
        }
    }

    /// The folder is made when the first line is written, and again if it was removed; a log
    /// moved away (rotated) is followed by a new one at the path.
    #[test]
    fn a_removed_folder_is_made_again() {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let audit = Audit::new(&data);
        audit.denial("a", "first");
        std::fs::remove_dir_all(&data).unwrap();
        audit.denial("a", "second");
        let text = std::fs::read_to_string(data.join("audit.jsonl")).unwrap();
        assert!(text.contains("second"), "{text}");
        std::fs::rename(data.join("audit.jsonl"), data.join("audit.jsonl.1")).unwrap();
        audit.denial("a", "third");
        let text = std::fs::read_to_string(data.join("audit.jsonl")).unwrap();
        assert!(text.contains("third") && !text.contains("second"), "{text}");
        let rotated = std::fs::read_to_string(data.join("audit.jsonl.1")).unwrap();
        assert!(!rotated.contains("third"), "{rotated}");
    }
}
