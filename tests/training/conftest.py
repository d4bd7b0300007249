"""Fixtures of the training tests: a corpus small enough for runs of seconds."""

import pytest

import minibert


@pytest.fixture(scope="session")
def small(corpus):
    """Forty documents and a small vocabulary, (corpus, tokenizer): enough for a run of seconds."""
    docs = minibert.Corpus(corpus[:40], corpus.titles[:40], "small")
    return docs, minibert.train_tokenizer(docs, vocab_size=1500)
