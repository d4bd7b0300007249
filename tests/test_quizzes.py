"""Every notebook's "check yourself" quiz: well formed, marks right and wrong answers, explains both."""

import os

import pytest

from minibert.course import notebook_paths
from minibert.exercises import QUIZZES, quiz, show_quiz


@pytest.mark.parametrize("notebook", sorted(QUIZZES))
def test_quiz_is_well_formed_and_explains_every_answer(notebook, capsys):
    questions = QUIZZES[notebook]
    assert 3 <= len(questions) <= 5 and list(questions) == [f"q{i}" for i in range(1, len(questions) + 1)]
    for name, q in questions.items():
        assert q.answer in q.options and len(q.options) >= 3 and q.why, name
        assert set(q.wrong) <= set(q.options) - {q.answer}, f"{name}: an explanation for a wrong letter"
        for letter in set(q.options) - {q.answer}:
            marked = str(quiz(notebook, {name: letter}))
            assert f"✗ {name}: {letter} is not it" in marked and f"The answer is {q.answer}" in marked
            assert q.wrong.get(letter, "") in marked and q.why in marked
    right = quiz(notebook, {name: q.answer.lower() for name, q in questions.items()})
    assert right.right == right.total == len(questions)
    show_quiz(notebook)
    shown = capsys.readouterr().out
    assert all(q.text in shown for q in questions.values())


def test_every_notebook_has_a_quiz():
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    numbers = {os.path.basename(p)[:2] for p in notebook_paths(os.path.join(root, "notebooks"))}
    assert len(numbers) == 10 and numbers <= set(QUIZZES), f"notebooks without a quiz: {sorted(numbers - set(QUIZZES))}"
