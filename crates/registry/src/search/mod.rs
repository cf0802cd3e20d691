//! Lexical retrieval over the catalogue: BM25 with field weights (a tool's name counts more
//! than its description), identifiers split at `snake_case`, `kebab-case` and `camelCase`
//! boundaries, English stemming and stop words. Built in memory from the catalogue snapshot;
//! a query is a few postings walks over a dense score array.

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

const WEIGHT_NAME: f32 = 3.0;
const WEIGHT_TITLE: f32 = 2.0;
const WEIGHT_SERVER: f32 = 1.0;
const WEIGHT_DESCRIPTION: f32 = 1.0;
const WEIGHT_PARAM_NAME: f32 = 1.5;
const WEIGHT_PARAM_DESCRIPTION: f32 = 0.25;
const K1: f32 = 1.2;
const B: f32 = 0.75;

const STOP_WORDS: &[&str] = &[
    "a", "an", "and", "are", "as", "at", "be", "by", "can", "do", "does", "for", "from", "how",
    "i", "in", "is", "it", "its", "me", "my", "of", "on", "or", "please", "that", "the", "this",
    "to", "use", "what", "when", "where", "which", "with", "you", "your",
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
];
const EXPANSION_WEIGHT: f32 = 0.5;

/// Splits identifiers and prose into lower-case words.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut prev: Option<char> = None;
    for c in text.chars() {
        if !c.is_alphanumeric() {
            flush(&mut cur, &mut out);
            prev = None;
            continue;
        }
        if let Some(p) = prev {
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

/// The index. Documents are numbered in the order they were added.
pub struct Index {
    stemmer: Stemmer,
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
    pub fn build<'a>(docs: impl IntoIterator<Item = &'a DocText>) -> Self {
        let stemmer = Stemmer::create(Algorithm::English);
        let mut postings: HashMap<String, Vec<(u32, f32)>> = HashMap::new();
        let mut doc_len = Vec::new();
        for (i, d) in docs.into_iter().enumerate() {
            let mut tf: HashMap<String, f32> = HashMap::new();
            let mut add = |text: &str, weight: f32| {
                for t in terms(&stemmer, text) {
                    *tf.entry(t).or_default() += weight;
                }
            };
            add(&d.name, WEIGHT_NAME);
            add(&d.title, WEIGHT_TITLE);
            add(&d.server, WEIGHT_SERVER);
            add(&d.description, WEIGHT_DESCRIPTION);
            d.param_names.iter().for_each(|p| add(p, WEIGHT_PARAM_NAME));
            d.param_descriptions
                .iter()
                .for_each(|p| add(p, WEIGHT_PARAM_DESCRIPTION));
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

    /// The query's terms with their weights: its own words at 1, expansions lower.
    fn query_terms(&self, query: &str) -> Vec<(String, f32)> {
        let mut weighted: HashMap<String, f32> = HashMap::new();
        for word in words(query) {
            if let Some((_, extra)) = QUERY_EXPANSIONS.iter().find(|(w, _)| *w == word) {
                for e in *extra {
                    let t = self.stemmer.stem(e).into_owned();
                    let w = weighted.entry(t).or_default();
                    *w = w.max(EXPANSION_WEIGHT);
                }
            }
            if !STOP_WORDS.contains(&word.as_str()) {
                weighted.insert(self.stemmer.stem(&word).into_owned(), 1.0);
            }
        }
        let mut out: Vec<(String, f32)> = weighted.into_iter().collect();
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
        let by_score = |a: &(usize, f32), b: &(usize, f32)| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0));
        if hits.len() > limit && limit > 0 {
            hits.select_nth_unstable_by(limit - 1, by_score);
            hits.truncate(limit);
        }
        hits.sort_by(by_score);
        hits.truncate(limit);
        hits
    }
}

fn terms(stemmer: &Stemmer, text: &str) -> Vec<String> {
    words(text)
        .into_iter()
        .filter(|w| !STOP_WORDS.contains(&w.as_str()))
        .map(|w| stemmer.stem(&w).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identifiers_split_at_every_convention() {
        assert_eq!(
            words("get_currentTime-v2 HTTPServer"),
            ["get", "current", "time", "v", "2", "httpserver"]
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
