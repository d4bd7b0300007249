"""Exercises and quizzes for the notebooks.

A check runs your function on several cases and answers in one line: correct, not done yet, or
what the likely mistake is (labels shifted twice, -100 forgotten on padding, ...). A quiz takes your
answers to a notebook's "check yourself" questions and explains each one.

    from minibert.exercises import check_make_causal_labels, quiz
    check_make_causal_labels(make_labels)   # -> ✓ / ○ / ✗ with a hint
    quiz("03", q1="B", q2="A")              # -> right or wrong, with a one-line explanation

The checks live in one module per notebook (welcome.py, tokenization.py, ...), each registered under
its number by the @exercise decorator of framework.py, which also holds what they share: Result,
run_check, Slip and judge_answer. A check is a judge of one case and its list of cases; most are
written as data: a table of Slips gives each usual mistake, what a student who makes it returns and
the hint that names it, side by side, and judge_answer compares an answer with the right one, then
with each slip. The quizzes are data too, one TOML file per notebook in quizzes/, read and checked by
framework.py. docs/teaching.md says how to add an exercise or edit a quiz.
"""

from .framework import (CHECKS, CLS, MASK, PAD, QUIZZES, SEP, UNK, Question, QuizResult, Result,  # noqa: F401
                        Slip, exercise, expect, judge_answer, load_quiz, quiz, quiz_of, run_check, same_number,
                        show_quiz, tensor_of_shape)

# the modules in the order of the notebooks: importing one registers its checks (CHECKS)
from . import (welcome, tokenization, architecture, language_modeling, masked_lm, sentence_pairs,
               pretraining, attention, objectives, decoders, fine_tuning)

MODULES = (welcome, tokenization, architecture, language_modeling, masked_lm, sentence_pairs, pretraining,
           attention, objectives, decoders, fine_tuning)
globals().update({check.__name__: check for check in CHECKS.values()})  # check_count_words, ...
