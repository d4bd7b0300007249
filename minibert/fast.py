"""Speed tricks, kept out of the model's reading path. Each gives the same numbers as the plain PyTorch
line it replaces (tests/test_fast_paths.py checks it against that line).

cross_entropy_in_chunks: the language-model loss over a large vocabulary, for bfloat16 logits.
    F.cross_entropy(logits.float(), labels) makes a float32 copy of the (N, V) logits, a float32 table
    of log-probabilities and, in the backward pass, a zero-filled float32 gradient table and a cast back
    to bfloat16: several passes over tens of megabytes for a causal LM, which sees every position. Here
    the same float32 arithmetic runs a few rows at a time, in the processor's cache, and only the
    log-sum-exp of each row is kept for the backward pass.
"""

import torch

ROWS_PER_CHUNK = 32  # 32 rows of an 8,000-token vocabulary in float32: 1 MB, within a core's cache


class ChunkedCrossEntropy(torch.autograd.Function):
    """Mean cross-entropy of (N, V) logits against (N,) labels, ignore_index left out; computed in
    float32 whatever the logits' dtype, the gradient returned in the logits' dtype."""

    @staticmethod
    def forward(ctx, logits, labels, ignore_index):
        keep = labels != ignore_index
        count = keep.sum().clamp(min=1)
        lse = torch.empty(logits.shape[0], dtype=torch.float32, device=logits.device)
        for start in range(0, logits.shape[0], ROWS_PER_CHUNK):
            lse[start:start + ROWS_PER_CHUNK] = torch.logsumexp(logits[start:start + ROWS_PER_CHUNK].float(), dim=-1)
        targets = torch.where(keep, labels, 0)
        target_logits = logits.gather(1, targets[:, None]).squeeze(1).float()
        ctx.save_for_backward(logits, targets, keep, lse, count)
        return ((lse - target_logits) * keep).sum() / count

    @staticmethod
    def backward(ctx, grad_output):
        logits, targets, keep, lse, count = ctx.saved_tensors
        scale = keep * (grad_output / count)  # (N,): 0 for ignored rows
        grad = torch.empty_like(logits)
        for start in range(0, logits.shape[0], ROWS_PER_CHUNK):
            rows = slice(start, start + ROWS_PER_CHUNK)
            p = (logits[rows].float() - lse[rows, None]).exp_()  # softmax of the rows
            p[torch.arange(p.shape[0], device=p.device), targets[rows]] -= 1  # minus the one-hot target
            grad[rows] = p.mul_(scale[rows, None])
        return grad, None, None


def cross_entropy_in_chunks(logits, labels, ignore_index):
    """The mean cross-entropy of (N, V) logits and (N,) labels: F.cross_entropy(logits.float(), labels,
    ignore_index=ignore_index), computed a few rows at a time."""
    return ChunkedCrossEntropy.apply(logits, labels, ignore_index)
