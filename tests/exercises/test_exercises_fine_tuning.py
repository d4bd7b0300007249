"""Checks of notebook 10: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import torch
from helpers import assert_hints, stub

from minibert.exercises import check_freeze_encoder, check_stratified_subset


def stratified(labels, fraction, g):
    picks = []
    for c in labels.unique():
        members = (labels == c).nonzero().flatten()
        picks.append(members[torch.randperm(len(members), generator=g)[:max(1, round(fraction * len(members)))]])
    return torch.cat(picks)


def test_stratified_subset():
    assert check_stratified_subset(stratified)
    assert check_stratified_subset(stub).status == "not done"
    n = lambda labels, fraction: max(1, round(fraction * len(labels)))  # noqa: E731
    hints = {
        "a plain random draw": lambda labels, fraction, g: torch.randperm(len(labels), generator=g)[:n(labels, fraction)],
        "without replacement": lambda labels, fraction, g: stratified(labels, fraction, g).repeat(2),
        "that is a mask": lambda labels, fraction, g: torch.zeros(len(labels), dtype=torch.bool).index_fill_(
            0, stratified(labels, fraction, g), True),
        "the first examples of each class": lambda labels, fraction, g: torch.cat(
            [(labels == c).nonzero().flatten()[:max(1, round(fraction * int((labels == c).sum())))]
             for c in labels.unique()]),
        "of EACH class": lambda labels, fraction, g: torch.cat(
            [(labels == c).nonzero().flatten()[torch.randperm(int((labels == c).sum()), generator=g)]
             [:max(1, round(fraction * len(labels) / 3))] for c in labels.unique()]),
        "use the generator": lambda labels, fraction, g: stratified(labels, fraction, torch.Generator().manual_seed(7)),
    }
    assert_hints(check_stratified_subset, hints)


def freeze_all(model):
    for p in model.parameters():
        p.requires_grad_(False)


def freeze_embeddings(model):
    for p in model.bert.embeddings.parameters():
        p.requires_grad_(False)


def test_freeze_encoder():
    def right(model):
        for p in model.bert.parameters():
            p.requires_grad_(False)
    assert check_freeze_encoder(right)
    assert check_freeze_encoder(stub).status == "not done"
    hints = {
        "model.eval() only turns dropout off": lambda model: model.eval(),
        "every parameter still trains": lambda model: None,
        "the classifier is frozen too": freeze_all,
        "part of the encoder still trains": freeze_embeddings,
    }
    assert_hints(check_freeze_encoder, hints)
