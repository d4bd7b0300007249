"""Training examples for the three objectives, made from documents of sentences. The model is the
same; only inputs and labels differ (the collators in collators.py pad and mask them into batches).

  causal LM      blocks of whole sentences, [CLS] ... [SEP]                        make_lm_examples
  masked LM      the same blocks; MLMCollator chooses the masks at batch time       make_lm_examples
  next sentence  [CLS] A [SEP] B [SEP]; label 0 if B followed A, 1 if random       make_nsp_examples
  sentence order the same two segments, label 1 if they were swapped               make_sop_examples
"""

import random
from collections.abc import Mapping

from ..values import check_value, is_number

DOCUMENTS_MUST = ('documents must be a list of documents, each a list of sentence strings, like '
                  '[["First sentence.", "Second."], ["Another document."]]')



# ---- checks shared by every function below: one helper per kind of mistake ----

def check_documents(documents, pairs_for=None):
    """Refuse anything but a list of documents, each a list of sentence strings. A flat list of
    strings would otherwise be read as documents of one-character sentences, and train on letters.
    pairs_for names a sentence-pair objective, which needs documents of two sentences or more."""
    if isinstance(documents, (str, bytes, Mapping)) or not hasattr(documents, "__len__"):
        hint = "for one text use [minibert.split_sentences(text)]" if isinstance(documents, str) else "pass a list"
        raise ValueError(f"{DOCUMENTS_MUST}; got a {type(documents).__name__}: {hint}")
    for d, doc in enumerate(documents):
        if not isinstance(doc, (list, tuple)):
            raise ValueError(f"{DOCUMENTS_MUST}; documents[{d}] is a {type(doc).__name__}, {str(doc)[:40]!r}. One "
                             "text per document? Split each: [minibert.split_sentences(text) for text in texts]")
        for i, sentence in enumerate(doc):
            if not isinstance(sentence, str):
                raise ValueError(f"{DOCUMENTS_MUST}; documents[{d}][{i}] is a {type(sentence).__name__}, "
                                 "not a sentence string")
    if not any(s.strip() for doc in documents for s in doc):
        raise ValueError("the corpus is empty: no document has a sentence with text, and an empty corpus teaches "
                         f"nothing; {DOCUMENTS_MUST}")
    if pairs_for and not any(len(doc) >= 2 for doc in documents):
        raise ValueError(f"{pairs_for} needs documents with at least two sentences, and none of the {len(documents)} "
                         "documents has two: split each document into its sentences (minibert.split_sentences)")


def check_share(name, value):
    """A probability or a share of something: a number from 0 to 1."""
    check_value(name, value, lambda v: is_number(v) and 0 <= v <= 1, "a number in [0, 1]")


def check_max_length(max_length, layout, least):
    if not isinstance(max_length, int) or max_length < least:
        raise ValueError(f"max_length={max_length!r} cannot hold {layout}; use a whole number of at least {least} "
                         "(BERT used 128 and 512)")


def special_ids(tokenizer, *names):
    """The ids of the tokenizer's special tokens ("cls", "sep", "pad", "mask"), or an error naming the
    one it lacks (a GPT-2 tokenizer has no [CLS], [SEP], [PAD] or [MASK])."""
    ids = [getattr(tokenizer, f"{name}_token_id", None) for name in names]
    for name, token_id in zip(names, ids):
        if token_id is None:
            raise ValueError(f"the tokenizer has no {name} token ({name}_token is None); these examples need a "
                             f"BERT-style tokenizer with [PAD], [CLS], [SEP] and [MASK], or set tokenizer.{name}_token")
    return ids


# ---- single sequences: causal LM and masked LM ----

def tokenize_documents(documents, tokenizer):
    """Documents of sentences -> documents of token-id lists, without special tokens."""
    check_documents(documents)
    flat = [s for doc in documents for s in doc]
    ids = tokenizer(flat, add_special_tokens=False)["input_ids"]
    out, i = [], 0
    for doc in documents:
        out.append(ids[i:i + len(doc)])
        i += len(doc)
    return out


def make_lm_examples(documents, tokenizer, max_length=128):
    """Pack each document's sentences into blocks of at most max_length tokens, [CLS] ... [SEP].
    Blocks never cross documents. For causal LM and single-segment masked LM."""
    check_max_length(max_length, "[CLS], a token and [SEP]", 3)
    cls, sep = special_ids(tokenizer, "cls", "sep")
    body = max_length - 2
    examples = []
    for doc in tokenize_documents(documents, tokenizer):
        block = []
        for sentence in doc:
            sentence = sentence[:body]  # a sentence longer than a block is cut
            if block and len(block) + len(sentence) > body:
                examples.append({"input_ids": [cls, *block, sep]})
                block = []
            block += sentence
        if block:
            examples.append({"input_ids": [cls, *block, sep]})
    return examples


# ---- sentence pairs: next sentence prediction (BERT) and sentence order prediction (ALBERT) ----

def truncate_seq_pair(a, b, max_tokens, rng):
    """Cut the longer segment, one token at a time from its front or back (Google's recipe)."""
    while len(a) + len(b) > max_tokens:
        longer = a if len(a) > len(b) else b
        del longer[0 if rng.random() < 0.5 else -1]


def pair_example(tokenizer, a, b, label, source):
    cls, sep = special_ids(tokenizer, "cls", "sep")
    return {"input_ids": [cls, *a, sep, *b, sep], "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
            "next_sentence_label": label, "source": source}


def check_pair_arguments(documents, max_length, short_seq_prob, objective):
    """The checks that NSP and SOP share."""
    check_max_length(max_length, "[CLS] A [SEP] B [SEP] with a token in each segment", 5)
    check_share("short_seq_prob", short_seq_prob)
    check_documents(documents, pairs_for=objective)


def make_pairs(documents, tokenizer, max_length, short_seq_prob, seed, choose_b):
    """The chunking loop of Google's create_pretraining_data.py, shared by NSP and SOP.

    Sentences of a document are gathered into a chunk until it reaches a target length (sometimes
    shorter, short_seq_prob, so the model also sees short inputs); the chunk is cut at a random
    sentence boundary into A and the rest. choose_b decides what B is and returns
    (a, b, label, b_source, sentences_to_put_back). The callers check the arguments first.
    """
    rng = random.Random(seed)
    docs = tokenize_documents(documents, tokenizer)
    max_tokens = max_length - 3  # room for [CLS] and two [SEP]
    examples = []
    for d, doc in enumerate(docs):
        target = rng.randint(2, max_tokens) if rng.random() < short_seq_prob else max_tokens
        chunk, length, start, i = [], 0, 0, 0
        while i < len(doc):
            chunk.append(doc[i])
            length += len(doc[i])
            if i == len(doc) - 1 or length >= target:
                a_end = rng.randint(1, len(chunk) - 1) if len(chunk) >= 2 else 1
                made = choose_b(docs, d, start, chunk, a_end, target, rng)
                if made is not None:
                    a, b, label, b_source, put_back = made
                    truncate_seq_pair(a, b, max_tokens, rng)
                    if a and b:
                        source = {"document": d, "a": (start, start + a_end), **b_source}
                        examples.append(pair_example(tokenizer, a, b, label, source))
                    i -= put_back
                start = i + 1
                chunk, length = [], 0
                target = rng.randint(2, max_tokens) if rng.random() < short_seq_prob else max_tokens
            i += 1
    return examples


def make_nsp_examples(documents, tokenizer, max_length=128, nsp_probability=0.5, short_seq_prob=0.1,
                      negatives="random", seed=0):
    """Sentence pairs for next sentence prediction, label 0 = IsNext (B followed A), 1 = NotNext.

    negatives="random": B starts at a random sentence of another document (BERT's choice; often
    easy, because the topic changes). negatives="hard": B comes from the same document but not
    right after A, so only the order of ideas gives it away. Each example's "source" says where B
    came from. A random B leaves the rest of the chunk unused; those sentences are put back.
    """
    if negatives not in ("random", "hard"):
        raise ValueError(f"negatives must be 'random' or 'hard', got {negatives!r}")
    check_share("nsp_probability", nsp_probability)
    check_pair_arguments(documents, max_length, short_seq_prob, "next sentence prediction")
    if negatives == "random" and sum(1 for doc in documents if doc) < 2:
        raise ValueError("next sentence prediction with random negatives needs at least two documents: a random B "
                         "must come from a different document than A")

    def choose_b(docs, d, start, chunk, a_end, target, rng):
        a = [t for s in chunk[:a_end] for t in s]
        if len(chunk) >= 2 and rng.random() >= nsp_probability:  # the true continuation
            b = [t for s in chunk[a_end:] for t in s]
            return a, b, 0, {"b_document": d, "b": (start + a_end, start + len(chunk)), "b_from": "next"}, 0
        doc = docs[d]
        # hard: a sentence of the same document, not in A, not the true next one, not A's neighbour
        options = [j for j in range(len(doc)) if j < start - 1 or j > start + a_end] if negatives == "hard" else []
        if options:
            other, j, b_from = d, rng.choice(options), "same document"
        else:
            other = rng.randrange(len(docs) - 1)
            other += other >= d  # any document but this one
            if not docs[other]:
                return None
            j, b_from = rng.randrange(len(docs[other])), "random document"
        stop = start - 1 if other == d and j < start else len(docs[other])  # B must not run into A
        b, k = [], j
        while k < stop and len(b) < target - len(a):
            b += docs[other][k]
            k += 1
        if not b:
            b, k = list(docs[other][j]), j + 1
        return a, b, 1, {"b_document": other, "b": (j, k), "b_from": b_from}, len(chunk) - a_end

    return make_pairs(documents, tokenizer, max_length, short_seq_prob, seed, choose_b)


def make_sop_examples(documents, tokenizer, max_length=128, swap_probability=0.5, short_seq_prob=0.1, seed=0):
    """Sentence order prediction (ALBERT): two consecutive segments of one document, label 0 if in
    their original order, 1 if swapped. The topic is the same either way: only coherence helps."""
    check_share("swap_probability", swap_probability)
    check_pair_arguments(documents, max_length, short_seq_prob, "sentence order prediction")

    def choose_b(docs, d, start, chunk, a_end, target, rng):
        if len(chunk) < 2:
            return None  # one sentence cannot be put out of order
        first = [t for s in chunk[:a_end] for t in s]
        second = [t for s in chunk[a_end:] for t in s]
        a_span, b_span = (start, start + a_end), (start + a_end, start + len(chunk))
        if rng.random() < swap_probability:
            return second, first, 1, {"a": b_span, "b_document": d, "b": a_span, "b_from": "swapped"}, 0
        return first, second, 0, {"b_document": d, "b": b_span, "b_from": "in order"}, 0

    return make_pairs(documents, tokenizer, max_length, short_seq_prob, seed, choose_b)


def class_balance(examples):
    """Share of each label among sentence-pair examples: {0: share, 1: share}."""
    if not examples:
        raise ValueError("no examples")
    ones = sum(e["next_sentence_label"] for e in examples) / len(examples)
    return {0: 1 - ones, 1: ones}
