"""Will a run fit in memory? Checked before the first step, so that a batch too large for the machine is
refused with a sentence and the batch size that fits, instead of swapping for an hour or being killed by
the kernel without a word (in Jupyter: "kernel died").

The estimate is what training adds to what the process already holds (the model, the data):
    16 bytes per parameter: its gradient, AdamW's two moments, and a copy for the forward pass
  + per token and layer, the activations the backward pass keeps: about 10 numbers per hidden unit
    (the layer's input, queries, keys, values, the attention output, the sub-layers' outputs and their
    LayerNorms), 2 per feed-forward unit (before and after GELU) and, where attention is written out
    (bert.writes_attention_out), 2 per attention score of the token's row (the scores and their softmax);
    with dropout, its masks: 3 per hidden unit, and 1 per attention score
  + the output scores over the vocabulary and their gradients: every position for a causal LM, only
    the masked ones for a masked LM; 20 bytes per score in float32, 10 under bf16 autocast.
docs/experiments.md ("Memory") compares it with the peak memory of real runs.
"""

import psutil
import torch

from ..model.bert import writes_attention_out

PARAMETER_BYTES = 16
FLOAT32 = 4  # bytes per activation kept
HIDDEN_NUMBERS, INTERMEDIATE_NUMBERS, SCORE_NUMBERS = 10, 2, 2  # kept per token and layer, float32 each
DROPOUT_NUMBERS = 3  # with hidden dropout: a mask per hidden unit after the embeddings, attention and feed-forward
VOCABULARY_BYTES = {False: 20, True: 10}  # per output score: float32, or bf16 autocast
GB = 1e9


def training_bytes(model, batch_size, max_length, scored_share=1.0, bf16=False, device_type="cpu"):
    """(fixed, per batch): bytes that training `model` needs beyond the model itself, on batches of
    batch_size x max_length tokens of which scored_share get scores over the vocabulary."""
    c = model.config
    per_layer = HIDDEN_NUMBERS * c.hidden_size + INTERMEDIATE_NUMBERS * c.intermediate_size
    if writes_attention_out(c, True, device_type, bf16, max_length):
        per_layer += (SCORE_NUMBERS + (c.attention_probs_dropout_prob > 0)) * c.num_attention_heads * max_length
    if c.hidden_dropout_prob > 0:
        per_layer += DROPOUT_NUMBERS * c.hidden_size  # the masks of its three dropouts
    per_token = FLOAT32 * c.num_hidden_layers * per_layer + scored_share * VOCABULARY_BYTES[bool(bf16)] * c.vocab_size
    parameters = sum(p.numel() for p in model.parameters())
    return PARAMETER_BYTES * parameters, batch_size * max_length * per_token


def available_bytes(device):
    """Memory this process may still take: free GPU memory, or on a CPU the smaller of the memory the
    operating system says is available (psutil: Linux, macOS, Windows) and what a Linux container's memory
    limit leaves. None where it cannot be told (an Apple GPU, whose memory is the machine's)."""
    if device.type == "cuda":
        return torch.cuda.mem_get_info(device)[0]
    if device.type != "cpu":
        return None
    found = [psutil.virtual_memory().available]
    rlimit = getattr(psutil, "RLIMIT_AS", None)  # an address-space limit (ulimit -v; Linux): it stops allocations too
    if rlimit is not None:
        try:
            soft, _ = psutil.Process().rlimit(rlimit)
            if soft != psutil.RLIM_INFINITY:
                found.append(soft - psutil.Process().memory_info().vms)
        except (psutil.Error, OSError):  # /proc unreadable: the limit cannot be weighed, the rest still can
            pass
    for limit, usage in (("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
                         ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        try:
            with open(limit, encoding="utf-8") as f, open(usage, encoding="utf-8") as g:
                found.append(int(f.read()) - int(g.read()))
        except (OSError, ValueError):  # no such limit, or "max": none
            pass
    return min(found) if found else None


def check_memory(model, batch_size, max_length, device, scored_share=1.0, bf16=False, processes=1):
    """Refuse a run whose estimate exceeds the memory left, naming both and the batch size that fits.
    `processes` that share this machine's memory (torchrun on a CPU) each need as much."""
    available = available_bytes(device)
    if available is None:
        return
    fixed, batch = training_bytes(model, batch_size, max_length, scored_share, bf16, device.type)
    needed = processes * (fixed + batch)
    if needed <= available:
        return
    fits = int((available / processes - fixed) // (batch / batch_size))
    advice = (f"A batch_size (--batch-size) of at most {fits} fits" if fits >= 1 else
              "Not even one sequence fits: choose a smaller preset or a shorter max_length (--max-length)")
    who = f"{processes} processes, each training" if processes > 1 else "training"
    raise ValueError(f"not enough memory: {who} this model ({model.num_parameters() / 1e6:.1f}M parameters) on "
                     f"batches of {batch_size} x {max_length} tokens needs about {needed / GB:.1f} GB, and this "
                     f"{device.type.upper()} has {available / GB:.1f} GB free. {advice}, or free some memory")
