"""The six pretraining objectives and their wiring: which class trains each one, how its batches are
made, and which keyword arguments its head takes from a batch.

  clm       next-token prediction                  BertForCausalLM
  mlm       masked-token prediction                BertForMaskedLM
  nsp, sop  is B the next sentence / in order?     BertForNextSentencePrediction
  mlm+nsp, mlm+sop   both losses, summed           BertForPreTraining
"""

from typing import NamedTuple

from ..data.collators import CausalLMCollator, MLMCollator, collate


class Objective(NamedTuple):
    model_class: str  # the class that trains it (the same name in minibert and transformers)
    pair_task: str | None  # "nsp" or "sop": its examples are sentence pairs; None: blocks of text
    masked_lm: bool  # it has a masked-LM loss


OBJECTIVES = {
    "clm": Objective("BertForCausalLM", None, False),
    "mlm": Objective("BertForMaskedLM", None, True),
    "nsp": Objective("BertForNextSentencePrediction", "nsp", False),
    "sop": Objective("BertForNextSentencePrediction", "sop", False),
    "mlm+nsp": Objective("BertForPreTraining", "nsp", True),
    "mlm+sop": Objective("BertForPreTraining", "sop", True),
}


def check_objective(objective):
    if objective not in OBJECTIVES:
        raise ValueError(f"unknown objective {objective!r}; choose one of {', '.join(OBJECTIVES)}")
    return OBJECTIVES[objective]


def make_collator(objective, tokenizer, mlm_probability=0.15, seed=None, mask_replace_prob=0.8,
                  random_replace_prob=0.1):
    if check_objective(objective).masked_lm:
        return MLMCollator(tokenizer, mlm_probability, mask_replace_prob, random_replace_prob, seed=seed)
    if objective == "clm":
        return CausalLMCollator(tokenizer)
    return lambda examples: collate(examples, tokenizer.pad_token_id, len(tokenizer))  # NSP / SOP: nothing masked


def model_inputs(objective, batch, masked_only=True):
    """The keyword arguments each head takes, from a collated batch."""
    _, pair_task, mlm = check_objective(objective)
    pairs = pair_task is not None
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids") if k in batch}
    if objective == "clm":
        inputs["labels"] = batch["labels"]
    elif mlm and pairs:
        inputs.update(labels=batch["labels"], next_sentence_label=batch["next_sentence_label"],
                      masked_only=masked_only)
    elif mlm:
        inputs.update(labels=batch["labels"], masked_only=masked_only)
    else:
        inputs["labels"] = batch["next_sentence_label"]
    return inputs
