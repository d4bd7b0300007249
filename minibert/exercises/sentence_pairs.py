"""Exercises of notebook 05, next sentence prediction: pairs, the label convention, sentence order."""

import random

from .framework import CLS, SEP, Slip, exercise, expect, judge_answer

EX = "05"


def _pair(a, b, label):
    return {"input_ids": [CLS, *a, SEP, *b, SEP], "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
            "next_sentence_label": label}


PAIR_IDS_SLIPS = [  # input_ids of the pair, on the case (first, second)
    Slip("segments swapped", lambda first, second: _pair(second, first, 0)["input_ids"],
         "the segments are in the wrong order"),
    Slip("no special tokens", lambda first, second: [*first, *second],
         "add the special tokens: [CLS] A [SEP] B [SEP]"),
    Slip("no final [SEP]", lambda first, second: [CLS, *first, SEP, *second],
         "the pair ends with a second [SEP]: [CLS] A [SEP] B [SEP]"),
]

SEGMENT_SLIPS = [  # token_type_ids of the pair, on the case (first, second)
    Slip("final [SEP] in A", lambda first, second: [0] * (len(first) + 2) + [1] * len(second) + [0],
         "the final [SEP] belongs to segment B: its token type is 1"),
    Slip("first [SEP] in B", lambda first, second: [0] * (len(first) + 1) + [1] * (len(second) + 2),
         "the first [SEP] closes segment A: its token type is 0, B's tokens start after it"),
]


def _structure_hint(got, first, second):
    """A hint when `got` is not the pair [CLS] first [SEP] second [SEP] with the right segment ids, else None."""
    if not isinstance(got, dict) or not {"input_ids", "token_type_ids", "next_sentence_label"} <= set(got):
        return "return a dict with the keys input_ids, token_type_ids and next_sentence_label"
    ids, types = list(got["input_ids"]), list(got["token_type_ids"])
    right = _pair(first, second, 0)
    hint = (judge_answer(ids, right["input_ids"], PAIR_IDS_SLIPS, (first, second),
                         fallback=lambda ids: f"input_ids should be [CLS] A [SEP] B [SEP] = {right['input_ids']}, "
                                              f"got {ids}")
            or judge_answer(types, right["token_type_ids"], SEGMENT_SLIPS, (first, second),
                            form=expect(lambda types: len(types) == len(ids),
                                        "token_type_ids needs one segment id per token, special tokens included"),
                            fallback="token_type_ids: 0 for [CLS], A and the first [SEP]; 1 for B and the final [SEP]"))
    if hint:
        return hint
    label = got["next_sentence_label"]
    if isinstance(label, bool) or not isinstance(label, int):
        return f"the label must be the integer 0 or 1 (the loss needs class ids), got {label!r}"
    return None


@exercise(EX, 1, "a next-sentence pair", cases=[(True,), (False,)])
def check_make_nsp_pair(make_nsp_pair, is_next):
    """make_nsp_pair(a, b, is_next) -> {input_ids, token_type_ids, next_sentence_label}."""
    a, b = [40, 41, 42], [50, 51]
    got = make_nsp_pair(list(a), list(b), is_next)
    hint = _structure_hint(got, a, b)
    if hint is None and got["next_sentence_label"] != (0 if is_next else 1):
        return ("0 and 1 are swapped: in BERT and transformers label 0 means IsNext (B follows A) and 1 "
                "means NotNext (B is random). Think of the label as answering 'is B random?'")
    return hint


@exercise(EX, 2, "a sentence-order pair")
def check_make_sop_pair(make_sop_pair):
    """make_sop_pair(first, second, swap) -> a pair in order (label 0) or swapped (label 1)."""
    first, second = [60, 61], [70, 71, 72]
    got = make_sop_pair(list(first), list(second), False)
    hint = _structure_hint(got, first, second)
    if hint:
        return hint
    if got["next_sentence_label"] != 0:
        return "a pair in its original order has label 0; label 1 means swapped"
    got = make_sop_pair(list(first), list(second), True)
    if isinstance(got, dict) and list(got.get("input_ids", [])) == _pair(first, second, 1)["input_ids"]:
        return ("you changed the label but not the order: a swapped pair is [CLS] second [SEP] first [SEP]; "
                "otherwise the label says nothing about the text")
    hint = _structure_hint(got, second, first)
    if hint:
        return hint
    if got["next_sentence_label"] != 1:
        return "a swapped pair has label 1 (0 = in order, 1 = swapped)"
    return None


def _documents(sizes, tag="doc"):
    """Documents of distinct sentences, so that every sentence says where it comes from."""
    return [[f"{tag} {d}, sentence {i}." for i in range(n)] for d, n in enumerate(sizes)]


def _dataset_hint(documents, got):
    """A hint when `got` is not one (A, B, label) per consecutive pair of sentences inside a document, else None."""
    if not isinstance(got, (list, tuple)) or not all(isinstance(p, (list, tuple)) and len(p) == 3 for p in got):
        return "return a list of (sentence_a, sentence_b, label) tuples, one per pair"
    where = {s: (d, i) for d, doc in enumerate(documents) for i, s in enumerate(doc)}
    expected_a = [s for doc in documents for s in doc[:-1]]
    last = {doc[-1]: len(doc) for doc in documents if doc}
    for a, b, label in got:
        if a in last and last[a] == 1:
            return ("a document of one sentence gives no pair: its sentence has no next sentence (it can still be "
                    "the random B of another document's pair)")
        if a in last:
            return ("a pair crosses a document boundary: the last sentence of a document has no next sentence, and "
                    "the first sentence of the next document does not continue it. Make the pairs inside each "
                    "document, not over one list of all the sentences")
    if [p[0] for p in got] != expected_a:
        return (f"one pair per consecutive pair of sentences inside a document, in order: A is every sentence but "
                f"the last of its document ({len(expected_a)} pairs here, you returned {len(got)})")
    for a, b, label in got:
        if isinstance(label, bool) or label not in (0, 1):
            return f"the label must be the integer 0 (IsNext) or 1 (NotNext), got {label!r}"
        if b not in where:
            return f"B must be a sentence of the documents, unchanged; got {b!r}"
    return None


def _label_hint(documents, pairs):
    """A hint when the labels or the random Bs of `pairs` (gathered over several runs) are wrong, else None."""
    where = {s: (d, i) for d, doc in enumerate(documents) for i, s in enumerate(doc)}
    rows = []
    for a, b, label in pairs:
        (da, ia), (db, ib) = where[a], where[b]
        rows.append((label, da == db and ib == ia + 1, da == db))  # label, B is the true next, B from A's document
    true_next = [r for r in rows if r[1]]
    other = [r for r in rows if not r[2]]
    if (true_next and other and all(label == 1 for label, _, _ in true_next)
            and all(label == 0 for label, _, _ in other)):
        return ("0 and 1 are swapped: label 0 means IsNext (B is the true next sentence) and 1 means NotNext (B is "
                "random), as in BERT, transformers and minibert. Read the label as the answer to 'is B random?'")
    if any(label == 0 and not is_next for label, is_next, _ in rows):
        return "a pair with label 0 (IsNext) must keep as B the sentence that really follows A"
    negatives = [r for r in rows if r[0] == 1]
    if negatives and all(same for _, _, same in negatives):
        return ("your random B comes from A's own document: BERT draws it from a DIFFERENT document. (A B from the "
                "same document is the 'hard negative' of section 4, another task)")
    if any(is_next for _, is_next, _ in negatives):
        return ("some NotNext pairs (label 1) have as B the very sentence that follows A: a B drawn from the whole "
                "corpus can land in A's own document, even on its next sentence, and then the label is wrong. Draw "
                "B from the other documents only")
    if any(same for _, _, same in negatives):
        return ("some NotNext B come from A's own document: choose the document among the others only, e.g. "
                "other = rng.randrange(len(documents) - 1); other += other >= d")
    return None


def _hint_over_seeds(make_nsp_dataset, documents, seeds, single_sentences=False):
    """Build the dataset of `documents` once per seed: the first hint about a dataset's pairs, else the hint
    about the labels of all of them together. single_sentences: some documents have one sentence, and an
    error raised by the student's code is explained as such."""
    pairs = []
    for seed in seeds:
        try:
            got = make_nsp_dataset([list(doc) for doc in documents], random.Random(seed))
        except NotImplementedError:
            raise
        except Exception as e:
            if not single_sentences:
                raise
            return (f"a document with a single sentence made your code raise {type(e).__name__}: {e}. Such a "
                    "document has no consecutive pair, so it gives no pair (its sentence can still be a "
                    "random B)")
        hint = _dataset_hint(documents, got)
        if hint:
            return hint
        pairs += got
    return _label_hint(documents, pairs)


@exercise(EX, 3, "an NSP dataset from documents")
def check_make_nsp_dataset(make_nsp_dataset):
    """make_nsp_dataset(documents, rng) -> [(sentence_a, sentence_b, label)]: one pair per consecutive pair of
    sentences inside a document; with probability 0.5 B is the true next sentence (label 0), otherwise a sentence
    of a different document (label 1)."""
    # small corpora, many seeds: a B drawn from the wrong place shows up in some of them; then documents
    # of a single sentence: no pair of their own, but their sentence may be a random B
    hint = (_hint_over_seeds(make_nsp_dataset, _documents([4, 3, 3]), range(30))
            or _hint_over_seeds(make_nsp_dataset, _documents([3, 2], "text"), [0])
            or _hint_over_seeds(make_nsp_dataset, _documents([3, 1, 4, 1, 2], "story"), range(10),
                                single_sentences=True))
    if hint:
        return hint
    # a larger corpus: about half the pairs NotNext, the same rng seed gives the same dataset
    sizes = [random.Random(7 + d).randrange(2, 13) for d in range(300)]
    large = _documents(sizes, "article")
    got = make_nsp_dataset([list(doc) for doc in large], random.Random(1))
    hint = _dataset_hint(large, got) or _label_hint(large, got)
    if hint:
        return hint
    if make_nsp_dataset([list(doc) for doc in large], random.Random(1)) != got:
        return ("two calls with the same seed gave different datasets: draw every random choice from the rng "
                "you are given (rng.random(), rng.randrange, rng.choice), not from the random module or torch")
    share = sum(label for _, _, label in got) / len(got)
    if abs(share - 0.5) > 0.06:
        return (f"{share:.0%} of the {len(got)} pairs are NotNext; with probability 0.5 per pair it should be "
                "about half (between 44% and 56% here). Draw one rng.random() per pair and keep the true next "
                "sentence when it is >= 0.5")
    return None
