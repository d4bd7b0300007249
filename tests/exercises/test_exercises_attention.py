"""Checks of notebook 07: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import math

import torch
from helpers import assert_hints, stub

from minibert.exercises import check_attention_entropy, check_attention_to, check_masked_attention
from minibert.model.bert import attention


def entropy(w):
    return -torch.special.xlogy(w, w).sum(-1)


def test_attention_entropy():
    assert check_attention_entropy(entropy)
    assert check_attention_entropy(lambda w: -(w * w.clamp_min(1e-12).log()).sum(-1))
    assert check_attention_entropy(stub).status == "not done"
    hints = {
        "NaN": lambda w: -(w * w.log()).sum(-1),
        "MINUS": lambda w: -entropy(w),
        "natural log": lambda w: entropy(w) / math.log(2),
        "wrong axis": lambda w: -torch.special.xlogy(w, w).sum(-2),
        "one entropy per head and query": lambda w: entropy(w).mean(-1),
    }
    assert_hints(check_attention_entropy, hints)


def masked_attention(q, k, v, mask, fill=float("-inf"), scale=None, dim=-1, hide=None, after=None):
    """The exercise's solution, and with one argument changed, each common mistake."""
    scores = q @ k.transpose(-2, -1) / (math.sqrt(q.shape[-1]) if scale is None else scale)
    hide = mask[:, None, None, :] == 0 if hide is None else hide(mask)
    if after is None:
        weights = scores.masked_fill(hide, fill).softmax(dim)
    else:
        weights = after(scores.softmax(dim), mask[:, None, None, :])
    return weights @ v, weights


def test_masked_attention():
    assert check_masked_attention(masked_attention)
    assert check_masked_attention(lambda q, k, v, m: masked_attention(q, k, v, m, fill=-1e9))
    assert check_masked_attention(additive_mask)
    assert check_masked_attention(stub).status == "not done"
    hints = {
        "1 / sqrt(d)": lambda q, k, v, m: masked_attention(q, k, v, m, scale=1.0),
        "not by d": lambda q, k, v, m: masked_attention(q, k, v, m, scale=float(q.shape[-1])),
        "not on the queries": lambda q, k, v, m: masked_attention(q, k, v, m, fill=-1e9,
                                                                  hide=lambda m: m[:, None, :, None] == 0),
        "mask only the KEYS": lambda q, k, v, m: masked_attention(
            q, k, v, m, hide=lambda m: (m[:, None, :, None] == 0) | (m[:, None, None, :] == 0)),
        "BEFORE the softmax": lambda q, k, v, m: masked_attention(q, k, v, m, after=lambda w, keep: w * keep),
        "the last axis (dim=-1)": lambda q, k, v, m: masked_attention(q, k, v, m, dim=-2),
        "inverted": lambda q, k, v, m: masked_attention(q, k, v, m, hide=lambda m: m[:, None, None, :] == 1),
        "does not broadcast": lambda q, k, v, m: masked_attention(q, k, v, m, hide=lambda m: m == 0),
        "padding keys still get attention": lambda q, k, v, m: masked_attention(
            q, k, v, m, hide=lambda m: torch.zeros_like(m[:, None, None, :], dtype=torch.bool)),
        "weights @ v": lambda q, k, v, m: (masked_attention(q, k, v, m)[1] @ k, masked_attention(q, k, v, m)[1]),
        "two tensors": lambda q, k, v, m: masked_attention(q, k, v, m)[0],
    }
    assert_hints(check_masked_attention, hints)
    # the same mistakes written with the other fill (-inf gives NaN rows where -1e9 gives uniform ones)
    for fill in (float("-inf"), -1e9):
        assert_hints(check_masked_attention, {
            "not on the queries": lambda q, k, v, m: masked_attention(q, k, v, m, fill=fill,
                                                                      hide=lambda m: m[:, None, :, None] == 0),
            "inverted": lambda q, k, v, m: masked_attention(q, k, v, m, fill=fill,
                                                            hide=lambda m: m[:, None, None, :] == 1),
            "the last axis (dim=-1)": lambda q, k, v, m: masked_attention(q, k, v, m, fill=fill, dim=-2),
        })
    # adding the mask after the softmax, a large negative number or -inf, is the same mistake
    for after in (lambda w, keep: w + (1 - keep) * -1e9, lambda w, keep: w.masked_fill(keep == 0, float("-inf"))):
        assert_hints(check_masked_attention,
                     {"BEFORE the softmax": lambda q, k, v, m, after=after: masked_attention(q, k, v, m, after=after)})


def additive_mask(q, k, v, mask):
    # the other common way to write it: add a large negative number to the padding keys' scores
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1]) + (1 - mask[:, None, None, :]) * -1e4
    weights = scores.softmax(-1)
    return weights @ v, weights


def test_broadcast_mistake_that_raises_no_error_is_caught():
    # with as many sequences as tokens, a (B, T) mask broadcasts against (T, T) silently: the second case
    def wrong(q, k, v, m):
        if m.shape[0] != m.shape[1]:
            return masked_attention(q, k, v, m)
        return masked_attention(q, k, v, m, hide=lambda m: m == 0)
    assert_hints(check_masked_attention, {"broadcast wrongly": wrong})


def test_the_masked_reference_is_torchs():
    """The check's reference, minibert's attention with the padding keys hidden, is PyTorch's fused attention with
    a boolean mask; the slips' weights, without a slip, are the reference's."""
    from minibert.exercises.attention import _masked_case, _masked_weights, masked_reference
    q, k, v, mask = _masked_case(3, 5, 4, [5, 3, 4], 0)
    output, weights = masked_reference(q, k, v, mask)
    fused = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :].bool())
    assert torch.allclose(output, fused, atol=1e-6)
    assert torch.allclose(_masked_weights(q, k, mask), weights, atol=1e-6)
    assert (weights[1, :, :, 3:] == 0).all() and torch.allclose(weights.sum(-1), torch.ones(()))


def attention_to(w, key_is, mask):
    return (w * key_is[:, None, :]).sum(-1)[mask.bool()].mean()


def test_attention_to():
    assert check_attention_to(attention_to)
    assert check_attention_to(stub).status == "not done"
    hints = {
        "padding queries are averaged in": lambda w, key_is, mask: (w * key_is[:, None, :]).sum(-1).mean(),
        "do not average them": lambda w, key_is, mask: ((w * key_is[:, None, :]).sum(-1)
                                                        / key_is.sum(-1, keepdim=True))[mask.bool()].mean(),
        "LAST axis": lambda w, key_is, mask: (w * key_is[:, :, None]).sum(-2)[mask.bool()].mean(),
        "one number": lambda w, key_is, mask: (w * key_is[:, None, :]).sum(-1),
    }
    assert_hints(check_attention_to, hints)


def test_the_check_agrees_with_the_model():
    """The weights the check expects, those of minibert's attention function, are the ones the model returns."""
    import minibert
    torch.manual_seed(0)
    config = minibert.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = minibert.BertModel(config).eval()
    ids = torch.randint(5, 40, (1, 6))
    out = model(ids, output_attentions=True, output_hidden_states=True)
    att = model.encoder.layer[0].attention.self
    x = out.hidden_states[0]
    q, k, v = (att.split_heads(projection(x))[0] for projection in (att.query, att.key, att.value))
    assert torch.allclose(attention(q, k, v)[1], out.attentions[0][0], atol=1e-6)
