"""Checks of notebook 02: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import math

import torch
import torch.nn.functional as F
from helpers import assert_hints, stub

import minibert
from minibert.exercises import check_causal_attention, check_embedding_parameters, check_layer_parameters
from minibert.exercises.architecture import (CONFIGS, attention_cases, embedding_parameter_variants,
                                             layer_parameter_variants)
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


def test_parameter_counts_match_the_modules():
    for config in CONFIGS:
        with torch.device("meta"):
            embeddings, layer = BertEmbeddings(config), BertLayer(config)
        assert embedding_parameter_variants(config)["right"] == sum(p.numel() for p in embeddings.parameters())
        assert layer_parameter_variants(config)["right"] == sum(p.numel() for p in layer.parameters())


def test_embedding_parameters():
    assert check_embedding_parameters(lambda c: embedding_parameter_variants(c)["right"])
    assert check_embedding_parameters(lambda c: torch.tensor(embedding_parameter_variants(c)["right"]))
    assert check_embedding_parameters(stub).status == "not done"
    hints = {"no position": "position table", "no segment": "segment (token type) table",
             "no LayerNorm": "you forgot the LayerNorm", "LayerNorm half": "a weight AND a bias",
             "words only": "only one of three tables"}
    assert_hints(check_embedding_parameters, {hint: lambda c, variant=variant: embedding_parameter_variants(c)[variant]
                                              for variant, hint in hints.items()})
    assert "as an int" in check_embedding_parameters(lambda c: "many").message


def test_layer_parameters():
    assert check_layer_parameters(lambda c: layer_parameter_variants(c)["right"])
    assert check_layer_parameters(stub).status == "not done"
    hints = {"no biases": "has a bias", "no output projection": "four H x H matrices",
             "no LayerNorm": "two LayerNorms", "one LayerNorm": "TWO LayerNorms",
             "half feed-forward": "two matrices", "per head": "do not multiply by the number of heads"}
    assert_hints(check_layer_parameters, {hint: lambda c, variant=variant: layer_parameter_variants(c)[variant]
                                          for variant, hint in hints.items()})


def test_quiz_q5_claim_holds_for_the_tiny_model():
    model = minibert.BertModel(minibert.BertConfig.tiny(vocab_size=8000))
    layers = sum(p.numel() for p in model.encoder.parameters())
    assert model.embeddings.word_embeddings.weight.numel() > layers
