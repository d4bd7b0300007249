"""The exercise framework: every check registered once under its number and exported by name; the new
exercise of docs/teaching.md's guide marks right, wrong (with its hint) and not-done answers as written."""

import json
import re

import pytest

import minibert.exercises as ex
from helpers import ROOT, assert_hints, stub
from minibert.exercises.framework import CHECKS, exercise


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
        exercise("00", 1, "another exercise")(lambda student: lambda: None)


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
