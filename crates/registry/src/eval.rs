//! The tool-search evaluation set (`eval/` at the repository root) and its measures.
//! `eval/servers/*.json` are real servers' `tools/list` answers as recorded by
//! `eval/collect/`; `eval/requests/*.json` are hand-written requests for some of those
//! servers' tools, in three kinds; servers without requests are distractors. The servers
//! are split: `eval/split.json` names the test part, reported only; the rest is the dev
//! part that tuning looks at. Used by the `eval_search` example (a report) and by a test
//! (floors on the dev part).

use crate::catalogue::{Catalogue, ServerTools};
use crate::search::hybrid::Embedder;
use crate::search::{Index, identifier_words};
use mcp_host_core::{ServerId, ToolDescriptor};
use serde::Deserialize;
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// One recorded server (`eval/servers/NAME.json`); only what the catalogue needs is read.
#[derive(Clone, Debug, Deserialize)]
pub struct ServerRecord {
    pub server: String,
    pub package: String,
    pub version: String,
    pub instructions: Option<String>,
    pub tools: Vec<RecordedTool>,
}

impl ServerRecord {
    /// The recorded server as a catalogue has it, named `name`.
    pub fn server_tools(&self, name: &str) -> ServerTools {
        ServerTools {
            instructions: self.instructions.clone(),
            ..ServerTools::new(ServerId::new(name), self.tools.iter().map(descriptor))
        }
    }
}

#[derive(Clone, Debug, Deserialize)]
pub struct RecordedTool {
    pub name: String,
    pub title: Option<String>,
    pub description: Option<String>,
    #[serde(rename = "inputSchema", default)]
    pub input_schema: Value,
    pub annotations: Option<Value>,
}

#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// May use the tool's own words.
    Direct,
    /// Uses no word of the tool's name.
    Paraphrase,
    /// A goal in which the tool is the step that matters.
    Task,
}

impl Kind {
    pub const ALL: [Self; 3] = [Self::Direct, Self::Paraphrase, Self::Task];

    pub fn label(self) -> &'static str {
        match self {
            Self::Direct => "direct",
            Self::Paraphrase => "paraphrase",
            Self::Task => "task",
        }
    }
}

/// One request: `tool` on the file's server is the answer; `also` lists other tools
/// (`server/tool`) that serve it equally well.
#[derive(Clone, Debug, Deserialize)]
pub struct Request {
    pub tool: String,
    pub kind: Kind,
    pub text: String,
    #[serde(default)]
    pub also: Vec<String>,
}

#[derive(Clone, Debug, Deserialize)]
struct RequestFile {
    server: String,
    requests: Vec<Request>,
}

#[derive(Clone, Debug, Deserialize)]
struct Split {
    test: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Part {
    Dev,
    Test,
}

/// A request with its server, answers and part.
#[derive(Clone, Debug)]
pub struct Labelled {
    pub server: String,
    pub part: Part,
    pub request: Request,
    /// Every acceptable (server, tool).
    pub answers: Vec<(String, String)>,
}

/// The whole set.
#[derive(Debug)]
pub struct Dataset {
    pub servers: Vec<ServerRecord>,
    pub requests: Vec<Labelled>,
}

/// A problem with the set itself, located.
#[derive(Debug, thiserror::Error)]
pub enum DatasetError {
    #[error("{path}: {reason}")]
    File { path: String, reason: String },
    #[error("{file}: request {text:?}: {reason}")]
    Request {
        file: String,
        text: String,
        reason: String,
    },
}

fn read<T: serde::de::DeserializeOwned>(path: &Path) -> Result<T, DatasetError> {
    let located = |reason: String| DatasetError::File {
        path: path.display().to_string(),
        reason,
    };
    let text = std::fs::read_to_string(path).map_err(|e| located(e.to_string()))?;
    serde_json::from_str(&text).map_err(|e| located(e.to_string()))
}

fn json_files(dir: &Path) -> Result<Vec<std::path::PathBuf>, DatasetError> {
    let entries = std::fs::read_dir(dir).map_err(|e| DatasetError::File {
        path: dir.display().to_string(),
        reason: e.to_string(),
    })?;
    let mut files: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    Ok(files)
}

impl Dataset {
    /// Loads `root` (the `eval/` directory) and checks every request: its tools exist, and
    /// a paraphrase uses no word of its tool's name.
    pub fn load(root: &Path) -> Result<Self, DatasetError> {
        let servers: Vec<ServerRecord> = json_files(&root.join("servers"))?
            .iter()
            .map(|p| read(p))
            .collect::<Result<_, _>>()?;
        let tools: BTreeSet<(String, String)> = servers
            .iter()
            .flat_map(|s| s.tools.iter().map(|t| (s.server.clone(), t.name.clone())))
            .collect();
        let split: Split = read(&root.join("split.json"))?;
        let mut requests = Vec::new();
        for path in json_files(&root.join("requests"))? {
            let file: RequestFile = read(&path)?;
            let part = if split.test.contains(&file.server) {
                Part::Test
            } else {
                Part::Dev
            };
            for request in file.requests {
                let bad = |reason: String| DatasetError::Request {
                    file: path.display().to_string(),
                    text: request.text.clone(),
                    reason,
                };
                let mut answers = vec![(file.server.clone(), request.tool.clone())];
                for also in &request.also {
                    let (s, t) = also
                        .split_once('/')
                        .ok_or_else(|| bad(format!("`also` entry {also:?} is not server/tool")))?;
                    answers.push((s.to_string(), t.to_string()));
                }
                if let Some(missing) = answers.iter().find(|a| !tools.contains(a)) {
                    return Err(bad(format!("no tool {}/{}", missing.0, missing.1)));
                }
                let shared = (request.kind == Kind::Paraphrase)
                    .then(|| shared_word(&request.tool, &request.text))
                    .flatten();
                if let Some(w) = shared {
                    return Err(bad(format!("a paraphrase uses {w:?} from the tool's name")));
                }
                requests.push(Labelled {
                    server: file.server.clone(),
                    part,
                    request,
                    answers,
                });
            }
        }
        Ok(Self { servers, requests })
    }

    /// The catalogue of every server, targets and distractors alike.
    pub fn catalogue(&self) -> Catalogue {
        Catalogue::build(
            self.servers
                .iter()
                .map(|s| s.server_tools(&s.server))
                .collect(),
        )
    }

    /// The catalogue with semantic ranking.
    pub fn hybrid_catalogue(&self) -> Catalogue {
        self.catalogue().with_embedder(Embedder::new())
    }

    pub fn tool_count(&self) -> usize {
        self.servers.iter().map(|s| s.tools.len()).sum()
    }

    /// Tools no request names as an answer.
    pub fn distractor_count(&self) -> usize {
        let targeted: BTreeSet<&(String, String)> =
            self.requests.iter().flat_map(|r| &r.answers).collect();
        self.tool_count() - targeted.len()
    }
}

fn descriptor(t: &RecordedTool) -> ToolDescriptor {
    ToolDescriptor {
        name: t.name.clone(),
        title: t.title.clone(),
        description: t.description.clone(),
        input_schema: t.input_schema.clone(),
        output_schema: None,
        annotations: t.annotations.clone(),
    }
}

/// A word of the tool's name that the text also uses (compared stemmed), if any.
pub fn shared_word(tool: &str, text: &str) -> Option<String> {
    let stemmer = rust_stemmers::Stemmer::create(rust_stemmers::Algorithm::English);
    let stem = |w: &String| stemmer.stem(w).into_owned();
    let used: BTreeSet<String> = identifier_words(text).iter().map(stem).collect();
    identifier_words(tool)
        .into_iter()
        .find(|w| used.contains(&stem(w)))
}

/// Recall and reciprocal rank over a group of requests.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Measures {
    pub requests: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub recall_at_10: f64,
    pub mrr: f64,
}

/// A ranking's measures by part and kind, and the requests it missed.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub by_group: BTreeMap<(Part, Kind), Measures>,
    pub overall: BTreeMap<Part, Measures>,
    /// (request, rank or None when not in the first 10) for every request not ranked first.
    pub misses: Vec<(Labelled, Option<usize>, Vec<String>)>,
}

impl Report {
    pub fn get(&self, part: Part, kind: Kind) -> Measures {
        self.by_group
            .get(&(part, kind))
            .cloned()
            .unwrap_or_default()
    }
}

/// Ranks every request with `rank` (the first ten (server, tool) pairs, best first).
pub fn evaluate(
    requests: &[Labelled],
    mut rank: impl FnMut(&str) -> Vec<(String, String)>,
) -> Report {
    let mut report = Report::default();
    for r in requests {
        let hits = rank(&r.request.text);
        let place = hits
            .iter()
            .take(10)
            .position(|h| r.answers.contains(h))
            .map(|p| p + 1);
        for m in [
            report.by_group.entry((r.part, r.request.kind)).or_default(),
            report.overall.entry(r.part).or_default(),
        ] {
            m.requests += 1;
            if let Some(k) = place {
                m.mrr += 1.0 / k as f64;
                m.recall_at_1 += f64::from(u8::from(k <= 1));
                m.recall_at_5 += f64::from(u8::from(k <= 5));
                m.recall_at_10 += 1.0;
            }
        }
        if place != Some(1) {
            let top = hits
                .iter()
                .take(3)
                .map(|(s, t)| format!("{s}/{t}"))
                .collect();
            report.misses.push((r.clone(), place, top));
        }
    }
    for m in report
        .by_group
        .values_mut()
        .chain(report.overall.values_mut())
    {
        let n = m.requests.max(1) as f64;
        m.recall_at_1 /= n;
        m.recall_at_5 /= n;
        m.recall_at_10 /= n;
        m.mrr /= n;
    }
    report
}

/// The catalogue's own ranking as `evaluate` wants it.
pub fn ranked_by(catalogue: &Catalogue) -> impl FnMut(&str) -> Vec<(String, String)> + '_ {
    |q| {
        catalogue
            .search(q, 10)
            .into_iter()
            .map(|(e, _)| (e.key.server.to_string(), e.key.tool.clone()))
            .collect()
    }
}

/// Plain BM25 over the same tools, the baseline every change is compared with.
pub fn ranked_by_baseline(catalogue: &Catalogue) -> impl FnMut(&str) -> Vec<(String, String)> + '_ {
    let index: Index = catalogue.baseline_index();
    move |q| {
        index
            .search(q, 10)
            .into_iter()
            .map(|(i, _)| {
                let e = &catalogue.entries()[i];
                (e.key.server.to_string(), e.key.tool.clone())
            })
            .collect()
    }
}
