"""The shipped checkpoints against the bars they were trained to clear, each score with its 95% interval.

Scored as the cards are (the held-out documents of the large corpus, `make corpus`; transformers' own
fill-mask pipeline for the blanks), with the intervals the cards leave out: held-out masked-token accuracy
and perplexity redraw whole batches of 32 blocks (the tokens of one block are not independent), NSP redraws
sentence pairs and the blanks redraw sentences. Not a test: a mini checkpoint takes a few minutes on one
thread. The fine-tuning gain is benchmarks/fine_tuning_gain.py.

    OMP_NUM_THREADS=1 python benchmarks/shipped_bars.py bert-mlm-nsp bert-clm bert-mini-mlm-nsp bert-mini-clm
"""

import argparse
import math
import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402

from minibert.course import pretrained  # noqa: E402
from minibert.training.metrics import bootstrap, proportion  # noqa: E402

# what a student should be able to believe of a shipped model: (score, "at least" or "at most", bar)
BARS = {"mlm_accuracy": (">=", 50), "nsp_accuracy": (">=", 92), "blanks_top1": (">=", 35),
        "blanks_top5": (">=", 70), "clm_perplexity_share_of_unigram": ("<=", 1 / 15)}


def by_batch(batches, task, key):
    """The interval of a token-level score (key: "correct" or "loss") that redraws whole batches. Each
    token stands in with its batch's mean: a batch's sum, all the bootstrap adds up, is exact."""
    counts = torch.tensor([b[f"{task}_n"] for b in batches])
    means = torch.tensor([b[f"{task}_{key}"] / b[f"{task}_n"] for b in batches], dtype=torch.float64)
    return bootstrap(torch.repeat_interleave(means, counts), torch.repeat_interleave(torch.arange(len(batches)), counts))


def intervals(name):
    folder = pretrained.path(name)
    batches = []
    scores = pretrained.score(folder, batches=batches)
    found = {}
    if "mlm_accuracy" in scores:
        found["mlm_accuracy"] = by_batch(batches, "mlm", "correct").map(lambda x: 100 * x)
    if "nsp_accuracy" in scores:
        right, n = sum(b["nsp_correct"] for b in batches), sum(b["nsp_n"] for b in batches)  # pairs are independent
        found["nsp_accuracy"] = proportion(right, n).map(lambda x: 100 * x)
    if "clm_perplexity" in scores:
        ppl = by_batch(batches, "clm", "loss").map(math.exp)
        unigram = scores["clm_unigram_perplexity"]
        found["clm_perplexity"] = ppl
        found["clm_perplexity_share_of_unigram"] = ppl.map(lambda x: x / unigram)
        print(f"{name}: unigram perplexity {unigram:.2f}")
    else:
        rows = pretrained.blank_scores(folder)[1]
        for k in ("top1", "top5"):
            found[f"blanks_{k}"] = proportion(sum(r[k] for r in rows), len(rows)).map(lambda x: 100 * x)
    print(f"{name}: {scores['examples']:,} held-out examples")
    for key, iv in found.items():
        line = f"  {key:34s} {iv:.4g}" if key.endswith("unigram") else f"  {key:34s} {iv:.1f}"
        if key in BARS:
            side, bar = BARS[key]
            met = iv.estimate >= bar if side == ">=" else iv.estimate <= bar
            sure = iv.low >= bar if side == ">=" else iv.high <= bar
            line += f"   bar {side} {bar:.4g}: " + ("met" if sure else "met, within the interval" if met else "missed")
        print(line, flush=True)
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="+", choices=list(pretrained.RECIPES))
    for name in parser.parse_args().names:
        intervals(name)


if __name__ == "__main__":
    main()
