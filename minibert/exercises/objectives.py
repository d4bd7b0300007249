"""Exercises of notebook 08, comparing pretraining objectives: sentence vectors and honest baselines."""

from collections import Counter

import torch

from ..training.probe import mean_pool as reference_mean_pool
from .framework import Slip, exercise, expect, judge_answer, tensor_of_shape

EX = "08"


MEAN_POOL_SLIPS = [  # on the case (hidden_states, attention_mask)
    Slip("padding included", lambda hidden, mask: hidden.mean(1),
         "padding is included: a mean over every position counts the [PAD] vectors; weight the tokens by "
         "attention_mask and divide by the number of real tokens"),
    Slip("padded length", lambda hidden, mask: (hidden * mask[..., None].float()).sum(1) / hidden.shape[1],
         "divide by the number of REAL tokens of each row (attention_mask.sum(1)), not by the padded length"),
    Slip("[CLS]", lambda hidden, mask: hidden[:, 0],
         "that is the [CLS] vector; the exercise asks for the mean of all real tokens"),
]


@exercise(EX, 1, "mean pooling without padding")
def check_mean_pool(mean_pool):
    """mean_pool(hidden_states, attention_mask) -> (B, C): the mean of each row's real token vectors."""
    g = torch.Generator().manual_seed(0)
    hidden = torch.randn(3, 5, 4, generator=g)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
    hidden[mask == 0] = 10.0  # what padding vectors look like matters: they must not count
    got = mean_pool(hidden.clone(), mask.clone())
    form = tensor_of_shape((3, 4), "return one vector per sequence, shape (batch, hidden) = (3, 4): average over "
                                   "the tokens (axis 1)")
    return judge_answer(got, reference_mean_pool(hidden, mask), MEAN_POOL_SLIPS, (hidden, mask),
                        same=lambda a, b: torch.allclose(a, b, atol=1e-5), form=form,
                        fallback="multiply by attention_mask[..., None], sum over the tokens, divide by "
                                 "attention_mask.sum(1)")


def share_of(labels, label):
    return sum(y == label for y in labels) / len(labels)


def commonest(labels):
    return Counter(labels).most_common(1)[0][0]


MAJORITY_SLIPS = [  # on the case (train_labels, test_labels)
    Slip("majority of the test labels", lambda train, test: share_of(test, commonest(test)),
         "you chose the majority class on the TEST labels: that peeks at the answers. Pick it on the training "
         "labels, then score it on the test labels"),
    Slip("share of the training labels", lambda train, test: share_of(train, commonest(train)),
         "that is the majority's share of the training labels; score the majority answer on the test labels"),
    Slip("the label itself", lambda train, test: commonest(train),
         "that is the class itself; return how often answering it is right on the test labels"),
]


def same_answer(got, value):
    """An accuracy agrees to 1e-9; a label must be equal."""
    return abs(got - value) < 1e-9 if isinstance(value, float) else got == value


def as_number(got):
    return got.item() if isinstance(got, torch.Tensor) else got


@exercise(EX, 2, "the majority-class baseline")
def check_majority_baseline(majority_baseline):
    """majority_baseline(train_labels, test_labels) -> test accuracy of always answering the commonest TRAIN label."""
    train, test = [0, 0, 0, 1, 1, 2], [1, 1, 1, 0, 2]  # train's majority (0) is rare in test
    right = share_of(test, commonest(train))
    got = as_number(majority_baseline(list(train), list(test)))
    hint = judge_answer(got, right, MAJORITY_SLIPS, (train, test), same=same_answer,
                        form=expect(lambda got: isinstance(got, (int, float)),
                                    "return the accuracy, a number between 0 and 1"),
                        fallback="find the most common training label, then the share of test labels equal to it")
    if hint is None and not abs(as_number(majority_baseline([2, 2, 1], [2, 1, 1, 1])) - 0.25) < 1e-9:
        return "this must hold for any labels, not just 0 and 1"
    return hint
