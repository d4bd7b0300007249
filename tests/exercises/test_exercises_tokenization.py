"""Checks of notebook 01: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import torch
from helpers import assert_hints, stub

from minibert.exercises import check_attention_mask_from_lengths, check_encode_pair, check_wordpiece_split
from minibert.exercises.tokenization import wordpiece_reference


def test_wordpiece_split():
    assert check_wordpiece_split(wordpiece_reference)
    assert check_wordpiece_split(stub).status == "not done"
    hints = {
        "SHORTEST piece": lambda w, v: wordpiece_reference(w, v, longest=False),
        "with its '##' prefix": lambda w, v: wordpiece_reference(w, v, prefix=""),
        "the WHOLE word becomes": lambda w, v: wordpiece_reference(w, v, unknown="partial"),
        "must not be skipped": lambda w, v: wordpiece_reference(w, v, unknown="skip"),
        "not a string": lambda w, v: " ".join(wordpiece_reference(w, v)),
    }
    assert_hints(check_wordpiece_split, hints)


def test_wordpiece_reference_splits_words_as_the_trained_tokenizer_does(corpus):
    """The check's reference is BERT's algorithm: on real words it agrees with our trained tokenizer."""
    from minibert import train_tokenizer
    tokenizer = train_tokenizer(corpus[:60], vocab_size=2000)
    vocab = set(tokenizer.get_vocab())
    backend = tokenizer.backend_tokenizer
    words = sorted({w for doc in corpus[60:80] for s in doc
                    for w, _ in backend.pre_tokenizer.pre_tokenize_str(backend.normalizer.normalize_str(s))})
    assert len(words) > 500
    split = [wordpiece_reference(w, vocab) for w in words]
    assert split == [tokenizer.tokenize(w) for w in words]
    assert any(len(pieces) > 2 for pieces in split) and any(p == ["[UNK]"] for p in split)


def encode_pair(tokenizer, a, b, cls=True, middle_sep=True, final_sep=True, types="right"):
    a_ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(a))
    b_ids = tokenizer.convert_tokens_to_ids(tokenizer.tokenize(b))
    ids = [tokenizer.cls_token_id] * cls + a_ids + [tokenizer.sep_token_id] * middle_sep + b_ids \
        + [tokenizer.sep_token_id] * final_sep
    n_a = len(a_ids) + cls + middle_sep
    segment = {"right": [0] * n_a + [1] * (len(ids) - n_a),
               "all zero": [0] * len(ids),
               "middle sep in B": [0] * (n_a - 1) + [1] * (len(ids) - n_a + 1),
               "final sep in A": [0] * n_a + [1] * len(b_ids) + [0],
               "swapped": [1] * n_a + [0] * (len(ids) - n_a)}[types]
    return ids, segment


def test_encode_pair():
    assert check_encode_pair(encode_pair)
    assert check_encode_pair(lambda *args: tuple(torch.tensor(x) for x in encode_pair(*args)))  # tensors are fine
    assert check_encode_pair(stub).status == "not done"
    hints = {
        "must start with [CLS]": dict(cls=False),
        "must also end segment A": dict(middle_sep=False),
        "second [SEP] after B": dict(final_sep=False),
        "every segment id is 0": dict(types="all zero"),
        "belongs to segment A (0)": dict(types="middle sep in B"),
        "its segment id is 1": dict(types="final sep in A"),
        "segments swapped": dict(types="swapped"),
    }
    assert_hints(check_encode_pair, {hint: lambda tok, a, b, kwargs=kwargs: encode_pair(tok, a, b, **kwargs)
                                     for hint, kwargs in hints.items()})
    assert_hints(check_encode_pair, {
        "must start with [CLS]": lambda tok, a, b: encode_pair(tok, a, b, cls=False, middle_sep=False, final_sep=False),
        "no padding here": lambda tok, a, b: (encode_pair(tok, a, b)[0] + [0, 0], encode_pair(tok, a, b)[1] + [0, 0]),
        "those are tokens": lambda tok, a, b: (["[CLS]"] + tok.tokenize(a), [0]),
        "two lists": lambda tok, a, b: [1, 2, 3],
    })


def test_attention_mask_from_lengths():
    def right(lengths, max_length):
        return (torch.arange(max_length)[None, :] < torch.tensor(lengths)[:, None]).long()
    assert check_attention_mask_from_lengths(right)
    assert check_attention_mask_from_lengths(lambda *a: right(*a).bool())  # a boolean mask is fine too
    assert check_attention_mask_from_lengths(stub).status == "not done"
    hints = {
        "inverted": lambda *a: 1 - right(*a),
        "every position is 1": lambda lengths, n: torch.ones(len(lengths), n, dtype=torch.long),
        "off by one": lambda lengths, n: right([x + 1 for x in lengths], n),
        "not to the longest row": lambda lengths, n: right(lengths, max(lengths)),
        "padding goes on the right": lambda *a: right(*a).flip(-1),
    }
    assert_hints(check_attention_mask_from_lengths, hints)
