"""Checks of notebook 02: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import math

import torch
import torch.nn.functional as F
from helpers import assert_hints, stub

import minibert
from minibert.exercises import check_causal_attention, check_embedding_parameters, check_layer_parameters
from minibert.exercises.architecture import (CONFIGS, EMBEDDING_SLIPS, LAYER_SLIPS, attention_cases, embedding_count,
                                             layer_count)
from minibert.model import BertEmbeddings, BertLayer


def attention(q, k, v, key_mask, keep="causal", scale="sqrt", dim=-1, multiply=False):
    T, d = q.shape
    ones = torch.ones(T, T, dtype=torch.bool)
    allowed = {"causal": ones.tril(), "none": ones, "triu": ones.triu(), "strict": ones.tril(-1)}[keep]
    if scale != "no padding mask":
        allowed = allowed & key_mask.bool()[None, :]
    scores = q @ k.T / {"sqrt": math.sqrt(d), "none": 1.0, "d": d, "no padding mask": math.sqrt(d)}[scale]
    scores = scores * allowed if multiply else scores.masked_fill(~allowed, float("-inf"))
    return scores.softmax(dim) @ v


def test_causal_attention_agrees_with_pytorch():
    for q, k, v, key_mask in attention_cases():
        allowed = torch.ones(len(q), len(q), dtype=torch.bool).tril() & key_mask.bool()[None, :]
        expected = F.scaled_dot_product_attention(q[None], k[None], v[None], attn_mask=allowed[None])[0]
        assert torch.allclose(attention(q, k, v, key_mask), expected, atol=1e-5)


def test_causal_attention():
    assert check_causal_attention(attention)
    large_negative = lambda q, k, v, m: attention(q, k, v, m).nan_to_num()  # noqa: E731
    assert check_causal_attention(large_negative)
    assert check_causal_attention(stub).status == "not done"
    hints = {
        "also hide keys j > i": dict(keep="none"),
        "wrong way round": dict(keep="triu"),
        "padding keys (key_mask == 0) must be hidden": dict(scale="no padding mask"),
        "divide the scores q @ k.T by sqrt(d)": dict(scale="none"),
        "not by d": dict(scale="d"),
        "softmax over the KEYS": dict(dim=0),
        "exp(0) = 1": dict(multiply=True),
        "a token may look at itself": dict(keep="strict"),
    }
    assert_hints(check_causal_attention, {hint: lambda q, k, v, m, kwargs=kwargs: attention(q, k, v, m, **kwargs)
                                          for hint, kwargs in hints.items()})
    weights = lambda q, k, v, m: (q @ k.T).softmax(-1)  # noqa: E731
    assert "attention weights" in check_causal_attention(weights).message


def parameters(config, module, *left_out, extra=()):
    """The parameters of one BertEmbeddings or BertLayer of `config`, the named ones left out (a slip), plus extra."""
    with torch.device("meta"):
        named = dict(module(config).named_parameters())
    return sum(p.numel() for name, p in named.items() if not name.startswith(left_out)) + sum(
        named[name].numel() for name in extra)


def test_parameter_counts_match_the_modules():
    for config in CONFIGS:
        assert embedding_count(config) == parameters(config, BertEmbeddings)
        assert layer_count(config) == parameters(config, BertLayer)


def assert_each_slip_hinted(check, slips, wrong_answers):
    """Every slip of the check's table is tried (name -> (part of its hint, a wrong answer made without the table))
    and gets its hint."""
    assert set(wrong_answers) == {slip.name for slip in slips}
    assert_hints(check, {hint: answer for hint, answer in wrong_answers.values()})


def test_embedding_parameters():
    assert check_embedding_parameters(lambda c: parameters(c, BertEmbeddings))
    assert check_embedding_parameters(lambda c: torch.tensor(parameters(c, BertEmbeddings)))
    assert check_embedding_parameters(stub).status == "not done"
    assert_each_slip_hinted(check_embedding_parameters, EMBEDDING_SLIPS, {
        "no position": ("position table", lambda c: parameters(c, BertEmbeddings, "position_embeddings")),
        "no segment": ("segment (token type) table", lambda c: parameters(c, BertEmbeddings, "token_type_embeddings")),
        "no LayerNorm": ("you forgot the LayerNorm", lambda c: parameters(c, BertEmbeddings, "LayerNorm")),
        "LayerNorm half": ("a weight AND a bias", lambda c: parameters(c, BertEmbeddings, "LayerNorm.bias")),
        "words only": ("only one of three tables", lambda c: c.vocab_size * c.hidden_size),
    })
    assert "as an int" in check_embedding_parameters(lambda c: "many").message


def test_layer_parameters():
    assert check_layer_parameters(lambda c: parameters(c, BertLayer))
    assert check_layer_parameters(stub).status == "not done"
    qkv = [f"attention.self.{m}.{p}" for m in ("query", "key", "value") for p in ("weight", "bias")]
    biases = ("attention.self.query.bias", "attention.self.key.bias", "attention.self.value.bias",
              "attention.output.dense.bias", "intermediate.dense.bias", "output.dense.bias")
    assert_each_slip_hinted(check_layer_parameters, LAYER_SLIPS, {
        "no biases": ("has a bias", lambda c: parameters(c, BertLayer, *biases)),
        "no output projection": ("four H x H matrices", lambda c: parameters(c, BertLayer, "attention.output.dense")),
        "no LayerNorm": ("two LayerNorms", lambda c: parameters(c, BertLayer, "attention.output.LayerNorm",
                                                                "output.LayerNorm")),
        "one LayerNorm": ("TWO LayerNorms", lambda c: parameters(c, BertLayer, "output.LayerNorm")),
        "half feed-forward": ("two matrices", lambda c: parameters(c, BertLayer, "output.dense")),
        "per head": ("do not multiply by the number of heads",
                     lambda c: parameters(c, BertLayer, extra=qkv * (c.num_attention_heads - 1))),
    })
    # a slip on one config only, right on the others, is not named: the counts of that config are given
    mixed = lambda c: parameters(c, BertLayer, *(("output.dense",) if c is CONFIGS[2] else ()))  # noqa: E731
    assert "for a config with hidden_size=256" in check_layer_parameters(mixed).message


def test_quiz_q5_claim_holds_for_the_tiny_model():
    model = minibert.BertModel(minibert.BertConfig.tiny(vocab_size=8000))
    layers = sum(p.numel() for p in model.encoder.parameters())
    assert model.embeddings.word_embeddings.weight.numel() > layers
