"""Exercises and quiz of notebook 01, tokenization: WordPiece pieces, sentence pairs, padding."""

from functools import lru_cache

import torch

from .framework import Question, exercise, first_matching_hint

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


def wordpiece_variants(words, vocab):
    """The right pieces of each word first, then the usual slips, name -> the pieces of every word: the shortest
    match taken instead of the longest, continuations looked up without '##', and an unknown rest of a word made
    one [UNK] after the pieces found so far, or skipped character by character."""
    def split(**slip):
        return [wordpiece_reference(w, vocab, **slip) for w in words]
    return {
        "right": split(),
        "shortest first": split(longest=False),
        "no ## prefix": split(prefix=""),
        "partial [UNK]": split(unknown="partial"),
        "unknown skipped": split(unknown="skip"),
    }


WORDPIECE_HINTS = {
    "shortest first": "you take the SHORTEST piece that matches; WordPiece takes the longest piece in the vocabulary "
                      "first (try end = len(word), then shorter)",
    "no ## prefix": "a piece that continues a word is looked up with its '##' prefix ('##able', not 'able')",
    "partial [UNK]": "when the rest of a word cannot be split, the WHOLE word becomes ['[UNK]'], not the pieces found "
                     "so far plus [UNK]",
    "unknown skipped": "an unknown character must not be skipped: the whole word becomes ['[UNK]']",
}


@exercise(EX, 1, "WordPiece, longest match first")
def check_wordpiece_split(wordpiece_split):
    """wordpiece_split(word, vocab) -> the word's WordPiece pieces, or ["[UNK]"]."""
    def judge():
        got = [wordpiece_split(w, set(VOCAB)) for w in WORDS]
        got = [list(g) if isinstance(g, (list, tuple)) else g for g in got]
        variants = wordpiece_variants(WORDS, VOCAB)
        expected = variants["right"]
        if got == expected:
            return None
        hint = first_matching_hint(got, variants, WORDPIECE_HINTS)
        if hint:
            return hint
        if all(isinstance(g, str) for g in got):
            return "return a list of pieces, e.g. ['un', '##aff', '##able'], not a string"
        bad = [f"{w!r} -> {g}" for w, g, e in zip(WORDS, got, expected) if g != e][:2]
        return f"not yet: {'; '.join(bad)} (expected {[e for g, e in zip(got, expected) if g != e][:2]})"
    return judge


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
    from ..tokenizer import train_tokenizer
    return train_tokenizer([PAIR_TEXTS * 3], vocab_size=120, min_frequency=2)


def as_ids(x):
    if isinstance(x, torch.Tensor):
        x = x.flatten().tolist()
    return list(x)


def pair_ids_variants(tok, a, b, length):
    """input_ids of the pair (a, b) as the tokenizer encodes it, [CLS] A [SEP] B [SEP], then the usual slips: no
    [CLS], no special token at all, no [SEP] after A, no [SEP] after B, or the pair padded with 0 up to `length`,
    the length of the answer."""
    right = tok(a, b)["input_ids"]
    cls, sep = tok.cls_token_id, tok.sep_token_id
    a_ids, b_ids = (tok.convert_tokens_to_ids(tok.tokenize(text)) for text in (a, b))
    return {
        "right": right,
        "no [CLS]": a_ids + [sep] + b_ids + [sep],
        "no special tokens": a_ids + b_ids,
        "no [SEP] after A": [cls] + a_ids + b_ids + [sep],
        "no final [SEP]": [cls] + a_ids + [sep] + b_ids,
        "padded": right + [0] * (length - len(right)),
    }


NO_CLS = "the pair must start with [CLS] (tokenizer.cls_token_id): BERT's classifiers read its vector"
PAIR_IDS_HINTS = {
    "no [CLS]": NO_CLS,
    "no special tokens": NO_CLS,
    "no [SEP] after A": "a [SEP] must also end segment A: [CLS] A [SEP] B [SEP]",
    "no final [SEP]": "the pair ends with a second [SEP] after B: [CLS] A [SEP] B [SEP]",
    "padded": "no padding here: a single pair has no [PAD]",
}


def segment_variants(tok, a, b):
    """token_type_ids of the pair (a, b) as the tokenizer makes them, then the usual slips: every id 0, the [SEP]
    after A given to segment B, the final [SEP] given to segment A, or the two segments swapped."""
    right = tok(a, b, return_token_type_ids=True)["token_type_ids"]
    n_a, n_b = len(tok.tokenize(a)) + 2, len(tok.tokenize(b))  # [CLS] A [SEP], and the tokens of B
    return {
        "right": right,
        "all zero": [0] * len(right),
        "first [SEP] in B": [0] * (n_a - 1) + [1] * (len(right) - n_a + 1),
        "final [SEP] in A": [0] * n_a + [1] * n_b + [0],
        "swapped": [1 - t for t in right],
    }


SEGMENT_HINTS = {
    "all zero": "every segment id is 0: the tokens of B (and the [SEP] after them) belong to segment 1",
    "first [SEP] in B": "the [SEP] after A belongs to segment A (0); segment 1 starts with the first token of B",
    "final [SEP] in A": "the final [SEP] closes segment B, so its segment id is 1",
    "swapped": "segments swapped: A (with [CLS] and its [SEP]) is 0, B and the final [SEP] are 1",
}


@exercise(EX, 2, "a sentence pair by hand")
def check_encode_pair(encode_pair):
    """encode_pair(tokenizer, text_a, text_b) -> (input_ids, token_type_ids) of [CLS] A [SEP] B [SEP]."""
    def judge():
        tok = small_tokenizer()
        for a, b in PAIRS:
            got = encode_pair(tok, a, b)
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                return "return two lists: (input_ids, token_type_ids)"
            got_ids, got_types = as_ids(got[0]), as_ids(got[1])
            if got_ids and isinstance(got_ids[0], str):
                return "those are tokens; turn them into ids with tokenizer.convert_tokens_to_ids"
            id_variants = pair_ids_variants(tok, a, b, len(got_ids))
            ids = id_variants["right"]
            if got_ids != ids:
                return (first_matching_hint(got_ids, id_variants, PAIR_IDS_HINTS)
                        or f"input_ids should be {ids}, you have {got_ids}")
            if len(got_types) != len(ids):
                return f"token_type_ids needs one segment id per token ({len(ids)}), you have {len(got_types)}"
            type_variants = segment_variants(tok, a, b)
            types = type_variants["right"]
            if got_types != types:
                return (first_matching_hint(got_types, type_variants, SEGMENT_HINTS)
                        or f"token_type_ids should be {types}, you have {got_types}")
        return None
    return judge


# ---- 01.3 the attention mask of a padded batch ----
def attention_mask_variants(lengths, max_length):
    """The mask of a right-padded batch (1 on the first lengths[i] positions of row i, then 0) first, then the
    usual slips: the mask inverted, or 1 everywhere."""
    right = (torch.arange(max_length)[None, :] < torch.tensor(lengths)[:, None]).long()
    return {"right": right, "inverted": 1 - right, "all ones": torch.ones_like(right)}


ATTENTION_MASK_HINTS = {
    "inverted": "inverted: 1 marks a real token the model may attend to, 0 marks padding",
    "all ones": "every position is 1: the padding positions (after each row's length) must be 0",
}


@exercise(EX, 3, "attention mask from lengths")
def check_attention_mask_from_lengths(attention_mask_from_lengths):
    """attention_mask_from_lengths(lengths, max_length) -> (B, max_length) tensor, 1 on real tokens, 0 on padding."""
    def judge():
        lengths, max_length = [5, 2, 7, 1], 8
        variants = attention_mask_variants(lengths, max_length)
        expected = variants["right"]
        got = attention_mask_from_lengths(list(lengths), max_length)
        got = torch.as_tensor(got)
        if got.shape != expected.shape:
            if got.shape == (len(lengths), max(lengths)):
                return "pad to max_length columns (the batch's length), not to the longest row"
            return f"the mask has one row per sequence and max_length columns: shape {tuple(expected.shape)}, " \
                   f"not {tuple(got.shape)}"
        got = got.long()
        if torch.equal(got, expected):
            return None
        hint = first_matching_hint(got, variants, ATTENTION_MASK_HINTS, same=torch.equal)
        if hint:
            return hint
        ones = got.sum(1).tolist()
        if ones == [n + 1 for n in lengths] or ones == [n - 1 for n in lengths]:
            return f"off by one: row i has exactly lengths[i] ones (you have {ones} for lengths {lengths})"
        if bool((got[:, :1] == 0).any()):
            return "padding goes on the right (padding_side='right'): the ones come first"
        return f"row i should have lengths[i] ones, then zeros: expected {expected.tolist()}"
    return judge


QUIZ = {EX: {
    "q1": Question(
        "'photosynthetic' is not an entry of our 8,000-entry vocabulary. What does the tokenizer do with it?",
        {"A": "replaces the whole word with [UNK], since only a word that is an entry of the vocabulary can get an id",
         "B": "spells it out letter by letter, one single-character piece per letter, since that always works",
         "C": "splits it into the longest pieces the vocabulary has, every piece after the first starting with ##",
         "D": "cuts it into its morphemes, 'photo' + '##synthetic', since the vocabulary holds the meaningful parts of "
              "words"},
        "C",
        "WordPiece spells any word made of known characters with the longest pieces it has; only a character it "
        "cannot spell gives [UNK].",
        {"A": "[UNK] comes only from a character the vocabulary cannot spell; known characters always give pieces.",
         "B": "single characters are the last resort: the tokenizer tries the longest pieces first.",
         "D": "the pieces are whatever the merges produced, often not morphemes: the tokenizer takes the longest "
              "entry that fits, meaningful or not."}),
    "q2": Question(
        "For the pair [CLS] A [SEP] B [SEP], which segment id (token_type_id) does the final [SEP] get?",
        {"A": "0, like every special token: segment ids only tell the ordinary tokens of A and B apart",
         "B": "2, a third segment id that the tokenizer keeps for the special tokens closing a pair",
         "C": "none: special tokens get -100 in token_type_ids, the way padding is kept out of a loss",
         "D": "1, the same as the tokens of B, because the [SEP] that closes B belongs to segment B"}, "D",
        "[CLS], A and the first [SEP] are segment 0; B and the [SEP] that closes it are segment 1.",
        {"A": "[CLS] and the first [SEP] get 0 because they belong to A, not because they are special; the final "
              "[SEP] closes B.",
         "B": "type_vocab_size is 2: a segment id is 0 or 1, nothing else.",
         "C": "-100 is for labels; a token_type_id indexes the segment table, so it must be 0 or 1."}),
    "q3": Question(
        "In a padded batch, what does attention_mask = 0 at a position mean?",
        {"A": "the position holds [PAD]: attention gives it zero weight, so no token reads its vector",
         "B": "the position holds a [MASK] token, whose original token the masked-LM head must predict",
         "C": "the loss skips the position, so whatever the model predicts there costs it nothing at all",
         "D": "the token belongs to segment A of a pair, while the tokens of segment B get a mask of 1"}, "A",
        "the attention mask hides padding from attention; ignoring a position in the loss is the label's job "
        "(-100).",
        {"B": "[MASK] is a token id in input_ids; the attention mask does not mark it.",
         "C": "that is what a label of -100 does; the attention mask acts inside attention, not on the loss.",
         "D": "segments are token_type_ids; the attention mask only tells real tokens (1) from padding (0)."}),
    "q4": Question(
        "With the same budget of 8,000 entries, WordPiece almost never gives [UNK] on held-out text, while a "
        "vocabulary of whole words leaves many held-out words unknown. Why?",
        {"A": "WordPiece entries are longer than words on average, so the same budget covers more of the text",
         "B": "pieces spell words never seen in training out of frequent parts, down to single characters",
         "C": "WordPiece was trained on the held-out text as well, so it had seen most of those words already",
         "D": "the WordPiece tokenizer lowercases and strips accents, which the list of whole words does not do"},
        "B",
        "any word whose characters are in the vocabulary can be written with pieces; a word list has no way to spell "
        "a word it lacks.",
        {"A": "a piece is at most a whole word, usually less; the coverage comes from combining pieces.",
         "C": "both were built from the training documents only; the held-out words are new to both.",
         "D": "the whole-word list was built with the tokenizer's own normalizer: lowercased and without accents "
              "too."}),
    "q5": Question(
        "WordPiece on a vocabulary of six entries. What does this program print?",
        {"A": "['un', '##able']", "B": "['un', '##a', '##ble']", "C": "['[UNK]']", "D": "['una', '##ble']"}, "D",
        "greedy longest match first: the longest entry that starts 'unable' is 'una', and the rest, 'ble', is the "
        "entry '##ble'.",
        {"A": "that is the split a linguist would choose, but WordPiece is greedy: 'una' is the longest entry that "
              "starts the word, so it comes first.",
         "B": "that takes the shortest match at each step; WordPiece takes the longest one.",
         "C": "every part of the word can be spelled with entries, so there is no [UNK]."},
        code='''
from tokenizers import Tokenizer
from tokenizers.models import WordPiece

vocab = {"[UNK]": 0, "un": 1, "una": 2, "##a": 3, "##able": 4, "##ble": 5}
tokenizer = Tokenizer(WordPiece(vocab, unk_token="[UNK]"))
print(tokenizer.encode("unable").tokens)
'''),
    "q6": Question(
        "You encode a sentence with one WordPiece tokenizer, then decode the ids with another one of the same size "
        "trained on other text. What happens?",
        {"A": "decode raises an error, because the second tokenizer recognizes that the ids come from another "
              "vocabulary",
         "B": "decode gives the sentence back unchanged, because two vocabularies number their common words alike",
         "C": "decode returns other words, with no warning: every id in range names some entry of its vocabulary",
         "D": "each id that the second tokenizer never produced itself is decoded as [UNK] and the rest as usual"},
        "C",
        "an id is a row number in one vocabulary; another vocabulary keeps other tokens at those rows, and nothing "
        "checks: a model's tokenizer must travel with its checkpoint.",
        {"A": "a tokenizer cannot tell whose ids it gets: any id below its size is valid to it (section 7).",
         "B": "ids depend on the order the trainer added entries: the same word gets different ids in two "
              "vocabularies trained on different text.",
         "D": "a tokenizer keeps no record of the ids it produced; it looks every id up in its own table."}),
}}
