"""The losses of the heads and the rules of their labels.

Every loss is a cross-entropy in which a label of -100 (IGNORE_INDEX) is skipped, and a batch with
nothing labelled gives 0 (with a zero gradient), not the NaN of an empty mean. Next-token prediction
shifts its labels itself: BertForCausalLM (like every causal LM in transformers) takes labels equal to
input_ids. Users who also shift them first train each position on the token two ahead; the loss still
goes down, so nothing looks wrong until the model generates: check_causal_labels spots it.
Sequence classification picks its loss as transformers does (classification_loss).
"""

from dataclasses import dataclass

import torch
import torch.nn.functional as F

IGNORE_INDEX = -100  # the label every loss skips: padding, unmasked positions (the one definition)


def cross_entropy(logits, labels, ignore_index=IGNORE_INDEX, reduction="mean"):
    """Cross-entropy of (..., K) logits against (...) labels: K words of the vocabulary for a token, two
    answers for a sentence pair, the classes of a text. reduction "none" gives one loss per label (0 where
    it is ignored); "mean" averages the labelled ones, and is 0 where none is labelled."""
    logits, flat = logits.reshape(-1, logits.shape[-1]), labels.reshape(-1)  # (N, K), (N,)
    if reduction == "mean":
        if logits.dtype == torch.bfloat16:  # a speed trick: the same float32 loss, with less memory
            return cross_entropy_in_chunks(logits, flat, ignore_index)
        count = (flat != ignore_index).sum().clamp(min=1)  # nothing labelled: 0, not the NaN of an empty mean
        return F.cross_entropy(logits.float(), flat, ignore_index=ignore_index, reduction="sum") / count
    loss = F.cross_entropy(logits.float(), flat, ignore_index=ignore_index, reduction=reduction)
    return loss.view(labels.shape) if reduction == "none" else loss


def next_token_loss(logits, labels, ignore_index=IGNORE_INDEX, reduction="mean"):
    """The causal LM's loss: position t of (B, T, V) logits scored on token t+1 of labels (B, T), which
    equal input_ids. The labels move (shift_labels), not the much larger logits; with reduction "none",
    (B, T-1) losses, since the last position has nothing to predict."""
    loss = cross_entropy(logits, shift_labels(labels, ignore_index), ignore_index, reduction)
    return loss[:, :-1] if reduction == "none" else loss


def shift_labels(labels, ignore_index=IGNORE_INDEX):
    """The target of every position: labels moved one step left, -100 at the end (nothing follows).

    labels (B, T) -> (B, T); position t is trained on labels[:, t + 1].
    """
    shifted = torch.full_like(labels, ignore_index)
    shifted[:, :-1] = labels[:, 1:]
    return shifted


@dataclass
class LabelCheck:
    shifted: bool  # True: the labels were shifted already and the model would shift them again
    agreement_same: float  # share of labelled positions t with labels[t] == input_ids[t]
    agreement_next: float  # share with labels[t] == input_ids[t + 1]
    message: str

    def __str__(self):
        return self.message


def check_causal_labels(input_ids, labels, ignore_index=IGNORE_INDEX, threshold=0.9):
    """Compare labels with input_ids at offset 0 (what BertForCausalLM expects) and offset 1
    (labels shifted by the user). Returns a LabelCheck whose message says what to do."""
    if input_ids.shape != labels.shape:
        raise ValueError(f"labels have shape {tuple(labels.shape)} but input_ids have shape "
                         f"{tuple(input_ids.shape)}; for a causal LM they must be equal (the model shifts)")
    keep, keep_next = labels != ignore_index, labels[:, :-1] != ignore_index
    n, n_same, n_next, n_next_same = torch.stack([  # counted on the device, read in one wait for it
        keep.sum(), (keep & (labels == input_ids)).sum(),
        keep_next.sum(), (keep_next & (labels[:, :-1] == input_ids[:, 1:])).sum()]).tolist()
    if not n:
        return LabelCheck(False, 0.0, 0.0, "every label is -100: there is nothing to learn in this batch")
    same, nxt = n_same / n, (n_next_same / n_next if n_next else 0.0)
    if same >= threshold:
        return LabelCheck(False, same, nxt, f"labels equal input_ids at {same:.0%} of labelled positions: "
                                            "good, the model shifts them by one itself")
    if nxt >= threshold:
        return LabelCheck(True, same, nxt, (
            f"labels look shifted already: labels[:, t] == input_ids[:, t+1] at {nxt:.0%} of labelled "
            "positions. BertForCausalLM shifts labels itself, so they would be shifted twice and position t "
            "would learn the token two ahead. Pass labels=input_ids (with -100 on padding) instead."))
    return LabelCheck(False, same, nxt, (
        f"labels match input_ids neither as they are ({same:.0%}) nor shifted by one ({nxt:.0%}): "
        "are they from another batch? For a causal LM pass labels=input_ids with -100 on padding"))


def check_labels(name, labels, shape, num_classes):
    """labels against the batch shape and the number of classes; nothing to check without labels or a
    shape (without inputs BertModel names what is missing)."""
    if labels is None or shape is None:
        return
    if tuple(labels.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(labels.shape)} but should have shape {tuple(shape)}")
    if labels.dtype.is_floating_point:
        raise TypeError(f"{name} must hold integer class ids, got dtype {labels.dtype}")
    if labels.device.type != "cpu":
        return  # on an accelerator the values are not read back: that would make every step wait (checks.py)
    bad = labels[(labels != IGNORE_INDEX) & ((labels < 0) | (labels >= num_classes))]
    if bad.numel():
        raise ValueError(f"{name} contains {int(bad[0])}: use 0..{num_classes - 1}, or -100 to ignore a position")


def classification_loss(logits, labels, config):
    """The loss of (B, num_labels) logits for config.problem_type, or, when that is None, for the problem
    transformers infers: one output is regression (mean squared error), whole-number labels (B,) are one
    class per text (cross-entropy), float labels (B, num_labels) mark every class that applies
    (multi-label: a sigmoid and binary cross-entropy per class)."""
    problem = config.problem_type or ("regression" if config.num_labels == 1 else "multi_label_classification"
                                      if labels.is_floating_point() else "single_label_classification")
    if problem == "regression":
        if config.num_labels == 1:
            return F.mse_loss(logits.squeeze(-1), labels.reshape(len(logits)).to(logits.dtype))
        return F.mse_loss(logits, labels.to(logits.dtype))
    if problem == "multi_label_classification":
        if labels.shape != logits.shape:
            raise ValueError(f"multi-label labels must be (batch, num_labels) = {tuple(logits.shape)}, a 1 for every "
                             f"class that applies; got {tuple(labels.shape)}")
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    if labels.dim() == 2 and labels.shape == logits.shape:
        raise ValueError(f"labels of shape {tuple(labels.shape)}, one column per class, are multi-label targets: "
                         "give them as floats (labels.float()), or set config.problem_type="
                         "'multi_label_classification'; single-label classification takes one class id per text")
    check_labels("labels", labels, logits.shape[:1], config.num_labels)
    return cross_entropy(logits, labels)


# ---- the speed trick of bf16 training: its loss a few rows at a time ----
ROWS_PER_CHUNK = 32  # rows of logits turned to float32 at a time (benchmarks/train_step.py --bf16 times it)


def cross_entropy_in_chunks(logits, labels, ignore_index):
    """F.cross_entropy(logits.float(), labels, ignore_index=ignore_index) of (N, V) bf16 logits, computed a
    few rows at a time. The plain line makes a float32 copy of the logits, a float32 table of
    log-probabilities and, in the backward pass, a zero-filled float32 gradient table and a cast back to
    bfloat16: several passes over tens of megabytes for a causal LM, which sees every position. Here the
    same float32 arithmetic runs ROWS_PER_CHUNK rows at a time, and only the log-sum-exp of each row is kept
    for the backward pass. tests/model/test_fast_paths.py checks it against the plain line."""
    return ChunkedCrossEntropy.apply(logits, labels, ignore_index)


class ChunkedCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of (N, V) logits against (N,) labels, ignore_index left out; computed in
    float32 whatever the logits' dtype, the gradient returned in the logits' dtype."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        keep = labels != ignore_index
        count = keep.sum().clamp(min=1)
        lse = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
        for start in range(0, logits.shape[0], ROWS_PER_CHUNK):
            lse[start:start + ROWS_PER_CHUNK] = torch.logsumexp(logits[start:start + ROWS_PER_CHUNK].float(), dim=-1)
        targets = torch.where(keep, labels, 0)
        target_logits = logits.gather(1, targets[:, None]).squeeze(1).float()
        ctx.save_for_backward(logits, targets, keep, lse, count)
        return ((lse - target_logits) * keep).sum() / count

    @staticmethod
    def backward(ctx, grad_output):
        logits, targets, keep, lse, count = ctx.saved_tensors
        scale = keep * (grad_output / count)  # (N,): 0 for ignored rows
        grad = torch.empty_like(logits)
        for start in range(0, logits.shape[0], ROWS_PER_CHUNK):
            rows = slice(start, start + ROWS_PER_CHUNK)
            p = (logits[rows].float() - lse[rows, None]).exp_()  # softmax of the rows
            p[torch.arange(p.shape[0], device=p.device), targets[rows]] -= 1  # minus the one-hot target
            grad[rows] = p.mul_(scale[rows, None])
        return grad, None, None
