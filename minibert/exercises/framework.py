"""What every exercise and quiz shares: @exercise, which registers a check under its number (CHECKS);
run_check, which judges a check's cases in turn and answers with its verdict (Result), never letting a
student's error stop the notebook; Slip, a usual mistake with its hint, and judge_answer, which tells a
right answer from a slip; and the quizzes, read from one file per notebook in quizzes/ (Question, quiz,
show_quiz). Each notebook's module imports from here; docs/teaching.md shows how to add an exercise or
edit a quiz."""

import functools
import operator
import pathlib
import tomllib
from dataclasses import dataclass, field, fields
from typing import Callable

import torch

from ..data.tokenizer import SPECIAL_TOKENS

# the course tokenizer's special-token ids, which the checks' hand-made batches use
PAD, UNK, CLS, SEP, MASK = (SPECIAL_TOKENS.index(t) for t in ("[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"))


@dataclass
class Result:
    """The verdict of a check. It is truthy only when the exercise is solved."""
    exercise: str
    status: str  # "passed", "not done" or "wrong"
    hint: str = ""

    def __bool__(self):
        return self.status == "passed"

    @property
    def message(self):
        if self.status == "passed":
            return f"✓ {self.exercise}: correct{' - ' + self.hint if self.hint else ''}"
        if self.status == "not done":
            return (f"○ {self.exercise}: not done yet - replace `raise NotImplementedError` with your code, then run "
                    "the check again")
        return f"✗ {self.exercise}: {self.hint}"

    def __repr__(self):
        return self.message

    __str__ = __repr__


def run_check(label, judge, cases=((),)):
    """Judge the cases in turn, judge(*case), which returns None when the answer is right on that case
    or a hint naming the mistake, and answer with the Result of the exercise `label`: the first hint,
    or passed. Your unfinished stub (NotImplementedError) is "not done"; any other error in your code
    is reported, never raised, so a notebook always runs to the end."""
    try:
        for case in cases:
            hint = judge(*case)
            if hint is not None:
                return Result(label, "wrong", hint)
    except NotImplementedError:
        return Result(label, "not done")
    except Exception as e:  # the student's code failed: say how, do not crash the notebook
        return Result(label, "wrong", f"your code raised {type(e).__name__}: {e}")
    return Result(label, "passed")


CHECKS = {}  # "03.2" -> the check of exercise 2 of notebook 03, in the order the modules register them


def exercise(notebook, number, title, cases=((),)):
    """Register an exercise's check under its number (notebook.number) and title; minibert.exercises
    exports it under the function's name. The decorated function judges one case: given the student's
    function and the case's arguments, it returns None when the answer is right, else a hint naming
    the mistake. `cases` is the list of cases, tuples of arguments, or a function that makes it when
    the check runs; the default, one case without arguments, suits a judge that builds its own.
    Calling the check, check(student_function), judges the cases in order through run_check: the
    first hint wins, and a student's error is reported, never raised."""
    key = f"{notebook}.{number}"

    def register(judge):
        if key in CHECKS:
            raise ValueError(f"exercise {key} is registered twice: {CHECKS[key].__name__} and {judge.__name__}")
        if any(check.__name__ == judge.__name__ for check in CHECKS.values()):
            raise ValueError(f"two exercises are named {judge.__name__}: minibert.exercises exports them by name")

        @functools.wraps(judge)
        def check(*student):
            return run_check(f"{key} {title}", functools.partial(judge, *student),
                             cases() if callable(cases) else cases)
        check.exercise = key
        CHECKS[key] = check
        return check
    return register


@dataclass(frozen=True)
class Slip:
    """A usual mistake, whole: its name, what a student who makes it returns on a case (answer(*case), or None
    where that case cannot show it), and the hint that names it."""
    name: str
    answer: Callable
    hint: str


def judge_answer(got, right, slips=(), case=(), *, fallback, cases=None, same=operator.eq, form=None, convert=None):
    """The verdict on a student's answer: None when it is right, else a hint naming the mistake.

    got is what the student's code returned on `case` (the arguments of the call, a tuple), right the right
    answer. In turn: form(got), when given, names a wrong type or shape (a hint, or None when the form is
    right); convert(got), when given, makes what is compared (a float, say); same(got, right) tells a right
    answer (==, torch.equal, an allclose, same_number); else the hint of the first slip whose answer on the case
    agrees with got; else the fallback, a hint or a function of got that gives one.

    With `cases` (several cases judged together), got and right hold one answer per case: got is right when
    every answer is, and a slip explains it only when it agrees on every case that can show it."""
    if form is not None:
        hint = form(got)
        if hint:
            return hint
    if convert is not None:
        got = convert(got)
    answers, rights, cases = (got, right, cases) if cases is not None else ([got], [right], [case])
    if all(same(answer, value) for answer, value in zip(answers, rights)):
        return None
    for slip in slips:
        shown = [(answer, value) for answer, value in zip(answers, (slip.answer(*c) for c in cases))
                 if value is not None]
        if shown and all(same(answer, value) for answer, value in shown):
            return slip.hint
    return fallback(got) if callable(fallback) else fallback


def expect(test, hint):
    """A form check for judge_answer: `hint` when test(answer) is false, else None."""
    return lambda got: None if test(got) else hint


def tensor_of_shape(shape, hint):
    """A form check for judge_answer: `hint` when the answer is not a tensor of this shape, else None."""
    return expect(lambda got: isinstance(got, torch.Tensor) and got.shape == shape, hint)


def same_number(got, value):
    """Does a numeric answer agree with a value, to 1e-4 (relative above 1)? float32 arithmetic leaves a little
    error: 100 * 0.6 is not exactly 60."""
    return abs(got - value) < 1e-4 * max(1.0, abs(value))


@dataclass
class Question:
    """A quiz question, as a table of quizzes/NN.toml gives it."""
    text: str
    options: dict  # letter -> option text
    answer: str  # the right letter
    why: str  # one line: why the right answer is right
    wrong: dict = field(default_factory=dict)  # letter -> why that option is wrong (optional)
    code: str = ""  # "predict the output": a short program; the right option is exactly what it prints


QUIZ_FOLDER = pathlib.Path(__file__).with_name("quizzes")  # NN.toml: the quiz of notebook NN


def load_quiz(path):
    """The questions of a quiz file, {"q1": Question, ...} in the file's order. Each question is a table,
    [q1], with the fields of Question; a mistake in the file is refused with an error that names the file
    and the question."""
    path = pathlib.Path(path)
    try:
        with path.open("rb") as f:
            tables = tomllib.load(f)
    except tomllib.TOMLDecodeError as e:
        raise ValueError(f"{path}: not a valid TOML file ({e})") from None
    return {name: question_from(table, f"{path}, question [{name}]") for name, table in tables.items()}


def question_from(table, where):
    """A Question from one table of a quiz file, checked: `where` names the file and the question in errors."""
    def refuse(problem):
        raise ValueError(f"{where}: {problem}")

    def text(key, value):
        if not isinstance(value, str) or not value.strip():
            refuse(f"{key} must be a non-empty string, not {value!r}")

    if not isinstance(table, dict):
        refuse("a question is a table: [q1], then text = ..., options.A = ..., answer = ..., why = ...")
    keys = [f.name for f in fields(Question)]
    unknown = sorted(set(table) - set(keys))
    if unknown:
        refuse(f"unknown key {', '.join(unknown)}; a question has {', '.join(keys)}")
    missing = [key for key in ("text", "options", "answer", "why") if key not in table]
    if missing:
        refuse(f"missing {', '.join(missing)}")
    text("text", table["text"])
    text("why", table["why"])
    options, answer, wrong = table["options"], table["answer"], table.get("wrong", {})
    if not isinstance(options, dict) or len(options) < 2:
        refuse("options must give at least two letters: options.A = ..., options.B = ...")
    for letter, option in options.items():
        text(f"options.{letter}", option)
    if not isinstance(answer, str) or answer not in options:
        refuse(f"answer {answer!r} is not one of its options ({', '.join(options)})")
    if not isinstance(wrong, dict):
        refuse("wrong must give, letter by letter, why an option is wrong: wrong.B = ...")
    for letter, reason in wrong.items():
        if letter not in options or letter == answer:
            refuse(f"wrong.{letter} explains {'the right answer' if letter == answer else 'no option'}: "
                   f"give wrong.X only for a wrong option X ({', '.join(sorted(set(options) - {answer}))})")
        text(f"wrong.{letter}", reason)
    if not isinstance(table.get("code", ""), str):
        refuse("code must be a string: the program whose output the question asks to predict")
    return Question(**table)


QUIZZES = {path.stem: load_quiz(path) for path in sorted(QUIZ_FOLDER.glob("*.toml"))}  # "03" -> {"q1": ...}


def show_quiz(notebook):
    """Print a notebook's quiz questions and options."""
    for name, q in quiz_of(notebook).items():
        print(f"{name}. {q.text}")
        if q.code:
            print("\n".join("      " + line for line in q.code.strip().splitlines()))
        for letter, option in q.options.items():
            print(f"   {letter}) {option}")


def quiz(notebook, answers=None, **kwargs):
    """Mark answers to a notebook's quiz: quiz("03", q1="B"), or quiz("03", my_answers) where
    my_answers is a dict or a function returning one."""
    questions = quiz_of(notebook)
    if callable(answers):
        try:
            answers = answers()
        except NotImplementedError:
            return QuizResult(notebook, [f"○ quiz {notebook}: not answered yet"], 0, len(questions))
    answers = {**(answers or {}), **kwargs}
    lines, right = [], 0
    for name, given in answers.items():
        if name not in questions:
            raise ValueError(f"quiz {notebook} has no question {name!r}; its questions are {', '.join(questions)}")
        q = questions[name]
        given = str(given).strip().upper()
        if given not in q.options:
            raise ValueError(f"{name}: answer with one of {', '.join(q.options)}, not {given!r}")
        if given == q.answer:
            right += 1
            lines.append(f"✓ {name}: right. {q.why}")
        else:
            reason = q.wrong.get(given, "")
            lines.append(f"✗ {name}: {given} is not it.{' ' + reason if reason else ''} The answer is {q.answer}: "
                         f"{q.why}")
    return QuizResult(notebook, lines, right, len(questions))


@dataclass
class QuizResult:
    notebook: str
    lines: list
    right: int
    total: int

    def __repr__(self):
        return "\n".join(self.lines + [f"{self.right} of {self.total} right"])

    __str__ = __repr__


def quiz_of(notebook):
    notebook = f"{int(notebook):02d}" if str(notebook).isdigit() else str(notebook)
    if notebook not in QUIZZES:
        raise ValueError(f"no quiz for notebook {notebook!r}; quizzes exist for {', '.join(sorted(QUIZZES))}")
    return QUIZZES[notebook]
