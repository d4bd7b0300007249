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


def pytest_runtest_logreport(report):
    """Add up each notebook's cells (nbval runs one test per cell) for the summary below."""
    if report.when == "call" and report.nodeid.split("::")[0].endswith(".ipynb"):
        notebook = os.path.basename(report.nodeid.split("::")[0])[:2]
        NOTEBOOK_SECONDS[notebook] = NOTEBOOK_SECONDS.get(notebook, 0.0) + report.duration


def pytest_terminal_summary(terminalreporter, config):
    if NOTEBOOK_SECONDS:  # how long each notebook took, the slowest first: which lesson to start early in class
        terminalreporter.write_sep("-", "the notebooks, seconds each (its cells added up; first run, empty cache)")
        terminalreporter.write_line(", ".join(f"{n} {s:.0f} s" for n, s in
                                              sorted(NOTEBOOK_SECONDS.items(), key=lambda x: -x[1])))
