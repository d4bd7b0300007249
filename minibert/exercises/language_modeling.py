"""Exercises and quiz of notebook 03, language modeling: labels, the shift, and sampling."""

import torch

from ..labels import shift_labels
from . import Question, run_check

EX = "03"


def _batch():
    ids = torch.tensor([[2, 40, 41, 42, 43, 3], [2, 50, 51, 3, 0, 0]])
    mask = torch.tensor([[1, 1, 1, 1, 1, 1], [1, 1, 1, 1, 0, 0]])
    return ids, mask


def check_make_causal_labels(make_causal_labels):
    """make_causal_labels(input_ids, attention_mask) -> the labels to give BertForCausalLM."""
    def judge():
        ids, mask = _batch()
        got = make_causal_labels(ids.clone(), mask.clone())
        expected = ids.masked_fill(mask == 0, -100)
        if not isinstance(got, torch.Tensor) or got.shape != ids.shape:
            return f"return a tensor of the same shape as input_ids {tuple(ids.shape)}: the model shifts, not you"
        if torch.equal(got, expected):
            return None
        if torch.equal(got[:, :-1], expected[:, 1:]) or torch.equal(got, shift_labels(expected)):
            return ("you shifted the labels. BertForCausalLM shifts them itself, so they would be shifted twice "
                    "and position t would learn token t+2. Return input_ids unshifted")
        if torch.equal(got, ids):
            return "padding is still a target: put -100 where attention_mask is 0, so the loss ignores it"
        if torch.equal(got[mask == 1], ids[mask == 1]):
            return f"the real tokens are right; padding must be -100 exactly (you have {got[mask == 0].tolist()})"
        return "labels should be input_ids, with -100 where attention_mask is 0"
    return run_check(f"{EX}.1 labels for a causal LM", judge)


def check_next_token_targets(next_token_targets):
    """next_token_targets(labels) -> what each position is trained on after the model's shift."""
    def judge():
        ids, mask = _batch()
        labels = ids.masked_fill(mask == 0, -100)
        got = next_token_targets(labels.clone())
        expected = shift_labels(labels)
        if not isinstance(got, torch.Tensor) or got.shape != labels.shape:
            return f"return a tensor shaped like labels {tuple(labels.shape)}, with -100 where nothing follows"
        if torch.equal(got, expected):
            return None
        if torch.equal(got, labels):
            return "not shifted: position t must be scored against the token at t+1"
        if torch.equal(got, labels.roll(-1, dims=1)):
            return "torch.roll wraps around: the last position would predict the first token. Use -100 there"
        if torch.equal(got[:, 1:], labels[:, :-1]):
            return "shifted the wrong way: position t predicts t+1 (the future), not t-1"
        return "targets[:, t] should be labels[:, t + 1], and the last position -100"
    return run_check(f"{EX}.2 the shift inside the model", judge)


def check_top_k_filter(top_k_filter):
    """top_k_filter(logits, k) -> logits with everything but the k largest per row set to -inf."""
    def judge():
        logits = torch.tensor([[1.0, 4.0, 2.0, 3.0, 0.5], [0.0, -1.0, 5.0, 2.0, 1.0]])
        got = top_k_filter(logits.clone(), 2)
        expected = torch.full_like(logits, float("-inf"))
        expected[0, [1, 3]] = logits[0, [1, 3]]
        expected[1, [2, 3]] = logits[1, [2, 3]]
        if not isinstance(got, torch.Tensor) or got.shape != logits.shape:
            return "return logits of the same shape (B, V); the sampler applies softmax afterwards"
        if torch.equal(got, expected):
            return None
        if torch.allclose(got.sum(-1), torch.ones(2)):
            return "you returned probabilities; return logits with -inf outside the top k"
        if (got == 0).sum() == 6:
            return "use -inf, not 0, for the removed tokens: exp(0) = 1 keeps them in play"
        if torch.isfinite(got).sum(-1).tolist() == [3, 3]:
            return "one token too many survives: keep exactly k per row"
        return "keep the k largest logits of each row and set the others to -inf"
    return run_check(f"{EX}.3 top-k filtering", judge)


QUIZ = {EX: {
    "q1": Question(
        "You call BertForCausalLM(input_ids=ids, labels=ids). Which token is position t trained to predict?",
        {"A": "token t itself", "B": "token t + 1", "C": "token t + 2", "D": "a [MASK] token"}, "B",
        "the model shifts labels by one inside, so copying labels from input_ids is right."),
    "q2": Question(
        "A common example feeds input_ids[:, :-1] with labels input_ids[:, 1:] to a model that shifts labels "
        "itself. What does position t learn?",
        {"A": "token t + 1, as intended", "B": "token t + 2", "C": "nothing: the loss is zero",
         "D": "token t - 1"}, "B",
        "shifted by the user and again by the model, the target moves two steps ahead; the loss still falls.",
        {"A": "that would need one shift, not two."}),
    "q3": Question(
        "Why are padding positions labelled -100?",
        {"A": "-100 is the id of [PAD]", "B": "cross-entropy skips targets equal to ignore_index=-100, so padding adds "
         "nothing to the loss or the gradient", "C": "it teaches the model to predict padding",
         "D": "it stops attention to padding"}, "B",
        "ignore_index=-100 is PyTorch's and transformers' convention; attention to padding is stopped by "
        "attention_mask, a separate thing.", {"D": "that is attention_mask's job."}),
    "q4": Question(
        "On held-out text a causal LM has perplexity 150 and the unigram model 900. What does that say?",
        {"A": "on average the model is as unsure as a choice among ~150 equally likely tokens, six times fewer than "
         "word frequencies alone allow", "B": "150 of 900 tokens are predicted correctly",
         "C": "the model is overfitting", "D": "nothing: perplexities of different models cannot be compared"}, "A",
        "perplexity is exp(mean cross-entropy): the effective number of choices per token, comparable on the "
        "same text and tokenizer."),
    "q5": Question(
        "Why does a key/value cache make generation faster and leave its output unchanged?",
        {"A": "with causal attention, the keys and values of earlier tokens never change when a token is appended, "
         "so each step computes them only for the new token", "B": "it caches the logits of frequent tokens",
         "C": "it lowers the numerical precision", "D": "it skips the last layers"}, "A",
        "earlier positions cannot see later ones, so their keys and values are final once computed."),
}}
