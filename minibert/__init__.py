"""minibert: a compact BERT with masked-LM, next-sentence and causal-LM heads, interchangeable with
transformers' BERT, and the companion package of the course in notebooks/.

Its rooms, each importing only the rooms listed before it (tests/test_layout.py checks):

    cache.py    the cache folder, whole-file writes, locks
    model/      the model: config, encoder, heads, generation, checkpoint files
    data/       text and batches: corpus, tokenizer, examples, collators
    training/   objectives, the trainer, metrics, probes, fine-tuning
    viz/        the course's pictures
    course/     the course's runs, shipped checkpoints, figures, student versions and website
    exercises/  the notebooks' checked exercises and quizzes
    cli.py      python -m minibert
"""



def check_versions():
    """Refuse to start under a dependency outside pyproject.toml's ranges (installed with --no-deps, or
    upgraded since), naming it: otherwise the first sign is an AttributeError deep inside transformers."""
    import importlib.metadata as metadata
    from packaging.requirements import Requirement
    try:
        required = [Requirement(r) for r in metadata.requires("minibert-course") or []]
    except metadata.PackageNotFoundError:  # run from a source tree that was never installed: nothing to compare
        return
    wrong = []
    for requirement in required:
        if requirement.marker is not None:  # the extras ("course"): the package runs without them
            continue
        try:
            found = metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            continue  # its import below names it
        if not requirement.specifier.contains(found, prereleases=True):
            wrong.append(f"{requirement.name} {found} is installed, but minibert needs {requirement}")
    if wrong:
        raise ImportError("; ".join(wrong) + ". Install the versions the course pins: pip install -r requirements.txt")


check_versions()

from .data import (DECISIONS, CausalLMCollator, Corpus, MLMCollator, class_balance, load_corpus, make_lm_examples,
                   make_nsp_examples, make_sop_examples, split_corpus, split_sentences, train_tokenizer)
from .model import (PRESETS, BertConfig, BertForCausalLM, BertForMaskedLM, BertForNextSentencePrediction,
                    BertForPreTraining, BertForSequenceClassification, BertLMHeadModel, BertModel, ModelOutput)
from .model.generation import sample_next_token
from .model.losses import check_causal_labels, shift_labels
from .model.scoring import pseudo_perplexity
from .training import Comparison, Interval, PretrainResult, TrainArgs, Trainer, baselines, block_documents, bootstrap, \
    compare, evaluate, load_result, pretrain, proportion

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
