"""Checks of notebook 05: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import random

from helpers import assert_hints, stub, word_tokenizer

from minibert.exercises import check_make_nsp_dataset, check_make_nsp_pair, check_make_sop_pair

CLS, SEP = 2, 3


def pair(a, b, label):
    return {"input_ids": [CLS, *a, SEP, *b, SEP], "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
            "next_sentence_label": label}


def test_make_nsp_pair():
    assert check_make_nsp_pair(lambda a, b, is_next: pair(a, b, 0 if is_next else 1))
    assert check_make_nsp_pair(stub).status == "not done"
    hints = {
        "0 and 1 are swapped": lambda a, b, is_next: pair(a, b, 1 if is_next else 0),
        "integer 0 or 1": lambda a, b, is_next: pair(a, b, not is_next),
        "wrong order": lambda a, b, is_next: pair(b, a, 0 if is_next else 1),
        "add the special tokens": lambda a, b, is_next: {**pair(a, b, 0), "input_ids": a + b},
        "second [SEP]": lambda a, b, is_next: {**pair(a, b, 0), "input_ids": [CLS, *a, SEP, *b]},
        "final [SEP] belongs to segment B": lambda a, b, is_next: {
            **pair(a, b, 0 if is_next else 1), "token_type_ids": [0] * (len(a) + 2) + [1] * len(b) + [0]},
        "first [SEP] closes segment A": lambda a, b, is_next: {
            **pair(a, b, 0 if is_next else 1), "token_type_ids": [0] * (len(a) + 1) + [1] * (len(b) + 2)},
        "return a dict": lambda a, b, is_next: [CLS, *a, SEP, *b, SEP],
        "raised ZeroDivisionError": lambda a, b, is_next: 1 / 0,
    }
    assert_hints(check_make_nsp_pair, hints)


def test_make_sop_pair():
    right = lambda first, second, swap: pair(second, first, 1) if swap else pair(first, second, 0)  # noqa: E731
    assert check_make_sop_pair(right)
    assert check_make_sop_pair(stub).status == "not done"
    hints = {
        "changed the label but not the order": lambda f, s, swap: pair(f, s, int(swap)),
        "a swapped pair has label 1": lambda f, s, swap: pair(s, f, 0) if swap else pair(f, s, 0),
        "original order has label 0": lambda f, s, swap: pair(s, f, 0) if swap else pair(f, s, 1),
        "wrong order": lambda f, s, swap: pair(s, f, 1) if not swap else pair(f, s, 0),
    }
    assert_hints(check_make_sop_pair, hints)


def nsp_dataset(documents, rng, p_random=0.5, draw_b=None):
    """One (A, B, label) per consecutive pair inside a document; B random with probability p_random."""
    dataset = []
    for d, doc in enumerate(documents):
        for i in range(len(doc) - 1):
            if rng.random() >= p_random:
                dataset.append((doc[i], doc[i + 1], 0))
            elif draw_b:
                dataset.append((doc[i], draw_b(documents, d, rng), 1))
            else:
                other = rng.randrange(len(documents) - 1)
                other += other >= d  # any document but this one
                dataset.append((doc[i], rng.choice(documents[other]), 1))
    return dataset


def flattened(documents, rng):
    sentences = [s for doc in documents for s in doc]
    return nsp_dataset([sentences], rng, draw_b=lambda docs, d, rng: rng.choice(documents[0]))


def crashes_on_one_sentence(documents, rng):
    for doc in documents:
        rng.randrange(len(doc) - 1)  # the index of a random first sentence: empty range for one sentence
    return nsp_dataset(documents, rng)


def test_make_nsp_dataset():
    assert check_make_nsp_dataset(nsp_dataset)
    others = lambda docs, d, rng: rng.choice([s for k, doc in enumerate(docs) if k != d for s in doc])  # noqa: E731
    assert check_make_nsp_dataset(lambda documents, rng: nsp_dataset(documents, rng, draw_b=others))
    assert check_make_nsp_dataset(stub).status == "not done"
    hints = {
        "0 and 1 are swapped": lambda documents, rng: [(a, b, 1 - label) for a, b, label in
                                                      nsp_dataset(documents, rng)],
        "from A's own document": lambda documents, rng: nsp_dataset(
            documents, rng, draw_b=lambda docs, d, rng: rng.choice(docs[d])),
        "the very sentence that follows A": lambda documents, rng: nsp_dataset(
            documents, rng, draw_b=lambda docs, d, rng: rng.choice([s for doc in docs for s in doc])),
        "crosses a document boundary": flattened,
        "NotNext; with probability 0.5": lambda documents, rng: nsp_dataset(documents, rng, p_random=0.15),
        "a single sentence made your code raise ValueError": crashes_on_one_sentence,
        "one sentence gives no pair": lambda documents, rng: nsp_dataset(documents, rng) + [
            (doc[0], documents[d - 1][0], 1) for d, doc in enumerate(documents) if len(doc) == 1],
        "same seed gave different datasets": lambda documents, rng: nsp_dataset(documents, random.Random()),
        "label 0 (IsNext) must keep": lambda documents, rng: [(a, b, 0) for a, b, _ in nsp_dataset(documents, rng)],
        "integer 0 (IsNext) or 1": lambda documents, rng: [(a, b, label == 1) for a, b, label in
                                                         nsp_dataset(documents, rng)],
        "(sentence_a, sentence_b, label) tuples": lambda documents, rng: [a for a, _, _ in nsp_dataset(documents, rng)],
    }
    assert_hints(check_make_nsp_dataset, hints)


def test_the_exercise_keeps_the_package_convention():
    """What 05.3 asks is what make_nsp_examples does: B from the true continuation is label 0, a label 1 pair
    takes B from another document."""
    import minibert
    words = ["deep learning is fun.", "learning is hard.", "deep is fun.", "fun is hard.", "is deep learning fun?"]
    documents = [words[d:] + words[:d] for d in range(5)]
    examples = minibert.make_nsp_examples(documents, word_tokenizer(), max_length=12, seed=0)
    assert {e["next_sentence_label"] for e in examples} == {0, 1}
    for e in examples:
        source = e["source"]
        if e["next_sentence_label"] == 0:
            assert source["b_from"] == "next" and source["b_document"] == source["document"]
        else:
            assert source["b_from"] == "random document" and source["b_document"] != source["document"]
