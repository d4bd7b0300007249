"""The exercise framework: every check registered once under its number and exported by name; judge_answer
tells a right answer, a slip and anything else apart; the new exercise of docs/teaching.md's guide marks right,
wrong (with its hint) and not-done answers as written."""

import json
import re

import pytest

import minibert.exercises as ex
from helpers import ROOT, assert_hints, stub
from minibert.exercises.framework import CHECKS, Slip, exercise, expect, judge_answer


def test_every_check_is_registered_under_its_number_exported_by_name_and_used_by_its_notebook():
    used = {}
    for path in sorted((ROOT / "notebooks").glob("*.ipynb")):
        source = "".join("".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code")
        used.update({name: path.name[:2] for name in re.findall(r"(?<![\w.])(check_\w+)\(", source)})
    for number, check in CHECKS.items():
        assert getattr(ex, check.__name__) is check and check.exercise == number
        assert used.get(check.__name__) == number[:2], f"{check.__name__} ({number}) is not used in notebook {number[:2]}"
    assert set(used) <= {check.__name__ for check in CHECKS.values()}


def test_a_taken_number_is_refused():
    with pytest.raises(ValueError, match="exercise 00.1 is registered twice"):
        exercise("00", 1, "another exercise")(lambda student: None)


SLIPS = [  # answers to "the sum of a list", on the case (numbers,)
    Slip("count", len, "you counted the numbers"),
    Slip("first", lambda numbers: numbers[0], "that is the first number"),
    Slip("largest", max, "that is the largest number"),  # 3 on [3, 1], as "first": never named there
    Slip("only when long", lambda numbers: sum(numbers[:-1]) if len(numbers) > 2 else None, "the last is left out"),
]


def verdict(got, numbers=(2, 5, 1), **kwargs):
    return judge_answer(got, sum(numbers), SLIPS, (list(numbers),), fallback=lambda got: f"not {got}", **kwargs)


def test_judge_answer_names_the_first_slip_that_explains_an_answer():
    assert verdict(8) is None
    assert verdict(3) == "you counted the numbers"
    assert verdict(5) == "that is the largest number"
    assert verdict(3, numbers=(3, 1)) == "that is the first number"  # "largest" is 3 as well, but comes later
    assert verdict(7) == "the last is left out"
    assert verdict(None, numbers=(3, 1)) == "not None"  # 2 numbers cannot show "only when long": skipped
    assert verdict(4) == "not 4"
    assert verdict("8", convert=int) is None
    assert verdict("x", form=expect(lambda got: got.isdigit(), "a number please")) == "a number please"
    assert judge_answer(4, 8, fallback="wrong") == "wrong"


def test_judge_answer_on_several_cases_needs_a_slip_on_every_case_that_can_show_it():
    cases = [([2, 5, 1],), ([4, 4],), ([1, 2, 3, 4],)]
    rights = [sum(numbers) for numbers, in cases]

    def several(answers):
        return judge_answer(answers, rights, SLIPS, cases=cases, fallback="no slip")
    assert several(rights) is None
    assert several([3, 2, 4]) == "you counted the numbers"
    assert several([3, 2, 10]) == "no slip"  # a count on two cases, right on the third
    assert several([7, 8, 6]) == "the last is left out"  # the 2-number case cannot show it: skipped
    assert several([7, 4, 6]) == "the last is left out"  # whatever the answer there
    assert several([7, 8, 5]) == "no slip"


def test_the_exercise_of_the_teachers_guide_works_as_written(monkeypatch):
    """docs/teaching.md adds an exercise to notebook 00: its check and its test, run here as written."""
    monkeypatch.setattr("minibert.exercises.framework.CHECKS", dict(CHECKS))  # registered for this test only
    guide = (ROOT / "docs" / "teaching.md").read_text().split("### Adding an exercise", 1)[1]
    check_code, _, test_code = re.findall(r"```python\n(.*?)```", guide, re.S)[:3]
    from minibert.exercises import welcome
    namespace = dict(vars(welcome))  # the module the guide writes in: EX, DOCUMENTS, exercise, ...
    exec(check_code, namespace)
    namespace.update(stub=stub, assert_hints=assert_hints)
    exec(test_code, namespace)
    tests = [f for name, f in namespace.items() if name.startswith("test_")]
    assert len(tests) == 1
    tests[0]()
    assert "✗" in namespace["check_count_sentences"](lambda docs: 5).message
