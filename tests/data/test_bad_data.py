"""Bad input to the data pipeline: documents, the tokenizer, the collators.

What would otherwise be silently wrong (a flat list of strings trained on characters, vocab_size
ignored, SOP returning [] without a word) is refused, and an error that would come from deep inside
torch names the argument and says what to do. (Bad model inputs, configs and checkpoint files:
tests/model/test_errors.py.)
"""

import numpy as np
import pytest
import torch
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

import minibert
from minibert.data import collate

DOCS = [["The cat sat on the mat.", "The dog ran in the park."],
        ["Birds fly high above the hills.", "Fish swim deep below the waves."],
        ["Rain fell on the quiet town.", "The streets were flooded by noon."]]


@pytest.fixture(scope="module")
def tok():
    return minibert.train_tokenizer(DOCS, vocab_size=150, min_frequency=1)


def word_level_tokenizer(**special_tokens):
    """A tokenizer without ## pieces (every word is one token), with only the special tokens given."""
    vocab = {t: i for i, t in enumerate(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat"])}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tokenizer, unk_token="[UNK]", **special_tokens)


# ---- documents: a list of documents, each a list of sentence strings ----

BUILDERS = {
    "make_lm_examples": lambda docs, tok: minibert.make_lm_examples(docs, tok),
    "make_nsp_examples": lambda docs, tok: minibert.make_nsp_examples(docs, tok),
    "make_sop_examples": lambda docs, tok: minibert.make_sop_examples(docs, tok),
    "tokenize_documents": lambda docs, tok: minibert.data.tokenize_documents(docs, tok),
    "train_tokenizer": lambda docs, tok: minibert.train_tokenizer(docs, vocab_size=200, min_frequency=1),
}
SHAPE = r"must be a list of documents, each a list of sentence strings, like \[\[\"First sentence\.\""


@pytest.mark.parametrize("builder", BUILDERS)
@pytest.mark.parametrize("documents, message", [
    (["The cat sat on the mat.", "Dogs bark."], SHAPE + r".*documents\[0\] is a str.*split_sentences"),
    ("The cat sat on the mat. Dogs bark.", SHAPE + r".*got a str: for one text use \[minibert.split_sentences"),
    ((doc for doc in DOCS), SHAPE + ".*got a generator: pass a list"),
    ({"text": ["The cat sat."]}, SHAPE + ".*got a dict"),
    ([["the", "cat"], [["the", "cat", "sat"]]], SHAPE + r".*documents\[1\]\[0\] is a list, not a sentence string"),
    ([["The cat sat.", 7]], r"documents\[0\]\[1\] is a int, not a sentence string"),
    ([], "the corpus is empty"),
    ([[], []], "the corpus is empty"),
    ([["  ", ""]], "the corpus is empty"),
])
def test_documents_of_the_wrong_shape_are_refused(tok, builder, documents, message):
    with pytest.raises(ValueError, match=message):
        BUILDERS[builder](documents, tok)


@pytest.mark.parametrize("builder", ["make_nsp_examples", "make_sop_examples"])
def test_sentence_pairs_need_documents_of_two_sentences(tok, builder):
    one_sentence_each = [["The cat sat on the mat."], ["Birds fly high."], ["Fish swim deep."]]
    with pytest.raises(ValueError, match="needs documents with at least two sentences, and none of the 3"):
        BUILDERS[builder](one_sentence_each, tok)
    with pytest.raises(ValueError, match="at least two sentences"):
        minibert.make_nsp_examples(one_sentence_each, tok, negatives="hard")


@pytest.mark.parametrize("call, message", [
    (lambda tok: minibert.make_lm_examples(DOCS, tok, max_length="128"), r"max_length='128' cannot hold \[CLS\]"),
    (lambda tok: minibert.make_lm_examples(DOCS, tok, max_length=2), "max_length=2 cannot hold.*at least 3"),
    (lambda tok: minibert.make_sop_examples(DOCS, tok, max_length=4), "max_length=4 cannot hold.*at least 5"),
    (lambda tok: minibert.make_nsp_examples(DOCS, tok, nsp_probability=2), r"nsp_probability=2 .*\[0, 1\]"),
    (lambda tok: minibert.make_nsp_examples(DOCS, tok, short_seq_prob=-0.1), r"short_seq_prob=-0.1 .*\[0, 1\]"),
    (lambda tok: minibert.make_sop_examples(DOCS, tok, swap_probability="0.5"), r"swap_probability='0.5'"),
    (lambda tok: minibert.MLMCollator(tok, mlm_probability=0), r"mlm_probability=0 .*\(0, 1\]"),
    (lambda tok: minibert.MLMCollator(tok, mask_replace_prob=-0.2), r"mask_replace_prob=-0.2 .*\[0, 1\]"),
    (lambda tok: minibert.MLMCollator(tok, random_replace_prob=1.5), r"random_replace_prob=1.5"),
])
def test_settings_out_of_range_are_named(tok, call, message):
    with pytest.raises(ValueError, match=message):
        call(tok)


# ---- the tokenizer ----

@pytest.mark.parametrize("settings, message", [
    (dict(vocab_size=6), "vocab_size=6 is too small for this corpus.*need (\\d+).*vocab_size=\\1 or more"),
    (dict(vocab_size="8000"), "vocab_size='8000' cannot work: vocab_size must be a whole number"),
    (dict(vocab_size=0), "vocab_size=0 cannot work"),
    (dict(min_frequency=-1), "min_frequency=-1 cannot work"),
])
def test_train_tokenizer_refuses_sizes_it_cannot_honour(settings, message):
    with pytest.raises(ValueError, match=message):
        minibert.train_tokenizer(DOCS, **{"min_frequency": 1, **settings})


def test_the_smallest_vocab_size_it_names_is_honoured():
    with pytest.raises(ValueError) as error:
        minibert.train_tokenizer(DOCS, vocab_size=6, min_frequency=1)
    smallest = int(error.value.args[0].split("Use vocab_size=")[1].split()[0])
    assert len(minibert.train_tokenizer(DOCS, vocab_size=smallest, min_frequency=1)) == smallest


# ---- collators: the formats they accept, and what they refuse ----

COLLATORS = {
    "collate": lambda tok: (lambda examples: collate(examples, tok.pad_token_id, len(tok))),
    "CausalLMCollator": lambda tok: minibert.CausalLMCollator(tok),
    "MLMCollator": lambda tok: minibert.MLMCollator(tok, seed=0),
}
TEXTS = ("the cat sat on the mat", "fish swim")


@pytest.mark.parametrize("collator", COLLATORS)
@pytest.mark.parametrize("form", [
    lambda tok, text: tok(text)["input_ids"],  # a list, the reference
    lambda tok, text: tuple(tok(text)["input_ids"]),
    lambda tok, text: np.array(tok(text)["input_ids"]),
    lambda tok, text: torch.tensor(tok(text)["input_ids"]),  # shape (T,)
    lambda tok, text: tok(text, return_tensors="pt")["input_ids"],  # shape (1, T)
    lambda tok, text: {"input_ids": tok(text, return_tensors="np")["input_ids"]},
    lambda tok, text: {k: v for k, v in tok(text).items() if k != "token_type_ids"},  # a plain dict
])
def test_collators_accept_lists_arrays_tensors_and_mappings(tok, collator, form):
    expected = COLLATORS[collator](tok)([tok(t)["input_ids"] for t in TEXTS])
    batch = COLLATORS[collator](tok)([form(tok, t) for t in TEXTS])
    assert {k: v.tolist() for k, v in batch.items()} == {k: v.tolist() for k, v in expected.items()}


@pytest.mark.parametrize("collator", COLLATORS)
@pytest.mark.parametrize("form", [
    lambda tok, text: tok(text),  # a BatchEncoding: a Mapping, not a dict
    lambda tok, text: tok(text, return_tensors="pt"),  # values of shape (1, T)
    lambda tok, text: tok(text, return_tensors="np"),
    lambda tok, text: tok(text, padding="max_length", max_length=12),  # padding dropped, then padded again
])
def test_collators_accept_what_the_tokenizer_returns(tok, collator, form):
    expected = COLLATORS[collator](tok)([tok(t) for t in TEXTS])
    batch = COLLATORS[collator](tok)([form(tok, t) for t in TEXTS])
    assert {k: v.tolist() for k, v in batch.items()} == {k: v.tolist() for k, v in expected.items()}
    assert batch["input_ids"].shape == (2, len(tok(TEXTS[0])["input_ids"]))


@pytest.mark.parametrize("collator", COLLATORS)
@pytest.mark.parametrize("examples, error, message", [
    ([], ValueError, "zero examples"),
    ([[]], ValueError, "example 0 has no tokens"),
    ([[2, 7, 3], {"input_ids": torch.tensor([], dtype=torch.long)}], ValueError, "example 1 has no tokens"),
    ([{"input_ids": [2, 7, 3], "attention_mask": [0, 0, 0]}], ValueError, "example 0 has no tokens"),
    ([[2, 5000, 3]], ValueError, "input_ids contains 5000, outside 0..(\\d+) .*the tokenizer has (\\d+) tokens: were "
                                 "these examples made with another tokenizer"),
    ([[2, -100, 3]], ValueError, "input_ids contains -100, outside"),
    ([["the", "cat"]], ValueError, "example 0's input_ids could not become a tensor.*integers only"),
    (["the cat"], ValueError, "example 0's input_ids must be a tensor, a list or a numpy array of integers, got str; "
                              "tokenize the text first"),
    ([[2.0, 7.0, 3.0]], TypeError, "example 0's input_ids must hold integer ids, got dtype torch.float"),
    ([torch.ones(2, 3, dtype=torch.long)], ValueError, r"must be one sequence, of shape \(T,\) or \(1, T\), got "
                                                       r"shape \(2, 3\)"),
    ([{"ids": [2, 7, 3]}], ValueError, "example 0 has no 'input_ids'"),
    ([{"input_ids": [2, 7, 3], "token_type_ids": [0, 0]}], ValueError, "token_type_ids must be as long as its "
                                                                        "input_ids"),
])
def test_collators_refuse_bad_batches(tok, collator, examples, error, message):
    with pytest.raises(error, match=message):
        COLLATORS[collator](tok)(examples)


def test_collators_refuse_a_whole_batch_as_one_mapping(tok):
    for collator in COLLATORS.values():
        with pytest.raises(ValueError, match=r"takes a list of examples, got one Mapping.*\[tokenizer\(text\) for"):
            collator(tok)(tok(list(TEXTS)))


def test_mask_tokens_names_a_tensor_of_the_wrong_shape_or_ids(tok):
    collator = minibert.MLMCollator(tok, seed=0)
    with pytest.raises(ValueError, match=r"shape \(batch, seq_len\).*input_ids\[None\]"):
        collator.mask_tokens(torch.tensor([2, 7, 3]))
    with pytest.raises(ValueError, match=f"contains 999, outside 0..{len(tok) - 1}"):
        collator.mask_tokens(torch.tensor([[2, 999, 3]]))


def test_whole_word_masking_needs_word_pieces():
    words_only = word_level_tokenizer(pad_token="[PAD]", mask_token="[MASK]")
    with pytest.raises(ValueError, match="whole_word_mask=True needs a WordPiece tokenizer.*'##'"):
        minibert.MLMCollator(words_only, whole_word_mask=True)
    minibert.MLMCollator(words_only, whole_word_mask=False)  # masking single tokens is fine


def test_a_tokenizer_without_the_needed_special_tokens_is_named():
    bare = word_level_tokenizer()
    with pytest.raises(ValueError, match=r"has no pad token \(pad_token is None\)"):
        minibert.CausalLMCollator(bare)
    with pytest.raises(ValueError, match="has no pad token"):
        minibert.MLMCollator(bare)
    with pytest.raises(ValueError, match="has no mask token"):
        minibert.MLMCollator(word_level_tokenizer(pad_token="[PAD]"))
    with pytest.raises(ValueError, match="has no cls token"):
        minibert.make_lm_examples([["the cat sat"]], bare)
    with pytest.raises(ValueError, match="has no cls token"):
        minibert.make_sop_examples([["the cat sat", "the cat"]], bare)
