"""Scores of sentences from a masked LM: the pseudo-log-likelihood (each token masked in turn and
scored). BertForMaskedLM.get_pseudo_perplexity, the CLI's eval and the course's minimal pairs use it."""

import math

import torch

from .losses import IGNORE_INDEX


@torch.no_grad()
def pseudo_log_likelihoods(model, tokenizer, sentences, batch_size=256):
    """For each sentence, (sum of log P(token | the rest), number of tokens) from a masked LM: mask each
    token in turn and score the true one (Salazar et al., 2020). Comparing the sums of two versions of a
    sentence asks the model which it finds more likely, with no training (a minimal pair)."""
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    rows = []  # (sentence index, its token ids, the position masked in this row): one row per scored token
    for i, sentence in enumerate(sentences):
        ids = tokenizer(sentence, truncation=True)["input_ids"]
        rows += [(i, ids, t) for t in range(1, len(ids) - 1)]  # every token but [CLS] and [SEP]
    totals, counts = [0.0] * len(sentences), [0] * len(sentences)
    for start in range(0, len(rows), batch_size):
        chunk = rows[start:start + batch_size]
        width = max(len(ids) for _, ids, _ in chunk)
        input_ids = torch.full((len(chunk), width), tokenizer.pad_token_id)
        attention_mask = torch.zeros(len(chunk), width, dtype=torch.long)
        for r, (_, ids, _) in enumerate(chunk):
            input_ids[r, :len(ids)] = torch.tensor(ids)
            attention_mask[r, :len(ids)] = 1
        positions = torch.tensor([t for _, _, t in chunk])
        targets = input_ids[torch.arange(len(chunk)), positions].clone()
        input_ids[torch.arange(len(chunk)), positions] = tokenizer.mask_token_id
        labels = torch.full_like(input_ids, IGNORE_INDEX)
        labels[torch.arange(len(chunk)), positions] = targets
        # masked_only: the vocabulary projection runs at the one masked position of each row, not at all of them
        out = model(input_ids=input_ids.to(device), attention_mask=attention_mask.to(device), return_dict=True,
                    labels=labels.to(device), masked_only=True)
        scores = out.masked_logits.float().log_softmax(-1)  # (rows, V): one masked position per row, in order
        scores = scores[torch.arange(len(chunk)), targets.to(device)].tolist()
        for (i, _, _), score in zip(chunk, scores):
            totals[i] += score
            counts[i] += 1
    model.train(was_training)
    return list(zip(totals, counts))


def pseudo_perplexity(model, tokenizer, sentences, batch_size=64):
    """Masked-LM pseudo-perplexity: the exponentiated mean negative pseudo-log-likelihood per token of
    the sentences. Lower is better."""
    scores = pseudo_log_likelihoods(model, tokenizer, sentences, batch_size)
    n = sum(count for _, count in scores)
    if not n:
        raise ValueError("pseudo_perplexity needs sentences with at least one token")
    return math.exp(-sum(total for total, _ in scores) / n)
