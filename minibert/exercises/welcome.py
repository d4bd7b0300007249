"""Exercises and quiz of notebook 00, welcome: the corpus at a glance."""

from . import Question, run_check

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


def check_count_words(count_words):
    """count_words(documents) -> the number of whitespace-separated words in all sentences."""
    def judge():
        expected = sum(words_in(s) for doc in DOCUMENTS for s in doc)
        got = count_words([list(doc) for doc in DOCUMENTS])
        if got == expected:
            if count_words([["one two three"]]) != 3:
                return "right on this corpus only: one document with one sentence of three words should give 3"
            return None
        if got == sum(len(doc) for doc in DOCUMENTS):
            return "you counted sentences; split each sentence into words with sentence.split() and count those"
        if got == len(DOCUMENTS):
            return "you counted documents; a document is a list of sentences, a sentence a string of words"
        if got == sum(len(s) for doc in DOCUMENTS for s in doc):
            return "you counted characters: len(sentence) is its length in characters, use len(sentence.split())"
        if got == sum(len(s.split(" ")) for doc in DOCUMENTS for s in doc):
            return ("sentence.split(' ') counts an empty word at a double or trailing space; sentence.split() "
                    "splits on any run of whitespace")
        if got == max(words_in(s) for doc in DOCUMENTS for s in doc) or got == words_in(DOCUMENTS[0][0]):
            return "count the words of EVERY sentence of every document, and add them up"
        return f"expected {expected} words in this small corpus, got {got!r}: loop over documents, then sentences"
    return run_check(f"{EX}.1 count the words of a corpus", judge)


def check_longest_document(longest_document):
    """longest_document(documents) -> the index of the document with the most words."""
    def judge():
        words = [sum(words_in(s) for s in doc) for doc in DOCUMENTS]
        expected = max(range(len(words)), key=words.__getitem__)
        got = longest_document([list(doc) for doc in DOCUMENTS])
        if isinstance(got, bool) or not isinstance(got, int):
            if isinstance(got, list):
                return "return the index of the document (an int), not the document itself"
            return f"return an int, the index of the document, not {type(got).__name__}"
        if got == expected:
            reordered = [DOCUMENTS[2], DOCUMENTS[0], DOCUMENTS[1]]
            if longest_document([list(doc) for doc in reordered]) != 0:
                return "right here, but not when the longest document comes first: compare every document"
            return None
        if got == max(words):
            return "that is the number of words of the longest document; return its index"
        if got == max(range(len(DOCUMENTS)), key=lambda i: len(DOCUMENTS[i])):
            return "that is the document with the most SENTENCES; the longest has the most words"
        if got == min(range(len(words)), key=words.__getitem__):
            return "that is the shortest document: take the maximum, not the minimum"
        return f"document {expected} has the most words ({words[expected]}); you returned {got}"
    return run_check(f"{EX}.2 the longest document", judge)


QUIZ = {EX: {
    "q1": Question(
        "The course keeps 10% of the documents for evaluation, whole documents rather than random sentences. Why?",
        {"A": "sentences of one document share names and topics; a held-out sentence whose neighbours were trained "
              "on would be partly remembered, not predicted",
         "B": "it makes training faster",
         "C": "next sentence prediction needs the held-out sentences to be in order",
         "D": "there is no reason; a sentence split would measure the same thing"}, "A",
        "a split by document keeps held-out scores honest: nothing of a held-out document was seen in training."),
    "q2": Question(
        "Which objective predicts each token from the tokens BEFORE it only?",
        {"A": "masked language modeling", "B": "next-token prediction (causal language modeling)",
         "C": "next sentence prediction", "D": "all three"}, "B",
        "a causal LM reads left to right; masked LM reads both sides, NSP classifies a pair of segments.",
        {"A": "masked LM reads the context on both sides of a hidden token."}),
    "q3": Question(
        "Where do the labels of these three objectives come from?",
        {"A": "from people who annotate the corpus", "B": "from the text itself: the next token, the hidden token, "
         "whether segment B really followed A", "C": "from a larger model", "D": "from the tokenizer's vocabulary"},
        "B", "that is why they are called self-supervised: any raw text provides labels for free."),
    "q4": Question(
        "In next sentence prediction as BERT and transformers define it, what does label 0 mean?",
        {"A": "B is a random segment", "B": "B is the segment that really follows A (IsNext)",
         "C": "A and B come from different documents", "D": "the pair is padding"}, "B",
        "0 = IsNext and 1 = NotNext, in Google's code and in transformers; think of the label as 'is B random?'.",
        {"A": "that is label 1, NotNext."}),
}}
