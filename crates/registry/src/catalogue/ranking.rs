//! How a catalogue snapshot ranks a search: its lexical index and, when an embedder is
//! attached, its semantic index, both built on the first search (only deferred catalogues
//! search, so a start that lists tools builds neither and a small catalogue never loads the
//! model), fused by rank, with a server the query names counted twice; and the plain BM25
//! baseline the evaluation compares with.

use super::{Catalogue, Entry, doc_text};
use crate::search::embed::StaticModel;
use crate::search::hybrid::{self, Embedder, Ranking, SemanticIndex};
use crate::search::{DocText, Index, Tuning, identifier_words, prose_words};
use mcp_host_core::ServerId;
use std::sync::{Arc, OnceLock};

impl Catalogue {
    /// Ranks searches semantically too, with `embedder`'s model and vector cache (shared by
    /// a session's snapshots, so each definition is embedded once).
    #[must_use]
    pub fn with_embedder(mut self, embedder: Arc<Embedder>) -> Self {
        self.embedder = Some(embedder);
        self.semantic = OnceLock::new();
        self
    }

    /// Textbook BM25 over the entries' names and descriptions: the evaluation's baseline.
    pub fn baseline_index(&self) -> Index {
        let docs: Vec<DocText> = self.entries.iter().map(doc_text).collect();
        Index::tuned(&docs, Tuning::PLAIN)
    }

    /// How [`Catalogue::search`] ranks; loads the model if it has not been loaded.
    pub fn ranking(&self) -> Ranking {
        match self.semantic_index() {
            Some(_) => Ranking::Hybrid,
            None => Ranking::Lexical,
        }
    }

    /// The model and this snapshot's tool vectors, built on the first call.
    fn semantic_index(&self) -> Option<(&StaticModel, &SemanticIndex)> {
        let embedder = self.embedder.as_deref()?;
        let model = embedder.model()?;
        let index = self.semantic.get_or_init(|| {
            let docs: Vec<(&str, String)> = (self.entries.iter())
                .map(|e| (e.hash.as_str(), embedding_text(e)))
                .collect();
            SemanticIndex::build(embedder, model, &docs)
        });
        Some((model, index))
    }

    /// The best `limit` entries for `query`, best first, with their fused scores. The
    /// lexical and (when an embedder is set) semantic rankings are fused; a server the query
    /// names ("in GitHub", "my notion pages") has its tools' places counted twice.
    pub fn search(&self, query: &str, limit: usize) -> Vec<(&Entry, f32)> {
        let lexical = self.lexical();
        let mut rankings = vec![(lexical.index.search(query, hybrid::CANDIDATES), 1.0)];
        if let Some((model, semantic)) = self.semantic_index() {
            let hits = semantic.search(model, query, hybrid::CANDIDATES);
            rankings.push((hits, hybrid::SEMANTIC_WEIGHT));
        }
        let named = lexical.named_servers(query);
        if !named.is_empty() {
            let of_named: Vec<(Vec<(usize, f32)>, f32)> = rankings
                .iter()
                .map(|(r, weight)| {
                    let kept = (r.iter().copied())
                        .filter(|(i, _)| named.contains(&&self.entries[*i].key.server))
                        .collect();
                    (kept, *weight)
                })
                .collect();
            rankings.extend(of_named);
        }
        let lists: Vec<(&[(usize, f32)], f32)> =
            rankings.iter().map(|(r, w)| (r.as_slice(), *w)).collect();
        hybrid::fuse(&lists, limit)
            .into_iter()
            .map(|(i, s)| (&self.entries[i], s))
            .collect()
    }

    fn lexical(&self) -> &Lexical {
        self.lexical.get_or_init(|| Lexical::build(&self.entries))
    }
}

/// A snapshot's lexical ranking: its index over the entries' names and descriptions, and
/// each server's name as stemmed words (entries are sorted by server, so in order).
#[derive(Debug)]
pub(super) struct Lexical {
    index: Index,
    server_words: Vec<(ServerId, Vec<String>)>,
}

impl Lexical {
    fn build(entries: &[Entry]) -> Self {
        let docs: Vec<DocText> = entries.iter().map(doc_text).collect();
        let index = Index::build(&docs);
        let mut servers: Vec<&ServerId> = entries.iter().map(|e| &e.key.server).collect();
        servers.dedup();
        let server_words = (servers.into_iter())
            .map(|s| {
                let words = prose_words(s.as_str())
                    .iter()
                    .map(|w| index.stem(w))
                    .collect();
                (s.clone(), words)
            })
            .collect();
        Self {
            index,
            server_words,
        }
    }

    /// The servers whose every name word the query uses ("google-maps" needs "google" and
    /// "maps"), compared stemmed.
    fn named_servers(&self, query: &str) -> Vec<&ServerId> {
        let asked: Vec<String> = prose_words(query)
            .iter()
            .chain(&identifier_words(query))
            .map(|w| self.index.stem(w))
            .collect();
        (self.server_words.iter())
            .filter(|(_, words)| !words.is_empty() && words.iter().all(|w| asked.contains(w)))
            .map(|(s, _)| s)
            .collect()
    }
}

/// What a tool's vector is made of: its name's words, title and description.
fn embedding_text(e: &Entry) -> String {
    let name = identifier_words(&e.key.tool).join(" ");
    let title = e.tool.title.as_deref().unwrap_or_default();
    format!("{name}. {title}. {}", e.description)
}
