"""Every notebook's "check yourself" quiz: well formed, marks right and wrong answers, explains both."""

import contextlib
import io
import os
import re
import tomllib
from collections import Counter

import pytest

from minibert.course.notebooks import notebook_paths
from minibert.exercises import QUIZZES, Question, load_quiz, quiz, show_quiz
from helpers import ROOT


@pytest.mark.parametrize("notebook", sorted(QUIZZES))
def test_quiz_is_well_formed_and_explains_every_answer(notebook, capsys):
    questions = QUIZZES[notebook]
    assert 3 <= len(questions) <= 7 and list(questions) == [f"q{i}" for i in range(1, len(questions) + 1)]
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
    root = str(ROOT)
    numbers = {os.path.basename(p)[:2] for p in notebook_paths(os.path.join(root, "notebooks"))}
    assert len(numbers) == 11 and numbers <= set(QUIZZES), f"notebooks without a quiz: {sorted(numbers - set(QUIZZES))}"


ALL_QUESTIONS = [(f"{nb} {name}", q) for nb, questions in sorted(QUIZZES.items()) for name, q in questions.items()]


def right_is_longest(q):
    return all(len(q.options[q.answer]) > len(text) for letter, text in q.options.items() if letter != q.answer)


def test_the_longest_option_is_no_clue():
    # A student who always picks the longest option must not pass: at most a third of the answers are it.
    longest = [name for name, q in ALL_QUESTIONS if right_is_longest(q)]
    assert len(longest) <= len(ALL_QUESTIONS) / 3, (
        f"the right option is the longest in {len(longest)} of {len(ALL_QUESTIONS)} questions: {longest}")


def test_right_letters_are_spread():
    counts = Counter(q.answer for _, q in ALL_QUESTIONS)
    assert max(counts.values()) <= 0.4 * len(ALL_QUESTIONS), f"right letters: {dict(sorted(counts.items()))}"
    assert len(counts) >= 4, f"some letter is never right: {dict(sorted(counts.items()))}"


@pytest.mark.parametrize("notebook", sorted(QUIZZES))
def test_every_quiz_asks_to_predict_an_output(notebook):
    assert any(q.code for q in QUIZZES[notebook].values()), f"quiz {notebook} has no predict-the-output question"


@pytest.mark.parametrize("name,q", [(name, q) for name, q in ALL_QUESTIONS if q.code], ids=lambda x: str(x)[:6])
def test_predict_the_output_answer_is_what_the_code_prints(name, q):
    # The right option is the last line the program really prints, so a change in the package that
    # changes the output fails here instead of leaving a wrong answer in the quiz.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(q.code, {"__name__": "__quiz__"})
    printed = out.getvalue().strip().splitlines()
    assert printed and printed[-1].strip() == q.options[q.answer].strip(), (
        f"{name}: the code prints {printed[-1:]!r}; the right option says {q.options[q.answer]!r}")
    others = [text for letter, text in q.options.items() if letter != q.answer]
    assert printed[-1].strip() not in [t.strip() for t in others], f"{name}: a wrong option equals the output"


def test_every_check_of_every_notebook_is_exported():
    import minibert.exercises as exercises
    for module in exercises.MODULES:
        checks = [name for name in vars(module) if name.startswith("check_") and callable(getattr(module, name))]
        assert checks, f"{module.__name__} has no check"
        for name in checks:
            assert getattr(exercises, name, None) is getattr(module, name), f"minibert.exercises does not export {name}"


QUIZ_FILE = """
[q1]
text = "Which letter is right?"
options.A = "this one"
options.B = "that one"
answer = "A"
why = "A is the right letter."
wrong.B = "B is the other one."
"""


def test_a_quiz_file_reads_as_its_questions(tmp_path):
    path = tmp_path / "99.toml"
    path.write_text(QUIZ_FILE)
    assert load_quiz(path) == {"q1": Question("Which letter is right?", {"A": "this one", "B": "that one"}, "A",
                                              "A is the right letter.", {"B": "B is the other one."})}


@pytest.mark.parametrize("change,problem", [
    (('answer = "A"', 'answer = "C"'), "question [q1]: answer 'C' is not one of its options (A, B)"),
    (('answer = "A"', 'answer = ["A"]'), "question [q1]: answer ['A'] is not one of its options (A, B)"),
    (("wrong.B", "wrong.A"), "question [q1]: wrong.A explains the right answer"),
    (("wrong.B", "wrong.D"), "question [q1]: wrong.D explains no option"),
    (('why = "A is the right letter."', 'why = " "'), "question [q1]: why must be a non-empty string"),
    (("text = ", "txt = "), "question [q1]: unknown key txt"),
    (('answer = "A"', 'answer = "A"\nhint = "A"'), "question [q1]: unknown key hint"),
    (('answer = "A"\n', ""), "question [q1]: missing answer"),
    (('"this one"', '"this one'), "not a valid TOML file"),
], ids=["answer", "answer-not-a-letter", "wrong-is-answer", "wrong-no-option", "empty-why", "misspelt-key", "unknown-key", "missing",
        "toml"])
def test_a_broken_quiz_file_is_refused_with_the_file_and_the_question_named(tmp_path, change, problem):
    path = tmp_path / "99.toml"
    path.write_text(QUIZ_FILE.replace(*change))
    with pytest.raises(ValueError) as refused:
        load_quiz(path)
    assert str(refused.value).startswith(f"{path}") and problem in str(refused.value), str(refused.value)


def test_the_teachers_guide_shows_a_question_as_its_file_holds_it():
    guide = (ROOT / "docs" / "teaching.md").read_text().split("### Editing a quiz", 1)[1]
    example = tomllib.loads(re.search(r"```toml\n(.*?)```", guide, re.S).group(1))
    assert {name: Question(**table) for name, table in example.items()} == {"q3": QUIZZES["01"]["q3"]}
