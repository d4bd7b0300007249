"""Exercises of notebook 01, tokenization: WordPiece pieces, sentence pairs, padding."""

from functools import lru_cache

import torch

from .framework import Slip, exercise, judge_answer

EX = "01"

# ---- 01.1 WordPiece: greedy longest match first ----
# A vocabulary small enough to read; "##" marks a piece that continues a word.
VOCAB = {"[UNK]", "un", "a", "aff", "play", "played", "p", "l", "s", "t", "e", "r",
         "##a", "##able", "##aff", "##e", "##ed", "##er", "##ers", "##ff", "##ing", "##l", "##la", "##r", "##s",
         "##y"}
WORDS = ["unaffable", "played", "playing", "players", "unplayable", "a", "play", "tapes", "unzip", "plays"]


def wordpiece_reference(word, vocab, longest=True, prefix="##", unknown="whole"):
    """BERT's WordPiece on one word. The other arguments make the common wrong versions, for the hints."""
    pieces, start = [], 0
    while start < len(word):
        ends = range(len(word), start, -1) if longest else range(start + 1, len(word) + 1)
        piece = None
        for end in ends:
            candidate = (prefix if start > 0 else "") + word[start:end]
            if candidate in vocab:
                piece = candidate
                break
        if piece is None:
            if unknown == "whole":
                return ["[UNK]"]
            if unknown == "skip":  # drop the character nobody knows and carry on
                start += 1
                continue
            return pieces + ["[UNK]"]  # "partial": keep what was found
        pieces.append(piece)
        start = end
    return pieces


def split_words(words, vocab, **slip):
    return [wordpiece_reference(w, vocab, **slip) for w in words]


WORDPIECE_SLIPS = [
    Slip("shortest first", lambda words, vocab: split_words(words, vocab, longest=False),
         "you take the SHORTEST piece that matches; WordPiece takes the longest piece in the vocabulary first (try "
         "end = len(word), then shorter)"),
    Slip("no ## prefix", lambda words, vocab: split_words(words, vocab, prefix=""),
         "a piece that continues a word is looked up with its '##' prefix ('##able', not 'able')"),
    Slip("partial [UNK]", lambda words, vocab: split_words(words, vocab, unknown="partial"),
         "when the rest of a word cannot be split, the WHOLE word becomes ['[UNK]'], not the pieces found so far "
         "plus [UNK]"),
    Slip("unknown skipped", lambda words, vocab: split_words(words, vocab, unknown="skip"),
         "an unknown character must not be skipped: the whole word becomes ['[UNK]']"),
]


def pieces_hint(got, expected):
    """What is wrong with pieces that no slip explains: a string instead of a list, or the first words split wrong."""
    if all(isinstance(g, str) for g in got):
        return "return a list of pieces, e.g. ['un', '##aff', '##able'], not a string"
    bad = [f"{w!r} -> {g}" for w, g, e in zip(WORDS, got, expected) if g != e][:2]
    return f"not yet: {'; '.join(bad)} (expected {[e for g, e in zip(got, expected) if g != e][:2]})"


@exercise(EX, 1, "WordPiece, longest match first")
def check_wordpiece_split(wordpiece_split):
    """wordpiece_split(word, vocab) -> the word's WordPiece pieces, or ["[UNK]"]."""
    got = [wordpiece_split(w, set(VOCAB)) for w in WORDS]
    got = [list(g) if isinstance(g, (list, tuple)) else g for g in got]
    expected = split_words(WORDS, VOCAB)
    return judge_answer(got, expected, WORDPIECE_SLIPS, (WORDS, VOCAB),
                        fallback=lambda got: pieces_hint(got, expected))


# ---- 01.2 a sentence pair by hand ----
PAIR_TEXTS = [  # the check's own small tokenizer is trained on these
    "The river bank was muddy after the rain.", "She walked to the bank to deposit her savings.",
    "Aristotle wrote about logic and ethics.", "His students read the books again and again.",
    "Unbelievable results were reported by the researchers.", "The results were checked twice.",
]
PAIRS = [(PAIR_TEXTS[0], PAIR_TEXTS[1]), ("Aristotle wrote.", "Students read unbelievable books!"),
         ("Rain.", "The bank.")]


@lru_cache(maxsize=1)
def small_tokenizer():
    from ..data.tokenizer import train_tokenizer
    return train_tokenizer([PAIR_TEXTS * 3], vocab_size=120, min_frequency=2)


def as_ids(x):
    if isinstance(x, torch.Tensor):
        x = x.flatten().tolist()
    return list(x)


def pair_by_hand(tok, a, b, cls=True, middle_sep=True, final_sep=True):
    """input_ids of [CLS] A [SEP] B [SEP] put together by hand; a flag turned off leaves that special token out."""
    a_ids, b_ids = (tok.convert_tokens_to_ids(tok.tokenize(text)) for text in (a, b))
    return [tok.cls_token_id] * cls + a_ids + [tok.sep_token_id] * middle_sep + b_ids + [tok.sep_token_id] * final_sep


def pair_ids(tok, a, b):
    return tok(a, b)["input_ids"]


NO_CLS = "the pair must start with [CLS] (tokenizer.cls_token_id): BERT's classifiers read its vector"
PAIR_IDS_SLIPS = [  # on the case (tokenizer, text_a, text_b, the length of the answer)
    Slip("no [CLS]", lambda tok, a, b, length: pair_by_hand(tok, a, b, cls=False), NO_CLS),
    Slip("no special tokens", lambda tok, a, b, length: pair_by_hand(tok, a, b, False, False, False), NO_CLS),
    Slip("no [SEP] after A", lambda tok, a, b, length: pair_by_hand(tok, a, b, middle_sep=False),
         "a [SEP] must also end segment A: [CLS] A [SEP] B [SEP]"),
    Slip("no final [SEP]", lambda tok, a, b, length: pair_by_hand(tok, a, b, final_sep=False),
         "the pair ends with a second [SEP] after B: [CLS] A [SEP] B [SEP]"),
    Slip("padded", lambda tok, a, b, length: pair_ids(tok, a, b) + [0] * (length - len(pair_ids(tok, a, b))),
         "no padding here: a single pair has no [PAD]"),
]


def segment_ids(tok, a, b):
    return tok(a, b, return_token_type_ids=True)["token_type_ids"]


def segments_by_hand(tok, a, b, first_sep, final_sep):
    """token_type_ids of [CLS] A [SEP] B [SEP] by hand, its two [SEP] given the segments named (0 or 1)."""
    return [0] * (len(tok.tokenize(a)) + 1) + [first_sep] + [1] * len(tok.tokenize(b)) + [final_sep]


SEGMENT_SLIPS = [
    Slip("all zero", lambda tok, a, b: [0] * len(segment_ids(tok, a, b)),
         "every segment id is 0: the tokens of B (and the [SEP] after them) belong to segment 1"),
    Slip("first [SEP] in B", lambda tok, a, b: segments_by_hand(tok, a, b, 1, 1),
         "the [SEP] after A belongs to segment A (0); segment 1 starts with the first token of B"),
    Slip("final [SEP] in A", lambda tok, a, b: segments_by_hand(tok, a, b, 0, 0),
         "the final [SEP] closes segment B, so its segment id is 1"),
    Slip("swapped", lambda tok, a, b: [1 - t for t in segment_ids(tok, a, b)],
         "segments swapped: A (with [CLS] and its [SEP]) is 0, B and the final [SEP] are 1"),
]


def tokens_not_ids(got):
    if got and isinstance(got[0], str):
        return "those are tokens; turn them into ids with tokenizer.convert_tokens_to_ids"
    return None


def one_segment_id_per_token(got, ids):
    if len(got) != len(ids):
        return f"token_type_ids needs one segment id per token ({len(ids)}), you have {len(got)}"
    return None


@exercise(EX, 2, "a sentence pair by hand", cases=PAIRS)
def check_encode_pair(encode_pair, a, b):
    """encode_pair(tokenizer, text_a, text_b) -> (input_ids, token_type_ids) of [CLS] A [SEP] B [SEP]."""
    tok = small_tokenizer()
    got = encode_pair(tok, a, b)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        return "return two lists: (input_ids, token_type_ids)"
    got_ids, got_types = as_ids(got[0]), as_ids(got[1])
    ids, types = pair_ids(tok, a, b), segment_ids(tok, a, b)
    return (judge_answer(got_ids, ids, PAIR_IDS_SLIPS, (tok, a, b, len(got_ids)), form=tokens_not_ids,
                         fallback=lambda got: f"input_ids should be {ids}, you have {got}")
            or judge_answer(got_types, types, SEGMENT_SLIPS, (tok, a, b),
                            form=lambda got: one_segment_id_per_token(got, ids),
                            fallback=lambda got: f"token_type_ids should be {types}, you have {got}"))


# ---- 01.3 the attention mask of a padded batch ----
def attention_mask(lengths, max_length):
    """The mask of a right-padded batch: 1 on the first lengths[i] positions of row i, then 0."""
    return (torch.arange(max_length)[None, :] < torch.tensor(lengths)[:, None]).long()


ATTENTION_MASK_SLIPS = [
    Slip("inverted", lambda lengths, max_length: 1 - attention_mask(lengths, max_length),
         "inverted: 1 marks a real token the model may attend to, 0 marks padding"),
    Slip("all ones", lambda lengths, max_length: torch.ones_like(attention_mask(lengths, max_length)),
         "every position is 1: the padding positions (after each row's length) must be 0"),
]


def mask_shape_hint(got, lengths, max_length):
    """A hint when the mask `got` (a tensor) is not shaped (batch, max_length), else None."""
    if got.shape != (len(lengths), max_length):
        if got.shape == (len(lengths), max(lengths)):
            return "pad to max_length columns (the batch's length), not to the longest row"
        return f"the mask has one row per sequence and max_length columns: shape {(len(lengths), max_length)}, " \
               f"not {tuple(got.shape)}"
    return None


def mask_hint(got, lengths, expected):
    """What is wrong with a mask that no slip explains: off by one, padded on the left, or else."""
    ones = got.sum(1).tolist()
    if ones == [n + 1 for n in lengths] or ones == [n - 1 for n in lengths]:
        return f"off by one: row i has exactly lengths[i] ones (you have {ones} for lengths {lengths})"
    if bool((got[:, :1] == 0).any()):
        return "padding goes on the right (padding_side='right'): the ones come first"
    return f"row i should have lengths[i] ones, then zeros: expected {expected.tolist()}"


@exercise(EX, 3, "attention mask from lengths")
def check_attention_mask_from_lengths(attention_mask_from_lengths):
    """attention_mask_from_lengths(lengths, max_length) -> (B, max_length) tensor, 1 on real tokens, 0 on padding."""
    lengths, max_length = [5, 2, 7, 1], 8
    expected = attention_mask(lengths, max_length)
    got = torch.as_tensor(attention_mask_from_lengths(list(lengths), max_length))
    return judge_answer(got, expected, ATTENTION_MASK_SLIPS, (lengths, max_length), same=torch.equal,
                        form=lambda got: mask_shape_hint(got, lengths, max_length), convert=lambda got: got.long(),
                        fallback=lambda got: mask_hint(got, lengths, expected))
