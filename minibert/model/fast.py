"""Speed tricks, kept out of the model's reading path: bert.py is written plainly, speed_up switches the
first two on for every model the classes users build (heads.py) make, and losses.py takes the third for
bfloat16 logits. Each computes what the plain PyTorch
it stands for computes (Dropout: a mask with the same drop rate, drawn more cheaply);
tests/model/test_fast_paths.py checks each against the plain way.

Dropout: nn.Dropout with a cheaper random mask on the CPU.
choose_attention: for each batch, the faster of the two attention paths (fused or written out).
cross_entropy_in_chunks: the language-model loss over a large vocabulary, for bfloat16 logits.
    F.cross_entropy(logits.float(), labels) makes a float32 copy of the (N, V) logits, a float32 table
    of log-probabilities and, in the backward pass, a zero-filled float32 gradient table and a cast back
    to bfloat16: several passes over tens of megabytes for a causal LM, which sees every position. Here
    the same float32 arithmetic runs a few rows at a time, and only the log-sum-exp of each row is kept
    for the backward pass.
"""

from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from .bert import BertModel, MultiHeadAttention

ROWS_PER_CHUNK = 32  # rows of logits turned to float32 at a time (benchmarks/train_step.py --bf16 times it)


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
        draws = torch.randint(-2 ** 63, 2 ** 63 - 1, ((n + 3) // 4,), dtype=torch.int64, device=x.device)
        draws = draws.view(torch.int16)[:n].view(x.shape)  # uniform over -32768..32767
        keep = draws >= round(self.p * 2 ** 16) - 2 ** 15
        return x * keep.to(x.dtype).mul_(1 / (1 - self.p))


WRITTEN_OUT_MAX_POSITIONS = 256  # in bf16 on a CPU, up to this many positions attention is written out


def writes_attention_out(config, training, device_type, bf16, seq_len):
    """Does attention take the written-out path? For config.attn_implementation "eager" always and "sdpa"
    never; left to minibert (None), only where that is the faster path: training on a CPU with attention
    dropout (the fused kernel draws its mask slowly there) or in bf16 with up to 256 positions (the fused
    kernel's backward pass is the slower one there; benchmarks/attention.py times both). Weights asked
    for (output_attentions) are always written out: the fused kernel never makes them."""
    if config.attn_implementation is not None:
        return config.attn_implementation == "eager"
    return training and device_type == "cpu" and (
        config.attention_probs_dropout_prob > 0 or (bf16 and seq_len <= WRITTEN_OUT_MAX_POSITIONS))


def choose_attention(model, embeddings, inputs, x):
    """A forward hook on model's embeddings: before its layers run, every attention module of the model
    takes the path writes_attention_out chooses for this batch, x (B, T, C)."""
    device = x.device.type
    bf16 = x.dtype == torch.bfloat16 or (torch.is_autocast_enabled(device)
                                         and torch.get_autocast_dtype(device) == torch.bfloat16)
    fused = not writes_attention_out(model.config, model.training, device, bf16, x.shape[1])
    for m in model.encoder.modules():
        if isinstance(m, MultiHeadAttention):
            m.fused = fused


def speed_up(model):
    """Switch minibert's speed tricks on in model: every nn.Dropout draws its mask as Dropout does, and each
    encoder chooses its attention path per batch. Calling it again changes nothing."""
    for m in model.modules():
        if type(m) is nn.Dropout:
            m.__class__ = Dropout  # the same module, with Dropout's forward
        if isinstance(m, BertModel) and not getattr(m, "chooses_attention", False):
            m.embeddings.register_forward_hook(partial(choose_attention, m))
            m.chooses_attention = True
