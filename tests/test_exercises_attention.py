"""Checks of notebook 07: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import math

import torch
from conftest import assert_hints, stub

from minibert.exercises import check_attention_entropy, check_attention_to, check_most_attended


def weights(q, k, causal):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        T = q.shape[-2]
        scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1)


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


def test_most_attended():
    assert check_most_attended(lambda w, tokens: [tokens[i] for i in w.argmax(-1).tolist()])
    assert check_most_attended(stub).status == "not done"
    hints = {
        "those are the positions": lambda w, tokens: w.argmax(-1),
        "wrong axis": lambda w, tokens: [tokens[i] for i in w.argmax(0).tolist()],
        "LARGEST": lambda w, tokens: [tokens[i] for i in w.argmin(-1).tolist()],
    }
    assert_hints(check_most_attended, hints)


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
    """The weights the check expects are the ones minibert's attention returns."""
    import minibert
    torch.manual_seed(0)
    config = minibert.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    model = minibert.BertModel(config).eval()
    ids = torch.randint(5, 40, (1, 6))
    out = model(ids, output_attentions=True, output_hidden_states=True)
    att = model.encoder.layer[0].attention.self
    x = out.hidden_states[0]
    q, k = att.split_heads(att.query(x))[0], att.split_heads(att.key(x))[0]
    assert torch.allclose(weights(q, k, False), out.attentions[0][0], atol=1e-6)
