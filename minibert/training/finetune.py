"""Fine-tuning: does pretraining help a task that has few labels? (notebook 10)

    task = which_document(heldout_docs)                     # [(text, label, fold)], built offline
    model = BertForSequenceClassification.from_pretrained("checkpoints/bert-mlm-nsp", num_labels=7)
    train_x, train_y, test_x, test_y = split(task)          # fold 0 trains, fold 1 tests
    fine_tune(model, tokenizer, train_x, train_y, steps=80)  # every weight trains, the new head too
    predict(model, tokenizer, test_x)                       # one class per text

The tasks are built from held-out documents, which no pretrained model has seen. Every example has a
fold (0 or 1): the document's parity for the real-or-corrupted task, so that a sentence and its corrupted
copy are never on both sides, and the sentence's parity within its document for the which-document task.
"""

import os
import random

import torch

from ..cache import cached, fingerprint
from ..model.hub import WEIGHT_FILES
from .metrics import bootstrap
from .trainer import TRAINING_CODE

# ---- tasks ----
REAL, CORRUPTED = 0, 1


def corrupt(words, rng, vocabulary):
    """A sentence made wrong in one of two ways: two of its words swapped (the same words, in an order
    English does not allow) or one word replaced by a random word of the corpus."""
    words = list(words)
    if rng.random() < 0.5:
        i, j = rng.sample(range(len(words)), 2)
        while words[i] == words[j]:  # swapping two equal words would change nothing
            i, j = rng.sample(range(len(words)), 2)
        words[i], words[j] = words[j], words[i]
        return words, "swap"
    i = rng.randrange(len(words))
    replacement = words[i]
    while replacement == words[i]:
        replacement = rng.choice(vocabulary)
    words[i] = replacement
    return words, "replace"


def minimal_pairs(documents, seed=0, min_words=6, max_words=30):
    """Each sentence of 6 to 30 words beside a corrupted copy: [(real, corrupted, kind, fold)], kind
    being "swap" or "replace" and the fold the document's parity."""
    rng = random.Random(seed)
    vocabulary = sorted({w for doc in documents for s in doc for w in s.split()})
    pairs = []
    for d, doc in enumerate(documents):
        for sentence in doc:
            words = sentence.split()
            if min_words <= len(words) <= max_words and len(set(words)) >= 2:
                corrupted, kind = corrupt(words, rng, vocabulary)
                pairs.append((sentence, " ".join(corrupted), kind, d % 2))
    return pairs


def corrupted_sentences(documents, seed=0):
    """Real (label 0) or corrupted (label 1)? Every sentence of minimal_pairs twice, as written and
    corrupted: a small grammaticality task in the spirit of CoLA. Both versions hold the same words (or
    all but one), so word counts alone cannot solve it. Returns [(text, label, fold)]."""
    return [x for real, corrupted, _, fold in minimal_pairs(documents, seed)
            for x in ((real, REAL, fold), (corrupted, CORRUPTED, fold))]


def which_document(documents, n_documents=7, per_document=80):
    """Which of the longest documents a sentence comes from (a topic task). Returns [(text, label, fold)]
    with the even sentences of each document in fold 0 and the odd ones in fold 1."""
    longest = sorted(range(len(documents)), key=lambda d: -len(documents[d]))[:n_documents]
    return [(s, label, i % 2) for label, d in enumerate(sorted(longest)) for i, s in enumerate(documents[d][:per_document])]


def label_subset(labels, fraction, seed):
    """Indices of `fraction` of the examples, drawn class by class in proportion (at least one of each
    class), so that a tiny subset never holds one class only. fraction=1 keeps them all."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], the share of the training labels to keep; got {fraction!r}")
    g = torch.Generator().manual_seed(seed)
    labels = torch.as_tensor(labels)
    picks = []
    for c in labels.unique():
        members = (labels == c).nonzero().flatten()
        keep = max(1, round(fraction * len(members)))
        picks.append(members[torch.randperm(len(members), generator=g)[:keep]])
    return torch.cat(picks).sort().values


# ---- training and scoring ----
def encode(tokenizer, texts, max_length):
    enc = tokenizer(list(texts), return_tensors="pt", padding=True, truncation=True, max_length=max_length)
    return {k: enc[k] for k in ("input_ids", "attention_mask")}


def fine_tune(model, tokenizer, texts, labels, steps, lr=3e-4, batch_size=32, weight_decay=0.01, seed=0,
              max_length=64):
    """Train every weight of a sequence classifier on (texts, labels) for `steps` steps of AdamW, the
    learning rate warming up over the first 10% and then decaying linearly to 0. Returns the losses."""
    if len(texts) != len(labels) or not len(texts):
        raise ValueError(f"fine_tune needs one label per text and at least one text; got {len(texts)} texts "
                         f"and {len(labels)} labels")
    if not isinstance(steps, int) or steps < 1:
        raise ValueError(f"steps must be a positive whole number, got {steps!r}")
    g = torch.Generator().manual_seed(seed)
    labels = torch.as_tensor(labels)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    warmup = max(1, steps // 10)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min((s + 1) / warmup, max(0.0, (steps - s) / (steps - warmup + 1))))
    model.train()
    losses, order = [], torch.empty(0, dtype=torch.long)
    for _ in range(steps):
        if len(order) < min(batch_size, len(labels)):  # a fresh shuffle when the epoch runs out
            order = torch.randperm(len(labels), generator=g)
        batch, order = order[:batch_size], order[batch_size:]
        loss = model(**encode(tokenizer, [texts[i] for i in batch], max_length), labels=labels[batch], return_dict=True).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(loss.item())
    model.eval()
    return losses


@torch.no_grad()
def predict(model, tokenizer, texts, batch_size=128, max_length=64):
    """The predicted class of every text."""
    model.eval()
    return torch.cat([model(**encode(tokenizer, texts[i:i + batch_size], max_length), return_dict=True).logits.argmax(-1)
                      for i in range(0, len(texts), batch_size)])


def accuracy_interval(right):
    """Accuracy (the share of `right` that is true) and its 95% bootstrap interval."""
    return bootstrap(torch.as_tensor(right, dtype=torch.float64))


def mean_interval(values):
    """The mean over seeds and its 95% interval (±2 standard errors of the mean; wide with few seeds)."""
    values = torch.as_tensor(values, dtype=torch.float64)
    half = 2 * values.std().item() / len(values) ** 0.5 if len(values) > 1 else float("nan")
    return values.mean().item(), values.mean().item() - half, values.mean().item() + half


def frozen_probe_accuracy(model, tokenizer, train_texts, train_labels, test_texts, test_labels):
    """The comparison of notebook 08: a logistic regression on the model's frozen mean-pooled vectors."""
    from .probe import sentence_features, train_probe
    probe = train_probe(sentence_features(model, tokenizer, train_texts), torch.as_tensor(train_labels))
    return probe.predict(sentence_features(model, tokenizer, test_texts)) == torch.as_tensor(test_labels)


def split(task, validation=False):
    """(train texts, train labels, test texts, test labels): fold 0 trains, fold 1 tests. With
    validation=True the test fold is left untouched: the training fold is cut in two instead, the last
    quarter of each class's examples (in task order) held back to score on. Settings such as the
    learning rate are chosen that way; the test fold scores the chosen setting once, at the end. In task
    order a real sentence and its corrupted copy have the same rank within their classes, so a pair
    always stays on one side."""
    if validation:
        task = [(x, y, fold) for x, y, fold in task if fold == 0]
        total = {y: sum(1 for _, c, _ in task if c == y) for _, y, _ in task}
        seen = dict.fromkeys(total, 0)
        held_back = []
        for x, y, _ in task:
            held_back.append((x, y, int(seen[y] >= total[y] - total[y] // 4)))
            seen[y] += 1
        task = held_back
    train = [(x, y) for x, y, fold in task if fold == 0]
    test = [(x, y) for x, y, fold in task if fold == 1]
    return [x for x, _ in train], [y for _, y in train], [x for x, _ in test], [y for _, y in test]


def run(checkpoint, task, fraction, seed, tokenizer, pretrained=True, steps=80, lr=2e-3, validation=False):
    """Fine-tune a BertForSequenceClassification on `fraction` of the task's training fold and test it
    on the other fold. It starts from the checkpoint's weights, or (pretrained=False) from random
    weights of the same shape. validation=True trains and scores inside the training fold instead
    (split(task, validation=True)), to choose a setting without looking at the test fold. Returns a
    bool tensor: each scored example right or wrong. The result is cached (MINIBERT_CACHE), so running
    the notebook again takes seconds."""
    from ..model.heads import BertForSequenceClassification
    train_x, train_y, test_x, test_y = split(task, validation)
    key = cache_key(checkpoint, task, fraction, seed, pretrained, steps, lr, *(["validation"] if validation else []))

    def compute():
        keep = label_subset(train_y, fraction, seed).tolist()
        torch.manual_seed(seed)
        model = BertForSequenceClassification.from_pretrained(checkpoint, num_labels=max(train_y) + 1)
        if not pretrained:
            model = BertForSequenceClassification(model.config)  # same shape, random weights
        fine_tune(model, tokenizer, [train_x[i] for i in keep], [train_y[i] for i in keep], steps, lr=lr, seed=seed)
        return (predict(model, tokenizer, test_x) == torch.tensor(test_y)).int().tolist()
    return torch.tensor(cached(key, key, compute, folder="finetune"), dtype=torch.bool)


def cache_key(checkpoint, task, *settings):
    """A fingerprint of all that decides a run: the checkpoint's weights, the task, the settings and the
    code that trains (this file and the model's), so that a changed line never reads an old result."""
    weights = next((os.path.join(checkpoint, w) for w in WEIGHT_FILES if os.path.isfile(os.path.join(checkpoint, w))),
                   os.path.join(checkpoint, WEIGHT_FILES[0]))  # safetensors or pytorch_model.bin, as loading reads
    return fingerprint(task, settings, code=("training/finetune.py", *TRAINING_CODE), files=[weights])
