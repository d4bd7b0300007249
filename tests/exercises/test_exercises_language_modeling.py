"""Checks of notebook 03: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import pytest
import torch
import torch.nn.functional as F
from helpers import assert_hints, stub

import minibert
from minibert.exercises import (check_causal_lm_loss, check_make_causal_labels, check_next_token_targets,
                                check_top_k_filter, quiz, show_quiz)


def test_make_causal_labels():
    assert check_make_causal_labels(lambda ids, mask: ids.masked_fill(mask == 0, -100))
    assert check_make_causal_labels(stub).status == "not done"
    hints = {
        "shifted the labels": lambda ids, mask: torch.cat([ids[:, 1:], torch.full_like(ids[:, :1], -100)], 1)
        .masked_fill(torch.cat([mask[:, 1:], mask[:, :1] * 0], 1) == 0, -100),
        "padding is still a target": lambda ids, mask: ids,
        "padding must be -100 exactly": lambda ids, mask: ids.masked_fill(mask == 0, -1),
        "same shape as input_ids": lambda ids, mask: ids[:, 1:],
        "raised ZeroDivisionError": lambda ids, mask: 1 / 0,
    }
    assert_hints(check_make_causal_labels, hints)


def test_next_token_targets():
    right = lambda labels: torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], -100)], 1)  # noqa: E731
    assert check_next_token_targets(right)
    assert check_next_token_targets(stub).status == "not done"
    assert_hints(check_next_token_targets, {
        "not shifted": lambda x: x, "torch.roll wraps around": lambda x: x.roll(-1, 1),
        "the wrong way": lambda x: torch.cat([torch.full_like(x[:, :1], -100), x[:, :-1]], 1)})


def test_top_k_filter():
    def right(logits, k):
        kth = logits.topk(k, -1).values[:, -1:]
        return logits.masked_fill(logits < kth, float("-inf"))
    assert check_top_k_filter(right)
    assert_hints(check_top_k_filter, {"probabilities": lambda x, k: right(x, k).softmax(-1),
                                      "use -inf, not 0": lambda x, k: right(x, k).nan_to_num(neginf=0.0),
                                      "one token too many": lambda x, k: right(x, k + 1)})


def causal_loss(shift=1, mask_padding=True, reduction="mean", per_sequence=False, transpose=None):
    """The right causal-LM loss, or one of the usual mistakes."""
    def loss(logits, ids, mask):
        V = logits.shape[-1]
        labels = ids.masked_fill(mask == 0, -100) if mask_padding else ids
        if shift >= 0:
            scored, targets = logits[:, :logits.shape[1] - shift], labels[:, shift:]
        else:  # the wrong way: position t scored on token t - 1
            scored, targets = logits[:, 1:], labels[:, :-1]
        if transpose == "logits":
            scored = scored.transpose(0, 1)
        if transpose == "labels":
            targets = targets.transpose(0, 1)
        if per_sequence:
            return torch.stack([F.cross_entropy(scored[b], targets[b]) for b in range(len(ids))]).mean()
        per_token = F.cross_entropy(scored.reshape(-1, V), targets.reshape(-1), reduction="none")  # 0 at -100
        if reduction == "sum":
            return per_token.sum()
        if reduction == "every position":
            return per_token.mean()
        if reduction == "every position, unshifted length":  # divided by B T, not B (T - 1)
            return per_token.sum() / ids.numel()
        if reduction == "none":
            return per_token
        return per_token.sum() / (targets != -100).sum()
    return loss


def test_causal_lm_loss():
    assert check_causal_lm_loss(causal_loss())
    assert check_causal_lm_loss(lambda *args: causal_loss()(*args).item())  # a float is as good as a tensor

    def package_loss(logits, ids, mask):  # what BertForCausalLM computes from labels = input_ids, -100 on padding
        return minibert.model.losses.next_token_loss(logits, ids.masked_fill(mask == 0, -100))
    assert check_causal_lm_loss(package_loss)
    assert check_causal_lm_loss(stub).status == "not done"
    hints = {
        "not shifted": dict(shift=0),
        "shifted twice": dict(shift=2),
        "shifted the wrong way": dict(shift=-1),
        "padding is scored too": dict(mask_padding=False),
        "that is the sum": dict(reduction="sum"),
        "averaged over every position, padding included": dict(reduction="every position"),
        "averaged each sequence first": dict(per_sequence=True),
        "flattened in different orders": dict(transpose="logits"),
        "return one number": dict(reduction="none"),
    }
    assert_hints(check_causal_lm_loss, {hint: causal_loss(**kwargs) for hint, kwargs in hints.items()})
    assert_hints(check_causal_lm_loss, {  # the same hints for the other slip of each kind
        "flattened in different orders": causal_loss(transpose="labels"),
        "averaged over every position, padding included": causal_loss(reduction="every position, unshifted length"),
        "return a number": lambda *args: "4.2",
        "the mean loss is": lambda *args: 1.0,
    })


def test_quiz_marks_answers_and_explains(capsys):
    result = quiz("03", q1="C", q2="B")
    assert result.right == 1 and "✓ q1" in str(result) and "✗ q2: B is not it" in str(result)
    assert "The answer is A" in str(result)
    assert quiz(3, lambda: {"q3": "d"}).right == 1  # notebook as a number, lower-case letter
    assert "not answered yet" in str(quiz("03", stub))
    with pytest.raises(ValueError, match="no question 'q9'"):
        quiz("03", q9="A")
    with pytest.raises(ValueError, match="answer with one of"):
        quiz("03", q1="E")
    with pytest.raises(ValueError, match="no quiz for notebook '42'"):
        quiz("42", q1="A")
    show_quiz("03")
    shown = capsys.readouterr().out
    assert "q6." in shown and "print(targets[1].tolist())" in shown  # the program of the predict-the-output question
