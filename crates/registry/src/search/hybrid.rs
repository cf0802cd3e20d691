//! Semantic ranking beside the lexical one. An [`Embedder`] is shared by every catalogue
//! snapshot of a session: it loads the static model on first use (only deferred catalogues
//! search, so a small catalogue never loads it) and keeps each tool's vector by definition
//! hash, so a new snapshot embeds only tools it has not seen. A snapshot's
//! [`SemanticIndex`] is the matrix of its tools' vectors; the two rankings are combined by
//! reciprocal rank fusion, which needs no score calibration between them.

use super::embed::{StaticModel, normalise};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

/// Tokens of a tool's text that are embedded: the name, title and the start of the
/// description carry its meaning; long descriptions go on to usage notes.
const DOC_TOKENS: usize = 96;
/// Candidates each ranking contributes to the fusion.
pub const CANDIDATES: usize = 40;
/// Reciprocal rank fusion's damping constant (60 in the original paper; smaller lets first
/// places count more). Tuned on the evaluation set's dev part, with [`SEMANTIC_WEIGHT`].
const RRF_K: f32 = 10.0;
/// How much the semantic ranking counts beside the lexical one (1). The static model alone
/// ranks far below the lexical index on the evaluation set (recall@5 0.23 against 0.57 for
/// paraphrases), so it breaks ties and lifts near misses rather than leading.
pub const SEMANTIC_WEIGHT: f32 = 0.2;

/// How a search ranked its hits, for the model and the person to see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Ranking {
    Lexical,
    Hybrid,
}

impl Ranking {
    pub fn describe(self) -> &'static str {
        match self {
            Self::Lexical => "lexical (word matches only: no embedding model in this build)",
            Self::Hybrid => "hybrid (word matches fused with a static sentence-embedding model)",
        }
    }
}

/// What the session keeps of each tool definition it has seen, by definition hash: its
/// tokens, and its vector as the first snapshot that embedded it weighted it.
#[derive(Default)]
struct Seen {
    tokens: HashMap<String, Arc<[u32]>>,
    rows: HashMap<String, (Arc<[i8]>, f32)>,
}

/// The lazily loaded model and what it made of every tool definition seen.
#[derive(Default)]
pub struct Embedder {
    model: OnceLock<Option<StaticModel>>,
    seen: Mutex<Seen>,
}

impl std::fmt::Debug for Embedder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Embedder")
            .field("loaded", &self.model.get().is_some())
            .finish_non_exhaustive()
    }
}

impl Embedder {
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// The model, loading it on the first call; `None` when this build has none or its
    /// table is unreadable (a test reads the built-in one, so that is a build defect).
    pub fn model(&self) -> Option<&StaticModel> {
        self.model
            .get_or_init(|| StaticModel::embedded()?.ok())
            .as_ref()
    }
}

/// Weights tokens by how rare they are among the catalogue's tools (inverse document
/// frequency), so words every tool shares ("get", "the", "list") move a vector little.
/// A query token no tool has gets the largest weight.
#[derive(Debug, Default)]
pub struct TokenWeights {
    df: HashMap<u32, u32>,
    docs: u32,
}

impl TokenWeights {
    fn weight(&self, token: u32) -> f32 {
        let df = self.df.get(&token).copied().unwrap_or(0) as f32;
        (1.0 + (self.docs as f32 + 1.0) / (df + 1.0)).ln()
    }
}

fn embed(model: &StaticModel, weights: &TokenWeights, tokens: &[u32]) -> Vec<f32> {
    let mut v = vec![0.0; model.dims()];
    for &t in tokens {
        model.accumulate(t, weights.weight(t), &mut v);
    }
    normalise(&mut v);
    v
}

/// A vector as int8 components and one scale, a quarter of the f32 bytes: at 10,000 tools
/// the f32 matrix (5 MB) made a search wait on memory, not on arithmetic.
fn quantise(v: &[f32], out: &mut Vec<i8>) -> f32 {
    let max = v.iter().fold(0f32, |m, x| m.max(x.abs()));
    let scale = if max > 0.0 { max / 127.0 } else { 1.0 };
    out.extend(
        v.iter()
            .map(|x| (x / scale).round().clamp(-127.0, 127.0) as i8),
    );
    scale
}

/// An int8 dot product in sixteen independent i32 lanes, which the compiler vectorises.
fn dot(a: &[i8], b: &[i8]) -> i32 {
    let mut lanes = [0i32; 16];
    let (a16, b16) = (a.chunks_exact(16), b.chunks_exact(16));
    let tail: i32 = (a16.remainder().iter().zip(b16.remainder()))
        .map(|(x, y)| i32::from(*x) * i32::from(*y))
        .sum();
    for (x, y) in a16.zip(b16) {
        for i in 0..16 {
            lanes[i] += i32::from(x[i]) * i32::from(y[i]);
        }
    }
    lanes.iter().sum::<i32>() + tail
}

/// One snapshot's tool vectors, row i for document i, quantised.
pub struct SemanticIndex {
    dims: usize,
    matrix: Vec<i8>,
    scales: Vec<f32>,
    weights: TokenWeights,
}

impl std::fmt::Debug for SemanticIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SemanticIndex")
            .field("docs", &(self.matrix.len() / self.dims.max(1)))
            .finish()
    }
}

impl SemanticIndex {
    /// Builds the index of `docs` as (definition hash, text to embed). A definition the
    /// session has seen is neither tokenised nor embedded again.
    pub fn build(embedder: &Embedder, model: &StaticModel, docs: &[(&str, String)]) -> Self {
        let mut seen = (embedder.seen.lock()).unwrap_or_else(std::sync::PoisonError::into_inner);
        let tokens: Vec<Arc<[u32]>> = (docs.iter())
            .map(|(hash, text)| {
                let made = seen.tokens.entry((*hash).to_string()).or_insert_with(|| {
                    let mut t = model.tokens(text);
                    t.truncate(DOC_TOKENS);
                    t.into()
                });
                made.clone()
            })
            .collect();
        let mut weights = TokenWeights {
            docs: docs.len() as u32,
            ..TokenWeights::default()
        };
        for doc in &tokens {
            let mut distinct = doc.to_vec();
            distinct.sort_unstable();
            distinct.dedup();
            for t in distinct {
                *weights.df.entry(t).or_default() += 1;
            }
        }
        let dims = model.dims();
        let mut matrix = Vec::with_capacity(docs.len() * dims);
        let mut scales = Vec::with_capacity(docs.len());
        for ((hash, _), doc) in docs.iter().zip(&tokens) {
            let (row, scale) = seen.rows.entry((*hash).to_string()).or_insert_with(|| {
                let mut row = Vec::with_capacity(dims);
                let scale = quantise(&embed(model, &weights, doc), &mut row);
                (row.into(), scale)
            });
            matrix.extend_from_slice(row);
            scales.push(*scale);
        }
        Self {
            dims,
            matrix,
            scales,
            weights,
        }
    }

    /// The `limit` documents nearest to `query`, best first, as (document, cosine).
    pub fn search(&self, model: &StaticModel, query: &str, limit: usize) -> Vec<(usize, f32)> {
        let q = embed(model, &self.weights, &model.tokens(query));
        if q.iter().all(|x| *x == 0.0) {
            return Vec::new();
        }
        let mut quantised = Vec::with_capacity(q.len());
        let q_scale = quantise(&q, &mut quantised);
        let mut hits: Vec<(usize, f32)> = (self.matrix.chunks_exact(self.dims))
            .zip(&self.scales)
            .map(|(row, scale)| dot(row, &quantised) as f32 * scale * q_scale)
            .enumerate()
            .collect();
        super::top(&mut hits, limit);
        hits
    }
}

/// Weighted reciprocal rank fusion of rankings given best first, each with its weight: a
/// document's score is the sum of `weight / (k + rank)` over the rankings it appears in.
pub fn fuse(rankings: &[(&[(usize, f32)], f32)], limit: usize) -> Vec<(usize, f32)> {
    let mut scores: HashMap<usize, f32> = HashMap::new();
    for &(ranking, weight) in rankings {
        for (rank, &(doc, _)) in ranking.iter().enumerate() {
            *scores.entry(doc).or_default() += weight / (RRF_K + rank as f32 + 1.0);
        }
    }
    let mut hits: Vec<(usize, f32)> = scores.into_iter().collect();
    super::top(&mut hits, limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny_model() -> StaticModel {
        let mut t = b"MHSE".to_vec();
        for n in [1u32, 3, 2] {
            t.extend(n.to_le_bytes());
        }
        for v in [[100i8, 0], [0, 100], [70, 70]] {
            t.extend(1f32.to_le_bytes());
            t.extend(v.iter().map(|&x| x as u8));
        }
        StaticModel::parse(&t, "play\nlist\nsong").unwrap()
    }

    #[test]
    fn a_definition_seen_before_is_neither_tokenised_nor_embedded_again() {
        let model = tiny_model();
        let embedder = Embedder::default();
        let first = SemanticIndex::build(
            &embedder,
            &model,
            &[("h1", "play".into()), ("h2", "list".into())],
        );
        // The same definition hash with other text: the session's row is reused, so the
        // text cannot have been read again.
        let next = SemanticIndex::build(
            &embedder,
            &model,
            &[("h1", "list".into()), ("h3", "song".into())],
        );
        assert_eq!(first.matrix[..2], next.matrix[..2]);
        let seen = embedder.seen.lock().unwrap();
        assert_eq!((seen.tokens.len(), seen.rows.len()), (3, 3));
        assert_eq!(next.search(&model, "play", 1)[0].0, 0);
    }

    #[test]
    fn quantised_dot_products_keep_the_cosine() {
        let a: Vec<f32> = (0..21).map(|i| (i as f32 * 0.7).sin()).collect();
        let b: Vec<f32> = (0..21).map(|i| (i as f32 * 0.3).cos()).collect();
        let plain: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        let (mut qa, mut qb) = (Vec::new(), Vec::new());
        let (sa, sb) = (quantise(&a, &mut qa), quantise(&b, &mut qb));
        let approx = dot(&qa, &qb) as f32 * sa * sb;
        assert!((approx - plain).abs() < 0.02, "{approx} vs {plain}");
    }

    #[test]
    fn fusion_rewards_agreement_and_keeps_either_rankings_first_places() {
        let lexical = [(1, 9.0), (2, 5.0), (3, 1.0)];
        let semantic = [(2, 0.9), (4, 0.8), (1, 0.1)];
        let fused = fuse(&[(&lexical, 1.0), (&semantic, 1.0)], 10);
        let order: Vec<usize> = fused.iter().map(|h| h.0).collect();
        assert_eq!(order[..2], [2, 1], "both rankings hold 1 and 2 high");
        assert!(order.contains(&4) && order.contains(&3));
        assert_eq!(fuse(&[(&lexical, 1.0), (&semantic, 1.0)], 1).len(), 1);
        let lexical_led = fuse(&[(&lexical, 1.0), (&semantic, 0.2)], 10);
        assert_eq!(
            lexical_led[0].0, 1,
            "a light semantic ranking does not overturn first place"
        );
    }
}
