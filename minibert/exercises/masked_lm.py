"""Exercises of notebook 04, masked language modeling: masking by hand, and its accuracy."""

import torch

from ..model.losses import IGNORE_INDEX
from .framework import CLS, MASK, PAD, SEP, Slip, exercise, judge_answer, same_number

EX = "04"
VOCAB_SIZE = 1000


def masking_batch(rows=128, length=128, seed=0):
    """Ids of a padded batch, [CLS] ... [SEP] [PAD]..., and the mask of its special tokens."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(40, length + 1, (rows,), generator=g)
    ids = torch.randint(5, VOCAB_SIZE, (rows, length), generator=g)
    positions = torch.arange(length)[None, :]
    ids[positions >= lengths[:, None]] = PAD
    ids[:, 0] = CLS
    ids[torch.arange(rows), lengths - 1] = SEP
    special = (ids == PAD) | (ids == CLS) | (ids == SEP)
    return ids, special


def share(part, whole):
    return float(part.sum()) / max(1, float(whole.sum()))


def _judge_outputs(original, ids, special, out):
    """The rules every masking obeys: returns (hint, None) for the first one broken, else (None, (masked, labels))."""
    if not isinstance(out, (tuple, list)) or len(out) != 2:
        return "return two tensors: (masked_ids, labels)", None
    masked, labels = out
    if not (isinstance(masked, torch.Tensor) and isinstance(labels, torch.Tensor)):
        return "return two tensors: (masked_ids, labels)", None
    if masked.shape != ids.shape or labels.shape != ids.shape:
        return f"both outputs have the shape of input_ids {tuple(ids.shape)}", None
    if not torch.equal(ids, original):
        return "you changed input_ids in place: work on input_ids.clone() so the caller keeps the original", None
    ordinary = ~special
    selected = labels != IGNORE_INDEX
    if bool(selected.all()) or share(selected & ordinary, ordinary) > 0.5:
        return ("labels must be -100 wherever a token was NOT selected; otherwise the loss also scores the ~85% "
                "of tokens the model can simply copy from its input"), None
    if bool((selected & special).any()) or bool((masked != original)[special].any()):
        return ("special tokens ([CLS], [SEP], [PAD]) were selected or changed: choose only where "
                "special_tokens_mask is False"), None
    if not torch.equal(labels[selected], original[selected]):
        if torch.equal(labels[selected], masked[selected]):
            return "the labels hold the masked input; they must hold the ORIGINAL ids of the selected tokens", None
        return "at selected positions the label is the original token id", None
    if bool((masked != original)[~selected].any()):
        return "tokens that were not selected must stay unchanged: pick the 80/10/10 only among the selected ones", None
    return None, (masked, labels)


def _judge_replacements(original, masked, selected):
    """80/10/10 among the selected tokens, judged on their shares."""
    if int(masked.max()) >= VOCAB_SIZE or int(masked.min()) < 0:
        return "a random replacement must be a token id in 0..vocab_size-1"
    was_masked = selected & (masked == MASK)
    kept = selected & (masked == original)
    randomised = selected & ~was_masked & ~kept
    m, r, k = share(was_masked, selected), share(randomised, selected), share(kept, selected)
    shares = f"(you have {m:.0%} [MASK], {r:.0%} random, {k:.0%} kept)"
    if m > 0.95:
        return ("every selected token became [MASK]: only 80% should; 10% get a random token and 10% stay as "
                "they are, because [MASK] never appears when the model is used " + shares)
    if r < 0.02:
        return "no selected token was replaced by a random token: 10% should be " + shares
    if k < 0.02:
        return "no selected token was kept unchanged: 10% should be " + shares
    if not (0.75 <= m <= 0.85 and 0.06 <= r <= 0.14 and 0.06 <= k <= 0.14):
        return "among the selected tokens aim for 80% [MASK], 10% random, 10% unchanged " + shares
    return None


SAME_SEED = ("the same seed gave different masks: draw every random number from the generator argument "
             "(torch.rand(..., generator=generator))")


@exercise(EX, 1, "masking by hand (15%, 80/10/10)")
def check_mask_tokens(mask_tokens):
    """mask_tokens(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator) -> (masked_ids, labels).

    Judged on statistics over ~10,000 tokens: 15% of ordinary tokens selected, 80/10/10 among them."""
    def call(seed):
        ids, special = masking_batch()
        original = ids.clone()
        out = mask_tokens(ids, special.clone(), MASK, VOCAB_SIZE, torch.Generator().manual_seed(seed))
        return original, ids, special, out

    original, ids, special, out = call(0)
    hint, outputs = _judge_outputs(original, ids, special, out)
    if hint:
        return hint
    masked, labels = outputs
    selected = labels != IGNORE_INDEX
    rate = share(selected, ~special)
    if not 0.13 <= rate <= 0.17:
        return f"{rate:.1%} of the ordinary tokens are selected; BERT selects 15%"
    hint = _judge_replacements(original, masked, selected)
    if hint:
        return hint
    again = call(0)[3]
    if not (torch.equal(again[0], masked) and torch.equal(again[1], labels)):
        return SAME_SEED
    return None


def budget_batch():
    """masking_batch with three short rows added: 2, 4 and 0 ordinary tokens, where the budget's floor of one
    target matters (and a row of only [CLS] [SEP] has nothing to choose)."""
    ids, _ = masking_batch()
    short = torch.full((3, ids.shape[1]), PAD)
    short[:, 0] = CLS
    short[0, 1:3], short[0, 3] = torch.tensor([11, 12]), SEP
    short[1, 1:5], short[1, 5] = torch.tensor([21, 22, 23, 24]), SEP
    short[2, 1] = SEP
    ids = torch.cat([ids, short])
    return ids, (ids == PAD) | (ids == CLS) | (ids == SEP)


def budget_target(n, p):
    """p n for each row of n ordinary tokens, what the budget rounds."""
    return p * n.double()  # float32 puts 0.3 * 95 at 28.500001, which rounds to 29; Python's round says 28


def within_budget(counts, target):
    """Per row: is counts the budget max(1, round(target)) (0 when the target is 0)? Either rounding of a half is
    fine. For a whole-number target (a slip's budget) it is counts == target."""
    budget = target.round().clamp(min=1) * (target > 0)
    return ((counts - budget).abs() < 1e-6) | (((counts - target).abs() <= 0.5 + 1e-6) & (counts >= 1))


BUDGET_SLIPS = [  # the number of targets in each row, on the case (n, p) of every run
    Slip("fixed p", lambda n, p: budget_target(n, 0.15) if p != 0.15 else None,
         "with p=0.3 you took 15% of each sequence: use the argument p, not a fixed 0.15"),
    Slip("no minimum", lambda n, p: budget_target(n, p).round(),
         "a sequence with few ordinary tokens got no target (round(0.15 * 2) is 0): take at least one, "
         "max(1, round(p * n)), as MLMCollator does"),
    Slip("round down", lambda n, p: budget_target(n, p).floor().clamp(min=1) * (n > 0),
         "int() and floor() round down: take round(p * n) targets (at least one)"),
]


def spread_hint(runs):
    """Why the numbers of targets, (counts, n, p) per run, are off when no slip explains them: a budget for the
    whole batch, a coin per token, or else."""
    if all(abs(float(c.sum()) - p * float(n.sum())) <= 1 for c, n, p in runs):
        return ("the budget is counted over the whole batch: round(p * n) targets must be chosen in EACH "
                "sequence, from its own n ordinary tokens, so that short and long sequences get their share")
    if all(abs(share(c, n) - p) < 0.02 for c, n, p in runs):
        return ("each token was selected with probability p: that gives p * n targets on average, but a "
                "different number in each sequence. Choose exactly max(1, round(p * n)) positions among the "
                "sequence's ordinary tokens, e.g. the first ones of torch.randperm(n, generator=generator)")
    return "choose exactly max(1, round(p * n)) of each sequence's n ordinary tokens (none if n is 0)"


def counts_hint(runs):
    """Why the number of targets per sequence is off, judged on every run, (counts, n, p) each; None if it is not."""
    return judge_answer([c for c, _, _ in runs], [budget_target(n, p) for _, n, p in runs], BUDGET_SLIPS,
                        cases=[(n, p) for _, n, p in runs],
                        same=lambda counts, target: bool(within_budget(counts, target).all()),
                        fallback=lambda counts: spread_hint(runs))


@exercise(EX, 5, "a masker with a fixed budget per sequence")
def check_mask_with_budget(mask_with_budget):
    """mask_with_budget(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator, p=0.15)
    -> (masked_ids, labels): exactly max(1, round(p n)) targets in each sequence of n ordinary tokens."""
    def call(seed, p=None):
        ids, special = budget_batch()
        original = ids.clone()
        args = (ids, special.clone(), MASK, VOCAB_SIZE, torch.Generator().manual_seed(seed))
        out = mask_with_budget(*args) if p is None else mask_with_budget(*args, p=p)
        return original, ids, special, out

    runs, outputs = [], []
    for seed, p in [(0, None), (1, 0.3)]:
        original, ids, special, out = call(seed, p)
        hint, masked_labels = _judge_outputs(original, ids, special, out)
        if hint:
            return hint
        masked, labels = masked_labels
        outputs.append((original, masked, labels != IGNORE_INDEX))
        runs.append(((labels != IGNORE_INDEX).sum(1), (~special).sum(1), 0.15 if p is None else p))
    hint = counts_hint(runs)
    if hint:
        return hint
    hint = _judge_replacements(*(torch.cat(parts) for parts in zip(*outputs)))
    if hint:
        return hint
    again = call(0)[3]
    if not (torch.equal(again[0], outputs[0][1]) and torch.equal(again[1] != IGNORE_INDEX, outputs[0][2])):
        return SAME_SEED
    return None


def accuracy_case():
    """Logits whose argmax is right at 6 of the 10 labelled positions, and at none of the others."""
    g = torch.Generator().manual_seed(0)
    B, T, V = 2, 9, 12
    targets = torch.randint(V, (B, T), generator=g)
    logits = torch.randn(B, T, V, generator=g)
    labels = torch.full((B, T), IGNORE_INDEX)
    chosen = [(0, 1), (0, 3), (0, 4), (0, 7), (1, 0), (1, 2), (1, 5), (1, 6), (1, 7), (1, 8)]
    for i, (b, t) in enumerate(chosen):
        labels[b, t] = targets[b, t]
        winner = targets[b, t] if i < 6 else (targets[b, t] + 1) % V
        logits[b, t, winner] = 10.0
    return logits, labels


def right_guesses(logits, labels):
    return int((logits.argmax(-1) == labels).sum())  # a -100 label is never predicted


def accuracy(logits, labels):
    """The share of labelled positions predicted right."""
    return right_guesses(logits, labels) / int((labels != IGNORE_INDEX).sum())


ACCURACY_SLIPS = [
    Slip("-100 counted", lambda logits, labels: right_guesses(logits, labels) / labels.numel(),
         "the -100 positions were counted: average only where labels != -100, the positions the model was asked "
         "about"),
    Slip("count", right_guesses, "that is the number of right guesses; divide by the number of labelled positions"),
    Slip("percentage", lambda logits, labels: 100 * right_guesses(logits, labels) / int((labels != IGNORE_INDEX).sum()),
         "return a fraction between 0 and 1 (0.6), not a percentage"),
    Slip("wrong share", lambda logits, labels: 1 - accuracy(logits, labels), "that is the share of WRONG guesses"),
]


def number_form(got):
    """A hint when `got` is not a number (a float or a 0-dim tensor), else None."""
    try:
        float(got)
    except (TypeError, ValueError):
        return f"return a number (a float or a 0-dim tensor), not {type(got).__name__}"
    return None


@exercise(EX, 2, "masked-LM accuracy")
def check_mlm_accuracy(mlm_accuracy):
    """mlm_accuracy(logits, labels) -> the share of labelled positions (labels != -100) predicted right."""
    logits, labels = accuracy_case()
    got = mlm_accuracy(logits.clone(), labels.clone())
    return judge_answer(got, accuracy(logits, labels), ACCURACY_SLIPS, (logits, labels), same=same_number,
                        form=number_form, convert=float,
                        fallback="take logits.argmax(-1), compare with labels where labels != -100, and average")
