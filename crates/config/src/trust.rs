//! The user's answers about project servers (`mcp-host servers approve|deny NAME`), kept in
//! the user's data dir, keyed by project root, server name and definition hash. A project
//! file cannot write here, so it can never approve its own servers; an edited definition has
//! a new hash and is asked about again.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustAnswer {
    Approved,
    Denied,
}

#[derive(Debug, thiserror::Error)]
pub enum TrustError {
    #[error("cannot read trust ledger {path}: {source}")]
    Read { path: PathBuf, source: io::Error },
    #[error("trust ledger {path} is corrupt ({source}); fix or delete it")]
    Corrupt {
        path: PathBuf,
        source: serde_json::Error,
    },
    #[error("cannot write trust ledger {path}: {source}")]
    Write { path: PathBuf, source: io::Error },
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Record {
    hash: String,
    answer: TrustAnswer,
}

#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct LedgerFile {
    #[serde(default)]
    projects: BTreeMap<String, BTreeMap<String, Record>>,
}

/// The ledger file and its contents.
#[derive(Clone, Debug)]
pub struct TrustLedger {
    path: PathBuf,
    file: LedgerFile,
}

impl TrustLedger {
    pub fn open(path: &Path) -> Result<Self, TrustError> {
        let file = match std::fs::read_to_string(path) {
            Ok(text) => serde_json::from_str(&text).map_err(|source| TrustError::Corrupt {
                path: path.to_path_buf(),
                source,
            })?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => LedgerFile::default(),
            Err(source) => {
                return Err(TrustError::Read {
                    path: path.to_path_buf(),
                    source,
                });
            }
        };
        Ok(Self {
            path: path.to_path_buf(),
            file,
        })
    }

    /// The remembered answer for this exact definition, if any.
    pub fn answer(&self, project: &Path, name: &str, hash: &str) -> Option<TrustAnswer> {
        let rec = self.file.projects.get(&key(project))?.get(name)?;
        (rec.hash == hash).then_some(rec.answer)
    }

    /// Records an answer and writes the ledger atomically (temp file, then rename).
    pub fn record(
        &mut self,
        project: &Path,
        name: &str,
        hash: &str,
        answer: TrustAnswer,
    ) -> Result<(), TrustError> {
        let rec = Record {
            hash: hash.to_string(),
            answer,
        };
        self.file
            .projects
            .entry(key(project))
            .or_default()
            .insert(name.to_string(), rec);
        let write_err = |source| TrustError::Write {
            path: self.path.clone(),
            source,
        };
        let text = serde_json::to_string_pretty(&self.file)
            .map_err(io::Error::other)
            .map_err(write_err)?;
        crate::edit::write_atomically(&self.path, text.as_bytes(), 0o600).map_err(write_err)
    }
}

fn key(project: &Path) -> String {
    project.to_string_lossy().into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_survive_reopening_and_apply_only_to_the_same_definition() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub/trust.json");
        let proj = Path::new("/repo");
        let mut l = TrustLedger::open(&path).unwrap();
        assert_eq!(l.answer(proj, "git", "h1"), None);
        l.record(proj, "git", "h1", TrustAnswer::Approved).unwrap();
        let l = TrustLedger::open(&path).unwrap();
        assert_eq!(l.answer(proj, "git", "h1"), Some(TrustAnswer::Approved));
        assert_eq!(
            l.answer(proj, "git", "h2"),
            None,
            "edited definition must ask again"
        );
        assert_eq!(l.answer(Path::new("/other"), "git", "h1"), None);
    }

    #[test]
    fn a_corrupt_ledger_is_an_error_naming_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trust.json");
        std::fs::write(&path, "{nope").unwrap();
        let e = TrustLedger::open(&path).unwrap_err();
        assert!(e.to_string().contains("trust.json"), "{e}");
    }
}
