"""Time one BertForPreTraining training step of minibert against transformers' on the same weights.

    python benchmarks/train_step.py                 # vocab 8000 and 30522, fp32
    python benchmarks/train_step.py --bf16          # the same under bf16 autocast
    python benchmarks/train_step.py --vocab 8000 --steps 10
    python benchmarks/train_step.py --dropout 0     # without dropout, as the course's presets train
    python benchmarks/train_step.py --shape tiny --threads 1   # the course's live runs on a laptop
    ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 python benchmarks/train_step.py   # as without AVX-512

--shape mini (the default): BertForPreTraining, 4 layers, hidden 256, 4 heads, FFN 1024, dropout 0.1
unless --dropout says otherwise, a batch of 32 x 128 tokens, 15% masked, NSP labels. --shape tiny: the
course's live runs, BertForMaskedLM with the tiny preset (2 layers, hidden 128), vocab 8000, dropout 0,
64 x 64 tokens. Both models get the same config, the same weights and the same batch. transformers runs with both of its attention implementations, "eager" (spelled out) and
"sdpa" (PyTorch's fused kernel), since either may be the faster one on a given CPU and precision: the
ratio is printed against each, and the row names the faster. Steps alternate between the models so
that the noise of a shared machine hits all alike; the ratio of medians is the figure to read. Peak
memory (above the imports) is measured in a fresh process per model. Not a test: a script that
prints figures.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch  # noqa: E402
import transformers  # noqa: E402

import minibert  # noqa: E402

SHAPES = {  # name -> (model shape, batch, tokens, the class in both packages)
    "mini": (dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024), 32, 128,
             "BertForPreTraining"),
    "tiny": (dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512), 64, 64,
             "BertForMaskedLM"),
    "base": (dict(hidden_size=768, num_hidden_layers=12, num_attention_heads=12, intermediate_size=3072), 128, 128,
             "BertForPreTraining"),  # bert-base on a GPU: benchmarks/gpu_check.py
}
SHAPE, (BATCH, LENGTH, MODEL), MASKED = dict(SHAPES["mini"][0]), SHAPES["mini"][1:], 0.15


def use_shape(name, dropout):
    """Benchmark this shape from now on (also in the fresh processes of peak_rss_mb)."""
    global BATCH, LENGTH, MODEL
    SHAPE.clear()
    SHAPE.update(SHAPES[name][0], hidden_dropout_prob=dropout, attention_probs_dropout_prob=dropout)
    BATCH, LENGTH, MODEL = SHAPES[name][1:]


ATTENTION = ("eager", "sdpa")  # transformers' attention implementations that run on a CPU
DEVICE = torch.device("cpu")  # benchmarks/gpu_check.py sets cuda


def make_models(vocab):
    """minibert's model and one transformers model per attention implementation, all with one set of weights."""
    torch.manual_seed(0)
    theirs = {impl: getattr(transformers, MODEL)(transformers.BertConfig(vocab_size=vocab, attn_implementation=impl,
                                                                         **SHAPE)) for impl in ATTENTION}
    reference = theirs[ATTENTION[0]].state_dict()
    for model in theirs.values():
        model.load_state_dict(reference)
    ours = getattr(minibert, MODEL)(minibert.BertConfig(vocab_size=vocab, **SHAPE))
    missing, unexpected = ours.load_state_dict(reference, strict=False)
    assert not [k for k in missing if k != "cls.predictions.decoder.weight"] and not [
        k for k in unexpected if "decoder.bias" not in k], (missing, unexpected)
    return ours.to(DEVICE), {impl: model.to(DEVICE) for impl, model in theirs.items()}


def make_batch(vocab):
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, vocab, (BATCH, LENGTH), generator=g)
    token_type_ids = torch.zeros_like(ids)
    token_type_ids[:, LENGTH // 2:] = 1
    chosen = torch.rand(ids.shape, generator=g) < MASKED
    labels = torch.where(chosen, ids, -100)
    ids = ids.masked_fill(chosen, 4)
    batch = dict(input_ids=ids, token_type_ids=token_type_ids, attention_mask=torch.ones_like(ids), labels=labels)
    if MODEL == "BertForPreTraining":
        batch["next_sentence_label"] = torch.randint(0, 2, (BATCH,), generator=g)
    return {k: v.to(DEVICE) for k, v in batch.items()}


def stepper(model, batch, bf16, ours):
    """One optimizer step, as the trainer does it (minibert: decoder at the masked positions only)."""
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4)
    extra = dict(masked_only=True) if ours else {}

    def step():
        with torch.autocast(DEVICE.type, dtype=torch.bfloat16, enabled=bf16):
            loss = model(**batch, **extra).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        return loss.item()  # waits for the device: a step is timed whole
    return step


def matmul_peak(n=2048, reps=5):
    """GFLOP/s of a large fp32 matmul: the most this machine does at the moment."""
    a, b = torch.randn(n, n), torch.randn(n, n)
    a @ b
    times = []
    for _ in range(reps):
        t = time.perf_counter()
        a @ b
        times.append(time.perf_counter() - t)
    return 2 * n ** 3 / min(times) / 1e9


def step_flops(vocab):
    """Multiply-adds x 2 x 3 (forward + backward) of minibert's step: the last layer computes keys and
    values everywhere but the rest only at [CLS] and the masked tokens, and so does the MLM decoder."""
    C, F, L, T = SHAPE["hidden_size"], SHAPE["intermediate_size"], SHAPE["num_hidden_layers"], BATCH * LENGTH
    read = MASKED + 1 / LENGTH  # share of positions the heads read
    per_token_layer = 4 * C * C + 2 * C * F + 2 * LENGTH * C  # projections, FFN, scores and mix
    last_layer = 2 * C * C + read * (per_token_layer - 2 * C * C)
    head = MASKED * T * (C * C + C * vocab)
    pooler = BATCH * C * C if MODEL == "BertForPreTraining" else 0
    return 6 * ((L - 1) * T * per_token_layer + T * last_layer + head + pooler)


def peak_rss_mb(which, vocab, bf16):
    """Peak memory of building one model and training it for 3 steps, in a fresh process: the highest
    resident set size (sampled every millisecond) above what the process held after its imports.
    which: "minibert", or an attention implementation of transformers."""
    ours = which == "minibert"
    build = (f"minibert.{MODEL}(minibert.BertConfig(vocab_size={vocab}, **{SHAPE!r}))" if ours else
             f"transformers.{MODEL}(transformers.BertConfig(vocab_size={vocab}, "
             f"attn_implementation={which!r}, **{SHAPE!r}))")
    code = f"""
import sys, threading, time, psutil
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import train_step as b
from train_step import minibert, transformers
b.SHAPE.update({SHAPE!r}); b.BATCH, b.LENGTH, b.MODEL = {BATCH}, {LENGTH}, {MODEL!r}
b.torch.set_num_threads({torch.get_num_threads()})
process, peak, running = psutil.Process(), [0], [True]
def sample():
    while running[0]:
        peak[0] = max(peak[0], process.memory_info().rss)
        time.sleep(0.001)
base = process.memory_info().rss
thread = threading.Thread(target=sample)
thread.start()
m = {build}
s = b.stepper(m, b.make_batch({vocab}), {bf16}, {ours})
[s() for _ in range(3)]
running[0] = False
thread.join()
print((peak[0] - base) / 2 ** 20)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def median_steps(models, batch, steps, bf16):
    """Median seconds of a training step of each model ({name: model}; "minibert" is ours), the steps
    interleaved so that the machine's noise hits all alike."""
    step = {name: stepper(model, batch, bf16, name == "minibert") for name, model in models.items()}
    times = {name: [] for name in step}
    for name in step:  # warm-up
        step[name]()
    for _ in range(steps):
        for name in step:
            t = time.perf_counter()
            step[name]()
            times[name].append(time.perf_counter() - t)
    return {name: statistics.median(t) for name, t in times.items()}


def fastest_attention(vocab, bf16, steps=5):
    """The attention implementation with which transformers' BertForPreTraining trains fastest here."""
    _, theirs = make_models(vocab)
    seconds = median_steps({impl: model.train() for impl, model in theirs.items()}, make_batch(vocab), steps, bf16)
    return min(seconds, key=seconds.get)


def bench(vocab, steps, bf16):
    ours, theirs = make_models(vocab)
    batch = make_batch(vocab)
    with torch.no_grad():  # same weights, same batch: the same loss (dropout off)
        loss_ours = ours.eval()(**batch).loss.item()
        loss_theirs = {impl: model.eval()(**batch).loss.item() for impl, model in theirs.items()}
    med = median_steps({"minibert": ours.train(), **{impl: model.train() for impl, model in theirs.items()}},
                       batch, steps, bf16)
    fastest = min(ATTENTION, key=med.get)
    peak = matmul_peak()
    return dict(vocab=vocab, dtype="bf16" if bf16 else "fp32", loss_minibert=loss_ours,
                **{f"loss_transformers_{impl}": loss for impl, loss in loss_theirs.items()},
                step_minibert_s=med["minibert"], **{f"step_transformers_{impl}_s": med[impl] for impl in ATTENTION},
                **{f"speedup_vs_{impl}": med[impl] / med["minibert"] for impl in ATTENTION},
                fastest_transformers=fastest, matmul_peak_gflops=peak,
                share_of_peak=step_flops(vocab) / med["minibert"] / 1e9 / peak,
                rss_minibert_mb=peak_rss_mb("minibert", vocab, bf16),
                rss_transformers_mb=peak_rss_mb(fastest, vocab, bf16))


def cpu_name():
    from minibert.training.trainer import machine
    return machine()


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--shape", choices=SHAPES, default="mini")
    parser.add_argument("--vocab", type=int, nargs="+", help="default: 8000 and 30522 (mini), 8000 (tiny)")
    parser.add_argument("--threads", type=int, help="torch threads (default: PyTorch's, one per core)")
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--bf16", action="store_true", help="run both under bf16 autocast")
    parser.add_argument("--dropout", type=float,
                        help="dropout of both models: 0.1 as in BERT (the default for mini), 0 as in the course's presets "
                             "(the default for tiny)")
    parser.add_argument("--json", help="also write the rows to this file")
    args = parser.parse_args()
    use_shape(args.shape, args.dropout if args.dropout is not None else (0.1 if args.shape == "mini" else 0.0))
    if args.threads:
        torch.set_num_threads(args.threads)
    args.vocab = args.vocab or ([8000, 30522] if args.shape == "mini" else [8000])
    print(f"{cpu_name()}, {torch.backends.cpu.get_cpu_capability()} kernels, "
          f"transformers {transformers.__version__}, {torch.get_num_threads()} threads; "
          f"{MODEL}, batch {BATCH}x{LENGTH}, {SHAPE}")
    header = (f"{'vocab':>6} {'dtype':>5} {'minibert s':>10} {'eager s':>8} {'sdpa s':>7} {'vs eager':>8} "
              f"{'vs sdpa':>7} {'faster tf':>9} {'peak share':>10} {'RSS mini MB':>11} {'RSS tf MB':>9} "
              f"{'loss mini':>9} {'loss tf':>9}")
    print(header)
    rows = []
    for vocab in args.vocab:
        r = bench(vocab, args.steps, args.bf16)
        rows.append(r)
        print(f"{r['vocab']:>6} {r['dtype']:>5} {r['step_minibert_s']:>10.3f} {r['step_transformers_eager_s']:>8.3f} "
              f"{r['step_transformers_sdpa_s']:>7.3f} {r['speedup_vs_eager']:>7.2f}x {r['speedup_vs_sdpa']:>6.2f}x "
              f"{r['fastest_transformers']:>9} {r['share_of_peak']:>10.1%} {r['rss_minibert_mb']:>11.0f} "
              f"{r['rss_transformers_mb']:>9.0f} {r['loss_minibert']:>9.4f} {r['loss_transformers_eager']:>9.4f}",
              flush=True)
    print("vs eager / vs sdpa: transformers' step time over minibert's, with each attention implementation; "
          "faster tf: the one to compare with")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=2)


if __name__ == "__main__":
    main()
