"""Training examples for the three objectives. The model is the same; only inputs and labels differ.

  causal LM    labels = input_ids (the model shifts them), -100 on padding       CausalLMCollator
  masked LM    15% of tokens chosen; of those 80% -> [MASK], 10% -> random
               token, 10% kept; labels -100 everywhere else                     MLMCollator
  next sentence  [CLS] A [SEP] B [SEP]; label 0 if B followed A, 1 if random     make_nsp_examples
  sentence order the same two segments, label 1 if they were swapped             make_sop_examples
"""

import random
from collections.abc import Mapping

import torch

from .checks import as_tensor, check_ids
from .labels import IGNORE_INDEX
from .config import check_value, is_number

NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3  # what MLMCollator did at each position
DECISIONS = ("not selected", "masked", "random token", "kept")
DOCUMENTS_MUST = ('documents must be a list of documents, each a list of sentence strings, like '
                  '[["First sentence.", "Second."], ["Another document."]]')
OTHER_TOKENIZER = "the tokenizer has {} tokens: were these examples made with another tokenizer?"


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


# ---- collators: a list of examples -> a padded batch of tensors ----
PER_TOKEN = ("input_ids", "attention_mask", "token_type_ids", "labels")  # one value per token


def as_ids(value, where):
    """One sequence of ids as a 1-D long tensor, from a list, a numpy array, or a tensor of shape
    (T,) or (1, T) (what tokenizer(text, return_tensors="pt") gives)."""
    ids = as_tensor(where, value)
    if ids.dim() == 2 and len(ids) == 1:  # a batch of one
        ids = ids[0]
    if ids.dim() != 1:
        raise ValueError(f"{where} must be one sequence, of shape (T,) or (1, T), got shape {tuple(ids.shape)}: "
                         "a collator takes a list of examples, one sequence each ([ids] for one)")
    if ids.numel() and (ids.dtype.is_floating_point or ids.dtype == torch.bool):  # [] is float to torch
        raise TypeError(f"{where} must hold integer ids, got dtype {ids.dtype}")
    return ids.long()


def as_example(example, i):
    """Example i as a dict of 1-D tensors. It may be any Mapping (a tokenizer's BatchEncoding too) or
    bare ids; a padded example (attention_mask with zeros) keeps only its real tokens."""
    if not isinstance(example, Mapping):
        example = {"input_ids": example}
    if "input_ids" not in example:
        raise ValueError(f"example {i} has no 'input_ids' (its keys: {', '.join(map(str, example))})")
    out = dict(example)
    for key in PER_TOKEN:
        if key in example:
            out[key] = as_ids(example[key], f"example {i}'s {key}")
            if len(out[key]) != len(out["input_ids"]):
                raise ValueError(f"example {i}'s {key} must be as long as its input_ids ({len(out['input_ids'])} "
                                 f"tokens), got {len(out[key])}" + (" (use -100 for no target)" * (key == "labels")))
    if "attention_mask" in out:  # drop the padding; the collator pads the batch again
        keep = out.pop("attention_mask").bool()
        out.update({key: out[key][keep] for key in PER_TOKEN if key in out})
    if not len(out["input_ids"]):
        raise ValueError(f"example {i} has no tokens: every sequence needs at least one (drop empty texts first)")
    return out


def as_examples(examples):
    """A batch's examples, each checked by as_example."""
    if isinstance(examples, Mapping):
        raise ValueError("a collator takes a list of examples, got one Mapping (keys: "
                         f"{', '.join(map(str, examples))}): pass [example] for one example, and "
                         "[tokenizer(text) for text in texts] rather than tokenizer(texts)")
    examples = list(examples)
    if not examples:
        raise ValueError("cannot make a batch from zero examples")
    return [as_example(e, i) for i, e in enumerate(examples)]


def pad(sequences, value):
    out = torch.full((len(sequences), max(len(s) for s in sequences)), value, dtype=torch.long)
    for i, s in enumerate(sequences):
        out[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


def collate(examples, pad_token_id, vocab_size=None):
    """Pad a list of examples (mappings with input_ids, or bare ids) into a batch of tensors.
    With vocab_size, ids outside the tokenizer's vocabulary are refused."""
    examples = as_examples(examples)
    for key in ("token_type_ids", "next_sentence_label"):
        if len({key in e for e in examples}) > 1:
            raise ValueError(f"some examples of the batch have {key!r} and others do not: mix kinds of examples "
                             "in separate batches")
    ids = [e["input_ids"] for e in examples]
    batch = {"input_ids": pad(ids, pad_token_id), "attention_mask": pad([[1] * len(x) for x in ids], 0)}
    if vocab_size is not None:
        check_ids("input_ids", batch["input_ids"], vocab_size, OTHER_TOKENIZER.format(vocab_size))
    if "token_type_ids" in examples[0]:
        batch["token_type_ids"] = pad([e["token_type_ids"] for e in examples], 0)
    if "next_sentence_label" in examples[0]:
        batch["next_sentence_label"] = torch.tensor([int(e["next_sentence_label"]) for e in examples])
    return batch


class CausalLMCollator:
    """Pads a batch for next-token prediction. labels = input_ids with -100 on padding, NOT shifted:
    BertForCausalLM shifts them. An example may bring its own labels (e.g. -100 on a prompt)."""

    def __init__(self, tokenizer):
        self.pad_token_id, = special_ids(tokenizer, "pad")
        self.vocab_size = len(tokenizer)

    def __call__(self, examples):
        examples = as_examples(examples)
        batch = collate(examples, self.pad_token_id, self.vocab_size)
        labels = [e.get("labels", e["input_ids"]) for e in examples]
        batch["labels"] = pad(labels, IGNORE_INDEX)  # padding: -100, never a target
        return batch


class MLMCollator:
    """Pads a batch and masks it as BERT does, with fresh masks every call (dynamic masking).

    Per sequence, round(mlm_probability * n) of its n ordinary tokens are selected (at least one;
    never [CLS], [SEP] or padding). Of the selected, mask_replace_prob become [MASK],
    random_replace_prob a random token, the rest stay as they are, so that the model cannot tell
    which tokens it will be asked about and must represent every token well. Labels are the
    original ids at selected positions and -100 everywhere else. whole_word_mask selects whole
    words: all the ##pieces of a word together.
    """

    def __init__(self, tokenizer, mlm_probability=0.15, mask_replace_prob=0.8, random_replace_prob=0.1,
                 whole_word_mask=False, seed=None):
        check_value("mlm_probability", mlm_probability, lambda p: is_number(p) and 0 < p <= 1, "a number in (0, 1]")
        check_share("mask_replace_prob", mask_replace_prob)
        check_share("random_replace_prob", random_replace_prob)
        if mask_replace_prob + random_replace_prob > 1:
            raise ValueError(f"mask_replace_prob ({mask_replace_prob}) + random_replace_prob ({random_replace_prob}) "
                             "must be shares between 0 and 1 that sum to at most 1; the rest is kept unchanged")
        self.mlm_probability, self.mask_replace_prob, self.random_replace_prob = \
            mlm_probability, mask_replace_prob, random_replace_prob
        self.whole_word_mask = whole_word_mask
        self.pad_token_id, self.mask_token_id = special_ids(tokenizer, "pad", "mask")
        self.vocab_size = vocab = len(tokenizer)
        self.special = torch.zeros(vocab, dtype=torch.bool)
        self.special[torch.tensor(tokenizer.all_special_ids)] = True
        self.ordinary_ids = (~self.special).nonzero().flatten()  # what a random replacement may be
        tokens = tokenizer.convert_ids_to_tokens(list(range(vocab)))
        self.continues_word = torch.tensor([t.startswith("##") for t in tokens])
        if whole_word_mask and not self.continues_word.any():  # it would silently mask single pieces
            raise ValueError("whole_word_mask=True needs a WordPiece tokenizer, whose pieces inside a word start "
                             "with '##'; this tokenizer has no such piece, so words cannot be found. Use "
                             "whole_word_mask=False, or a tokenizer from minibert.train_tokenizer")
        self.generator = torch.Generator().manual_seed(seed if seed is not None else random.randrange(2 ** 63))

    def __call__(self, examples):
        batch = collate(examples, self.pad_token_id)  # mask_tokens checks the ids
        batch["input_ids"], batch["labels"], _ = self.mask_tokens(batch["input_ids"])
        return batch

    def select(self, ids):
        """Boolean (B, T): the positions to predict."""
        selected = torch.zeros(ids.shape, dtype=torch.bool)
        eligible = ~self.special[ids]
        for b in range(len(ids)):
            positions = eligible[b].nonzero().flatten()
            if not len(positions):
                continue
            budget = max(1, round(self.mlm_probability * len(positions)))
            if self.whole_word_mask:  # a word starts at a position that does not continue one
                starts = ~self.continues_word[ids[b, positions]]
                words = torch.tensor_split(positions, starts.nonzero().flatten()[1:].tolist())
                chosen = 0
                for w in torch.randperm(len(words), generator=self.generator).tolist():
                    if chosen + len(words[w]) <= budget or chosen == 0:
                        selected[b, words[w]] = True
                        chosen += len(words[w])
                    if chosen >= budget:
                        break
            else:
                order = torch.randperm(len(positions), generator=self.generator)
                selected[b, positions[order[:budget]]] = True
        return selected

    def mask_tokens(self, input_ids):
        """input_ids (B, T) -> (masked input_ids, labels, decisions), decisions coded as in DECISIONS."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, seq_len), got {tuple(input_ids.shape)}; "
                             "for one sequence use input_ids[None]")
        check_ids("input_ids", input_ids, self.vocab_size, OTHER_TOKENIZER.format(self.vocab_size))
        ids = input_ids.clone()
        selected = self.select(ids)
        labels = torch.where(selected, ids, IGNORE_INDEX)
        u = torch.rand(ids.shape, generator=self.generator)
        masked = selected & (u < self.mask_replace_prob)
        replaced = selected & ~masked & (u < self.mask_replace_prob + self.random_replace_prob)
        ids[masked] = self.mask_token_id
        pick = torch.randint(len(self.ordinary_ids), (int(replaced.sum()),), generator=self.generator)
        ids[replaced] = self.ordinary_ids[pick]
        decisions = torch.full(ids.shape, NOT_SELECTED)
        decisions[selected] = KEPT
        decisions[masked] = MASKED
        decisions[replaced] = RANDOM
        return ids, labels, decisions


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
