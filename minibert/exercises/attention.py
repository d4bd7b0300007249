"""Exercises and quiz of notebook 07, attention: entropy, the most attended token, and what a head looks at."""

import math

import torch

from . import Question, run_check

EX = "07"


def _qk():
    g = torch.Generator().manual_seed(0)
    return torch.randn(2, 5, 4, generator=g), torch.randn(2, 5, 4, generator=g)  # (heads, T, head size)


def _weights(q, k, causal):
    scores = q @ k.transpose(-2, -1) / math.sqrt(q.shape[-1])
    if causal:
        T = q.shape[-2]
        scores = scores.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    return scores.softmax(-1)


def check_attention_entropy(attention_entropy):
    """attention_entropy(weights) -> the entropy (nats) of every query row; weights (heads, T, T) -> (heads, T)."""
    def judge():
        q, k = _qk()
        for causal in (False, True):
            w = _weights(q, k, causal)
            got = attention_entropy(w.clone())
            expected = -(torch.special.xlogy(w, w)).sum(-1)
            if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
                return (f"return one entropy per head and query, shape (heads, T) = {tuple(expected.shape)}: sum "
                        "over the keys only")
            if torch.isnan(got).any():
                return ("you got NaN: a causal row has weights that are exactly 0 and 0 * log(0) is NaN in floating "
                        "point; it should count as 0 (torch.special.xlogy(p, p), or log(p.clamp_min(1e-12)))")
            if torch.allclose(got, expected, atol=1e-4):
                continue
            if torch.allclose(got, -expected, atol=1e-4):
                return "entropy is MINUS the sum of p log p: it is never negative"
            if torch.allclose(got, expected / math.log(2), atol=1e-4):
                return "use the natural log (nats), as the notebook does; log2 gives bits"
            over_queries = -(torch.special.xlogy(w, w)).sum(-2)
            if torch.allclose(got, over_queries, atol=1e-4):
                return ("wrong axis: a row (one query, the last axis) is a probability distribution over the keys; "
                        "sum over the last axis")
            return "for each row compute -sum(p * log p) over the keys (the last axis)"
        return None
    return run_check(f"{EX}.1 attention entropy", judge)


def check_most_attended(most_attended):
    """most_attended(weights, tokens) -> for each query, the token it gives the most weight."""
    def judge():
        w = torch.tensor([[0.1, 0.7, 0.1, 0.1], [0.6, 0.2, 0.1, 0.1], [0.2, 0.2, 0.5, 0.1], [0.1, 0.1, 0.7, 0.1]])
        tokens = ["[CLS]", "the", "river", "[SEP]"]
        got = most_attended(w.clone(), list(tokens))
        expected = ["the", "[CLS]", "river", "river"]
        if isinstance(got, torch.Tensor):
            got = got.tolist()
        if list(got) == expected:
            return None
        if list(got) == [1, 0, 2, 2]:
            return "those are the positions; return the tokens at those positions"
        if list(got) == [tokens[i] for i in w.argmax(0).tolist()]:
            return "wrong axis: for each query (row) take the argmax over the keys (the last axis)"
        if list(got) == [tokens[i] for i in w.argmin(-1).tolist()]:
            return "the most attended key has the LARGEST weight (argmax)"
        return f"expected {expected}, got {got}"
    return run_check(f"{EX}.2 the most attended token", judge)


def _padded_batch():
    """Attention of one head over a batch of 2 sequences, the second padded: (B, T, T), mask (B, T)."""
    g = torch.Generator().manual_seed(3)
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    scores = torch.randn(2, 5, 5, generator=g) * 2
    scores = scores.masked_fill(mask[:, None, :] == 0, float("-inf"))  # no query looks at padding
    return scores.softmax(-1), mask


def check_attention_to(attention_to):
    """attention_to(weights, key_is, attention_mask) -> the average weight a real query puts on the chosen keys."""
    def judge():
        w, mask = _padded_batch()
        key_is = torch.tensor([[1, 0, 0, 0, 1], [1, 0, 1, 0, 0]], dtype=torch.bool)  # e.g. [CLS] and [SEP]
        got = attention_to(w.clone(), key_is.clone(), mask.clone())
        got = float(got) if isinstance(got, torch.Tensor) and got.numel() == 1 else got
        if not isinstance(got, float):
            return "return one number: the average over the real queries of the weight on the chosen keys"
        per_query = (w * key_is[:, None, :]).sum(-1)  # (B, T): each query's weight on the chosen keys
        expected = per_query[mask.bool()].mean().item()
        if abs(got - expected) < 1e-5:
            return None
        if abs(got - per_query.mean().item()) < 1e-5:
            return ("the padding queries are averaged in: keep the rows where attention_mask is 1 (a [PAD] query's "
                    "row is not a real token's attention)")
        mean_keys = ((w * key_is[:, None, :]).sum(-1) / key_is.sum(-1, keepdim=True))[mask.bool()].mean().item()
        if abs(got - mean_keys) < 1e-5:
            return "sum the weights of the chosen keys (their total share), do not average them"
        wrong_axis = (w * key_is[:, :, None]).sum(-2)[mask.bool()].mean().item()
        if abs(got - wrong_axis) < 1e-5:
            return "keys are the LAST axis of the weights (columns); queries are the rows"
        return f"expected {expected:.4f}: for each real query, sum its weights on the chosen keys; then average"
    return run_check(f"{EX}.3 attention to a kind of token", judge)


QUIZ = {EX: {
    "q1": Question(
        "In out.attentions[layer][0, head], what does row i hold?",
        {"A": "how much query token i takes from each key token; the row sums to 1",
         "B": "how much every token takes from token i", "C": "the gradient of token i",
         "D": "the embedding of token i"}, "A",
        "rows are queries, columns are keys; the softmax runs over each row."),
    "q2": Question(
        "A head of the causal LM has attention weights of exactly 0 above the diagonal. Why?",
        {"A": "the model learned never to look ahead", "B": "the mask puts -inf on future keys before the "
         "softmax, so they get weight 0 by construction", "C": "rounding", "D": "the sentence was padded"}, "B",
        "it is not learned: a decoder cannot see the future, or next-token prediction would be trivial."),
    "q3": Question(
        "A query row over 10 keys has entropy ln 10 = 2.30 nats. What does that mean?",
        {"A": "it attends to one key only", "B": "it spreads its attention evenly over the 10 keys",
         "C": "the head is broken", "D": "it attends to [SEP]"}, "B",
        "entropy is 0 for a one-hot row and ln(n) for a uniform row over n keys: the two ends of the scale."),
    "q4": Question(
        "The word 'bank' has the same input embedding in every sentence. What changes from sentence to sentence?",
        {"A": "nothing: BERT's vectors are static", "B": "its contextual vector (the hidden state at its "
         "position), which mixes in the other tokens through attention", "C": "its token id",
         "D": "the vocabulary"}, "B",
        "the static embedding is a lookup; every layer after it mixes context into the vector."),
    "q5": Question(
        "A head puts most of each token's attention on the next token, and it also scores far above uniform on "
        "'the other pieces of the same word'. What is the careful reading?",
        {"A": "the head has learned to assemble words from their WordPiece pieces",
         "B": "the second share may follow from the first: the token after a word's first piece is another piece "
              "of that word; measure same-word keys that are not neighbours before calling it a second skill",
         "C": "the tokenizer splits too many words", "D": "the head attends to [SEP]"}, "B",
        "categories of keys overlap, so a share far above uniform is a lead, not a finding; attention weights say "
        "where a head reads from, not why.",
        {"A": "reading the next token alone already gives a high same-word share, so the number cannot tell the two "
              "apart."}),
}}
