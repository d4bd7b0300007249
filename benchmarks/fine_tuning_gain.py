"""Notebook 10's measurement for any shipped masked LM: how much a pretrained start gains over random
weights of the same shape when fine-tuned on a tenth of the labels of the which-document task.

The protocol is the notebook's: the learning rate is chosen on a validation split of the training fold
(the best sum of both starts' accuracies), then each start is fine-tuned with three seeds on the chosen
fraction of the labels and scored on the test fold; the gain is the mean over seeds of pretrained minus
random, with ±2 standard errors. Not a test: a fine-tuning run of the mini preset takes about half a
minute on one thread. Results are cached (MINIBERT_CACHE) like the notebook's.

    OMP_NUM_THREADS=1 python benchmarks/fine_tuning_gain.py bert-mlm-nsp bert-mini-mlm-nsp
"""

import argparse
import os
import time
import warnings

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import torch  # noqa: E402
from transformers import AutoTokenizer  # noqa: E402

import minibert  # noqa: E402
from minibert.course import pretrained  # noqa: E402
from minibert.training import finetune  # noqa: E402


def gain(name, task, rates, fractions, seeds):
    checkpoint = pretrained.path(name)
    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    begin = time.perf_counter()
    validation = {}
    for rate in rates:
        for start in (True, False):
            right = finetune.run(checkpoint, task, 1.0, 0, tokenizer, pretrained=start, lr=rate, validation=True)
            validation[start, rate] = right.float().mean().item()
    lr = max(rates, key=lambda rate: validation[True, rate] + validation[False, rate])
    print(f"{name}: validation accuracy (pretrained / random) "
          + ", ".join(f"{rate:g}: {validation[True, rate]:.1%} / {validation[False, rate]:.1%}" for rate in rates)
          + f" -> learning rate {lr:g}", flush=True)
    for fraction in fractions:
        accuracy = {start: [finetune.run(checkpoint, task, fraction, seed, tokenizer, pretrained=start, lr=lr)
                            .float().mean().item() for seed in seeds] for start in (True, False)}
        mean, low, high = finetune.mean_interval([p - r for p, r in zip(accuracy[True], accuracy[False])])
        print(f"  {fraction:.0%} of the labels: pretrained {sum(accuracy[True]) / len(seeds):.1%}, random "
              f"{sum(accuracy[False]) / len(seeds):.1%}, gain {mean:+.1%} [{low:+.1%}, {high:+.1%}] "
              f"({len(seeds)} seeds)", flush=True)
    print(f"  {time.perf_counter() - begin:.0f} s (0 for the runs already in the cache)", flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=["bert-mlm-nsp", "bert-mini-mlm-nsp"])
    parser.add_argument("--rates", type=float, nargs="+", default=[5e-4, 1e-3, 2e-3, 4e-3])
    parser.add_argument("--fractions", type=float, nargs="+", default=[0.1])
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message=".*freshly initialized.*")  # the new classifier, as notebook 10
    torch.manual_seed(0)
    _, heldout_docs = minibert.split_corpus(minibert.load_corpus())  # notebook 10's documents
    task = finetune.which_document(heldout_docs)
    for name in args.names:
        gain(name, task, args.rates, args.fractions, range(args.seeds))


if __name__ == "__main__":
    main()
