"""Checks of notebook 06: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import torch
import torch.nn.functional as F
from helpers import assert_hints, stub

from minibert.exercises import check_pretraining_loss, check_train_step


def mlm(logits, labels, **kwargs):
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), **kwargs)


def test_pretraining_loss():
    right = lambda p, s, labels, nsp: mlm(p, labels) + F.cross_entropy(s, nsp)  # noqa: E731
    assert check_pretraining_loss(right)
    assert check_pretraining_loss(stub).status == "not done"
    hints = {
        "masked-LM loss alone": lambda p, s, labels, nsp: mlm(p, labels),
        "next-sentence loss alone": lambda p, s, labels, nsp: F.cross_entropy(s, nsp),
        "averaged them": lambda p, s, labels, nsp: (mlm(p, labels) + F.cross_entropy(s, nsp)) / 2,
        "NSP labels are swapped": lambda p, s, labels, nsp: mlm(p, labels) + F.cross_entropy(s, 1 - nsp),
        "-100 is not ignored": lambda p, s, labels, nsp: mlm(p, labels.clamp(min=0)) + F.cross_entropy(s, nsp),
        "not the sum": lambda p, s, labels, nsp: mlm(p, labels, reduction="sum") + F.cross_entropy(s, nsp),
        "one value": lambda p, s, labels, nsp: F.cross_entropy(s, nsp, reduction="none"),
    }
    assert_hints(check_pretraining_loss, hints)
    assert_hints(check_pretraining_loss, {"-100 is not ignored": lambda p, s, labels, nsp: mlm(p, labels.clamp(min=0))})


def make_train_step(backward=True, step=True, zero_grad=True, clip=None, train=True, item=True,
                    batch_keys=None, loss_after_step=False):
    """One training step, right by default; each flag leaves out or changes one part of it."""
    def train_step(model, batch, optimizer):
        if train:
            model.train()
        inputs = {k: batch[k] for k in batch_keys} if batch_keys else batch
        loss = model(**inputs).loss
        if backward:
            loss.backward()
        if clip:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        if step:
            optimizer.step()
        if zero_grad:
            optimizer.zero_grad()
        if loss_after_step:
            with torch.no_grad():
                loss = model(**inputs).loss
        return loss.item() if item else loss
    return train_step


def test_train_step():
    assert check_train_step(make_train_step())
    assert check_train_step(make_train_step(clip=1.0))  # clipping is allowed, at any norm
    assert check_train_step(make_train_step(clip=0.01))

    def zero_grad_first(model, batch, optimizer):
        model.train()
        optimizer.zero_grad()
        loss = model(**batch, masked_only=True).loss
        loss.backward()
        optimizer.step()
        return float(loss.detach())
    assert check_train_step(zero_grad_first)
    assert check_train_step(stub).status == "not done"
    inputs = ["input_ids", "attention_mask", "token_type_ids"]
    hints = {
        "the parameters did not change": make_train_step(step=False),
        "call loss.backward()": make_train_step(backward=False),
        "gradients of both batches": make_train_step(zero_grad=False),
        "zero_grad()": make_train_step(zero_grad=False, clip=0.5),
        "return loss.item()": make_train_step(item=False),
        "call model.train()": make_train_step(train=False),
        "the model returned no loss": make_train_step(batch_keys=inputs),
        "next_sentence_label was not passed": make_train_step(batch_keys=inputs + ["labels"]),
        "labels was not passed": make_train_step(batch_keys=inputs + ["next_sentence_label"]),
        "the loss after the update": make_train_step(loss_after_step=True),
    }
    assert_hints(check_train_step, hints)


def test_the_check_agrees_with_the_model():
    """The loss the check expects is the one BertForPreTraining computes."""
    import minibert
    torch.manual_seed(0)
    config = minibert.BertConfig(vocab_size=40, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                                 intermediate_size=32)
    model = minibert.BertForPreTraining(config)
    ids = torch.randint(5, 40, (2, 7))
    labels = torch.full_like(ids, -100)
    labels[0, 2], labels[1, 5] = 9, 11
    nsp = torch.tensor([0, 1])
    out = model(ids, labels=labels, next_sentence_label=nsp)
    by_hand = mlm(out.prediction_logits, labels) + F.cross_entropy(out.seq_relationship_logits, nsp)
    assert torch.allclose(out.loss, by_hand)
