"""minibert: a compact BERT with masked-LM, next-sentence and causal-LM heads, interchangeable with
transformers' BERT, and the companion package of the course in notebooks/."""

from .config import PRESETS, BertConfig
from .corpus import Corpus, load_corpus, split_corpus, split_sentences
from .data import (DECISIONS, CausalLMCollator, MLMCollator, class_balance, make_lm_examples, make_nsp_examples,
                   make_sop_examples)
from .heads import (BertForCausalLM, BertForMaskedLM, BertForNextSentencePrediction, BertForPreTraining,
                    BertForSequenceClassification, BertLMHeadModel)
from .generation import sample_next_token
from .labels import check_causal_labels, shift_labels
from .metrics import Interval, baselines, bootstrap, evaluate, proportion
from .scoring import pseudo_perplexity
from .model import BertModel, ModelOutput
from .tokenizer import train_tokenizer
from .train import PretrainResult, TrainArgs, Trainer, load_result, pretrain

__version__ = "0.1.0"

COURSE_NAMES = ("COURSE_RUNS", "course_run", "run_dir")  # the course's, from minibert.course


def __getattr__(name):
    """minibert.course_run and the other course names, imported when first used: importing the package
    does not import its command modules, so `python -m minibert.course ...` runs without a warning."""
    if name in COURSE_NAMES:
        from . import course
        return getattr(course, name)
    raise AttributeError(f"module 'minibert' has no attribute {name!r}")


def __dir__():  # tab completion shows the course names too
    return sorted(list(globals()) + list(COURSE_NAMES))
