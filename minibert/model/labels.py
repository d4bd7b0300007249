"""Labels for next-token prediction: the shift the model does, and a detector for shifting twice.

BertForCausalLM (like every causal LM in transformers) takes labels equal to input_ids and shifts
them itself. Users who also shift them first train each position on the token two ahead; the loss
still goes down, so nothing looks wrong until the model generates. check_causal_labels spots it.
"""

from dataclasses import dataclass

import torch

IGNORE_INDEX = -100  # the label every loss skips: padding, unmasked positions (the one definition)


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
    keep = labels != ignore_index
    if not keep.any():
        return LabelCheck(False, 0.0, 0.0, "every label is -100: there is nothing to learn in this batch")
    same = (labels == input_ids)[keep].float().mean().item()
    keep_next = keep[:, :-1]
    nxt = (labels[:, :-1] == input_ids[:, 1:])[keep_next].float().mean().item() if keep_next.any() else 0.0
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
