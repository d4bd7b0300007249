"""The short runs that choose a shipped checkpoint's recipe: corpus mixes and presets at equal steps.

Each run is the command line's `pretrain` with the shipped tokenizer (so that every run counts the same
tokens), one thread, resumable; then it is exported to a temporary folder and scored as the cards are:
held-out masked-token accuracy (its learning curve too) and the everyday blanks with transformers'
fill-mask pipeline. Not a test: it takes tens of minutes a run.

    OMP_NUM_THREADS=1 python benchmarks/checkpoint_sweep.py mix        # large against large-narrative, tiny
    OMP_NUM_THREADS=1 python benchmarks/checkpoint_sweep.py preset     # tiny against mini, same mix and steps
"""

import json
import os
import subprocess
import sys
import tempfile

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from minibert.course import pretrained  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
RUNS = os.path.join(ROOT, "runs", "sweep")
COMMON = dict(objective="mlm+nsp", batch_size=64, max_length=64, eval_every=1000, tokenizer=pretrained.path("bert-mlm"))
SWEEPS = {
    "mix": {f"tiny-{mix}": dict(preset="tiny", steps=6000, corpus=mix) for mix in ("large", "large-narrative")},
    "preset": {f"{preset}-{mix}": dict(preset=preset, steps=steps, corpus=mix)
               for preset, steps, mix in (("mini", 12000, os.environ.get("MIX", "large-narrative")),)},
}


def train(name, settings):
    out = os.path.join(RUNS, name)
    options = [f"--{k.replace('_', '-')}={v}" for k, v in {**COMMON, **settings}.items()]
    resume = ["--resume"] if os.path.isfile(os.path.join(out, "trainer_state.json")) else []
    subprocess.run([sys.executable, "-m", "minibert", "pretrain", *options, "--out", out, *resume], check=True)
    return out


def scores(run):
    with tempfile.TemporaryDirectory() as tmp:
        dest = os.path.join(tmp, "checkpoint")
        pretrained.export(run, dest)
        with open(os.path.join(dest, "eval_results.json")) as f:
            result = json.load(f)
        with open(os.path.join(dest, "training_args.json")) as f:
            info = json.load(f)
    curve = ", ".join(f"{e['step']}: {100 * e['mlm_accuracy']:.1f}%" for e in info["evals"])
    return result, info["minutes"], curve


def main(which):
    rows = []
    for name, settings in SWEEPS[which].items():
        result, minutes, curve = scores(train(name, settings))
        rows.append((name, result, minutes, curve))
        print(f"{name}: {minutes} min | held-out MLM {result['mlm_accuracy']:.1f}% | NSP {result['nsp_accuracy']:.1f}% | "
              f"blanks top-5 {result['blanks_top5']:.1f}% top-1 {result['blanks_top1']:.1f}% | curve {curve}", flush=True)
    print("| run | minutes | held-out MLM | NSP | blanks top-5 | top-1 |\n|---|---|---|---|---|---|")
    for name, r, minutes, _ in rows:
        print(f"| {name} | {minutes} | {r['mlm_accuracy']:.1f}% | {r['nsp_accuracy']:.1f}% | {r['blanks_top5']:.1f}% "
              f"| {r['blanks_top1']:.1f}% |")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mix")
