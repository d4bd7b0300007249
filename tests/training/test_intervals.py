"""The course's one way of judging a score: a 95% bootstrap interval (minibert.bootstrap)."""

import math
import random

import pytest
import torch

import minibert


def coin(n, p, seed=0):
    rng = random.Random(seed)
    return [float(rng.random() < p) for _ in range(n)]


def test_the_interval_holds_the_score_and_narrows_with_more_items():
    small, large = minibert.bootstrap(coin(100, 0.3)), minibert.bootstrap(coin(10_000, 0.3))
    for iv in (small, large):
        assert iv.low < iv.estimate < iv.high
    assert large.includes(0.3) and not large.includes(0.35)
    # the width of a proportion's interval falls as 1/sqrt(n): 100 times the items, a tenth of the width
    ratio = (small.high - small.low) / (large.high - large.low)
    assert 6 < ratio < 15
    # and matches the textbook's binomial interval, 4 standard errors wide, for a large sample
    assert (large.high - large.low) == pytest.approx(4 * math.sqrt(0.3 * 0.7 / 10_000), rel=0.1)


def test_the_same_scores_always_get_the_same_interval():
    values = coin(500, 0.6, seed=3)
    assert minibert.bootstrap(values) == minibert.bootstrap(values)


def test_whole_groups_are_resampled_so_correlated_items_give_a_wider_interval():
    # 40 blocks of 25 tokens, each block all right or all wrong: 1,000 values but only 40 independent draws
    blocks = coin(40, 0.5, seed=1)
    values = [b for b in blocks for _ in range(25)]
    groups = [i for i in range(40) for _ in range(25)]
    as_tokens, as_blocks = minibert.bootstrap(values), minibert.bootstrap(values, groups)
    assert as_tokens.estimate == as_blocks.estimate
    assert (as_blocks.high - as_blocks.low) > 3 * (as_tokens.high - as_tokens.low)


def test_a_paired_difference_of_equal_models_includes_zero_and_of_different_ones_does_not():
    a = torch.tensor(coin(2000, 0.5, seed=4))
    same = a[torch.randperm(len(a), generator=torch.Generator().manual_seed(0))]
    better = torch.maximum(a, torch.tensor(coin(2000, 0.2, seed=5)))  # right wherever a is, and more
    assert minibert.bootstrap(a - same).includes(0)
    assert not minibert.bootstrap(better - a).includes(0)


def test_format_map_and_proportion():
    iv = minibert.Interval(0.114, 0.102, 0.126)
    assert f"{iv:.1%}" == "11.4% [10.2%, 12.6%]"
    assert iv.map(math.exp) == (math.exp(0.114), math.exp(0.102), math.exp(0.126))
    p = minibert.proportion(30, 60)
    assert p.estimate == 0.5 and p.low < 0.4 and p.high > 0.6


@pytest.mark.parametrize("call, message", [
    (lambda: minibert.bootstrap([]), "at least one value"),
    (lambda: minibert.bootstrap([1.0, 0.0], groups=[0]), "2 values but 1 group ids"),
    (lambda: minibert.proportion(7, 5), "0 <= right <= total"),
    (lambda: minibert.proportion(0, 0), "total > 0"),
])
def test_bad_input_is_named(call, message):
    with pytest.raises(ValueError, match=message):
        call()
