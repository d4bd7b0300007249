"""What the tests share besides fixtures: small configs, random weights, batches with padding and two
segments, the minibert <-> transformers class pairs, a ten-token tokenizer, the exercises' helpers.
Tests in every folder import it (`from helpers import CONFIGS`): conftest.py puts this folder on the path."""

import pathlib
import re

import pytest
import torch
import transformers

import minibert
from minibert.course.notebooks import output_text as outputs_text  # noqa: F401 (what a notebook cell showed)

ROOT = pathlib.Path(__file__).resolve().parents[1]  # the repository

# Several shapes and activations, so parity does not hold by accident for one config.
CONFIGS = {
    "gelu": dict(vocab_size=99, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64),
    "gelu_new": dict(vocab_size=120, hidden_size=48, num_hidden_layers=3, num_attention_heads=3,
                     intermediate_size=96, hidden_act="gelu_new", type_vocab_size=3, max_position_embeddings=40,
                     layer_norm_eps=1e-6),
    "relu_untied": dict(vocab_size=77, hidden_size=24, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=40, hidden_act="relu", tie_word_embeddings=False, pad_token_id=3),
    "silu": dict(vocab_size=64, hidden_size=16, num_hidden_layers=2, num_attention_heads=1, intermediate_size=32,
                 hidden_act="silu", num_labels=3),
}

# notebook number ("03") -> seconds its cells took under nbval (conftest.py adds them up for the report)
NOTEBOOK_SECONDS = {}


def randomize(model, seed=0):
    """Every parameter random (LayerNorm weights included), so no part can pass by being 1 or 0."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            centre = 1.0 if name.endswith("LayerNorm.weight") else 0.0
            p.copy_(centre + 0.2 * torch.randn(p.shape, generator=g))
    return model


def make_batch(config, batch=3, length=11, seed=0):
    """Ids with right padding in row 1, two segments, and labels for every head."""
    g = torch.Generator().manual_seed(seed)
    V = config["vocab_size"]
    pad = config.get("pad_token_id", 0)
    ids = torch.randint(5, V, (batch, length), generator=g)
    mask = torch.ones_like(ids)
    mask[1, length - 4:] = 0
    ids[mask == 0] = pad
    token_types = torch.zeros_like(ids)
    token_types[:, length // 2:] = 1
    token_types[mask == 0] = 0
    mlm_labels = torch.full_like(ids, -100)
    chosen = (torch.rand(ids.shape, generator=g) < 0.3) & (mask == 1)
    chosen[:, 1] = True
    mlm_labels[chosen] = ids[chosen]
    return dict(
        input_ids=ids, attention_mask=mask, token_type_ids=token_types, mlm_labels=mlm_labels,
        nsp_labels=torch.randint(0, 2, (batch,), generator=g),
        causal_labels=ids.masked_fill(mask == 0, -100),
        class_labels=torch.randint(0, config.get("num_labels", 2), (batch,), generator=g),
    )


def assert_hints(check, wrong_answers):
    """Each wrong answer (hint -> function) is marked wrong, with the hint that names its mistake."""
    for hint, wrong in wrong_answers.items():
        result = check(wrong)
        assert result.status == "wrong" and hint in result.message, (hint, result.message)


def stub(*args):
    """An exercise as a student version hands it out."""
    raise NotImplementedError("Exercise: write this function")


PAIRS = {  # minibert class -> the transformers class that reads and writes the same checkpoint
    minibert.BertModel: transformers.BertModel,
    minibert.BertForMaskedLM: transformers.BertForMaskedLM,
    minibert.BertForNextSentencePrediction: transformers.BertForNextSentencePrediction,
    minibert.BertForPreTraining: transformers.BertForPreTraining,
    minibert.BertForCausalLM: transformers.BertLMHeadModel,
    minibert.BertForSequenceClassification: transformers.BertForSequenceClassification,
}


def word_tokenizer():
    """A WordPiece tokenizer over ten tokens: enough for the text helpers."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "deep", "learning", "is",
                                         "fun", "hard"])}
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]", pair="[CLS] $A [SEP] $B:1 [SEP]:1", special_tokens=[("[CLS]", 2), ("[SEP]", 3)])
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="[PAD]", unk_token="[UNK]",
                                                cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]")


CHECK = re.compile(r"^(?:check_\w+\(|quiz\()", re.M)


def check_cells(nb):
    """The code cells that end in an exercise check or a quiz."""
    return [c for c in nb.cells if c.cell_type == "code" and CHECK.search(c.source.strip().splitlines()[-1] + "\n")]


def left_padded_batch():
    """Three prompts of 6, 4 and 2 tokens, padded on the left to 6."""
    g = torch.Generator().manual_seed(3)
    prompts = [torch.randint(5, 120, (n,), generator=g) for n in (6, 4, 2)]
    ids = torch.zeros(3, 6, dtype=torch.long)
    mask = torch.zeros(3, 6, dtype=torch.long)
    for row, p in enumerate(prompts):
        ids[row, 6 - len(p):], mask[row, 6 - len(p):] = p, 1
    return prompts, ids, mask


def labels_for(cls, batch):
    """The keyword arguments that give each head its labels from make_batch's batch."""
    return {
        minibert.BertForMaskedLM: dict(labels=batch["mlm_labels"]),
        minibert.BertForNextSentencePrediction: dict(labels=batch["nsp_labels"]),
        minibert.BertForPreTraining: dict(labels=batch["mlm_labels"], next_sentence_label=batch["nsp_labels"]),
        minibert.BertForCausalLM: dict(labels=batch["causal_labels"]),
        minibert.BertForSequenceClassification: dict(labels=batch["class_labels"]),
    }.get(cls, {})
