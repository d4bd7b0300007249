"""Exercises of notebook 00, welcome: the corpus at a glance."""

from .framework import Slip, exercise, judge_answer

EX = "00"

# A corpus small enough to count by eye: 3 documents, 6 sentences, 39 words. Document 1 has the most
# sentences, document 2 the most words; one sentence has a double space and a trailing space.
DOCUMENTS = [
    ["Aristotle taught Alexander.", "He wrote on logic,  physics and ethics."],
    ["Alabama is a state.", "Its capital is Montgomery.", "It joined the Union in 1819. "],
    ["The albedo of fresh snow is high, while that of charcoal is very low indeed."],
]


def words_in(sentence):
    return len(sentence.split())


def sentences_of(documents):
    return [s for doc in documents for s in doc]


def words_of_documents(documents):
    return [sum(words_in(s) for s in doc) for doc in documents]


ONE_SENTENCE = "count the words of EVERY sentence of every document, and add them up"
WORD_COUNT_SLIPS = [  # counting the wrong thing; on DOCUMENTS "first sentence" gives 3, as "documents" does
    Slip("sentences", lambda documents: len(sentences_of(documents)),
         "you counted sentences; split each sentence into words with sentence.split() and count those"),
    Slip("documents", len, "you counted documents; a document is a list of sentences, a sentence a string of words"),
    Slip("characters", lambda documents: sum(len(s) for s in sentences_of(documents)),
         "you counted characters: len(sentence) is its length in characters, use len(sentence.split())"),
    Slip("split on one space", lambda documents: sum(len(s.split(" ")) for s in sentences_of(documents)),
         "sentence.split(' ') counts an empty word at a double or trailing space; sentence.split() splits on any "
         "run of whitespace"),
    Slip("longest sentence", lambda documents: max(words_in(s) for s in sentences_of(documents)), ONE_SENTENCE),
    Slip("first sentence", lambda documents: words_in(documents[0][0]), ONE_SENTENCE),
]


@exercise(EX, 1, "count the words of a corpus")
def check_count_words(count_words):
    """count_words(documents) -> the number of whitespace-separated words in all sentences."""
    right = sum(words_of_documents(DOCUMENTS))
    got = count_words([list(doc) for doc in DOCUMENTS])
    hint = judge_answer(got, right, WORD_COUNT_SLIPS, (DOCUMENTS,), fallback=lambda got: (
        f"expected {right} words in this small corpus, got {got!r}: loop over documents, then sentences"))
    if hint is None and count_words([["one two three"]]) != 3:
        return "right on this corpus only: one document with one sentence of three words should give 3"
    return hint


def longest(values, pick=max):
    """The index of the largest value (the smallest with pick=min)."""
    return pick(range(len(values)), key=values.__getitem__)


LONGEST_DOCUMENT_SLIPS = [
    Slip("its word count", lambda documents: max(words_of_documents(documents)),
         "that is the number of words of the longest document; return its index"),
    Slip("most sentences", lambda documents: longest([len(doc) for doc in documents]),
         "that is the document with the most SENTENCES; the longest has the most words"),
    Slip("shortest", lambda documents: longest(words_of_documents(documents), pick=min),
         "that is the shortest document: take the maximum, not the minimum"),
]


def index_form(got):
    """A hint when `got` is not an int, the index of a document."""
    if isinstance(got, bool) or not isinstance(got, int):
        if isinstance(got, list):
            return "return the index of the document (an int), not the document itself"
        return f"return an int, the index of the document, not {type(got).__name__}"
    return None


@exercise(EX, 2, "the longest document")
def check_longest_document(longest_document):
    """longest_document(documents) -> the index of the document with the most words."""
    words = words_of_documents(DOCUMENTS)
    got = longest_document([list(doc) for doc in DOCUMENTS])
    hint = judge_answer(got, longest(words), LONGEST_DOCUMENT_SLIPS, (DOCUMENTS,), form=index_form,
                        fallback=lambda got: f"document {longest(words)} has the most words ({max(words)}); "
                                             f"you returned {got}")
    if hint is None:
        reordered = [DOCUMENTS[2], DOCUMENTS[0], DOCUMENTS[1]]
        if longest_document([list(doc) for doc in reordered]) != 0:
            return "right here, but not when the longest document comes first: compare every document"
    return hint
