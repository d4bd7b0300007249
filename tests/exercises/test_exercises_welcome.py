"""Checks of notebook 00: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

from helpers import assert_hints, stub

from minibert.exercises import check_count_words, check_longest_document


def words(documents):
    return [sum(len(s.split()) for s in doc) for doc in documents]


def test_count_words():
    assert check_count_words(lambda docs: sum(words(docs)))
    assert check_count_words(stub).status == "not done"
    hints = {
        "you counted sentences": lambda docs: sum(len(doc) for doc in docs),
        "you counted documents": lambda docs: len(docs),
        "you counted characters": lambda docs: sum(len(s) for doc in docs for s in doc),
        "split(' ') counts an empty word": lambda docs: sum(len(s.split(" ")) for doc in docs for s in doc),
        "EVERY sentence": lambda docs: max(len(s.split()) for doc in docs for s in doc),
        "raised ZeroDivisionError": lambda docs: 1 / 0,
    }
    assert_hints(check_count_words, hints)
    assert_hints(check_count_words, {"right on this corpus only": lambda docs: 39})


def test_longest_document():
    assert check_longest_document(lambda docs: max(range(len(docs)), key=lambda i: words(docs)[i]))
    assert check_longest_document(stub).status == "not done"
    hints = {
        "most SENTENCES": lambda docs: max(range(len(docs)), key=lambda i: len(docs[i])),
        "shortest document": lambda docs: min(range(len(docs)), key=lambda i: words(docs)[i]),
        "number of words of the longest": lambda docs: max(words(docs)),
        "not the document itself": lambda docs: max(docs, key=lambda d: sum(len(s.split()) for s in d)),
        "when the longest document comes first": lambda docs: 2,
    }
    assert_hints(check_longest_document, hints)
