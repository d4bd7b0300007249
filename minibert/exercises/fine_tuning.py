"""Exercises of notebook 10, fine-tuning: label subsets and frozen encoders."""

import torch

from .framework import exercise, judge_answer

EX = "10"


def subset_counts_hint(counts, expected, fraction):
    """Why the examples per class, counts, are not the expected ones: a class missed, the fraction taken of the
    whole set instead of each class, or else."""
    if 0 in counts:
        return (f"with fraction={fraction} class {counts.index(0)} has no example: a plain random draw of a tiny "
                "subset can miss a class; draw within each class, at least one each")
    if sum(counts) == sum(expected) or abs(sum(counts) - round(fraction * 100)) <= 3:
        return (f"with fraction={fraction} you took {counts} per class; take the fraction of EACH class "
                f"({expected}), so that the subset keeps the classes' proportions")
    return f"with fraction={fraction} expected {expected} examples per class, got {counts}"


@exercise(EX, 1, "a stratified subset of the labels")
def check_stratified_subset(stratified_subset):
    """stratified_subset(labels, fraction, generator) -> indices: about `fraction` of each class, at least
    one of each, no index twice, drawn at random."""
    order = torch.randperm(100, generator=torch.Generator().manual_seed(3))
    labels = torch.tensor([0] * 50 + [1] * 30 + [2] * 20)[order]
    for fraction in (0.01, 0.1, 0.5, 1.0):
        got = stratified_subset(labels.clone(), fraction, torch.Generator().manual_seed(0))
        if isinstance(got, torch.Tensor) and got.dtype == torch.bool:
            return "that is a mask; return the indices of the chosen examples (mask.nonzero().flatten())"
        got = torch.as_tensor(got).flatten().long()
        if len(got) and (got.min() < 0 or got.max() >= len(labels)):
            return "an index is out of range: return positions in `labels`, not labels"
        if len(got.unique()) != len(got):
            return "an example is chosen twice: draw without replacement (torch.randperm, not torch.randint)"
        expected = [max(1, round(fraction * n)) for n in (50, 30, 20)]
        hint = judge_answer(torch.bincount(labels[got], minlength=3).tolist(), expected,
                            fallback=lambda counts: subset_counts_hint(counts, expected, fraction))
        if hint:
            return hint
    a, b = (torch.as_tensor(stratified_subset(labels.clone(), 0.1, torch.Generator().manual_seed(seed)))
            .sort().values for seed in (0, 1))
    if torch.equal(a, b):  # the same subset from two seeds: the generator is not used
        first = torch.cat([(labels == c).nonzero().flatten()[:k] for c, k in ((0, 5), (1, 3), (2, 2))])
        if torch.equal(a, first.sort().values):
            return "you take the first examples of each class; draw them at random with the generator"
        return ("two generators with different seeds gave the same subset: use the generator "
                "(torch.randperm(n, generator=g))")
    return None


@exercise(EX, 2, "freeze the encoder")
def check_freeze_encoder(freeze_encoder):
    """freeze_encoder(model) -> None: the encoder (model.bert) no longer trains; the classifier does."""
    from ..model.config import BertConfig
    from ..model.heads import BertForSequenceClassification
    config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=16, num_labels=3)
    torch.manual_seed(0)
    model = BertForSequenceClassification(config)
    model.train()
    freeze_encoder(model)
    encoder = [p.requires_grad for p in model.bert.parameters()]
    head = [p.requires_grad for p in model.classifier.parameters()]
    if all(encoder) and all(head):
        if not model.training:
            return ("model.eval() only turns dropout off; every weight still trains. Set requires_grad = False "
                    "on the encoder's parameters")
        return "every parameter still trains: set requires_grad = False on model.bert's parameters"
    if not any(head):
        return "the classifier is frozen too: then nothing learns. Freeze model.bert only"
    if any(encoder):
        still = [n for n, p in model.bert.named_parameters() if p.requires_grad]
        return f"part of the encoder still trains ({still[0]}, ...): freeze every parameter of model.bert"
    ids = torch.randint(5, 50, (4, 6), generator=torch.Generator().manual_seed(1))
    loss = model(ids, labels=torch.tensor([0, 1, 2, 0])).loss
    loss.backward()
    if any(p.grad is not None for p in model.bert.parameters()):
        return "the encoder still gets gradients"
    return None
