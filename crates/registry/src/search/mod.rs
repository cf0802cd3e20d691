//! Tool retrieval. Lexically: BM25 with field weights (a tool's name counts more than its
//! description), identifiers split at `snake_case`, `kebab-case` and `camelCase` boundaries
//! while prose keeps its words whole ("GitHub" stays one word), English stemming and stop
//! words, generic verbs in names weighed like description words, and numbers and ids in
//! descriptions left out. Semantically: a static embedding model ([`embed`]) fused with the
//! lexical ranking ([`hybrid`]). Built in memory from the catalogue snapshot; a query is a
//! few postings walks over a dense score array, plus one pass over the tool vectors.

pub mod embed;
pub mod hybrid;

use rust_stemmers::{Algorithm, Stemmer};
use std::collections::HashMap;

/// The text of one tool, by field.
#[derive(Clone, Debug, Default)]
pub struct DocText {
    pub server: String,
    pub name: String,
    pub title: String,
    pub description: String,
    pub param_names: Vec<String>,
    pub param_descriptions: Vec<String>,
}

/// How much each field and rule counts. [`Tuning::HOST`] is what the host uses;
/// [`Tuning::PLAIN`] is textbook BM25 over name and description, the evaluation's baseline.
#[derive(Clone, Copy, Debug)]
pub struct Tuning {
    pub name: f32,
    pub title: f32,
    pub server: f32,
    pub description: f32,
    pub param_name: f32,
    pub param_description: f32,
    /// Weight of a generic verb ("get", "list") in a name, instead of `name`.
    pub generic_verb: f32,
    /// Query words add their [`QUERY_EXPANSIONS`] at this weight (0: none).
    pub expansion: f32,
    /// Prose keeps `camelCase` words whole and descriptions drop numbers and ids.
    pub prose_rules: bool,
}

impl Tuning {
    pub const HOST: Self = Self {
        name: 3.0,
        title: 2.0,
        server: 1.0,
        description: 1.0,
        param_name: 1.5,
        param_description: 0.25,
        generic_verb: 1.0,
        expansion: 0.7,
        prose_rules: true,
    };
    pub const PLAIN: Self = Self {
        name: 1.0,
        title: 0.0,
        server: 0.0,
        description: 1.0,
        param_name: 0.0,
        param_description: 0.0,
        generic_verb: 1.0,
        expansion: 0.0,
        prose_rules: false,
    };
}

const K1: f32 = 1.2;
const B: f32 = 0.75;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "please", "that", "the", "this",
    "to", "use", "what", "when", "where", "which", "with", "you", "your",
];

/// Verbs so many tool names start with that they say little about which tool is meant.
const GENERIC_VERBS: &[&str] = &[
    "get", "list", "create", "add", "update", "delete", "remove", "set", "put", "move", "fetch",
    "retrieve", "run", "make", "new", "read", "write", "edit", "modify", "find", "search", "query",
    "check", "do", "execute", "show", "describe",
];

/// How people ask versus how tools are named: a query word adds these words with a lower
/// weight ("what time is it" asks to *get* the *current* time). Applied to queries only.
const QUERY_EXPANSIONS: &[(&str, &[&str])] = &[
    ("what", &["get"]),
    ("show", &["get", "list"]),
    ("tell", &["get"]),
    ("fetch", &["get"]),
    ("download", &["fetch", "url"]),
    ("web", &["url", "fetch"]),
    ("website", &["url", "fetch"]),
    ("page", &["url"]),
    ("find", &["search", "get"]),
    ("look", &["search", "get"]),
    ("now", &["current"]),
    ("today", &["current", "date"]),
    ("currently", &["current"]),
    ("remove", &["delete"]),
    ("erase", &["delete"]),
    ("forget", &["delete"]),
    ("make", &["create"]),
    ("new", &["create"]),
    ("remember", &["create", "add", "observation"]),
    ("save", &["write"]),
    ("store", &["write", "create"]),
    ("open", &["read"]),
    ("view", &["read", "get"]),
    ("picture", &["image", "media"]),
    ("photo", &["image", "media"]),
    ("image", &["media"]),
    ("folder", &["directory"]),
    ("folders", &["directory"]),
    ("rename", &["move"]),
    ("big", &["size"]),
    ("large", &["size"]),
    ("history", &["log"]),
    ("compare", &["diff"]),
    ("changed", &["diff", "status"]),
    ("link", &["relation"]),
    ("connect", &["relation"]),
    ("unstage", &["reset"]),
    ("several", &["multiple"]),
    ("many", &["multiple"]),
    // From the evaluation set's dev part: the words people use for things tools name
    // otherwise, file types for the products that open them, and common short forms.
    ("spreadsheet", &["excel", "workbook", "worksheet", "sheet"]),
    ("xlsx", &["excel", "workbook"]),
    ("tab", &["sheet", "worksheet"]),
    ("deck", &["presentation", "slide", "powerpoint"]),
    ("slides", &["presentation", "slide"]),
    ("pptx", &["presentation", "powerpoint"]),
    ("docx", &["document", "word"]),
    ("ticket", &["issue"]),
    ("tickets", &["issue"]),
    ("bug", &["issue"]),
    ("bugs", &["issue"]),
    ("pr", &["pull", "request"]),
    ("repo", &["repository"]),
    ("meeting", &["event", "calendar"]),
    ("meetings", &["event", "calendar"]),
    ("invite", &["event", "calendar"]),
    ("appointment", &["event", "calendar"]),
    ("schedule", &["calendar", "event"]),
    ("book", &["create", "event"]),
    ("available", &["free", "busy"]),
    ("free", &["freebusy"]),
    ("mail", &["email"]),
    ("inbox", &["email"]),
    ("relocate", &["move"]),
    ("drop", &["delete", "remove"]),
    ("rid", &["delete"]),
    ("cancel", &["delete"]),
    ("stage", &["add"]),
    ("land", &["merge"]),
    ("squash", &["merge"]),
    ("approve", &["review"]),
    ("reply", &["comment"]),
    ("note", &["comment"]),
    ("owner", &["assign"]),
    ("iteration", &["sprint", "cycle"]),
    ("wiki", &["page", "confluence"]),
    ("nearby", &["local", "place"]),
    ("video", &["videos"]),
    ("press", &["news"]),
    ("pictures", &["image", "images"]),
    ("photos", &["image", "images"]),
    ("online", &["web", "search"]),
    ("internet", &["web", "search"]),
    ("k8s", &["kubernetes"]),
    ("cluster", &["kubernetes"]),
    ("pod", &["kubernetes"]),
    ("modified", &["status", "diff"]),
    ("uncommitted", &["status", "diff"]),
    ("translate", &["translation"]),
    ("record", &["item", "row"]),
    ("row", &["record", "item"]),
];

/// Splits an identifier (or any text) into lower-case words at every naming convention:
/// `get_currentTime-v2` is `get current time v 2`.
pub fn identifier_words(text: &str) -> Vec<String> {
    split(text, true)
}

/// Splits prose into lower-case words at non-alphanumeric characters only, so product
/// names written in `CamelCase` ("GitHub", "PostgreSQL") stay one word.
pub fn prose_words(text: &str) -> Vec<String> {
    split(text, false)
}

fn split(text: &str, identifiers: bool) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            flush(&mut cur, &mut out);
            prev = None;
            continue;
        }
        if let (Some(p), true) = (prev, identifiers) {
            let camel = p.is_lowercase() && c.is_uppercase();
            let digit_edge = p.is_ascii_digit() != c.is_ascii_digit();
            if camel || digit_edge {
                flush(&mut cur, &mut out);
            }
        }
        cur.extend(c.to_lowercase());
        prev = Some(c);
    }
    flush(&mut cur, &mut out);
    out
}

fn flush(cur: &mut String, out: &mut Vec<String>) {
    if !cur.is_empty() {
        out.push(std::mem::take(cur));
    }
}

/// A word in a description that is a value rather than meaning: a number, a date, an id
/// or hash ("2024", "a1b2c3d4", "usr_8f3k2"). Short mixed words ("s3", "ec2", "2fa") stay.
fn is_value(word: &str) -> bool {
    let digits = word.chars().filter(char::is_ascii_digit).count();
    digits == word.chars().count() || (digits > 0 && word.len() > 4)
}

/// Whether `word` is one of the verbs too many tool names share to tell tools apart.
pub fn is_generic(word: &str) -> bool {
    GENERIC_VERBS.contains(&word)
}

/// Keeps the `limit` best (highest score, then lowest document) hits, sorted.
pub(crate) fn top(hits: &mut Vec<(usize, f32)>, limit: usize) {
    let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
    if hits.len() > limit && limit > 0 {
        hits.select_nth_unstable_by(limit - 1, by_score);
        hits.truncate(limit);
    }
    hits.sort_by(by_score);
    hits.truncate(limit);
}

/// The index. Documents are numbered in the order they were added.
pub struct Index {
    stemmer: Stemmer,
    tuning: Tuning,
    postings: HashMap<String, Vec<(u32, f32)>>,
    doc_len: Vec<f32>,
    avg_len: f32,
}

impl std::fmt::Debug for Index {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Index")
            .field("docs", &self.doc_len.len())
            .field("terms", &self.postings.len())
            .finish()
    }
}

impl Index {
    /// The host's index of `docs`.
    pub fn build<'a>(docs: impl IntoIterator<Item = &'a DocText>) -> Self {
        Self::tuned(docs, Tuning::HOST)
    }

    pub fn tuned<'a>(docs: impl IntoIterator<Item = &'a DocText>, tuning: Tuning) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut postings: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        let mut doc_len = Vec::new();
        let prose = if tuning.prose_rules {
            prose_words
        } else {
            identifier_words
        };
        for (i, d) in docs.into_iter().enumerate() {
            let mut tf: HashMap<String, f32> = HashMap::new();
            let mut add = |words: Vec<String>, weight: f32, generic: f32, values: bool| {
                if weight == 0.0 {
                    return;
                }
                for w in words {
                    if STOP_WORDS.contains(&w.as_str()) || (!values && is_value(&w)) {
                        continue;
                    }
                    let weight = if GENERIC_VERBS.contains(&w.as_str()) {
                        generic
                    } else {
                        weight
                    };
                    *tf.entry(stemmer.stem(&w).into_owned()).or_default() += weight;
                }
            };
            let keep_values = !tuning.prose_rules;
            add(
                identifier_words(&d.name),
                tuning.name,
                tuning.generic_verb,
                true,
            );
            add(prose(&d.title), tuning.title, tuning.title, true);
            add(
                identifier_words(&d.server),
                tuning.server,
                tuning.server,
                true,
            );
            add(
                prose(&d.description),
                tuning.description,
                tuning.description,
                keep_values,
            );
            for p in &d.param_names {
                add(
                    identifier_words(p),
                    tuning.param_name,
                    tuning.param_name,
                    true,
                );
            }
            for p in &d.param_descriptions {
                let w = tuning.param_description;
                add(prose(p), w, w, keep_values);
            }
            doc_len.push(tf.values().sum());
            let doc = u32::try_from(i).unwrap_or(u32::MAX);
            for (term, weight) in tf {
                postings.entry(term).or_default().push((doc, weight));
            }
        }
        let avg_len = if doc_len.is_empty() {
            1.0
        } else {
            doc_len.iter().sum::<f32>() / doc_len.len() as f32
        };
        Self {
            stemmer,
            tuning,
            postings,
            doc_len,
            avg_len: avg_len.max(f32::EPSILON),
        }
    }

    pub fn len(&self) -> usize {
        self.doc_len.len()
    }

    pub fn is_empty(&self) -> bool {
        self.doc_len.is_empty()
    }

    /// The stemmed form of a word, as the index holds it.
    pub fn stem(&self, word: &str) -> String {
        self.stemmer.stem(word).into_owned()
    }

    /// The query's terms with their weights: its own words at 1, expansions lower; a
    /// `camelCase` word also adds its parts at the expansion weight.
    fn query_terms(&self, query: &str) -> Vec<(String, f32)> {
        let mut weighted: HashMap<String, f32> = HashMap::new();
        let lower = |weighted: &mut HashMap<String, f32>, word: &str, weight: f32| {
            let w = weighted.entry(self.stem(word)).or_default();
            *w = w.max(weight);
        };
        let (own, parts) = if self.tuning.prose_rules {
            (prose_words(query), identifier_words(query))
        } else {
            (identifier_words(query), Vec::new())
        };
        for word in &own {
            if let Some((_, extra)) = QUERY_EXPANSIONS.iter().find(|(w, _)| w == word) {
                extra
                    .iter()
                    .for_each(|e| lower(&mut weighted, e, self.tuning.expansion));
            }
        }
        // A set: the query is the model's (or a hosted user's) to make as long as it likes, and
        // looking each part up in the list of words cost its length squared (2 s at 120 KB).
        let own_set: std::collections::HashSet<&str> = own.iter().map(String::as_str).collect();
        for word in parts.iter().filter(|p| !own_set.contains(p.as_str())) {
            lower(&mut weighted, word, self.tuning.expansion);
        }
        // A number or id in a request ("PAY-77", "4.2.1") names a value, not a tool.
        let values = self.tuning.prose_rules;
        for word in own
            .iter()
            .filter(|w| !(STOP_WORDS.contains(&w.as_str()) || values && is_value(w)))
        {
            weighted.insert(self.stem(word), 1.0);
        }
        let mut out: Vec<(String, f32)> = weighted.into_iter().filter(|(_, w)| *w > 0.0).collect();
        out.sort_by(|a, b| a.0.cmp(&b.0));
        out
    }

    /// The best `limit` documents for `query`, best first, as (document number, score).
    /// Documents with no matching term are never returned.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(usize, f32)> {
        let n = self.doc_len.len() as f32;
        let mut scores = vec![0f32; self.doc_len.len()];
        for (term, weight) in self.query_terms(query) {
            let Some(list) = self.postings.get(&term) else {
                continue;
            };
            let df = list.len() as f32;
            let idf = (1.0 + (n - df + 0.5) / (df + 0.5)).ln();
            for &(doc, tf) in list {
                let len_norm = 1.0 - B + B * self.doc_len[doc as usize] / self.avg_len;
                scores[doc as usize] += weight * idf * tf * (K1 + 1.0) / (tf + K1 * len_norm);
            }
        }
        let mut hits: Vec<(usize, f32)> = scores
            .into_iter()
            .enumerate()
            .filter(|(_, s)| *s > 0.0)
            .collect();
        top(&mut hits, limit);
        hits
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A long query costs its length: 400 KB of camel-case words (each split into parts
    /// that are looked up among the query's own words) are ranked within the deadline; with
    /// a list search per part it took about 25 s in a release build.
    #[test]
    fn a_long_query_costs_its_length() {
        let docs = [DocText {
            server: "s".into(),
            name: "get_item".into(),
            description: "Gets an item".into(),
            ..DocText::default()
        }];
        let index = Index::build(&docs);
        let query = "xY ".repeat(130_000) + "item";
        let started = std::time::Instant::now();
        let hits = index.search(&query, 5);
        assert!(started.elapsed() < std::time::Duration::from_secs(20));
        assert_eq!(hits.first().map(|h| h.0), Some(0));
    }

    #[test]
    fn identifiers_split_at_every_convention() {
        assert_eq!(
            identifier_words("get_currentTime-v2 HTTPServer"),
            ["get", "current", "time", "v", "2", "httpserver"]
        );
        assert_eq!(
            prose_words("Open a GitHub issue"),
            ["open", "a", "github", "issue"]
        );
    }

    fn doc(server: &str, name: &str, description: &str) -> DocText {
        DocText {
            server: server.into(),
            name: name.into(),
            description: description.into(),
            ..DocText::default()
        }
    }

    #[test]
    fn names_outweigh_descriptions_and_stems_match() {
        let docs = [
            doc(
                "fs",
                "read_file",
                "Read the complete contents of a file from the file system",
            ),
            doc(
                "fs",
                "list_directory",
                "List files and directories; mentions reading",
            ),
            doc(
                "time",
                "get_current_time",
                "Get current time in a specific timezone",
            ),
            doc("time", "convert_time", "Convert time between timezones"),
        ];
        let index = Index::build(&docs);
        assert_eq!(index.search("read a file", 2)[0].0, 0);
        assert_eq!(index.search("what is the current time", 1)[0].0, 2);
        assert_eq!(index.search("converting timezones", 1)[0].0, 3);
        assert!(
            index.search("the of and", 5).is_empty(),
            "stop words match nothing"
        );
        assert!(index.search("zebra", 5).is_empty());
        assert_eq!(index.search("time", 10).len(), 2);
    }
}
