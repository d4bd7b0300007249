"""Fixtures of the model tests: a causal LM with random weights, as minibert's and transformers' classes."""

import pytest
import transformers

import minibert
from helpers import CONFIGS, randomize


@pytest.fixture(scope="module")
def causal_pair(tmp_path_factory):
    """(minibert BertForCausalLM, transformers BertLMHeadModel) with the same random weights, in eval mode."""
    path = tmp_path_factory.mktemp("causal")
    theirs = randomize(transformers.BertLMHeadModel(transformers.BertConfig(**CONFIGS["gelu_new"], is_decoder=True)),
                       seed=7).eval()
    theirs.save_pretrained(path)
    return minibert.BertForCausalLM.from_pretrained(path).eval(), theirs
