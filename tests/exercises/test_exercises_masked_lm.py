"""Checks of notebook 04: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import torch
from helpers import assert_hints, stub

from minibert.exercises import check_mask_tokens, check_mask_with_budget, check_mlm_accuracy


def apply_masks(ids, selected, to_mask, to_random, random_ids, mask_id, in_place, labels_everywhere,
                labels_from_masked):
    """How both fake answers end: [MASK] and random tokens put in, labels -100 outside the selection (or, with
    the flags, one of the usual slips: editing the input in place, labels everywhere, labels read from the
    corrupted ids)."""
    out = ids if in_place else ids.clone()
    labels = ids.clone() if labels_everywhere else ids.masked_fill(~selected, -100)
    out[to_mask] = mask_id
    out[to_random] = random_ids[to_random]
    if labels_from_masked:
        labels = out.masked_fill(~selected, -100)
    return out, labels


def masker(select_special=False, labels_everywhere=False, only_mask=False, no_random=False, no_kept=False,
           rate=0.15, labels_from_masked=False, change_unselected=False, in_place=False, global_rng=False):
    """The right answer, or one of the usual mistakes."""
    def mask_tokens(ids, special, mask_id, vocab_size, generator):
        def rand(shape):
            return torch.rand(shape) if global_rng else torch.rand(shape, generator=generator)
        selected = rand(ids.shape) < rate
        if not select_special:
            selected &= ~special
        u = rand(ids.shape)
        mask_share = 1.0 if only_mask else (0.9 if no_random else 0.8)
        random_share = 0.0 if (only_mask or no_random) else (0.2 if no_kept else 0.1)
        chosen = ~special if change_unselected else selected
        to_mask = chosen & (u < mask_share)
        to_random = chosen & (u >= mask_share) & (u < mask_share + random_share)
        random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
        return apply_masks(ids, selected, to_mask, to_random, random_ids, mask_id, in_place, labels_everywhere,
                           labels_from_masked)
    return mask_tokens


def test_mask_tokens_right_answers_pass():
    assert check_mask_tokens(masker())

    def exact_count(ids, special, mask_id, vocab_size, generator):  # exactly 15% of each row, as MLMCollator
        selected = torch.zeros_like(special)
        for row in range(len(ids)):
            positions = (~special[row]).nonzero().flatten()
            order = torch.randperm(len(positions), generator=generator)
            selected[row, positions[order[:round(0.15 * len(positions))]]] = True
        u = torch.rand(ids.shape, generator=generator)
        random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
        out = ids.masked_fill(selected & (u < 0.8), mask_id)
        out = torch.where(selected & (u >= 0.8) & (u < 0.9), random_ids, out)
        return out, ids.masked_fill(~selected, -100)
    assert check_mask_tokens(exact_count)
    assert check_mask_tokens(stub).status == "not done"


def test_mask_tokens_hints():
    hints = {
        "labels must be -100 wherever": dict(labels_everywhere=True),
        "special tokens ([CLS], [SEP], [PAD]) were selected": dict(select_special=True),
        "every selected token became [MASK]": dict(only_mask=True),
        "no selected token was replaced by a random token": dict(no_random=True),
        "no selected token was kept unchanged": dict(no_kept=True),
        "BERT selects 15%": dict(rate=0.3),
        "the labels hold the masked input": dict(labels_from_masked=True),
        "tokens that were not selected must stay unchanged": dict(change_unselected=True),
        "you changed input_ids in place": dict(in_place=True),
        "draw every random number from the generator": dict(global_rng=True),
    }
    assert_hints(check_mask_tokens, {hint: masker(**kwargs) for hint, kwargs in hints.items()})
    assert "two tensors" in check_mask_tokens(lambda *args: args[0]).message


def test_mlm_accuracy():
    def right(logits, labels):
        asked = labels != -100
        return (logits.argmax(-1)[asked] == labels[asked]).float().mean()
    assert check_mlm_accuracy(right)
    assert check_mlm_accuracy(lambda *a: right(*a).item())
    assert check_mlm_accuracy(stub).status == "not done"
    hints = {
        "the -100 positions were counted": lambda logits, labels: (logits.argmax(-1) == labels).float().mean(),
        "number of right guesses": lambda logits, labels: (logits.argmax(-1) == labels).sum(),
        "not a percentage": lambda *a: 100 * right(*a),
        "share of WRONG guesses": lambda *a: 1 - right(*a),
    }
    assert_hints(check_mlm_accuracy, hints)


def budget_masker(batch_budget=False, select_special=False, labels_everywhere=False, labels_from_masked=False,
                  only_mask=False, coin=False, no_minimum=False, round_down=False, fixed_p=False, global_rng=False,
                  in_place=False):
    """The right fixed-budget masker (MLMCollator's rule), or one of the usual mistakes."""
    def mask_with_budget(ids, special, mask_id, vocab_size, generator, p=0.15):
        p = 0.15 if fixed_p else p
        eligible = torch.ones_like(special) if select_special else ~special

        def budget(n):
            count = int(p * n) if round_down else round(p * n)
            return count if no_minimum or n == 0 else max(1, count)

        def randperm(n):
            return torch.randperm(n) if global_rng else torch.randperm(n, generator=generator)
        selected = torch.zeros_like(special)
        if coin:
            selected = (torch.rand(ids.shape, generator=generator) < p) & eligible
        elif batch_budget:  # round(p * n) over all the ordinary tokens of the batch
            positions = eligible.flatten().nonzero().flatten()
            selected.view(-1)[positions[randperm(len(positions))[:budget(len(positions))]]] = True
        else:
            for row in range(len(ids)):
                positions = eligible[row].nonzero().flatten()
                selected[row, positions[randperm(len(positions))[:budget(len(positions))]]] = True
        u = torch.rand(ids.shape, generator=generator)
        random_ids = torch.randint(vocab_size, ids.shape, generator=generator)
        to_mask = selected & (u < (1.0 if only_mask else 0.8))
        to_random = selected & ~to_mask & (u < 0.9)
        return apply_masks(ids, selected, to_mask, to_random, random_ids, mask_id, in_place, labels_everywhere,
                           labels_from_masked)
    return mask_with_budget


def test_mask_with_budget():
    assert check_mask_with_budget(budget_masker())
    assert check_mask_with_budget(stub).status == "not done"
    hints = {
        "the budget is counted over the whole batch": dict(batch_budget=True),
        "special tokens ([CLS], [SEP], [PAD]) were selected": dict(select_special=True),
        "labels must be -100 wherever": dict(labels_everywhere=True),
        "the labels hold the masked input": dict(labels_from_masked=True),
        "every selected token became [MASK]": dict(only_mask=True),
        "each token was selected with probability p": dict(coin=True),
        "got no target": dict(no_minimum=True),
        "round down": dict(round_down=True),
        "use the argument p": dict(fixed_p=True),
        "draw every random number from the generator": dict(global_rng=True),
        "you changed input_ids in place": dict(in_place=True),
    }
    assert_hints(check_mask_with_budget, {hint: budget_masker(**kwargs) for hint, kwargs in hints.items()})
    # 04.1's coin is right there and wrong here; 04.5's budget is right in both
    def coin(ids, special, mask_id, vocab_size, generator, p=0.15):
        return masker(rate=p)(ids, special, mask_id, vocab_size, generator)
    assert "each token was selected with probability p" in check_mask_with_budget(coin).message
    assert check_mask_tokens(budget_masker())
