"""The losses of the heads: cross-entropy over tokens, sentence pairs or texts, where a label of -100 is
skipped and nothing labelled gives 0 (with a zero gradient); next-token prediction shifts its labels
itself; and the losses of sequence classification, as transformers picks them."""

import torch
import torch.nn.functional as F

from .checks import check_labels
from .fast import cross_entropy_in_chunks
from .labels import IGNORE_INDEX, shift_labels


def token_loss(logits, labels, shift=False, ignore_index=IGNORE_INDEX, reduction="mean"):
    """Cross-entropy of (..., V) logits against (...) labels (tokens, pairs or texts); with shift, position t
    of (B, T, V) logits is scored on token t+1. Nothing labelled gives 0, the rule of every loss here."""
    if shift:  # move the labels, not the (much larger) logits; the last position has nothing to predict
        labels = shift_labels(labels, ignore_index)  # (B, T)
    if reduction == "mean" and not (labels != ignore_index).any():
        return logits.sum() * 0.0  # nothing to predict: zero, not the NaN of an empty mean
    if reduction == "mean" and logits.dtype == torch.bfloat16:  # training under autocast: the same loss, faster
        return cross_entropy_in_chunks(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                           ignore_index=ignore_index, reduction=reduction or "none")
    if reduction in (None, "none"):
        loss = loss.view(labels.shape)
        return loss[:, :-1] if shift else loss  # (B, T-1) with shift
    return loss


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
    return token_loss(logits, labels)
