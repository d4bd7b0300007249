"""Learning-rate schedule and warm-up as levers: the shipped checkpoints' masked-LM recipe (tiny preset,
64 sequences of 64 tokens a step, peak learning rate 1e-3) for a fixed number of steps, with each
schedule and warm-up share, in several training seeds, scored as the cards are.

    python benchmarks/schedule.py --steps 3000 --seeds 0 1
    python benchmarks/schedule.py --steps 600 --lr 2e-3 --variants linear wsd --seeds 0 1 2   # a live run

Variants: "linear", "cosine" and "wsd" (warm-up, then constant, then a linear decay over the last
fifth: the CLI's default) after a warm-up of 5% of the steps, and "wsd" after 1%, 15% and none. A seed
changes the initial weights, the masks, the order of the examples and which documents are held out,
so compare variants within a seed (the same held-out documents) before comparing means. Runs are kept
in --runs and reused when finished; a subset (--variants, --seeds) can go in another process side by
side, one thread each (OMP_NUM_THREADS=1), and a last call with everything prints the whole table.
Not a test: a script that prints figures.
"""

import argparse
import os
import statistics

from scored_run import train_and_score

from minibert.training.trainer import machine

VARIANTS = {  # name -> (schedule, warm-up share)
    "linear": ("linear", 0.05),
    "cosine": ("cosine", 0.05),
    "wsd": ("wsd", 0.05),
    "wsd-warmup-1%": ("wsd", 0.01),
    "wsd-warmup-15%": ("wsd", 0.15),
    "wsd-no-warmup": ("wsd", 0.0),
}


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--variants", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    parser.add_argument("--runs", default="runs/schedule", help="folder of the training runs")
    args = parser.parse_args()
    print(f"machine: {machine()}; mlm, tiny preset, {args.steps} steps of 64 x 64 tokens, "
          f"peak lr {args.lr:g}")
    print(f"{'variant':>15} {'seed':>5} {'accuracy %':>11} {'most frequent %':>16} {'loss':>6} "
          f"{'blanks top-1 %':>15} {'top-5 %':>8} {'minutes':>8}")
    accuracies = {}
    for name in args.variants:
        schedule, warmup = VARIANTS[name]
        for seed in args.seeds:
            lr = "" if args.lr == 1e-3 else f"-lr{args.lr:g}"
            run = os.path.join(args.runs, f"mlm-{name}-seed{seed}-{args.steps}{lr}")
            scores, minutes, _ = train_and_score(run, preset="tiny", steps=args.steps, batch_size=64, max_length=64,
                                                 lr=args.lr, schedule=schedule, warmup=warmup, seed=seed,
                                                 eval_every=max(1, args.steps // 4))
            accuracies.setdefault(name, []).append(scores["mlm_accuracy"])
            print(f"{name:>15} {seed:>5} {scores['mlm_accuracy']:>11.2f} "
                  f"{scores['mlm_most_frequent_token_accuracy']:>16.2f} {scores['mlm_loss']:>6.2f} "
                  f"{scores['blanks_top1']:>15.0f} {scores['blanks_top5']:>8.0f} {minutes:>8.1f}", flush=True)
    if len(args.seeds) > 1:
        print("\nmean held-out accuracy over the seeds, and each seed's difference from wsd with 5% warm-up:")
        for name, values in accuracies.items():
            line = f"{name:>15} {statistics.mean(values):6.2f}%"
            if "wsd" in accuracies and name != "wsd":
                line += "  " + ", ".join(f"{a - b:+.2f}" for a, b in zip(values, accuracies["wsd"]))
            print(line)


if __name__ == "__main__":
    main()
