"""Checks of notebook 06: right answers pass, unfinished stubs are "not done", common mistakes get their hint."""

import torch
import torch.nn.functional as F
from conftest import assert_hints, stub

from minibert.exercises import check_gather_masked, check_pretraining_loss


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


def test_gather_masked():
    right = lambda h, ids, labels: (h[labels != -100], labels[labels != -100])  # noqa: E731
    assert check_gather_masked(right)
    assert check_gather_masked(stub).status == "not done"
    hints = {
        "only the [MASK] positions": lambda h, ids, labels: (h[ids == 4], labels[ids == 4]),
        "inverted": lambda h, ids, labels: (h[labels == -100], labels[labels == -100]),
        "boolean mask": lambda h, ids, labels: (h * (labels != -100)[..., None], labels),
        "labels must be": lambda h, ids, labels: (h[labels != -100], labels),
        "return two things": lambda h, ids, labels: h[labels != -100],
    }
    assert_hints(check_gather_masked, hints)


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
