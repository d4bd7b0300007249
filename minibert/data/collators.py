"""Collators: a list of examples -> a padded batch of tensors, with the labels of each objective.

  causal LM    labels = input_ids (the model shifts them), -100 on padding       CausalLMCollator
  masked LM    15% of tokens chosen; of those 80% -> [MASK], 10% -> random
               token, 10% kept; labels -100 everywhere else                     MLMCollator
  sentence pairs  padded as they are, with their next_sentence_label            collate
"""

import random
from collections.abc import Mapping

import torch

from ..model.checks import as_tensor, check_ids
from ..values import check_value, is_number
from ..model.losses import IGNORE_INDEX
from .examples import check_share, special_ids

NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3  # what MLMCollator did at each position
DECISIONS = ("not selected", "masked", "random token", "kept")
OTHER_TOKENIZER = "the tokenizer has {} tokens: were these examples made with another tokenizer?"
PER_TOKEN = ("input_ids", "attention_mask", "token_type_ids", "labels")  # one value per token


def as_ids(value, where):
    """One sequence of ids as a 1-D long tensor, from a list, a numpy array, or a tensor of shape
    (T,) or (1, T) (what tokenizer(text, return_tensors="pt") gives)."""
    ids = as_tensor(where, value)
    if ids.dim() == 2 and len(ids) == 1:  # a batch of one
        ids = ids[0]
    if ids.dim() != 1:
        raise ValueError(f"{where} must be one sequence, of shape (T,) or (1, T), got shape {tuple(ids.shape)}: "
                         "a collator takes a list of examples, one sequence each ([ids] for one)")
    if ids.numel() and (ids.dtype.is_floating_point or ids.dtype == torch.bool):  # [] is float to torch
        raise TypeError(f"{where} must hold integer ids, got dtype {ids.dtype}")
    return ids.long()


def as_example(example, i):
    """Example i as a dict of 1-D tensors. It may be any Mapping (a tokenizer's BatchEncoding too) or
    bare ids; a padded example (attention_mask with zeros) keeps only its real tokens."""
    if not isinstance(example, Mapping):
        example = {"input_ids": example}
    if "input_ids" not in example:
        raise ValueError(f"example {i} has no 'input_ids' (its keys: {', '.join(map(str, example))})")
    out = dict(example)
    for key in PER_TOKEN:
        if key in example:
            out[key] = as_ids(example[key], f"example {i}'s {key}")
            if len(out[key]) != len(out["input_ids"]):
                raise ValueError(f"example {i}'s {key} must be as long as its input_ids ({len(out['input_ids'])} "
                                 f"tokens), got {len(out[key])}" + (" (use -100 for no target)" * (key == "labels")))
    if "attention_mask" in out:  # drop the padding; the collator pads the batch again
        keep = out.pop("attention_mask").bool()
        out.update({key: out[key][keep] for key in PER_TOKEN if key in out})
    if not len(out["input_ids"]):
        raise ValueError(f"example {i} has no tokens: every sequence needs at least one (drop empty texts first)")
    return out


def as_examples(examples):
    """A batch's examples, each checked by as_example."""
    if isinstance(examples, Mapping):
        raise ValueError("a collator takes a list of examples, got one Mapping (keys: "
                         f"{', '.join(map(str, examples))}): pass [example] for one example, and "
                         "[tokenizer(text) for text in texts] rather than tokenizer(texts)")
    examples = list(examples)
    if not examples:
        raise ValueError("cannot make a batch from zero examples")
    return [as_example(e, i) for i, e in enumerate(examples)]


def pad(sequences, value):
    out = torch.full((len(sequences), max(len(s) for s in sequences)), value, dtype=torch.long)
    for i, s in enumerate(sequences):
        out[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


def collate(examples, pad_token_id, vocab_size=None):
    """Pad a list of examples (mappings with input_ids, or bare ids) into a batch of tensors.
    With vocab_size, ids outside the tokenizer's vocabulary are refused."""
    examples = as_examples(examples)
    for key in ("token_type_ids", "next_sentence_label"):
        if len({key in e for e in examples}) > 1:
            raise ValueError(f"some examples of the batch have {key!r} and others do not: mix kinds of examples "
                             "in separate batches")
    ids = [e["input_ids"] for e in examples]
    batch = {"input_ids": pad(ids, pad_token_id), "attention_mask": pad([[1] * len(x) for x in ids], 0)}
    if vocab_size is not None:
        check_ids("input_ids", batch["input_ids"], vocab_size, OTHER_TOKENIZER.format(vocab_size))
    if "token_type_ids" in examples[0]:
        batch["token_type_ids"] = pad([e["token_type_ids"] for e in examples], 0)
    if "next_sentence_label" in examples[0]:
        batch["next_sentence_label"] = torch.tensor([int(e["next_sentence_label"]) for e in examples])
    return batch


class CausalLMCollator:
    """Pads a batch for next-token prediction. labels = input_ids with -100 on padding, NOT shifted:
    BertForCausalLM shifts them. An example may bring its own labels (e.g. -100 on a prompt)."""

    def __init__(self, tokenizer):
        self.pad_token_id, = special_ids(tokenizer, "pad")
        self.vocab_size = len(tokenizer)

    def __call__(self, examples):
        examples = as_examples(examples)
        batch = collate(examples, self.pad_token_id, self.vocab_size)
        labels = [e.get("labels", e["input_ids"]) for e in examples]
        batch["labels"] = pad(labels, IGNORE_INDEX)  # padding: -100, never a target
        return batch


class MLMCollator:
    """Pads a batch and masks it as BERT does, with fresh masks every call (dynamic masking).

    Per sequence, round(mlm_probability * n) of its n ordinary tokens are selected (at least one;
    never [CLS], [SEP] or padding). Of the selected, mask_replace_prob become [MASK],
    random_replace_prob a random token, the rest stay as they are, so that the model cannot tell
    which tokens it will be asked about and must represent every token well. Labels are the
    original ids at selected positions and -100 everywhere else. whole_word_mask selects whole
    words: all the ##pieces of a word together.
    """

    def __init__(self, tokenizer, mlm_probability=0.15, mask_replace_prob=0.8, random_replace_prob=0.1,
                 whole_word_mask=False, seed=None):
        check_value("mlm_probability", mlm_probability, lambda p: is_number(p) and 0 < p <= 1, "a number in (0, 1]")
        check_share("mask_replace_prob", mask_replace_prob)
        check_share("random_replace_prob", random_replace_prob)
        if mask_replace_prob + random_replace_prob > 1:
            raise ValueError(f"mask_replace_prob ({mask_replace_prob}) + random_replace_prob ({random_replace_prob}) "
                             "must be shares between 0 and 1 that sum to at most 1; the rest is kept unchanged")
        self.mlm_probability, self.mask_replace_prob, self.random_replace_prob = \
            mlm_probability, mask_replace_prob, random_replace_prob
        self.whole_word_mask = whole_word_mask
        self.pad_token_id, self.mask_token_id = special_ids(tokenizer, "pad", "mask")
        self.vocab_size = vocab = len(tokenizer)
        self.special = torch.zeros(vocab, dtype=torch.bool)
        self.special[torch.tensor(tokenizer.all_special_ids)] = True
        self.ordinary_ids = (~self.special).nonzero().flatten()  # what a random replacement may be
        tokens = tokenizer.convert_ids_to_tokens(list(range(vocab)))
        self.continues_word = torch.tensor([t.startswith("##") for t in tokens])
        if whole_word_mask and not self.continues_word.any():  # it would silently mask single pieces
            raise ValueError("whole_word_mask=True needs a WordPiece tokenizer, whose pieces inside a word start "
                             "with '##'; this tokenizer has no such piece, so words cannot be found. Use "
                             "whole_word_mask=False, or a tokenizer from minibert.train_tokenizer")
        self.generator = torch.Generator().manual_seed(seed if seed is not None else random.randrange(2 ** 63))

    def __call__(self, examples):
        batch = collate(examples, self.pad_token_id)  # mask_tokens checks the ids
        batch["input_ids"], batch["labels"], _ = self.mask_tokens(batch["input_ids"])
        return batch

    def select(self, ids):
        """Boolean (B, T): the positions to predict."""
        selected = torch.zeros(ids.shape, dtype=torch.bool)
        eligible = ~self.special[ids]
        for b in range(len(ids)):
            positions = eligible[b].nonzero().flatten()
            if not len(positions):
                continue
            budget = max(1, round(self.mlm_probability * len(positions)))
            if self.whole_word_mask:  # a word starts at a position that does not continue one
                starts = ~self.continues_word[ids[b, positions]]
                words = torch.tensor_split(positions, starts.nonzero().flatten()[1:].tolist())
                chosen = 0
                for w in torch.randperm(len(words), generator=self.generator).tolist():
                    if chosen + len(words[w]) <= budget or chosen == 0:
                        selected[b, words[w]] = True
                        chosen += len(words[w])
                    if chosen >= budget:
                        break
            else:
                order = torch.randperm(len(positions), generator=self.generator)
                selected[b, positions[order[:budget]]] = True
        return selected

    def mask_tokens(self, input_ids):
        """input_ids (B, T) -> (masked input_ids, labels, decisions), decisions coded as in DECISIONS."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, seq_len), got {tuple(input_ids.shape)}; "
                             "for one sequence use input_ids[None]")
        check_ids("input_ids", input_ids, self.vocab_size, OTHER_TOKENIZER.format(self.vocab_size))
        ids = input_ids.clone()
        selected = self.select(ids)
        labels = torch.where(selected, ids, IGNORE_INDEX)
        u = torch.rand(ids.shape, generator=self.generator)
        masked = selected & (u < self.mask_replace_prob)
        replaced = selected & ~masked & (u < self.mask_replace_prob + self.random_replace_prob)
        ids[masked] = self.mask_token_id
        pick = torch.randint(len(self.ordinary_ids), (int(replaced.sum()),), generator=self.generator)
        ids[replaced] = self.ordinary_ids[pick]
        decisions = torch.full(ids.shape, NOT_SELECTED)
        decisions[selected] = KEPT
        decisions[masked] = MASKED
        decisions[replaced] = RANDOM
        return ids, labels, decisions


