"""Exercises of notebook 07, attention: entropy, attention with a padding mask, and what a head looks at."""

import math

import torch

from ..model.bert import attention, attention_bias
from .framework import Slip, exercise, expect, judge_answer

EX = "07"


def entropy_cases():
    """The weights of 2 heads over 5 tokens, (heads, T, T): attending both ways, then causal (rows with zeros)."""
    g = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, 5, 4, generator=g) for _ in range(3))  # (heads, T, head size)
    return [(attention(q, k, v, is_causal=causal)[1],) for causal in (False, True)]


def entropy(w, axis=-1):
    """The entropy (nats) of each row of the weights w, a distribution over the keys (the last axis)."""
    return -torch.special.xlogy(w, w).sum(axis)  # p log p, and 0 where p is 0


ENTROPY_SLIPS = [
    Slip("negated", lambda w: -entropy(w), "entropy is MINUS the sum of p log p: it is never negative"),
    Slip("bits", lambda w: entropy(w) / math.log(2),
         "use the natural log (nats), as the notebook does; log2 gives bits"),
    Slip("over queries", lambda w: entropy(w, axis=-2),
         "wrong axis: a row (one query, the last axis) is a probability distribution over the keys; sum over the last "
         "axis"),
]


def entropy_form(got, shape):
    """A hint when `got` is not one entropy per head and query, or holds NaN, else None."""
    if not isinstance(got, torch.Tensor) or got.shape != shape:
        return f"return one entropy per head and query, shape (heads, T) = {tuple(shape)}: sum over the keys only"
    if torch.isnan(got).any():
        return ("you got NaN: a causal row has weights that are exactly 0 and 0 * log(0) is NaN in floating point; "
                "it should count as 0 (torch.special.xlogy(p, p), or log(p.clamp_min(1e-12)))")
    return None


@exercise(EX, 1, "attention entropy", cases=entropy_cases)
def check_attention_entropy(attention_entropy, w):
    """attention_entropy(weights) -> the entropy (nats) of every query row; weights (heads, T, T) -> (heads, T)."""
    expected = entropy(w)
    got = attention_entropy(w.clone())
    return judge_answer(got, expected, ENTROPY_SLIPS, (w,), same=lambda a, b: torch.allclose(a, b, atol=1e-4),
                        form=lambda got: entropy_form(got, expected.shape),
                        fallback="for each row compute -sum(p * log p) over the keys (the last axis)")


def _masked_case(B, T, d, lengths, seed):
    """Queries, keys and values of 2 heads, (B, 2, T, d), and an attention mask (B, T) with `lengths` real tokens."""
    g = torch.Generator().manual_seed(seed)
    q, k, v = (torch.randn(B, 2, T, d, generator=g) for _ in range(3))
    mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).long()
    return q, k, v, mask


def masked_cases():
    """Padding patterns: none, a little, a lot; the second batch has as many sequences as tokens."""
    return [_masked_case(3, 5, 4, [5, 3, 4], 0), _masked_case(4, 4, 8, [2, 4, 1, 3], 1)]


def masked_reference(q, k, v, mask):
    """The right answer, minibert's attention with the padding keys hidden: (output, weights)."""
    T = mask.shape[1]
    return attention(q, k, v, bias=attention_bias(mask, T, T, causal=False, dtype=q.dtype))


def _padding_keys(mask):
    return mask[:, None, None, :] == 0  # (B, 1, 1, T)


def _padding_queries(mask):
    return mask[:, None, :, None] == 0  # (B, 1, T, 1)


def _masked_weights(q, k, mask, fill=float("-inf"), scale=None, dim=-1, masked=None):
    """Attention weights written out, whose arguments make the common mistakes: another fill, another scale,
    another softmax axis, another mask than the padding keys."""
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale)  # (B, nh, T, T)
    hide = _padding_keys(mask) if masked is None else masked
    return scores.masked_fill(hide, fill).softmax(dim)


def _either_fill(q, k, mask, **slip):
    """A slip's weights hiding with -inf and with -1e9, the two usual fills: they differ where a row has no key
    left."""
    return tuple(_masked_weights(q, k, mask, fill, **slip) for fill in (float("-inf"), -1e9))


def _broadcast_wrongly(q, k, mask):
    """The weights of a (B, T) mask broadcast against (T, T) scores (mask row i used for query i): without an error
    only when B == T, so only such a case can show it."""
    B, T = mask.shape
    return _either_fill(q, k, mask, masked=mask[None, None] == 0) if B == T else None


MASKED_ATTENTION_SLIPS = [  # weights, with either fill, on the case (q, k, attention_mask)
    Slip("no mask", lambda q, k, mask: _either_fill(q, k, mask, masked=torch.zeros_like(_padding_keys(mask))),
         "padding keys still get attention: hide the keys where attention_mask == 0 (-inf on their scores) before "
         "the softmax"),
    Slip("not scaled", lambda q, k, mask: _either_fill(q, k, mask, scale=1.0),
         "scale the scores by 1 / sqrt(d), d the head size (the last axis of q): without it the softmax is too "
         "sharp"),
    Slip("scaled by d", lambda q, k, mask: _either_fill(q, k, mask, scale=float(q.shape[-1])),
         "scale by sqrt(d), not by d"),
    Slip("mask on the queries", lambda q, k, mask: _either_fill(q, k, mask, masked=_padding_queries(mask)),
         "the mask goes on the KEYS (the last axis of the scores), not on the queries: view it as (B, 1, 1, T). A "
         "padding query still attends to the real keys; no query may attend to a padding key"),
    Slip("mask on queries and keys",
         lambda q, k, mask: _either_fill(q, k, mask, masked=_padding_queries(mask) | _padding_keys(mask)),
         "mask only the KEYS: masking the padding queries too leaves their rows with nothing to attend to. View the "
         "mask as (B, 1, 1, T)"),
    Slip("softmax over queries", lambda q, k, mask: _either_fill(q, k, mask, dim=-2),
         "softmax over the keys, the last axis (dim=-1): each query's row must sum to 1"),
    Slip("mask inverted", lambda q, k, mask: _either_fill(q, k, mask, masked=~_padding_keys(mask)),
         "the mask is inverted: 1 means a real token, 0 padding. Hide the keys where attention_mask == 0"),
    Slip("mask broadcast wrongly", _broadcast_wrongly,
         "the mask is broadcast wrongly: a (B, T) mask against (B, heads, T, T) scores lines up with (queries, keys), "
         "not with (batch, keys). View it as (B, 1, 1, T), attention_mask[:, None, None, :]"),
]


def close_to_either(weights, pair):
    """Are the weights those of a slip with either fill (-inf or -1e9)?"""
    return any(torch.allclose(weights, w, atol=1e-5, equal_nan=True) for w in pair)


def masking_hint(weights, q, k, v, mask):
    """What is wrong with attention weights that no slip explains: the mask applied after the softmax, NaN,
    weight left on padding keys, rows that do not sum to 1, or else."""
    keys = _padding_keys(mask)
    unmasked = attention(q, k, v)[1]
    if torch.allclose(weights.masked_fill(keys, 0), unmasked.masked_fill(keys, 0), atol=1e-5):
        return ("the mask must act BEFORE the softmax: put -inf (or a large negative number) on the scores of the "
                "padding keys, then softmax. Zeroing or adding after the softmax leaves the real keys' weights as "
                "they were, and rows that no longer sum to 1")
    if torch.isnan(weights).any():
        return "NaN in the weights: a row has no key left to attend to; hide only the padding keys"
    if (weights.masked_select(keys.expand_as(weights)).abs() > 1e-6).any():
        return "padding keys must get weight 0: put -inf on their scores (attention_mask == 0) before the softmax"
    if not torch.allclose(weights.sum(-1), torch.ones(()), atol=1e-4):
        return "each row (one query) must sum to 1 over the keys: softmax over the last axis, after masking"
    return ("weights = softmax over the last axis of q k^T / sqrt(d), with -inf on the padding keys; "
            "output = weights @ v")


@exercise(EX, 2, "attention with a padding mask", cases=masked_cases)
def check_masked_attention(masked_attention, q, k, v, mask):
    """masked_attention(q, k, v, attention_mask) -> (output (B, nh, T, d), weights (B, nh, T, T)) with padding
    keys hidden: compared with minibert's attention."""
    B, heads, T, d = q.shape
    try:
        got = masked_attention(q.clone(), k.clone(), v.clone(), mask.clone())
    except NotImplementedError:
        raise
    except RuntimeError as e:
        if "size of tensor" in str(e) or "broadcast" in str(e):
            return (f"the mask does not broadcast (your code raised: {e}). attention_mask is (B, T) and the "
                    "scores are (B, heads, T, T): view it as (B, 1, 1, T), attention_mask[:, None, None, :], "
                    "so that it lines up with the keys of every head and every query")
        raise
    if not (isinstance(got, tuple) and len(got) == 2 and all(isinstance(x, torch.Tensor) for x in got)):
        return "return two tensors: (output, weights)"
    out, weights = got
    if tuple(out.shape) != (B, heads, T, d) or tuple(weights.shape) != (B, heads, T, T):
        return (f"shapes: output (B, heads, T, d) = {(B, heads, T, d)} and weights (B, heads, T, T) = "
                f"{(B, heads, T, T)}; got {tuple(out.shape)} and {tuple(weights.shape)}")
    right_out, right_weights = masked_reference(q, k, v, mask)
    hint = judge_answer(weights, (right_weights,), MASKED_ATTENTION_SLIPS, (q, k, mask), same=close_to_either,
                        fallback=lambda weights: masking_hint(weights, q, k, v, mask))
    if hint is None and not torch.allclose(out, right_out, atol=1e-5):
        return "the weights are right; the output is the weighted average of the values: weights @ v"
    return hint


def _padded_batch():
    """Attention of one head over a batch of 2 sequences, the second padded: (B, T, T), mask (B, T)."""
    g = torch.Generator().manual_seed(3)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    scores = torch.randn(2, 5, 5, generator=g) * 2
    scores = scores.masked_fill(mask[:, None, :] == 0, float("-inf"))  # no query looks at padding
    return scores.softmax(-1), mask


def _weight_per_query(w, key_is):
    return (w * key_is[:, None, :]).sum(-1)  # (B, T): each query's weight on the chosen keys


def attention_to_reference(w, key_is, mask):
    """The average weight the real queries put on the chosen keys."""
    return _weight_per_query(w, key_is)[mask.bool()].mean().item()


def _keys_averaged(w, key_is, mask):
    return (_weight_per_query(w, key_is) / key_is.sum(-1, keepdim=True))[mask.bool()].mean().item()


ATTENTION_TO_SLIPS = [  # on the case (weights, key_is, attention_mask)
    Slip("padding queries", lambda w, key_is, mask: _weight_per_query(w, key_is).mean().item(),
         "the padding queries are averaged in: keep the rows where attention_mask is 1 (a [PAD] query's row is not "
         "a real token's attention)"),
    Slip("keys averaged", _keys_averaged,
         "sum the weights of the chosen keys (their total share), do not average them"),
    Slip("wrong axis", lambda w, key_is, mask: (w * key_is[:, :, None]).sum(-2)[mask.bool()].mean().item(),
         "keys are the LAST axis of the weights (columns); queries are the rows"),
]


@exercise(EX, 3, "attention to a kind of token")
def check_attention_to(attention_to):
    """attention_to(weights, key_is, attention_mask) -> the average weight a real query puts on the chosen keys."""
    w, mask = _padded_batch()
    key_is = torch.tensor([[1, 0, 0, 0, 1], [1, 0, 1, 0, 0]], dtype=torch.bool)  # e.g. [CLS] and [SEP]
    got = attention_to(w.clone(), key_is.clone(), mask.clone())
    got = float(got) if isinstance(got, torch.Tensor) and got.numel() == 1 else got
    right = attention_to_reference(w, key_is, mask)
    return judge_answer(
        got, right, ATTENTION_TO_SLIPS, (w, key_is, mask), same=lambda a, b: abs(a - b) < 1e-5,
        form=expect(lambda got: isinstance(got, float),
                    "return one number: the average over the real queries of the weight on the chosen keys"),
        fallback=f"expected {right:.4f}: for each real query, sum its weights on the chosen keys; then average")
