"""A training run scored as the shipped checkpoints' cards are: shared by the lever benchmarks."""

import json
import os
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from transformers import AutoTokenizer  # noqa: E402

import minibert  # noqa: E402
from minibert.course import pretrained  # noqa: E402


def train_and_score(run, objective="mlm", **settings):
    """Train a run into the folder `run` (reused when finished), export it to a temporary checkpoint
    and return (its card's scores, its training minutes, its tokenizer)."""
    minibert.pretrain(objective, out=run, reuse=True, progress=False, **settings)
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, os.path.basename(os.path.normpath(run)))
        pretrained.export(run, dest)
        with open(os.path.join(dest, "eval_results.json")) as f:
            scores = json.load(f)
        with open(os.path.join(dest, "training_args.json")) as f:
            minutes = json.load(f)["minutes"]
        tokenizer = AutoTokenizer.from_pretrained(dest)
    return scores, minutes, tokenizer
