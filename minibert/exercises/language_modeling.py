"""Exercises of notebook 03, language modeling: labels, the shift, the loss, and sampling."""

import numbers

import torch
import torch.nn.functional as F

from ..model.losses import IGNORE_INDEX, shift_labels
from .framework import Slip, exercise, judge_answer, same_number, tensor_of_shape

EX = "03"


def _batch():
    ids = torch.tensor([[2, 40, 41, 42, 43, 3], [2, 50, 51, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    return ids, mask


def causal_labels(ids, mask):
    return ids.masked_fill(mask == 0, IGNORE_INDEX)


LABEL_SLIPS = [Slip("padding scored", lambda ids, mask: ids,
                    "padding is still a target: put -100 where attention_mask is 0, so the loss ignores it")]


def labels_hint(got, ids, mask):
    """What is wrong with causal-LM labels that no slip explains: shifted (whatever the last position holds), or
    padding marked with another value than -100."""
    expected = causal_labels(ids, mask)
    if torch.equal(got[:, :-1], expected[:, 1:]):
        return ("you shifted the labels. BertForCausalLM shifts them itself, so they would be shifted twice and "
                "position t would learn token t+2. Return input_ids unshifted")
    if torch.equal(got[mask == 1], ids[mask == 1]):
        return f"the real tokens are right; padding must be -100 exactly (you have {got[mask == 0].tolist()})"
    return "labels should be input_ids, with -100 where attention_mask is 0"


@exercise(EX, 1, "labels for a causal LM")
def check_make_causal_labels(make_causal_labels):
    """make_causal_labels(input_ids, attention_mask) -> the labels to give BertForCausalLM."""
    ids, mask = _batch()
    got = make_causal_labels(ids.clone(), mask.clone())
    form = tensor_of_shape(ids.shape, f"return a tensor of the same shape as input_ids {tuple(ids.shape)}: "
                                      "the model shifts, not you")
    return judge_answer(got, causal_labels(ids, mask), LABEL_SLIPS, (ids, mask), same=torch.equal, form=form,
                        fallback=lambda got: labels_hint(got, ids, mask))


TARGET_SLIPS = [  # what each position is trained on, from the labels
    Slip("not shifted", lambda labels: labels, "not shifted: position t must be scored against the token at t+1"),
    Slip("rolled", lambda labels: labels.roll(-1, dims=1),
         "torch.roll wraps around: the last position would predict the first token. Use -100 there"),
]


def targets_hint(got, labels):
    if torch.equal(got[:, 1:], labels[:, :-1]):  # whatever the first position holds
        return "shifted the wrong way: position t predicts t+1 (the future), not t-1"
    return "targets[:, t] should be labels[:, t + 1], and the last position -100"


@exercise(EX, 2, "the shift inside the model")
def check_next_token_targets(next_token_targets):
    """next_token_targets(labels) -> what each position is trained on after the model's shift."""
    ids, mask = _batch()
    labels = causal_labels(ids, mask)
    got = next_token_targets(labels.clone())
    form = tensor_of_shape(labels.shape, f"return a tensor shaped like labels {tuple(labels.shape)}, with -100 "
                                         "where nothing follows")
    return judge_answer(got, shift_labels(labels), TARGET_SLIPS, (labels,), same=torch.equal, form=form,
                        fallback=lambda got: targets_hint(got, labels))


def top_k_hint(got):
    """What is wrong with filtered logits (k = 2 of 5 per row): probabilities, zeros instead of -inf, a token too
    many, or else."""
    if torch.allclose(got.sum(-1), torch.ones(2)):
        return "you returned probabilities; return logits with -inf outside the top k"
    if (got == 0).sum() == 6:
        return "use -inf, not 0, for the removed tokens: exp(0) = 1 keeps them in play"
    if torch.isfinite(got).sum(-1).tolist() == [3, 3]:
        return "one token too many survives: keep exactly k per row"
    return "keep the k largest logits of each row and set the others to -inf"


@exercise(EX, 3, "top-k filtering")
def check_top_k_filter(top_k_filter):
    """top_k_filter(logits, k) -> logits with everything but the k largest per row set to -inf."""
    logits = torch.tensor([[1.0, 4.0, 2.0, 3.0, 0.5], [0.0, -1.0, 5.0, 2.0, 1.0]])
    got = top_k_filter(logits.clone(), 2)
    expected = torch.full_like(logits, float("-inf"))
    expected[0, [1, 3]] = logits[0, [1, 3]]
    expected[1, [2, 3]] = logits[1, [2, 3]]
    form = tensor_of_shape(logits.shape, "return logits of the same shape (B, V); the sampler applies softmax "
                                         "afterwards")
    return judge_answer(got, expected, same=torch.equal, form=form, fallback=top_k_hint)


def _loss_cases():
    """(logits, input_ids, attention_mask): right-padded batches of 2, rows of different lengths, 3 shapes."""
    cases = []
    for seed, lengths, T, V in [(0, [6, 4], 6, 11), (1, [3, 7], 7, 13), (2, [5, 5], 5, 9)]:
        g = torch.Generator().manual_seed(seed)
        mask = (torch.arange(T)[None, :] < torch.tensor(lengths)[:, None]).long()  # (B, T)
        ids = torch.randint(5, V, (len(lengths), T), generator=g).masked_fill(mask == 0, 0)  # [PAD] = 0
        logits = 2 * torch.randn(len(lengths), T, V, generator=g)
        cases.append((logits, ids, mask))
    return cases


def _summed_loss(logits, targets):
    """Summed cross-entropy of logits (..., V) against targets (...), -100 skipped, and the number of targets."""
    V = logits.shape[-1]
    targets = targets.reshape(-1)
    return float(F.cross_entropy(logits.reshape(-1, V), targets, ignore_index=IGNORE_INDEX, reduction="sum")), \
        int((targets != IGNORE_INDEX).sum())


def _mean_loss(logits, targets):
    total, n = _summed_loss(logits, targets)
    return total / n


def _shifted_total(logits, ids, mask):
    """The summed loss of logits[:, :-1] scored on input_ids[:, 1:], padding skipped."""
    return _summed_loss(logits[:, :-1], causal_labels(ids, mask)[:, 1:])[0]


def causal_lm_loss_reference(logits, ids, mask):
    """The mean causal-LM loss: each position scored on the next label, as the model shifts them, padding skipped."""
    return _mean_loss(logits, shift_labels(causal_labels(ids, mask)))


def _mean_of_sequence_means(logits, ids, mask):
    labels = causal_labels(ids, mask)
    rows = [_summed_loss(logits[b, :-1], labels[b, 1:]) for b in range(len(ids))]
    return sum(total / n for total, n in rows) / len(ids)


PADDED_MEAN = ("you averaged over every position, padding included: divide by the number of real targets only "
               "(cross_entropy with ignore_index=-100 does that)")
CROSSED = ("logits and targets were flattened in different orders (one batch-first, one time-first), so each logit "
           "is scored against another position's token: reshape both from (B, T - 1, ...)")
LOSS_SLIPS = [  # on the case (logits, input_ids, attention_mask)
    Slip("not shifted", lambda logits, ids, mask: _mean_loss(logits, causal_labels(ids, mask)),
         "not shifted: position t is scored on its own token, which it can read. Score logits[:, t] against "
         "input_ids[:, t + 1]"),
    Slip("shifted twice", lambda logits, ids, mask: _mean_loss(logits[:, :-2], causal_labels(ids, mask)[:, 2:]),
         "shifted twice: position t is scored on token t + 2. Shift once: logits[:, :-1] against input_ids[:, 1:]"),
    Slip("shifted the wrong way",
         lambda logits, ids, mask: _mean_loss(logits[:, 1:], causal_labels(ids, mask)[:, :-1]),
         "shifted the wrong way: position t is scored on token t - 1, which it has already read. Use "
         "logits[:, :-1] against input_ids[:, 1:]"),
    Slip("padding scored", lambda logits, ids, mask: _mean_loss(logits[:, :-1], ids[:, 1:]),
         "padding is scored too: make the targets -100 where attention_mask is 0 (cross_entropy skips "
         "ignore_index=-100), so that [PAD] is never a target"),
    Slip("summed", _shifted_total,
         "that is the sum of the per-token losses; return their mean, so that the loss does not grow with the batch"),
    Slip("mean over B (T - 1)",
         lambda logits, ids, mask: _shifted_total(logits, ids, mask) / (len(ids) * (ids.shape[1] - 1)), PADDED_MEAN),
    Slip("mean over B T", lambda logits, ids, mask: _shifted_total(logits, ids, mask) / ids.numel(), PADDED_MEAN),
    Slip("mean of sequence means", _mean_of_sequence_means,
         "you averaged each sequence first, then the sequences: a short sequence then weighs as much as a long one. "
         "Average over all the real targets of the batch at once"),
    Slip("logits time-first",
         lambda logits, ids, mask: _mean_loss(logits[:, :-1].transpose(0, 1), causal_labels(ids, mask)[:, 1:]),
         CROSSED),
    Slip("labels time-first",
         lambda logits, ids, mask: _mean_loss(logits[:, :-1], causal_labels(ids, mask)[:, 1:].transpose(0, 1)),
         CROSSED),
]


def loss_form(got):
    """A hint when `got` is not one number (a float, or a tensor with one value), else None."""
    if isinstance(got, torch.Tensor) and got.numel() != 1:
        return (f"return one number, the mean loss, not a tensor of shape {tuple(got.shape)} "
                "(cross_entropy's default reduction='mean' gives it)")
    if not isinstance(got, (numbers.Real, torch.Tensor)):
        return f"return a number (a float or a 0-dim tensor), not {type(got).__name__}"
    return None


@exercise(EX, 6, "the causal-LM loss, with the shift", cases=_loss_cases)
def check_causal_lm_loss(causal_lm_loss, logits, ids, mask):
    """causal_lm_loss(logits, input_ids, attention_mask) -> the mean cross-entropy of predicting token t+1 at
    position t, over the real (not padding) targets: a float, or a 0-dim tensor with or without grad."""
    got = causal_lm_loss(logits.clone().requires_grad_(), ids.clone(), mask.clone())
    right = causal_lm_loss_reference(logits, ids, mask)
    return judge_answer(
        got, right, LOSS_SLIPS, (logits, ids, mask), same=same_number, form=loss_form,
        convert=lambda got: float(got.detach() if isinstance(got, torch.Tensor) else got),
        fallback=lambda got: f"on a batch of sequences of lengths {mask.sum(1).tolist()} the mean loss is "
                             f"{right:.4f}, you return {got:.4f}: score logits[:, :-1] against "
                             "input_ids[:, 1:], with -100 where attention_mask[:, 1:] is 0, and average over "
                             "the real targets")
