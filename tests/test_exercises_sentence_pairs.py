"""Checks of notebook 05: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

from conftest import assert_hints, stub

from minibert.exercises import check_is_next_probability, check_make_nsp_pair, check_make_sop_pair

CLS, SEP = 2, 3


def pair(a, b, label):
    return {"input_ids": [CLS, *a, SEP, *b, SEP], "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
            "next_sentence_label": label}


def test_make_nsp_pair():
    assert check_make_nsp_pair(lambda a, b, is_next: pair(a, b, 0 if is_next else 1))
    assert check_make_nsp_pair(stub).status == "not done"
    hints = {
        "0 and 1 are swapped": lambda a, b, is_next: pair(a, b, 1 if is_next else 0),
        "integer 0 or 1": lambda a, b, is_next: pair(a, b, not is_next),
        "wrong order": lambda a, b, is_next: pair(b, a, 0 if is_next else 1),
        "add the special tokens": lambda a, b, is_next: {**pair(a, b, 0), "input_ids": a + b},
        "second [SEP]": lambda a, b, is_next: {**pair(a, b, 0), "input_ids": [CLS, *a, SEP, *b]},
        "final [SEP] belongs to segment B": lambda a, b, is_next: {
            **pair(a, b, 0 if is_next else 1), "token_type_ids": [0] * (len(a) + 2) + [1] * len(b) + [0]},
        "first [SEP] closes segment A": lambda a, b, is_next: {
            **pair(a, b, 0 if is_next else 1), "token_type_ids": [0] * (len(a) + 1) + [1] * (len(b) + 2)},
        "return a dict": lambda a, b, is_next: [CLS, *a, SEP, *b, SEP],
        "raised ZeroDivisionError": lambda a, b, is_next: 1 / 0,
    }
    assert_hints(check_make_nsp_pair, hints)


def test_make_sop_pair():
    right = lambda first, second, swap: pair(second, first, 1) if swap else pair(first, second, 0)  # noqa: E731
    assert check_make_sop_pair(right)
    assert check_make_sop_pair(stub).status == "not done"
    hints = {
        "changed the label but not the order": lambda f, s, swap: pair(f, s, int(swap)),
        "a swapped pair has label 1": lambda f, s, swap: pair(s, f, 0) if swap else pair(f, s, 0),
        "original order has label 0": lambda f, s, swap: pair(s, f, 0) if swap else pair(f, s, 1),
        "wrong order": lambda f, s, swap: pair(s, f, 1) if not swap else pair(f, s, 0),
    }
    assert_hints(check_make_sop_pair, hints)


def test_is_next_probability():
    assert check_is_next_probability(lambda logits: logits.softmax(-1)[:, 0])
    assert check_is_next_probability(stub).status == "not done"
    hints = {
        "column 1, NotNext": lambda logits: logits.softmax(-1)[:, 1],
        "those are logits": lambda logits: logits[:, 0],
        "not over the pairs": lambda logits: logits.softmax(0)[:, 0],
        "sigmoid of one logit": lambda logits: logits[:, 0].sigmoid(),
        "one probability per pair": lambda logits: logits.softmax(-1),
    }
    assert_hints(check_is_next_probability, hints)
