"""Checks of notebook 03: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import pytest
import torch
from conftest import assert_hints, stub

from minibert.exercises import check_make_causal_labels, check_next_token_targets, check_top_k_filter, quiz, show_quiz


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
    for hint, wrong in {"not shifted": lambda x: x, "torch.roll wraps around": lambda x: x.roll(-1, 1),
                        "the wrong way": lambda x: torch.cat([torch.full_like(x[:, :1], -100), x[:, :-1]], 1)}.items():
        assert hint in check_next_token_targets(wrong).message


def test_top_k_filter():
    def right(logits, k):
        kth = logits.topk(k, -1).values[:, -1:]
        return logits.masked_fill(logits < kth, float("-inf"))
    assert check_top_k_filter(right)
    wrong = {"probabilities": lambda x, k: right(x, k).softmax(-1),
             "use -inf, not 0": lambda x, k: right(x, k).nan_to_num(neginf=0.0),
             "one token too many": lambda x, k: right(x, k + 1)}
    for hint, fn in wrong.items():
        assert hint in check_top_k_filter(fn).message


def test_quiz_marks_answers_and_explains(capsys):
    result = quiz("03", q1="B", q2="A")
    assert result.right == 1 and "✓ q1" in str(result) and "✗ q2: A is not it" in str(result)
    assert "The answer is B" in str(result)
    assert quiz(3, lambda: {"q3": "b"}).right == 1  # notebook as a number, lower-case letter
    assert "not answered yet" in str(quiz("03", stub))
    with pytest.raises(ValueError, match="no question 'q9'"):
        quiz("03", q9="A")
    with pytest.raises(ValueError, match="answer with one of"):
        quiz("03", q1="E")
    with pytest.raises(ValueError, match="no quiz for notebook '42'"):
        quiz("42", q1="A")
    show_quiz("03")
    assert "q5." in capsys.readouterr().out
