"""Exercises of notebook 02, the BERT architecture: attention by hand and parameter counts."""

import math

import torch

from ..model.bert import attention
from ..model.config import BertConfig
from .framework import Slip, exercise, judge_answer

EX = "02"


# ---- 02.1 a causal attention head by hand ----
def causal_head(q, k, v, key_mask):
    """The right answer, minibert's attention: query i looks at keys 0..i that are not padding."""
    padding = torch.zeros(len(k)).masked_fill(key_mask == 0, float("-inf"))  # (T,): added to each query's scores
    return attention(q, k, v, bias=padding, is_causal=True)[0]


def attend(q, k, v, key_mask, keys="causal", scale=None, dim=-1, multiply=False):
    """One causal head written out, whose other arguments make the usual slips: which keys a query may look at
    ("future visible", "future only": the triangle the wrong way round (triu), "padding visible", "diagonal
    excluded"), the scale (sqrt(d) by default), the softmax's axis, and the mask multiplied into the scores
    instead of -inf."""
    T, d = q.shape
    ones = torch.ones(T, T, dtype=torch.bool)
    real = key_mask.bool()[None, :]  # (1, T): padding keys are never looked at
    keep = {"causal": ones.tril() & real, "future visible": real.expand(T, T), "future only": ones.triu() & real,
            "padding visible": ones.tril(), "diagonal excluded": ones.tril(-1) & real}[keys]
    scores = q @ k.T / (math.sqrt(d) if scale is None else scale)
    scores = scores * keep if multiply else scores.masked_fill(~keep, float("-inf"))
    return scores.softmax(dim) @ v


ATTENTION_SLIPS = [  # on the case (q, k, v, key_mask)
    Slip("future visible", lambda *case: attend(*case, keys="future visible"),
         "query i can still see the keys after it: also hide keys j > i (a lower-triangular mask, "
         "torch.ones(T, T).tril())"),
    Slip("future only", lambda *case: attend(*case, keys="future only"),
         "the triangle is the wrong way round: query i may see keys 0..i (tril), not i..T-1 (triu)"),
    Slip("padding visible", lambda *case: attend(*case, keys="padding visible"),
         "the causal part is right, but padding keys (key_mask == 0) must be hidden as well"),
    Slip("not scaled", lambda *case: attend(*case, scale=1.0),
         "divide the scores q @ k.T by sqrt(d), the head size: without it, large dot products make the softmax "
         "nearly one-hot"),
    Slip("scaled by d", lambda q, k, v, key_mask: attend(q, k, v, key_mask, scale=float(q.shape[1])),
         "divide by sqrt(d), not by d"),
    Slip("softmax over queries", lambda *case: attend(*case, dim=0),
         "softmax over the KEYS (the last axis, dim=-1): each query's weights must sum to 1"),
    Slip("mask multiplied", lambda *case: attend(*case, multiply=True),
         "multiplying scores by the mask makes them 0, and exp(0) = 1 still gives weight: use "
         "scores.masked_fill(~allowed, float('-inf'))"),
    Slip("diagonal excluded", lambda *case: attend(*case, keys="diagonal excluded"),
         "a token may look at itself: keep the diagonal (tril() with diagonal=0), or query 0 has nothing to look at"),
]


def attention_cases():
    g = torch.Generator().manual_seed(0)
    cases = []
    for T, d, real in ((6, 4, 4), (5, 16, 5), (7, 8, 3)):
        q, k, v = (torch.randn(T, d, generator=g) * 2 for _ in range(3))
        key_mask = (torch.arange(T) < real).long()
        cases.append((q, k, v, key_mask))
    return cases


def head_output_form(got, q, k, v):
    """A hint when `got` is not the head's output, a (T, d) tensor, else None."""
    if not isinstance(got, torch.Tensor):
        return f"return a tensor, not {type(got).__name__}"
    if got.shape == (len(q), len(k)) and got.shape != v.shape:
        return "those look like the attention weights (T, T); return weights @ v, shape (T, d)"
    if got.shape != v.shape:
        return f"the output has one row per query and d columns: shape {tuple(v.shape)}, not {tuple(got.shape)}"
    return None


def attention_hint(got):
    if torch.isnan(got).any():
        return "NaN in the output: some query has no key it may look at (every score -inf)"
    return ("compare step by step: scores = q @ k.T / sqrt(d); hide keys j > i and padding keys with "
            "masked_fill(-inf); softmax(dim=-1); @ v")


@exercise(EX, 1, "a causal attention head by hand", cases=attention_cases)
def check_causal_attention(causal_attention, q, k, v, key_mask):
    """causal_attention(q, k, v, key_mask) -> (T, d): one head where query i sees keys 0..i that are not padding."""
    got = causal_attention(q.clone(), k.clone(), v.clone(), key_mask.clone())
    return judge_answer(got, causal_head(q, k, v, key_mask), ATTENTION_SLIPS, (q, k, v, key_mask),
                        form=lambda got: head_output_form(got, q, k, v),
                        same=lambda a, b: torch.allclose(a, b, atol=1e-5, equal_nan=True), fallback=attention_hint)


# ---- 02.2 and 02.3 parameter counts ----
def embedding_count(c, positions=True, segments=True, norm_vectors=2):
    """The parameters of BertEmbeddings: the word, position and segment tables, then a LayerNorm (a weight and a
    bias). The other arguments make the usual slips: a table or the LayerNorm (or half of it) forgotten."""
    tables = c.vocab_size + c.max_position_embeddings * positions + c.type_vocab_size * segments
    return (tables + norm_vectors) * c.hidden_size


EMBEDDING_SLIPS = [
    Slip("no position", lambda c: embedding_count(c, positions=False),
         "you forgot the position table: max_position_embeddings x hidden_size"),
    Slip("no segment", lambda c: embedding_count(c, segments=False),
         "you forgot the segment (token type) table: type_vocab_size x hidden_size"),
    Slip("no LayerNorm", lambda c: embedding_count(c, norm_vectors=0),
         "you forgot the LayerNorm after the sum: a weight and a bias, hidden_size each"),
    Slip("LayerNorm half", lambda c: embedding_count(c, norm_vectors=1),
         "LayerNorm has a weight AND a bias: 2 x hidden_size"),
    Slip("words only", lambda c: embedding_count(c, positions=False, segments=False, norm_vectors=0),
         "the word table is only one of three tables (words, positions, segments), then a LayerNorm"),
]

CONFIGS = [BertConfig.tiny(vocab_size=8000), BertConfig.base(), BertConfig.mini(vocab_size=500, type_vocab_size=3)]


def judge_counts(count, right, slips, what):
    """Run count on every config; a slip explains the counts only if it explains all of them (some slips coincide
    on one config)."""
    answers = []
    for config in CONFIGS:
        got = count(config)
        if isinstance(got, torch.Tensor) and got.numel() == 1 and not got.is_floating_point():
            got = int(got)
        if not isinstance(got, int) or isinstance(got, bool):
            return f"return the count as an int, not {type(got).__name__}"
        answers.append(got)

    def first_wrong(answers):
        config, got = next((c, got) for c, got in zip(CONFIGS, answers) if got != right(c))
        return (f"for a config with hidden_size={config.hidden_size}, vocab_size={config.vocab_size} the {what} "
                f"have {right(config):,} parameters; you have {got:,}")
    return judge_answer(answers, [right(c) for c in CONFIGS], slips, cases=[(c,) for c in CONFIGS],
                        fallback=first_wrong)


@exercise(EX, 2, "parameters of the embeddings")
def check_embedding_parameters(embedding_parameters):
    """embedding_parameters(config) -> the number of parameters of BertEmbeddings."""
    return judge_counts(embedding_parameters, embedding_count, EMBEDDING_SLIPS, "embeddings")


def layer_count(c, biases=True, attention_matrices=4, feed_forward_matrices=2, norms=2):
    """The parameters of one BertLayer: query, key, value and output projection (H x H, with biases), the
    feed-forward block (H -> intermediate_size -> H) and two LayerNorms. The other arguments make the usual slips:
    the biases, a projection, half the feed-forward block or a LayerNorm forgotten, or the query/key/value
    matrices counted once per head."""
    H, I = c.hidden_size, c.intermediate_size

    def linear(n_in, n_out):
        return n_in * n_out + n_out * biases
    feed_forward = [linear(H, I), linear(I, H)][:feed_forward_matrices]
    return attention_matrices * linear(H, H) + sum(feed_forward) + norms * 2 * H


LAYER_SLIPS = [
    Slip("no biases", lambda c: layer_count(c, biases=False),
         "every nn.Linear here has a bias: in_features x out_features + out_features"),
    Slip("no output projection", lambda c: layer_count(c, attention_matrices=3),
         "after the heads are joined, attention.output.dense (H x H + H) mixes them: four H x H matrices, not three"),
    Slip("no LayerNorm", lambda c: layer_count(c, norms=0),
         "you forgot the two LayerNorms (after attention and after the feed-forward), 2 x H each"),
    Slip("one LayerNorm", lambda c: layer_count(c, norms=1),
         "a layer has TWO LayerNorms, one after each sub-layer, 2 x H parameters each"),
    Slip("half feed-forward", lambda c: layer_count(c, feed_forward_matrices=1),
         "the feed-forward block has two matrices: H -> intermediate_size and back"),
    Slip("per head", lambda c: layer_count(c, attention_matrices=3 * c.num_attention_heads + 1),
         "the heads share the H x H query/key/value matrices (each head uses H / num_heads of the columns); do not "
         "multiply by the number of heads"),
]


@exercise(EX, 3, "parameters of one transformer layer")
def check_layer_parameters(layer_parameters):
    """layer_parameters(config) -> the number of parameters of one BertLayer (encoder block)."""
    return judge_counts(layer_parameters, layer_count, LAYER_SLIPS, "layer's weights")
