"""Speed tricks, kept out of the model's reading path. Each computes what the plain PyTorch it stands
for computes (Dropout: a mask with the same drop rate, drawn more cheaply); tests/model/test_fast_paths.py
checks each against the plain way.

Dropout: nn.Dropout with a cheaper random mask on the CPU.
use_fused_attention / fused_attention: PyTorch's fused attention kernel where it is the faster path.
gather_positions: the rows an encoder's last layer computes when the heads read only a few positions.

cross_entropy_in_chunks: the language-model loss over a large vocabulary, for bfloat16 logits.
    F.cross_entropy(logits.float(), labels) makes a float32 copy of the (N, V) logits, a float32 table
    of log-probabilities and, in the backward pass, a zero-filled float32 gradient table and a cast back
    to bfloat16: several passes over tens of megabytes for a causal LM, which sees every position. Here
    the same float32 arithmetic runs a few rows at a time, in the processor's cache, and only the
    log-sum-exp of each row is kept for the backward pass.
"""

import torch
import torch.nn.functional as F
from torch import nn

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


class Dropout(nn.Dropout):
    """nn.Dropout with a cheaper mask on the CPU. There torch draws one random number per element for
    its Bernoulli mask, a visible share of a training step; here one 64-bit draw makes four 16-bit
    ones, and an element is dropped when its draw is among the lowest p of them (p to within 1/65536)."""

    def forward(self, x):
        if not self.training or self.p in (0.0, 1.0) or x.device.type != "cpu":
            return F.dropout(x, self.p, self.training)
        n = x.numel()
        draws = torch.randint(-2 ** 63, 2 ** 63 - 1, ((n + 3) // 4,), dtype=torch.int64)
        draws = draws.view(torch.int16)[:n].view(x.shape)  # uniform over -32768..32767
        keep = draws >= round(self.p * 2 ** 16) - 2 ** 15
        return x * keep.to(x.dtype).mul_(1 / (1 - self.p))


def gather_positions(x, positions):
    """x (B, T, C) -> (B, K, C), the rows at positions (B, K). When the heads read only a few positions
    (the masked ones and [CLS]: about a sixth at 15% masking), the encoder's last layer computes only
    those rows, while their attention still reads every token: most of the last layer's work is saved."""
    return x.gather(1, positions[..., None].expand(-1, -1, x.shape[-1]))


def fused_attention(q, k, v, bias, is_causal, dropout_p):
    """PyTorch's scaled_dot_product_attention: the same softmax(q k^T / sqrt(d)) v as model.attention, in
    one fused kernel that never stores the (T, S) weights."""
    bias = None if bias is None else bias.to(q.dtype)
    return F.scaled_dot_product_attention(q, k, v, attn_mask=bias, dropout_p=dropout_p, is_causal=is_causal)


WRITTEN_OUT_MAX_POSITIONS = 256  # in bf16 on a CPU, up to this many queries attention is written out


def use_fused_attention(implementation, output_attentions, dropout, q):
    """The one switch between the two attention paths: the fused kernel unless the weights are asked
    for (it never makes them) or the config says "eager"; otherwise "sdpa" fuses. Left to minibert (None),
    it writes attention out where that is the faster path: training on a CPU with attention dropout
    (the kernel draws its mask slowly there) or in bf16 with up to 256 positions (the kernel's backward
    pass is the slower one there; benchmarks/attention.py times both)."""
    if output_attentions or implementation == "eager":
        return False
    if implementation == "sdpa" or not (dropout.training and q.device.type == "cpu"):
        return True
    return not (dropout.p > 0 or (q.dtype == torch.bfloat16 and q.shape[-2] <= WRITTEN_OUT_MAX_POSITIONS))
