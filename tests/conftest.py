"""Fixtures for every test folder (model, data, training, course, exercises: each may add its own
conftest.py), the environment of a test run, and this folder on the import path for helpers.py."""

import os
import sys

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
os.environ.setdefault("MPLBACKEND", "Agg")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # `from helpers import ...` in every folder

import pytest  # noqa: E402

import minibert  # noqa: E402
from helpers import CONFIGS, NOTEBOOK_SECONDS  # noqa: E402


@pytest.fixture
def tiny_config():
    return minibert.BertConfig(**CONFIGS["gelu"])


@pytest.fixture(scope="session")
def corpus():
    return minibert.load_corpus()


@pytest.fixture(scope="session")
def tokenizer(corpus):
    return minibert.train_tokenizer(corpus, vocab_size=8000)


@pytest.fixture(scope="session")
def course():
    """The course's tokenizer and documents, as the figures use them."""
    from minibert.course import figures
    return figures.Course()


def pytest_terminal_summary(terminalreporter, config):
    seconds = config.stash.get(NOTEBOOK_SECONDS, None)
    if seconds:  # the student versions ran: how long each took, the slowest first
        terminalreporter.write_sep("-", "student versions, wall time of each notebook (two kernels side by side)")
        terminalreporter.write_line(", ".join(f"{n} {s:.0f} s" for n, s in sorted(seconds.items(), key=lambda x: -x[1])))
