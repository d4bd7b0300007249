"""Notebook 10's fine-tuning helpers: the tasks are what they claim, the loop learns, runs are cached whole."""

import os
import random

import pytest
import torch
from helpers import word_tokenizer

import minibert
from minibert.training import finetune
from minibert.model.scoring import pseudo_log_likelihoods

DOCS = [[f"sentence {d} {i} of document {d} has quite a few words in it" for i in range(6)] for d in range(5)]


def test_corrupted_sentences_pair_every_sentence_with_a_copy_changed_in_one_way():
    pairs = finetune.minimal_pairs(DOCS, seed=1)
    task = finetune.corrupted_sentences(DOCS, seed=1)
    assert len(task) == 2 * len(pairs) == 2 * sum(len(d) for d in DOCS)
    assert [y for _, y, _ in task] == [0, 1] * len(pairs)  # real, then its corrupted copy
    assert {f for _, _, f in task} == {0, 1}
    for (real, corrupted, kind, fold), d in zip(pairs, [d for d, doc in enumerate(DOCS) for _ in doc]):
        a, b = real.split(), corrupted.split()
        assert real != corrupted and len(a) == len(b) and fold == d % 2  # the fold is the document's parity
        changed = [i for i in range(len(a)) if a[i] != b[i]]
        if kind == "swap":
            assert sorted(a) == sorted(b) and len(changed) == 2
        else:
            assert kind == "replace" and len(changed) == 1
    assert {k for *_, k, _ in pairs} == {"swap", "replace"}


def test_which_document_keeps_the_longest_documents_and_alternates_folds():
    docs = [["a b"] * n for n in (3, 9, 5, 7)]
    task = finetune.which_document(docs, n_documents=2, per_document=4)
    assert [y for _, y, _ in task] == [0] * 4 + [1] * 4  # documents 1 and 3, in corpus order
    assert [f for _, _, f in task] == [0, 1, 0, 1] * 2


def test_a_validation_split_never_reads_the_test_fold_and_keeps_pairs_together():
    task = finetune.corrupted_sentences(DOCS, seed=1)
    train_x, _, test_x, _ = finetune.split(task)
    fit_x, fit_y, val_x, val_y = finetune.split(task, validation=True)
    assert set(fit_x) | set(val_x) == set(train_x) and not set(fit_x) & set(val_x)
    assert not (set(fit_x) | set(val_x)) & set(test_x)  # the test fold is never looked at
    assert val_y.count(0) == val_y.count(1) == len([y for y in fit_y + val_y if y == 0]) // 4
    pairs = {real: corrupted for real, corrupted, _, fold in finetune.minimal_pairs(DOCS, seed=1) if fold == 0}
    assert all((real in val_x) == (corrupted in val_x) for real, corrupted in pairs.items())


@pytest.mark.parametrize("fraction", [0.01, 0.1, 0.5, 1.0])
def test_label_subset_keeps_every_class_in_proportion(fraction):
    labels = torch.tensor([0] * 60 + [1] * 30 + [2] * 10)
    picked = finetune.label_subset(labels, fraction, seed=0)
    assert len(picked.unique()) == len(picked)
    assert torch.bincount(labels[picked], minlength=3).tolist() == [max(1, round(fraction * n)) for n in (60, 30, 10)]
    assert not torch.equal(picked, finetune.label_subset(labels, fraction, seed=1)) or fraction == 1.0


def test_bad_arguments_are_named():
    with pytest.raises(ValueError, match="fraction"):
        finetune.label_subset([0, 1], 0, seed=0)
    with pytest.raises(ValueError, match="one label per text"):
        finetune.fine_tune(None, None, ["a", "b"], [0], steps=3)
    with pytest.raises(ValueError, match="steps"):
        finetune.fine_tune(None, None, ["a"], [0], steps=0)


def toy_task():
    # "fun" sentences are class 1, "hard" ones class 0: a word decides the label
    rng = random.Random(0)
    words = ["deep", "learning", "is"]
    texts = [" ".join(rng.choices(words, k=4) + [w]) for w in ["fun", "hard"] * 40]
    return texts, [int(t.endswith("fun")) for t in texts]


def tiny_classifier(num_labels=2):
    torch.manual_seed(0)
    return minibert.BertForSequenceClassification(minibert.BertConfig(
        vocab_size=10, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        max_position_embeddings=16, num_labels=num_labels))


def test_fine_tune_learns_a_task_a_word_decides():
    texts, labels = toy_task()
    tok, model = word_tokenizer(), tiny_classifier()
    before = (finetune.predict(model, tok, texts) == torch.tensor(labels)).float().mean()
    losses = finetune.fine_tune(model, tok, texts, labels, steps=60, lr=1e-2)
    after = (finetune.predict(model, tok, texts) == torch.tensor(labels)).float().mean()
    assert len(losses) == 60 and max(losses[-5:]) < 0.1 < 0.6 < min(losses[:5])  # from log 2 to near 0
    assert after == 1.0 and before < 0.9
    assert not model.training  # left in eval mode for scoring


def test_run_is_cached_whole_and_reused(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "checkpoint"
    tiny_classifier().save_pretrained(folder)
    texts, labels = toy_task()
    task = [(t, y, i % 2) for i, (t, y) in enumerate(zip(texts, labels))]
    tok = word_tokenizer()
    first = finetune.run(str(folder), task, 1.0, 0, tok, steps=20)
    assert first.dtype == torch.bool and len(first) == 40
    files = [f for f in os.listdir(tmp_path / "cache" / "finetune") if not f.startswith(".")]  # not the lock
    assert len(files) == 1 and files[0].endswith(".pt")  # no temporary file left behind
    class TrainedAgain(Exception):
        pass

    def no_training(*args, **kwargs):
        raise TrainedAgain

    monkeypatch.setattr(finetune, "fine_tune", no_training)
    assert torch.equal(finetune.run(str(folder), task, 1.0, 0, tok, steps=20), first)
    with pytest.raises(TrainedAgain):  # another setting is another run
        finetune.run(str(folder), task, 1.0, 1, tok, steps=20)


def test_a_checkpoint_saved_as_pytorch_model_bin_fine_tunes_too(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    folder = tmp_path / "checkpoint"
    tiny_classifier().save_pretrained(folder)
    state = minibert.BertForSequenceClassification.from_pretrained(folder).state_dict()
    torch.save(state, folder / "pytorch_model.bin")  # the older format, which loading accepts
    os.remove(folder / "model.safetensors")
    texts, labels = toy_task()
    task = [(t, y, i % 2) for i, (t, y) in enumerate(zip(texts, labels))]
    assert len(finetune.run(str(folder), task, 1.0, 0, word_tokenizer(), steps=2)) == 40


def test_pseudo_log_likelihoods_do_not_depend_on_batching():
    tok = word_tokenizer()
    torch.manual_seed(0)
    model = minibert.BertForMaskedLM(minibert.BertConfig(vocab_size=10, hidden_size=16, num_hidden_layers=1,
                                                         num_attention_heads=2, intermediate_size=32,
                                                         max_position_embeddings=16))
    sentences = ["deep learning is fun", "learning is hard", "fun"]
    together = pseudo_log_likelihoods(model, tok, sentences, batch_size=256)  # padded rows of different lengths
    alone = [pseudo_log_likelihoods(model, tok, [s], batch_size=1)[0] for s in sentences]
    assert [n for _, n in together] == [4, 3, 1]
    for (a, n), (b, m) in zip(together, alone):
        assert n == m and a == pytest.approx(b, abs=1e-4) and a < 0
