"""Exercises and quiz of notebook 00, welcome: the corpus at a glance."""

from .framework import Question, Slip, exercise, judge_answer

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
    def judge():
        right = sum(words_of_documents(DOCUMENTS))
        got = count_words([list(doc) for doc in DOCUMENTS])
        hint = judge_answer(got, right, WORD_COUNT_SLIPS, (DOCUMENTS,), fallback=lambda got: (
            f"expected {right} words in this small corpus, got {got!r}: loop over documents, then sentences"))
        if hint is None and count_words([["one two three"]]) != 3:
            return "right on this corpus only: one document with one sentence of three words should give 3"
        return hint
    return judge


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
    def judge():
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
    return judge


QUIZ = {EX: {
    "q1": Question(
        "The course holds out 10% of the documents, whole ones, rather than 10% of the sentences picked at random. "
        "Why?",
        {"A": "a document split is faster: the held-out part is cut from the list of documents without touching "
              "any sentence",
         "B": "random sentences would leave the held-out part with too few long sentences, so its scores would "
              "look worse than they are",
         "C": "both measure the same thing; holding out whole documents is only a habit taken over from BERT's "
              "code",
         "D": "sentences of one document share names and topics, so with a sentence split a held-out sentence "
              "is partly remembered"}, "D",
        "a split by document keeps held-out scores honest: nothing of a held-out document was seen in training.",
        {"A": "either split takes a fraction of a second; the choice is about what the held-out score measures.",
         "B": "a random sample of sentences has about the same lengths as the rest; the problem is the names and "
              "topics a held-out sentence shares with its trained neighbours.",
         "C": "they measure different things: with a sentence split the neighbours of a held-out sentence were "
              "trained on, so the score flatters the model."}),
    "q2": Question(
        "Which objective trains every position to predict a token while seeing only the tokens before it?",
        {"A": "next-token prediction (causal language modeling), the objective of GPT and of BertForCausalLM",
         "B": "masked language modeling, since every hidden token is predicted from the words that precede it",
         "C": "next sentence prediction, since segment B is only judged after the model has read segment A",
         "D": "all three of them, since BERT and GPT both read their input from left to right, token by token"}, "A",
        "a causal LM reads left to right; masked LM reads both sides of a hidden token, NSP classifies a pair.",
        {"B": "masked LM sees the context on BOTH sides of a hidden token, not only what precedes it.",
         "C": "NSP makes one prediction per pair, from the [CLS] vector, which has seen A and B together.",
         "D": "only the causal LM is limited to the past; BERT's encoder reads every token of its input at once."}),
    "q3": Question(
        "Where do the labels of these three objectives come from?",
        {"A": "from annotators who labeled a sample of the corpus, as for any supervised task",
         "B": "from a larger model trained beforehand, whose predictions the small model learns to copy",
         "C": "from the text itself: the next token, the hidden token, whether segment B really followed A",
         "D": "the token objectives from the text itself, but next sentence prediction from pairs people marked "
              "as related"}, "C",
        "that is why they are called self-supervised: any raw text provides labels for free.",
        {"A": "nobody annotates anything: every label is read off the raw text.",
         "B": "copying a larger model is distillation, another technique; here the text itself gives the answers.",
         "D": "an NSP pair takes either the real next sentence or a random one: the order of the document gives "
              "the label, no person does."}),
    "q4": Question(
        "In next sentence prediction as BERT and transformers define it, what does label 0 mean?",
        {"A": "B is a random segment from elsewhere in the corpus (NotNext): 0 as in 'no, B does not follow A'",
         "B": "B is the segment that really follows A in the same document (IsNext): the true next sentence",
         "C": "A and B come from two different documents, whatever their places in those documents",
         "D": "A and B were swapped, the case that sentence order prediction looks for (notebook 05)"}, "B",
        "0 = IsNext and 1 = NotNext, in Google's code and in transformers; think of the label as 'is B random?'.",
        {"A": "that is label 1, NotNext; read the label as the answer to 'is B random?'.",
         "C": "a B from another document is a random B: label 1, NotNext.",
         "D": "spotting a swapped pair is sentence order prediction's task; in NSP, label 0 means B really "
              "follows A."}),
    "q5": Question(
        "A corpus is a list of documents, each a list of sentence strings. What does this program print?",
        {"A": "2 3 10", "B": "3 2 10", "C": "2 3 12", "D": "2 3 13"}, "A",
        "2 documents (the outer list), 3 sentences, and 5 + 3 + 2 = 10 words: split() ignores the double and the "
        "trailing space, and each period stays on its word.",
        {"B": "documents come first: the outer list holds 2 documents, which hold 3 sentences between them.",
         "C": "that is what s.split(' ') counts, with an empty word at the double space and another at the trailing "
              "space; split() splits on any run of whitespace.",
         "D": "split() cuts at whitespace only: 'sphere.' is one word, period included (splitting off punctuation "
              "is the tokenizer's job, notebook 01)."},
        code='''
documents = [["Water tends toward a sphere.", "Air  tends upward."],
             ["Fire rises. "]]
sentences = [s for doc in documents for s in doc]
print(len(documents), len(sentences), sum(len(s.split()) for s in sentences))
'''),
    "q6": Question(
        "Two models are scored on the same held-out tokens, and the 95% bootstrap interval of their per-token "
        "differences includes 0. What does that tell you?",
        {"A": "the two models are equally good: a real difference between them would have excluded 0",
         "B": "the difference is too small to matter in practice, however large the test set grows",
         "C": "this test set cannot tell them apart; a larger one might, in either direction",
         "D": "nothing yet: only whether the two models' own intervals overlap decides the comparison"}, "C",
        "an interval that includes 0 says the test is too small or too noisy to see a difference, not that "
        "there is none.",
        {"A": "a small real difference can hide in a wide interval; more items narrow it and may reveal one.",
         "B": "a larger test set narrows the interval, and a difference it then sees may be large or small.",
         "D": "two intervals can overlap while the paired difference excludes 0: scoring both models on the same "
              "items removes the noise they share."}),
}}
