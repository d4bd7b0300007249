"""Checks of notebook 09: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import torch
from helpers import assert_hints, stub

from minibert.exercises import check_decoder_inputs, check_greedy_decode

PAD, CLS, SEP = 0, 2, 3


def decoder_inputs(targets, start=True, end=True):
    rows = [([CLS] if start else []) + t + ([SEP] if end else []) for t in targets]
    ids = torch.full((len(rows), max(map(len, rows))), PAD)
    for i, r in enumerate(rows):
        ids[i, :len(r)] = torch.tensor(r)
    mask = (ids != PAD).long()
    return {"input_ids": ids, "attention_mask": mask, "labels": ids.masked_fill(mask == 0, -100)}


def test_decoder_inputs():
    assert check_decoder_inputs(decoder_inputs)
    assert check_decoder_inputs(stub).status == "not done"

    def shifted(targets):
        d = decoder_inputs(targets)
        labels = torch.full_like(d["labels"], -100)
        labels[:, :-1] = d["labels"][:, 1:]
        return {**d, "labels": labels}

    hints = {
        "shifted twice": shifted,
        "padding is still a target": lambda t: {**decoder_inputs(t), "labels": decoder_inputs(t)["input_ids"]},
        "end each target with [SEP]": lambda t: decoder_inputs(t, end=False),
        "start each target with [CLS]": lambda t: decoder_inputs(t, start=False),
        "attention_mask": lambda t: {**decoder_inputs(t), "attention_mask": torch.ones(2, 5)},
    }
    assert_hints(check_decoder_inputs, hints)


@torch.no_grad()
def greedy(model, ids, n, states, position=-1, use_states=True):
    for _ in range(n):
        logits = model(ids, encoder_hidden_states=states if use_states else None).logits[:, position]
        ids = torch.cat([ids, logits.argmax(-1)[:, None]], 1)
    return ids


def test_greedy_decode():
    assert check_greedy_decode(greedy)
    assert check_greedy_decode(stub).status == "not done"
    hints = {
        "LAST position": lambda m, ids, n, s: greedy(m, ids, n, s, position=0),
        "pass encoder_hidden_states": lambda m, ids, n, s: greedy(m, ids, n, s, use_states=False),
        "followed by the new tokens": lambda m, ids, n, s: greedy(m, ids, n, s)[:, ids.shape[1]:],
        "shape (batch, prompt + max_new_tokens)": lambda m, ids, n, s: greedy(m, ids, n - 1, s),
    }
    assert_hints(check_greedy_decode, hints)
