"""Linear probes: how much of a property can a straight line read off a model's frozen vectors?

    x_train = sentence_features(model, tokenizer, train_texts)   # (N, hidden), the model is not trained
    probe = train_probe(x_train, y_train)                        # multinomial logistic regression
    probe.accuracy(sentence_features(model, tokenizer, test_texts), y_test)

A probe keeps the model frozen, so the score measures what pretraining put into the vectors, not
what fine-tuning could add. Read it beside two controls: the same probe on a randomly initialised
model of the same shape, and on bag-of-words counts (no network at all).
"""

import torch
import torch.nn.functional as F
from torch import nn


def mean_pool(hidden_states, attention_mask):
    """(B, T, C) token vectors -> (B, C): the mean over each row's real tokens, padding left out."""
    mask = attention_mask[..., None].to(hidden_states.dtype)  # (B, T, 1)
    return (hidden_states * mask).sum(1) / mask.sum(1).clamp_min(1)


@torch.no_grad()
def sentence_features(model, tokenizer, texts, pooling="mean", layer=-1, batch_size=64, max_length=64):
    """One vector per text from a frozen model: the mean of its token vectors ("mean") or the [CLS]
    vector ("cls") of hidden layer `layer` (-1: the last; 0: the embeddings). A text may also be a
    pair (a, b), encoded as [CLS] a [SEP] b [SEP] with its segment ids."""
    if pooling not in ("mean", "cls"):
        raise ValueError(f"pooling must be 'mean' or 'cls', got {pooling!r}")
    encoder = getattr(model, "bert", model)  # a model with a head, or a bare BertModel
    was_training = encoder.training
    encoder.eval()
    out = []
    for i in range(0, len(texts), batch_size):
        chunk = list(texts[i:i + batch_size])
        segments = [list(x) for x in zip(*chunk)] if isinstance(chunk[0], (tuple, list)) else [chunk]
        enc = tokenizer(*segments, return_tensors="pt", padding=True, truncation=True, max_length=max_length,
                        return_token_type_ids=True)
        keep = ("input_ids", "attention_mask", "token_type_ids")
        enc = {k: v.to(encoder.device) for k, v in enc.items() if k in keep}
        hidden = encoder(**enc, output_hidden_states=True).hidden_states[layer]  # (B, T, C)
        out.append(mean_pool(hidden, enc["attention_mask"]) if pooling == "mean" else hidden[:, 0])
    encoder.train(was_training)
    return torch.cat(out).float().cpu()


def bag_of_words(tokenizer, texts, max_length=64):
    """(N, vocab) token counts, special tokens left out: the no-network baseline for a probe."""
    enc = tokenizer(list(texts), add_special_tokens=False, truncation=True, max_length=max_length)["input_ids"]
    counts = torch.zeros(len(texts), len(tokenizer))
    for row, ids in enumerate(enc):
        counts[row] += torch.bincount(torch.tensor(ids, dtype=torch.long), minlength=len(tokenizer)).float()
    return counts


class LinearProbe(nn.Module):
    """Standardise the features (with the training set's mean and spread), then one linear layer."""

    def __init__(self, mean, std, num_classes):
        super().__init__()
        self.register_buffer("mean", mean)
        self.register_buffer("std", std)
        self.linear = nn.Linear(len(mean), num_classes)

    def forward(self, features):
        return self.linear((features - self.mean) / self.std)  # (N, classes) logits

    @torch.no_grad()
    def predict(self, features):
        return self(features).argmax(-1)

    def accuracy(self, features, labels):
        return (self.predict(features) == torch.as_tensor(labels)).float().mean().item()


def train_probe(features, labels, weight_decay=1e-2, max_iter=200):
    """Fit a LinearProbe by L-BFGS on the full training set: cross-entropy plus weight_decay times the
    squared weights (the L2 penalty keeps it from memorising when there are more features than
    examples). Deterministic: no sampling, no dropout."""
    features, labels = features.float(), torch.as_tensor(labels, dtype=torch.long)
    if len(features) != len(labels):
        raise ValueError(f"{len(features)} feature rows but {len(labels)} labels")
    mean, std = features.mean(0), features.std(0).clamp_min(1e-6)
    probe = LinearProbe(mean, std, int(labels.max()) + 1)
    nn.init.zeros_(probe.linear.weight)
    nn.init.zeros_(probe.linear.bias)
    optimizer = torch.optim.LBFGS(probe.linear.parameters(), lr=1.0, max_iter=max_iter, line_search_fn="strong_wolfe")

    def closure():
        optimizer.zero_grad()
        loss = F.cross_entropy(probe(features), labels) + weight_decay * probe.linear.weight.pow(2).sum()
        loss.backward()
        return loss

    optimizer.step(closure)
    return probe.eval()
