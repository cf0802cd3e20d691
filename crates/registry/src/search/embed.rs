//! The static sentence-embedding model: a vector per vocabulary token, distilled once from
//! all-MiniLM-L6-v2 by `scripts/distil-embeddings.py` and shipped in the binary (the
//! `embedded-model` feature). A text's vector is the weighted mean of its WordPiece tokens'
//! vectors, L2-normalised, so embedding costs a table lookup per token: no model runtime,
//! no network. Words are split the way the lexical index splits them (identifier
//! conventions), then each word is cut into the vocabulary's longest pieces.

use std::collections::HashMap;

const MAGIC: &[u8; 4] = b"MHSE";
/// A word longer than this is one unknown token, as in BERT's WordPiece.
const MAX_WORD_CHARS: usize = 100;

/// Why a table could not be read.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TableError {
    #[error("embedding table: not a table (bad magic or version)")]
    Header,
    #[error(
        "embedding table: {tokens} tokens of {dims} dimensions need {need} bytes, found {found}"
    )]
    Size {
        tokens: usize,
        dims: usize,
        need: usize,
        found: usize,
    },
    #[error("embedding table: {table} vectors but {vocab} vocabulary lines")]
    Vocabulary { table: usize, vocab: usize },
}

/// The token table: int8 components with a scale per token.
pub struct StaticModel {
    dims: usize,
    vocab: HashMap<Box<str>, u32>,
    scales: Vec<f32>,
    values: Vec<i8>,
}

impl std::fmt::Debug for StaticModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StaticModel")
            .field("tokens", &self.scales.len())
            .field("dims", &self.dims)
            .finish()
    }
}

impl StaticModel {
    /// The model built into the binary, if it was built with one.
    pub fn embedded() -> Option<Result<Self, TableError>> {
        #[cfg(feature = "embedded-model")]
        {
            const TABLE: &[u8] = include_bytes!("../../data/minilm-static.bin");
            const VOCAB: &str = include_str!("../../data/minilm-vocab.txt");
            Some(Self::parse(TABLE, VOCAB))
        }
        #[cfg(not(feature = "embedded-model"))]
        None
    }

    /// Reads a table in the format `scripts/distil-embeddings.py` writes, with its
    /// vocabulary (one token per line, line i is token i).
    pub fn parse(table: &[u8], vocab: &str) -> Result<Self, TableError> {
        let header = table.get(..16).ok_or(TableError::Header)?;
        let word =
            |i: usize| u32::from_le_bytes([header[i], header[i + 1], header[i + 2], header[i + 3]]);
        if &header[..4] != MAGIC || word(4) != 1 {
            return Err(TableError::Header);
        }
        let (tokens, dims) = (word(8) as usize, word(12) as usize);
        let row = 4 + dims;
        let need = tokens.saturating_mul(row).saturating_add(16);
        if table.len() != need || dims == 0 {
            return Err(TableError::Size {
                tokens,
                dims,
                need,
                found: table.len(),
            });
        }
        let lines: Vec<&str> = vocab.lines().collect();
        if lines.len() != tokens {
            return Err(TableError::Vocabulary {
                table: tokens,
                vocab: lines.len(),
            });
        }
        let mut scales = Vec::with_capacity(tokens);
        let mut values = Vec::with_capacity(tokens * dims);
        for r in table[16..].chunks_exact(row) {
            scales.push(f32::from_le_bytes([r[0], r[1], r[2], r[3]]));
            values.extend(r[4..].iter().map(|&b| b as i8));
        }
        let vocab = lines
            .into_iter()
            .enumerate()
            .map(|(i, t)| (Box::from(t), i as u32))
            .collect();
        Ok(Self {
            dims,
            vocab,
            scales,
            values,
        })
    }

    pub fn dims(&self) -> usize {
        self.dims
    }

    /// The vocabulary's tokens for `text`: words split as the lexical index splits them,
    /// each cut greedily into the longest pieces the vocabulary has (`##` marks a piece
    /// inside a word). A word with no cut is dropped, not guessed.
    pub fn tokens(&self, text: &str) -> Vec<u32> {
        let mut out = Vec::new();
        for word in super::identifier_words(text) {
            self.word_pieces(&word, &mut out);
        }
        out
    }

    fn word_pieces(&self, word: &str, out: &mut Vec<u32>) {
        let chars: Vec<(usize, char)> = word.char_indices().collect();
        if chars.len() > MAX_WORD_CHARS {
            return;
        }
        let mark = out.len();
        let mut start = 0;
        let mut piece = String::new();
        while start < chars.len() {
            let mut end = chars.len();
            let mut found = None;
            while end > start {
                let from = chars[start].0;
                let to = chars.get(end).map_or(word.len(), |c| c.0);
                piece.clear();
                if start > 0 {
                    piece.push_str("##");
                }
                piece.push_str(&word[from..to]);
                if let Some(&id) = self.vocab.get(piece.as_str()) {
                    found = Some(id);
                    break;
                }
                end -= 1;
            }
            let Some(id) = found else {
                out.truncate(mark);
                return;
            };
            out.push(id);
            start = end;
        }
    }

    /// Adds `weight` times token `id`'s vector to `sum`.
    pub fn accumulate(&self, id: u32, weight: f32, sum: &mut [f32]) {
        let i = id as usize;
        let Some(&scale) = self.scales.get(i) else {
            return;
        };
        let row = &self.values[i * self.dims..(i + 1) * self.dims];
        let w = weight * scale;
        for (s, &v) in sum.iter_mut().zip(row) {
            *s += w * f32::from(v);
        }
    }
}

/// Scales `v` to unit length; a zero vector stays zero.
pub fn normalise(v: &mut [f32]) {
    let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
    if norm > 0.0 {
        v.iter_mut().for_each(|x| *x /= norm);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(vectors: &[[i8; 2]]) -> Vec<u8> {
        let mut t = b"MHSE".to_vec();
        for n in [1u32, vectors.len() as u32, 2] {
            t.extend(n.to_le_bytes());
        }
        for v in vectors {
            t.extend(1f32.to_le_bytes());
            t.extend(v.iter().map(|&x| x as u8));
        }
        t
    }

    #[test]
    fn words_are_cut_into_the_longest_pieces_and_unknown_words_dropped() {
        let m = StaticModel::parse(
            &table(&[[1, 0], [0, 1], [1, 1], [2, 2]]),
            "play\n##list\nplaylist\n##s",
        )
        .unwrap();
        assert_eq!(m.tokens("playlists"), [2, 3]);
        assert_eq!(m.tokens("play lists"), [0]);
        assert_eq!(m.tokens("getPlaylist"), [2], "'get' has no pieces here");
        let mut v = vec![0.0; 2];
        m.accumulate(3, 0.5, &mut v);
        assert_eq!(v, [1.0, 1.0]);
    }

    #[test]
    fn malformed_tables_are_refused_with_the_reason() {
        let good = table(&[[1, 0]]);
        assert_eq!(
            StaticModel::parse(b"MHSX", "a").unwrap_err(),
            TableError::Header
        );
        assert!(matches!(
            StaticModel::parse(&good[..good.len() - 1], "a"),
            Err(TableError::Size { .. })
        ));
        assert!(matches!(
            StaticModel::parse(&good, "a\nb"),
            Err(TableError::Vocabulary { table: 1, vocab: 2 })
        ));
    }

    #[cfg(feature = "embedded-model")]
    #[test]
    fn the_embedded_table_loads_and_related_words_are_close() {
        let m = StaticModel::embedded().unwrap().unwrap();
        let embed = |t: &str| {
            let mut v = vec![0.0; m.dims()];
            for id in m.tokens(t) {
                m.accumulate(id, 1.0, &mut v);
            }
            normalise(&mut v);
            v
        };
        let cos = |a: &[f32], b: &[f32]| a.iter().zip(b).map(|(x, y)| x * y).sum::<f32>();
        let (remove, delete, weather) = (embed("remove"), embed("delete"), embed("weather"));
        assert!(cos(&remove, &delete) > cos(&remove, &weather));
    }
}
