"""Exercises and quiz of notebook 02, the BERT architecture: attention by hand and parameter counts."""

import math

import torch

from ..config import BertConfig
from . import Question, run_check

EX = "02"


# ---- 02.1 a causal attention head by hand ----
def attention_variants(q, k, v, key_mask):
    """The right answer first, then the usual slips, name -> output."""
    T, d = q.shape
    past = torch.ones(T, T, dtype=torch.bool).tril()  # query i may look at keys 0..i
    real = key_mask.bool()[None, :]  # (1, T): padding keys are never looked at

    def attend(scale=math.sqrt(d), keep=past & real, dim=-1, multiply=False):
        scores = q @ k.T / scale
        scores = scores * keep if multiply else scores.masked_fill(~keep, float("-inf"))
        return scores.softmax(dim) @ v

    return {
        "right": attend(),
        "future visible": attend(keep=real.expand(T, T)),
        "future only": attend(keep=torch.ones(T, T, dtype=torch.bool).triu() & real),
        "padding visible": attend(keep=past),
        "not scaled": attend(scale=1.0),
        "scaled by d": attend(scale=float(d)),
        "softmax over queries": attend(dim=0),
        "mask multiplied": attend(multiply=True),
        "diagonal excluded": attend(keep=torch.ones(T, T, dtype=torch.bool).tril(-1) & real),
    }


ATTENTION_HINTS = {
    "future visible": "query i can still see the keys after it: also hide keys j > i (a lower-triangular mask, "
                      "torch.ones(T, T).tril())",
    "future only": "the triangle is the wrong way round: query i may see keys 0..i (tril), not i..T-1 (triu)",
    "padding visible": "the causal part is right, but padding keys (key_mask == 0) must be hidden as well",
    "not scaled": "divide the scores q @ k.T by sqrt(d), the head size: without it, large dot products make the "
                  "softmax nearly one-hot",
    "scaled by d": "divide by sqrt(d), not by d",
    "softmax over queries": "softmax over the KEYS (the last axis, dim=-1): each query's weights must sum to 1",
    "mask multiplied": "multiplying scores by the mask makes them 0, and exp(0) = 1 still gives weight: use "
                       "scores.masked_fill(~allowed, float('-inf'))",
    "diagonal excluded": "a token may look at itself: keep the diagonal (tril() with diagonal=0), or query 0 has "
                         "nothing to look at",
}


def attention_cases():
    g = torch.Generator().manual_seed(0)
    cases = []
    for T, d, real in ((6, 4, 4), (5, 16, 5), (7, 8, 3)):
        q, k, v = (torch.randn(T, d, generator=g) * 2 for _ in range(3))
        key_mask = (torch.arange(T) < real).long()
        cases.append((q, k, v, key_mask))
    return cases


def check_causal_attention(causal_attention):
    """causal_attention(q, k, v, key_mask) -> (T, d): one head where query i sees keys 0..i that are not padding."""
    def judge():
        for q, k, v, key_mask in attention_cases():
            variants = attention_variants(q, k, v, key_mask)
            got = causal_attention(q.clone(), k.clone(), v.clone(), key_mask.clone())
            if not isinstance(got, torch.Tensor):
                return f"return a tensor, not {type(got).__name__}"
            if got.shape == (len(q), len(k)) and got.shape != v.shape:
                return "those look like the attention weights (T, T); return weights @ v, shape (T, d)"
            if got.shape != v.shape:
                return f"the output has one row per query and d columns: shape {tuple(v.shape)}, not {tuple(got.shape)}"
            if torch.allclose(got, variants["right"], atol=1e-5):
                continue
            for name, hint in ATTENTION_HINTS.items():
                if torch.allclose(got, variants[name], atol=1e-5, equal_nan=True):
                    return hint
            if torch.isnan(got).any():
                return "NaN in the output: some query has no key it may look at (every score -inf)"
            return ("compare step by step: scores = q @ k.T / sqrt(d); hide keys j > i and padding keys with "
                    "masked_fill(-inf); softmax(dim=-1); @ v")
        return None
    return run_check(f"{EX}.1 a causal attention head by hand", judge)


# ---- 02.2 and 02.3 parameter counts ----
def embedding_parameter_variants(c):
    V, P, S, H = c.vocab_size, c.max_position_embeddings, c.type_vocab_size, c.hidden_size
    return {
        "right": V * H + P * H + S * H + 2 * H,
        "no position": V * H + S * H + 2 * H,
        "no segment": V * H + P * H + 2 * H,
        "no LayerNorm": V * H + P * H + S * H,
        "LayerNorm half": V * H + P * H + S * H + H,
        "words only": V * H,
    }


EMBEDDING_HINTS = {
    "no position": "you forgot the position table: max_position_embeddings x hidden_size",
    "no segment": "you forgot the segment (token type) table: type_vocab_size x hidden_size",
    "no LayerNorm": "you forgot the LayerNorm after the sum: a weight and a bias, hidden_size each",
    "LayerNorm half": "LayerNorm has a weight AND a bias: 2 x hidden_size",
    "words only": "the word table is only one of three tables (words, positions, segments), then a LayerNorm",
}

CONFIGS = [BertConfig.tiny(vocab_size=8000), BertConfig.base(), BertConfig.mini(vocab_size=500, type_vocab_size=3)]


def judge_counts(fn, variants, hints, what):
    """Run fn on every config; a hint applies only if it explains all of them (some slips coincide on one)."""
    answers = []
    for config in CONFIGS:
        got = fn(config)
        if isinstance(got, torch.Tensor) and got.numel() == 1 and not got.is_floating_point():
            got = int(got)
        if not isinstance(got, int) or isinstance(got, bool):
            return f"return the count as an int, not {type(got).__name__}"
        answers.append(got)
    expected = [variants(config) for config in CONFIGS]
    if all(got == e["right"] for got, e in zip(answers, expected)):
        return None
    for name, hint in hints.items():
        if all(got == e[name] for got, e in zip(answers, expected)):
            return hint
    config, got, e = next((c, g, e) for c, g, e in zip(CONFIGS, answers, expected) if g != e["right"])
    return (f"for a config with hidden_size={config.hidden_size}, vocab_size={config.vocab_size} the {what} "
            f"have {e['right']:,} parameters; you have {got:,}")


def check_embedding_parameters(embedding_parameters):
    """embedding_parameters(config) -> the number of parameters of BertEmbeddings."""
    return run_check(f"{EX}.2 parameters of the embeddings",
                     lambda: judge_counts(embedding_parameters, embedding_parameter_variants, EMBEDDING_HINTS,
                                          "embeddings"))


def layer_parameter_variants(c):
    H, I = c.hidden_size, c.intermediate_size
    attention = 4 * (H * H + H)  # query, key, value and the output projection, with biases
    feed_forward = (H * I + I) + (I * H + H)
    norms = 2 * 2 * H
    return {
        "right": attention + feed_forward + norms,
        "no biases": 4 * H * H + 2 * H * I + norms,
        "no output projection": 3 * (H * H + H) + feed_forward + norms,
        "no LayerNorm": attention + feed_forward,
        "one LayerNorm": attention + feed_forward + 2 * H,
        "half feed-forward": attention + (H * I + I) + norms,
        "per head": c.num_attention_heads * 3 * (H * H + H) + (H * H + H) + feed_forward + norms,
    }


LAYER_HINTS = {
    "no biases": "every nn.Linear here has a bias: in_features x out_features + out_features",
    "no output projection": "after the heads are joined, attention.output.dense (H x H + H) mixes them: four "
                            "H x H matrices, not three",
    "no LayerNorm": "you forgot the two LayerNorms (after attention and after the feed-forward), 2 x H each",
    "one LayerNorm": "a layer has TWO LayerNorms, one after each sub-layer, 2 x H parameters each",
    "half feed-forward": "the feed-forward block has two matrices: H -> intermediate_size and back",
    "per head": "the heads share the H x H query/key/value matrices (each head uses H / num_heads of the columns); "
                "do not multiply by the number of heads",
}


def check_layer_parameters(layer_parameters):
    """layer_parameters(config) -> the number of parameters of one BertLayer (encoder block)."""
    return run_check(f"{EX}.3 parameters of one transformer layer",
                     lambda: judge_counts(layer_parameters, layer_parameter_variants, LAYER_HINTS, "layer's weights"))


QUIZ = {EX: {
    "q1": Question(
        "Why are attention scores divided by sqrt(d), d being the head size?",
        {"A": "to make the weights sum to 1", "B": "the dot product of two random d-dimensional vectors has a "
         "standard deviation that grows like sqrt(d); unscaled, the softmax saturates into a near one-hot and "
         "its gradients vanish",
         "C": "to save memory", "D": "to hide padding"}, "B",
        "dividing by sqrt(d) keeps the scores' spread about the same for any head size.",
        {"A": "the softmax does that."}),
    "q2": Question(
        "Self-attention without position embeddings would treat 'dog bites man' and 'man bites dog' how?",
        {"A": "as different sentences, because attention reads left to right",
         "B": "as the same bag of tokens: each token would get the same vector in both, only in another place",
         "C": "it would fail with an error", "D": "it would see only the first token"}, "B",
        "attention itself ignores order (it is permutation-equivariant); the position table tells the model "
        "where each token is."),
    "q3": Question(
        "What does the segment (token type) embedding add to a token's vector?",
        {"A": "its position in the sentence", "B": "one of type_vocab_size learned vectors saying whether the token "
         "belongs to segment A or B", "C": "the [CLS] vector", "D": "nothing at inference time"}, "B",
        "for a pair [CLS] A [SEP] B [SEP], every token of B gets the segment-1 vector added, so the model can tell "
        "the two segments apart."),
    "q4": Question(
        "minibert and transformers give the same logits on the same weights. What does that let you do?",
        {"A": "load a checkpoint trained with one in the other, and check one implementation against the other",
         "B": "train twice as fast", "C": "skip tokenization", "D": "use a smaller vocabulary"}, "A",
        "the same parameter names and the same computation make checkpoints interchangeable, and a difference "
        "in outputs would reveal a bug."),
    "q5": Question(
        "In our tiny model (width 128, 2 layers, 8,000-token vocabulary), which part has the most parameters?",
        {"A": "the attention layers", "B": "the feed-forward layers", "C": "the embeddings, because of the "
         "8,000 x 128 word table", "D": "the pooler"}, "C",
        "8,000 x 128 = 1.02 million, more than both layers together (about 0.4 million); in bert-base the "
        "layers dominate."),
}}
