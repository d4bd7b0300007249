"""Exercises and quizzes for the notebooks.

A check runs your function on several cases and answers in one line: correct, not done yet, or
what the likely mistake is (labels shifted twice, -100 forgotten on padding, ...). A quiz takes your
answers to a notebook's "check yourself" questions and explains each one.

    from minibert.exercises import check_causal_labels, quiz
    check_causal_labels(make_labels)        # -> ✓ / ○ / ✗ with a hint
    quiz("03", q1="B", q2="A")              # -> right or wrong, with a one-line explanation

The checks live in one module per notebook topic (language_modeling.py, masked_lm.py, ...); the end of
this file imports each module's `check_*` functions and its QUIZ; framework.py holds what they share. Most checks are written as data: a
`*_variants` function computes the right answer and what each usual slip returns, a `*_HINTS` table maps each
slip to its hint, and first_matching_hint (framework.py) finds the slip that explains a wrong answer.
"""

from .framework import (CLS, MASK, PAD, QUIZZES, SEP, UNK, Question, QuizResult, Result, first_matching_hint,  # noqa: F401
                        quiz, quiz_of, run_check, same_number, show_quiz)

from . import (architecture, attention, decoders, fine_tuning, language_modeling, masked_lm,
               objectives, pretraining, sentence_pairs, tokenization, welcome)
from .architecture import check_causal_attention, check_embedding_parameters, check_layer_parameters
from .attention import check_attention_entropy, check_attention_to, check_masked_attention
from .decoders import check_decoder_inputs, check_greedy_decode
from .fine_tuning import check_freeze_encoder, check_stratified_subset
from .language_modeling import (check_causal_lm_loss, check_make_causal_labels, check_next_token_targets,
                                check_top_k_filter)
from .masked_lm import check_mask_tokens, check_mask_with_budget, check_mlm_accuracy
from .objectives import check_majority_baseline, check_mean_pool
from .pretraining import check_pretraining_loss, check_train_step
from .sentence_pairs import check_make_nsp_dataset, check_make_nsp_pair, check_make_sop_pair
from .tokenization import check_attention_mask_from_lengths, check_encode_pair, check_wordpiece_split
from .welcome import check_count_words, check_longest_document

MODULES = (welcome, tokenization, architecture, language_modeling, masked_lm, sentence_pairs, pretraining,
           attention, objectives, decoders, fine_tuning)  # in the order of the notebooks
for _module in MODULES:
    QUIZZES.update(_module.QUIZ)
