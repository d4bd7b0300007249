"""Training examples for the three objectives. The model is the same; only inputs and labels differ.

  causal LM    labels = input_ids (the model shifts them), -100 on padding       CausalLMCollator
  masked LM    15% of tokens chosen; of those 80% -> [MASK], 10% -> random
               token, 10% kept; labels -100 everywhere else                     MLMCollator
  next sentence  [CLS] A [SEP] B [SEP]; label 0 if B followed A, 1 if random     make_nsp_examples
  sentence order the same two segments, label 1 if they were swapped             make_sop_examples
"""

import random

import torch

IGNORE_INDEX = -100
NOT_SELECTED, MASKED, RANDOM, KEPT = 0, 1, 2, 3  # what MLMCollator did at each position
DECISIONS = ("not selected", "masked", "random token", "kept")


def tokenize_documents(documents, tokenizer):
    """Documents of sentences -> documents of token-id lists, without special tokens."""
    flat = [s for doc in documents for s in doc]
    ids = tokenizer(flat, add_special_tokens=False)["input_ids"] if flat else []
    out, i = [], 0
    for doc in documents:
        out.append(ids[i:i + len(doc)])
        i += len(doc)
    return out


def check_documents(documents):
    if not documents or not any(len(doc) for doc in documents):
        raise ValueError("no documents with sentences: the corpus is empty")


def make_lm_examples(documents, tokenizer, max_length=128):
    """Pack each document's sentences into blocks of at most max_length tokens, [CLS] ... [SEP].
    Blocks never cross documents. For causal LM and single-segment masked LM."""
    check_documents(documents)
    if max_length < 3:
        raise ValueError(f"max_length={max_length} cannot hold [CLS], a token and [SEP]")
    body = max_length - 2
    examples = []
    for doc in tokenize_documents(documents, tokenizer):
        block = []
        for sentence in doc:
            sentence = sentence[:body]  # a sentence longer than a block is cut
            if block and len(block) + len(sentence) > body:
                examples.append({"input_ids": [tokenizer.cls_token_id, *block, tokenizer.sep_token_id]})
                block = []
            block += sentence
        if block:
            examples.append({"input_ids": [tokenizer.cls_token_id, *block, tokenizer.sep_token_id]})
    return examples


def pad(sequences, value):
    out = torch.full((len(sequences), max(len(s) for s in sequences)), value, dtype=torch.long)
    for i, s in enumerate(sequences):
        out[i, :len(s)] = torch.as_tensor(s, dtype=torch.long)
    return out


def collate(examples, pad_token_id):
    """Pad a list of examples (dicts with input_ids, or bare id lists) into a batch of tensors."""
    if not examples:
        raise ValueError("cannot make a batch from zero examples")
    examples = [e if isinstance(e, dict) else {"input_ids": e} for e in examples]
    for key in ("token_type_ids", "next_sentence_label"):
        if len({key in e for e in examples}) > 1:
            raise ValueError(f"some examples of the batch have {key!r} and others do not: mix kinds of examples "
                             "in separate batches")
    ids = [list(e["input_ids"]) for e in examples]
    batch = {"input_ids": pad(ids, pad_token_id), "attention_mask": pad([[1] * len(x) for x in ids], 0)}
    if "token_type_ids" in examples[0]:
        batch["token_type_ids"] = pad([e["token_type_ids"] for e in examples], 0)
    if "next_sentence_label" in examples[0]:
        batch["next_sentence_label"] = torch.tensor([e["next_sentence_label"] for e in examples])
    return batch


class CausalLMCollator:
    """Pads a batch for next-token prediction. labels = input_ids with -100 on padding, NOT shifted:
    BertForCausalLM shifts them. An example may bring its own labels (e.g. -100 on a prompt)."""

    def __init__(self, tokenizer):
        self.pad_token_id = tokenizer.pad_token_id

    def __call__(self, examples):
        batch = collate(examples, self.pad_token_id)
        labels = [e.get("labels", e["input_ids"]) if isinstance(e, dict) else e for e in examples]
        if any(len(x) != n for x, n in zip(labels, batch["attention_mask"].sum(1).tolist())):
            raise ValueError("an example's labels must be as long as its input_ids (use -100 for no target)")
        batch["labels"] = pad([list(x) for x in labels], IGNORE_INDEX)  # padding: -100, never a target
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
        if not 0 < mlm_probability <= 1:
            raise ValueError(f"mlm_probability must be in (0, 1], got {mlm_probability}")
        if min(mask_replace_prob, random_replace_prob) < 0 or mask_replace_prob + random_replace_prob > 1:
            raise ValueError(f"mask_replace_prob ({mask_replace_prob}) + random_replace_prob ({random_replace_prob}) "
                             "must be shares between 0 and 1 that sum to at most 1; the rest is kept unchanged")
        if tokenizer.mask_token_id is None:
            raise ValueError("the tokenizer has no [MASK] token")
        self.mlm_probability, self.mask_replace_prob, self.random_replace_prob = \
            mlm_probability, mask_replace_prob, random_replace_prob
        self.whole_word_mask = whole_word_mask
        self.pad_token_id, self.mask_token_id = tokenizer.pad_token_id, tokenizer.mask_token_id
        vocab = len(tokenizer)
        self.special = torch.zeros(vocab, dtype=torch.bool)
        self.special[torch.tensor(tokenizer.all_special_ids)] = True
        self.ordinary_ids = (~self.special).nonzero().flatten()  # what a random replacement may be
        tokens = tokenizer.convert_ids_to_tokens(list(range(vocab)))
        self.continues_word = torch.tensor([t.startswith("##") for t in tokens])
        self.generator = torch.Generator().manual_seed(seed if seed is not None else random.randrange(2 ** 63))

    def __call__(self, examples):
        batch = collate(examples, self.pad_token_id)
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
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    return {"input_ids": [cls, *a, sep, *b, sep], "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
            "next_sentence_label": label, "source": source}


def make_pairs(documents, tokenizer, max_length, short_seq_prob, seed, choose_b):
    """The chunking loop of Google's create_pretraining_data.py, shared by NSP and SOP.

    Sentences of a document are gathered into a chunk until it reaches a target length (sometimes
    shorter, short_seq_prob, so the model also sees short inputs); the chunk is cut at a random
    sentence boundary into A and the rest. choose_b decides what B is and returns
    (a, b, label, b_source, sentences_to_put_back).
    """
    check_documents(documents)
    if max_length < 5:
        raise ValueError(f"max_length={max_length} cannot hold [CLS] A [SEP] B [SEP] with a token in each segment; "
                         "use at least 5 (BERT used 128 and 512)")
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
    check_documents(documents)
    if negatives not in ("random", "hard"):
        raise ValueError(f"negatives must be 'random' or 'hard', got {negatives!r}")
    if not 0 <= nsp_probability <= 1:
        raise ValueError(f"nsp_probability must be in [0, 1], got {nsp_probability}")
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
    if not 0 <= swap_probability <= 1:
        raise ValueError(f"swap_probability must be in [0, 1], got {swap_probability}")

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
