"""Time one attention layer of minibert, forward and backward, fused (PyTorch's scaled_dot_product_attention)
against spelled out (q @ k.T, softmax, @ v), in fp32 and under bf16 autocast.

    python benchmarks/attention.py

This is the measurement behind `minibert.model.bert.writes_attention_out`: on a CPU, in bf16, the fused
kernel's backward pass is slow for short sequences, so training spells attention out there. Shapes: the
course's tiny preset (64 sequences of 64 tokens, 2 heads), the mini preset, and longer sequences. Steps
alternate between the two paths; the medians are printed. Not a test: a script that prints figures.
"""

import statistics
import time

import torch

import minibert
from minibert.model.bert import MultiHeadAttention, writes_attention_out

SHAPES = [  # (batch, tokens, hidden, heads)
    (64, 64, 128, 2),
    (32, 128, 256, 4),
    (64, 64, 256, 4),
    (16, 256, 256, 4),
    (8, 512, 768, 12),
]


def step(layer, x, mask, bf16):
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        y = layer(x, bias=mask).output
    y.float().sum().backward()


def time_paths(batch, tokens, hidden, heads, bf16, repeats=12):
    torch.manual_seed(0)
    config = minibert.BertConfig(hidden_size=hidden, num_attention_heads=heads, attention_probs_dropout_prob=0.0)
    layer = MultiHeadAttention(config).train()
    x = torch.randn(batch, tokens, hidden, requires_grad=True)
    mask = torch.zeros(batch, 1, 1, tokens)  # an additive padding mask that hides nothing
    paths = {"fused": "sdpa", "spelled out": "eager"}  # the config's attn_implementation, set for each timing
    times = {name: [] for name in paths}
    for i in range(repeats + 2):
        for name, implementation in paths.items():
            config.attn_implementation = implementation
            start = time.perf_counter()
            step(layer, x, mask, bf16)
            if i >= 2:  # the first two are warm-up
                times[name].append(time.perf_counter() - start)
    config.attn_implementation = None  # minibert's choice
    taken = "spelled out" if writes_attention_out(config, True, "cpu", bf16, tokens) else "fused"
    return {name: 1000 * statistics.median(t) for name, t in times.items()}, taken


def cpu_name():
    try:
        with open("/proc/cpuinfo") as f:
            return next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        return "an unknown CPU"


def main():
    from minibert.training.trainer import bf16_is_native
    native = "native bf16" if bf16_is_native(torch.device("cpu")) else "no native bf16: bf16 is emulated, slowly"
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads, {cpu_name()} ({native})")
    print(f"{'batch x tokens':>15}{'hidden/heads':>14}{'dtype':>7}{'fused ms':>10}{'spelled ms':>12}{'ratio':>7}"
          f"   minibert trains with")
    for batch, tokens, hidden, heads in SHAPES:
        for bf16 in (False, True):
            ms, taken = time_paths(batch, tokens, hidden, heads, bf16)
            print(f"{f'{batch} x {tokens}':>15}{f'{hidden}/{heads}':>14}{'bf16' if bf16 else 'fp32':>7}"
                  f"{ms['fused']:>10.2f}{ms['spelled out']:>12.2f}{ms['fused'] / ms['spelled out']:>6.2f}x   {taken}")


if __name__ == "__main__":
    main()
