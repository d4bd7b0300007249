"""The package and the course on a GPU, as on Colab: one prepared script, offline, a few minutes.

    python benchmarks/gpu_check.py                 # on a machine where torch.cuda.is_available()
    python benchmarks/gpu_check.py --device cpu --quick   # the same checks at toy sizes, to try it here

1. Parity with transformers on the device, in fp32 and under bf16 autocast: every head on the same
   weights (outputs and losses), and greedy generation (the same tokens).
2. One course run of each objective (minibert.course_run, as the notebooks call it) trained on the
   device, with the assertions the notebooks make on its result.
3. The training step of minibert against transformers (eager and sdpa) at bert-base size (12 layers,
   width 768, batch 128 x 128 tokens) and at the course's presets, in bf16 autocast where the device
   supports it: milliseconds, tokens per second, and the share of the device's measured bf16 matmul rate
   that the model's FLOPs reach (6 x multiply-adds of the whole model, attention included).
Prints one line per check and a summary; exits 1 if a check fails. Not a test: it needs a GPU.
"""

import argparse
import os
import sys
import tempfile
import time

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import torch  # noqa: E402
import transformers  # noqa: E402

import minibert  # noqa: E402
import train_step  # noqa: E402
from minibert.course import pretrained  # noqa: E402
from minibert.training.trainer import machine  # noqa: E402

PAIRS = {  # minibert's class -> transformers' class with the same weights
    minibert.BertModel: transformers.BertModel,
    minibert.BertForMaskedLM: transformers.BertForMaskedLM,
    minibert.BertForPreTraining: transformers.BertForPreTraining,
    minibert.BertForNextSentencePrediction: transformers.BertForNextSentencePrediction,
    minibert.BertForSequenceClassification: transformers.BertForSequenceClassification,
    minibert.BertForCausalLM: transformers.BertLMHeadModel,
}
FIELDS = ("last_hidden_state", "pooler_output", "logits", "prediction_logits", "seq_relationship_logits", "loss")
failures = []


def report(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name}{': ' + detail if detail else ''}", flush=True)
    if not ok:
        failures.append(name)


def labels_for(cls, batch):
    ids, g = batch["input_ids"], torch.Generator().manual_seed(1)
    if cls is minibert.BertForMaskedLM:
        return dict(labels=torch.where(torch.rand(ids.shape, generator=g).to(ids.device) < 0.15, ids, -100))
    if cls is minibert.BertForPreTraining:
        return dict(labels=torch.where(torch.rand(ids.shape, generator=g).to(ids.device) < 0.15, ids, -100),
                    next_sentence_label=torch.randint(0, 2, (len(ids),), generator=g).to(ids.device))
    if cls in (minibert.BertForNextSentencePrediction, minibert.BertForSequenceClassification):
        return dict(labels=torch.randint(0, 2, (len(ids),), generator=g).to(ids.device))
    if cls is minibert.BertForCausalLM:
        return dict(labels=ids.masked_fill(batch["attention_mask"] == 0, -100))
    return {}


def parity(device, bf16_ok):
    config = dict(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, intermediate_size=128,
                  hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    g = torch.Generator().manual_seed(0)
    ids = torch.randint(5, 1000, (4, 24), generator=g)
    mask = torch.ones_like(ids)
    mask[1, 18:] = 0  # one padded row
    batch = dict(input_ids=ids.to(device), attention_mask=mask.to(device), token_type_ids=torch.zeros_like(ids).to(device))
    real = batch["attention_mask"].bool()
    for ours_cls, theirs_cls in PAIRS.items():
        torch.manual_seed(0)
        theirs = theirs_cls(transformers.BertConfig(**config, is_decoder=ours_cls is minibert.BertForCausalLM)).eval()
        with tempfile.TemporaryDirectory() as tmp:
            theirs.save_pretrained(tmp)
            ours = ours_cls.from_pretrained(tmp).eval().to(device)
        theirs.to(device)
        labels = labels_for(ours_cls, batch)
        for precision in ("fp32", "bf16") if bf16_ok else ("fp32",):
            with torch.no_grad(), torch.autocast(device.type, dtype=torch.bfloat16, enabled=precision == "bf16"):
                a, b = ours(**batch, **labels), theirs(**batch, **labels)
            worst = 0.0
            for field in FIELDS:
                x, y = getattr(a, field, None), getattr(b, field, None)
                if x is None or y is None:
                    continue
                x, y = (x[real], y[real]) if x.dim() == 3 else (x, y)
                scale = 1.0 if precision == "fp32" else max(1.0, y.float().abs().max().item())
                worst = max(worst, ((x.float() - y.float()).abs().max() / scale).item())
            bound = 1e-4 if precision == "fp32" else 3e-2  # bf16 keeps 8 bits of mantissa
            report(f"parity {ours_cls.__name__} {precision}", worst < bound, f"max difference {worst:.1e} (bound {bound:g})")
        if ours_cls is minibert.BertForCausalLM:
            prompt = batch["input_ids"][:1, :6]
            with torch.no_grad():
                mine = ours.generate(prompt, max_new_tokens=12, do_sample=False)
                reference = theirs.generate(prompt, attention_mask=torch.ones_like(prompt), max_new_tokens=12,
                                            do_sample=False, pad_token_id=0)
            report("greedy generation, the same tokens as transformers'", torch.equal(mine.cpu(), reference.cpu()))


def course_runs(device, quick):
    """Each objective's course run, trained here, judged as the notebooks judge it."""
    corpus = minibert.load_corpus()
    tokenizer = pretrained.tokenizer()
    overrides = dict(steps=20) if quick else {}
    for objective in ("clm", "mlm", "nsp", "sop", "mlm+nsp", "mlm+sop"):
        begin = time.perf_counter()
        run = minibert.course_run(objective, corpus, tokenizer, **overrides)
        seconds = time.perf_counter() - begin
        final, base = run.final, run.baselines
        on = next(run.model.parameters()).device
        claims = []
        if objective == "clm":  # notebook 03
            claims += [final["clm_perplexity"] < 0.8 * base["clm_unigram_perplexity"],
                       final["clm_accuracy"] > 1.5 * base["clm_most_frequent_token_accuracy"]]
        if "mlm" in objective:  # notebooks 04 and 06
            claims += [final["mlm_accuracy"] > 1.5 * base["mlm_most_frequent_token_accuracy"],
                       final["mlm_loss"] < base["mlm_unigram_loss"]]
        for task in ("nsp", "sop"):  # notebooks 05 and 06: above the majority class
            if f"{task}_accuracy" in final:
                claims.append(final[f"{task}_accuracy"] > base[f"{task}_majority_class_accuracy"])
        report(f"course run {objective} on {on.type}", (all(claims) or quick) and on.type == device.type,
               f"{seconds:.0f} s, {run.report()}")


def matmul_rate(device, dtype, n=8192, reps=10):
    a, b = torch.randn(n, n, device=device, dtype=dtype), torch.randn(n, n, device=device, dtype=dtype)
    a @ b
    torch.cuda.synchronize() if device.type == "cuda" else None
    begin = time.perf_counter()
    for _ in range(reps):
        a @ b
    torch.cuda.synchronize() if device.type == "cuda" else None
    return 2 * n ** 3 * reps / (time.perf_counter() - begin)


def model_flops(vocab):
    """FLOPs of one training step of the whole model (forward and backward: 3 x 2 x multiply-adds)."""
    C, F, L = (train_step.SHAPE[k] for k in ("hidden_size", "intermediate_size", "num_hidden_layers"))
    tokens = train_step.BATCH * train_step.LENGTH
    per_token = L * (4 * C * C + 2 * C * F + 2 * train_step.LENGTH * C)
    head = train_step.MASKED * (C * C + C * vocab)
    return 6 * tokens * (per_token + head)


def speed(device, quick, bf16):
    rate = matmul_rate(device, torch.bfloat16 if bf16 else torch.float32, n=1024 if quick else 8192)
    print(f"measured {'bf16' if bf16 else 'fp32'} matmul rate: {rate / 1e9:,.0f} GFLOP/s")
    shapes = ("tiny", "mini") if quick else ("base", "mini", "tiny")
    for shape in shapes:
        train_step.use_shape(shape, 0.1 if shape != "tiny" else 0.0)
        vocab = 30522 if shape == "base" else 8000
        if quick and shape == "mini":
            train_step.BATCH = 4
        ours, theirs = train_step.make_models(vocab)
        batch = train_step.make_batch(vocab)
        models = {"minibert": ours.train(), **{impl: m.train() for impl, m in theirs.items()}}
        seconds = train_step.median_steps(models, batch, 3 if quick else 20, bf16)
        tokens = train_step.BATCH * train_step.LENGTH
        flops = model_flops(vocab)
        fastest = min(train_step.ATTENTION, key=seconds.get)
        print(f"{shape:>5} {train_step.MODEL} {train_step.BATCH}x{train_step.LENGTH}: " + " | ".join(
            f"{name} {1000 * s:.1f} ms, {tokens / s:,.0f} tokens/s, {flops / s / rate:.0%} of the matmul rate"
            for name, s in seconds.items()) + f" | minibert {seconds[fastest] / seconds['minibert']:.2f}x transformers' "
            f"{fastest}", flush=True)
        del ours, theirs, models


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cuda")
    parser.add_argument("--quick", action="store_true", help="toy sizes and budgets: to try the script on a CPU")
    args = parser.parse_args()
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("no CUDA device here: run this where torch.cuda.is_available(), or try it with --device cpu --quick")
        return 2
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else machine()
    bf16 = device.type == "cuda" and torch.cuda.is_bf16_supported(including_emulation=False)
    print(f"{name}; torch {torch.__version__}, transformers {transformers.__version__}, bf16 {'on' if bf16 else 'off'}")
    os.environ["MINIBERT_CACHE"] = tempfile.mkdtemp(prefix="minibert-gpu-check-")  # every run trains here
    train_step.DEVICE = device
    begin = time.perf_counter()
    parity(device, bf16_ok=True)
    course_runs(device, args.quick)
    speed(device, args.quick, bf16)
    print(f"{len(failures)} checks failed{': ' + ', '.join(failures) if failures else ''}; "
          f"{time.perf_counter() - begin:.0f} s in all")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
