"""A WordPiece tokenizer trained on our corpus, in transformers' format.

The same recipe as BERT's: lowercase and strip accents (BERT normalizer), split on whitespace and
punctuation (BERT pre-tokenizer), then WordPiece: frequent words stay whole, rare ones become
pieces, continuation pieces start with "##". Special tokens come first, so [PAD] is id 0.
"""

import os
import time

import tokenizers
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors, trainers

from ..cache import atomic_file, cache_folder, fingerprint, own_name, stranger, untrusted_note
from ..values import check_value, is_whole
from .examples import check_documents

SPECIAL_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]  # ids 0, 1, 2, 3, 4


def train_tokenizer(documents, vocab_size=8000, min_frequency=2, model_max_length=512, verbose=False, cache=True):
    """Train WordPiece on the sentences of `documents` (list of lists of sentences) and return a
    transformers fast tokenizer whose pairs come out as [CLS] A [SEP] B [SEP] with segment ids.

    Training is deterministic, so with cache=True the trained vocabulary is saved in the minibert cache
    (MINIBERT_CACHE or ~/.cache/minibert) and read from there when the same sentences, settings and
    code come again: every notebook after the first reads the course's tokenizer instead of training it."""
    from transformers import BertTokenizerFast  # imported here: transformers is slow to import

    check_documents(documents)  # a flat list of strings would train on its characters
    check_value("vocab_size", vocab_size, lambda n: is_whole(n) and n > 0, "a whole number above 0")
    check_value("min_frequency", min_frequency, lambda n: is_whole(n) and n >= 0, "a whole number, 0 or more")
    sentences = [s for doc in documents for s in doc]
    start = time.perf_counter()
    try:
        path = cache_path(sentences, vocab_size, min_frequency) if cache else None
    except OSError as error:  # no cache folder can be made: the tokenizer is trained all the same
        print(f"note: the tokenizer is not cached ({error})")
        path = None
    tok = None
    who = stranger(path) if path else None
    if who:  # a classmate's file under the tokenizer's name in a shared cache
        untrusted_note(path, who, "training the tokenizer again")
        path = own_name(path)
    if path and os.path.exists(path):
        try:
            tok, done = Tokenizer.from_file(path), "read from the cache"
        except Exception as error:  # a damaged cache file: train again and replace it
            print(f"note: the cached tokenizer {path} could not be read ({error}); training it again")
    if tok is None:
        tok, done = wordpiece(sentences, vocab_size, min_frequency), "trained"
        if path:  # written whole or not at all: to a temporary file first
            try:
                with atomic_file(path) as tmp:
                    tok.save(tmp)
            except OSError as error:  # a read-only cache, a full disk: the tokenizer is trained all the same
                print(f"note: the tokenizer is not cached ({error.strerror or error})")
            except Exception as error:  # the tokenizers library reports a failed write as a plain Exception
                print(f"note: the tokenizer is not cached (it could not be written to {path}: {error})")
    tokenizer = BertTokenizerFast(
        tokenizer_object=tok, do_lower_case=True, model_max_length=model_max_length, pad_token="[PAD]",
        unk_token="[UNK]", cls_token="[CLS]", sep_token="[SEP]", mask_token="[MASK]", padding_side="right")
    for token, expected in zip(SPECIAL_TOKENS, range(len(SPECIAL_TOKENS))):
        assert tokenizer.convert_tokens_to_ids(token) == expected, (token, expected)
    if verbose:
        print(f"{done} a {tokenizer.vocab_size:,}-token WordPiece vocabulary on {len(sentences):,} sentences "
              f"in {time.perf_counter() - start:.1f} s")
    return tokenizer


def cache_path(sentences, vocab_size, min_frequency):
    """Where the tokenizer of these sentences and settings is cached: a name made from all that decides
    it, this file's code and the tokenizers library's version included."""
    key = fingerprint(sentences, vocab_size, min_frequency, tokenizers.__version__, code=("data/tokenizer.py",))
    return os.path.join(cache_folder("tokenizers"), key + ".json")


def wordpiece(sentences, vocab_size, min_frequency):
    """The tokenizers-library WordPiece of the course: normalizer, pre-tokenizer, vocabulary, special
    tokens, the [CLS] A [SEP] B [SEP] template and the ## decoder."""
    tok = Tokenizer(models.WordPiece(unk_token="[UNK]", max_input_chars_per_word=100))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    words = {word for s in sentences for word, _ in tok.pre_tokenizer.pre_tokenize_str(tok.normalizer.normalize_str(s))}
    # WordPiece always keeps every character, and the ## piece of every character seen inside a word,
    # whatever vocab_size says: below that floor it would silently return a larger vocabulary.
    characters = {c for word in words for c in word}
    # The trainer numbers the ##pieces of single characters in hash-map order, and those numbers break
    # ties between merges: vocabularies differed from one run to the next (huggingface/tokenizers#1794).
    # Giving it those pieces up front, sorted, makes training repeatable.
    pieces = sorted({"##" + c for word in words for c in word[1:]})
    smallest = len(SPECIAL_TOKENS) + len(characters) + len(pieces)
    if vocab_size < smallest:
        raise ValueError(f"vocab_size={vocab_size} is too small for this corpus: its {len(characters)} characters, "
                         f"their {len(pieces)} ## pieces and the {len(SPECIAL_TOKENS)} special tokens need "
                         f"{smallest}. Use vocab_size={smallest} or more (BERT used 30522)")
    trainer = trainers.WordPieceTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                        special_tokens=SPECIAL_TOKENS + pieces, continuing_subword_prefix="##",
                                        show_progress=False)  # its progress bar prints blank lines
    tok.train_from_iterator(sentences, trainer=trainer, length=len(sentences))
    vocab = tok.get_vocab(with_added_tokens=False)  # the pieces are ordinary tokens, not special ones:
    tok = Tokenizer(models.WordPiece(vocab, unk_token="[UNK]", max_input_chars_per_word=100))  # a clean start
    tok.normalizer = normalizers.BertNormalizer(lowercase=True, strip_accents=True, clean_text=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.add_special_tokens(SPECIAL_TOKENS)
    cls_id, sep_id = tok.token_to_id("[CLS]"), tok.token_to_id("[SEP]")
    tok.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",  # ":1" puts B and its [SEP] in segment 1
        special_tokens=[("[CLS]", cls_id), ("[SEP]", sep_id)])
    tok.decoder = decoders.WordPiece(prefix="##")
    return tok

