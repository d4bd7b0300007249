"""Checks of notebook 08: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

from collections import Counter

from helpers import assert_hints, stub

from minibert.exercises import check_majority_baseline, check_mean_pool


def mean_pool(h, mask):
    m = mask[..., None].float()
    return (h * m).sum(1) / m.sum(1)


def test_mean_pool():
    assert check_mean_pool(mean_pool)
    assert check_mean_pool(stub).status == "not done"
    hints = {
        "padding is included": lambda h, mask: h.mean(1),
        "not by the padded length": lambda h, mask: (h * mask[..., None]).sum(1) / h.shape[1],
        "[CLS] vector": lambda h, mask: h[:, 0],
        "shape (batch, hidden)": lambda h, mask: h.mean(2),
    }
    assert_hints(check_mean_pool, hints)


def majority(train, test):
    top = Counter(train).most_common(1)[0][0]
    return sum(y == top for y in test) / len(test)


def test_majority_baseline():
    assert check_majority_baseline(majority)
    assert check_majority_baseline(stub).status == "not done"
    hints = {
        "peeks at the answers": lambda train, test: majority(test, test),
        "share of the training labels": lambda train, test: majority(train, train),
        "class itself": lambda train, test: Counter(train).most_common(1)[0][0],
        "any labels": lambda train, test: sum(y == 0 for y in test) / len(test),
    }
    assert_hints(check_majority_baseline, hints)
