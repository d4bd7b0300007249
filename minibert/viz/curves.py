"""Training pictures: learning curves beside their trivial baselines, and top-k predictions as bars."""

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter, StrMethodFormatter

from .style import BLACK, BLUE, DARK, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION, short, suptitle

LINE_COLOURS = (BLUE, VERMILLION, GREEN, ORANGE, PURPLE, SKY, BLACK)


def smooth(values, weight=0.9):
    """Exponential moving average, debiased so that it starts at the first values (as TensorBoard)."""
    out, avg = [], 0.0
    for i, v in enumerate(values, 1):
        avg = weight * avg + (1 - weight) * v
        out.append(avg / (1 - weight ** i))
    return out


def metric_label(name):
    return name.replace("_", " ").replace("mlm", "MLM").replace("clm", "next-token").replace("nsp", "NSP") \
        .replace("sop", "SOP")


def loss_baseline(result):
    """The training loss of a model that ignores its input, where the result holds it: the unigram loss of a run
    trained on one token-prediction loss (clm or mlm). A loss summed with NSP or SOP has none recorded."""
    objective = getattr(getattr(result, "args", None), "objective", None)
    return result.baselines.get(f"{objective}_unigram_loss") if objective else None


def plot_learning_curves(result, metrics=None, smoothing=0.9):
    """Training loss (raw and smoothed) and held-out metrics over steps, each beside its trivial
    baseline (a dashed line; the training loss has one where the result holds it, see loss_baseline).
    result: a PretrainResult, or a dict name -> PretrainResult to compare."""
    from ..training.metrics import BASELINE_OF
    results = result if isinstance(result, dict) else {"": result}
    if metrics is None:  # the metrics that have a trivial baseline to beat
        metrics = [m for m in BASELINE_OF if any(m in e for r in results.values() for e in r.evals)]
    n = 1 + len(metrics)
    ncols = 2 if n in (2, 4) else min(3, n)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(5.2 * ncols, 3.6 * nrows + 0.9), dpi=100, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).flatten()
    without_baseline = []  # the panels that have no dashed line, named in the title
    ax = axes[0]
    for (name, r), colour in zip(results.items(), LINE_COLOURS):
        steps = [h["step"] for h in r.history]
        losses = [h["loss"] for h in r.history]
        ax.plot(steps, losses, color=colour, alpha=0.25, lw=1, label=f"{name} each batch".strip())
        ax.plot(steps, smooth(losses, smoothing), color=colour, lw=2, label=f"{name} smoothed".strip())
    levels = {loss_baseline(r) for r in results.values()}
    for value in sorted(levels - {None}):
        ax.axhline(value, color=DARK, ls="--", lw=1.3, label=f"baseline: unigram ({value:.2f})")
    if None in levels:
        without_baseline.append("training loss")
    objectives = {r.args.objective.upper() for r in results.values() if getattr(r, "args", None)}
    ax.set_title(f"training loss{' of ' + ', '.join(sorted(objectives)) if objectives else ''}, one batch per step",
                 fontsize=10)
    ax.set_xlabel("training step")
    ax.set_ylabel("loss (nats)")
    ax.legend(fontsize=8, frameon=False)
    for ax, metric in zip(axes[1:], metrics):
        drawn = set()
        for (name, r), colour in zip(results.items(), LINE_COLOURS):
            evals = [e for e in r.evals if metric in e]
            ax.plot([e["step"] for e in evals], [e[metric] for e in evals], "o-", color=colour, lw=2, ms=4,
                    label=f"{name} held-out".strip())
            if metric in BASELINE_OF and BASELINE_OF[metric][0] in r.baselines:
                key, what = BASELINE_OF[metric]
                value = r.baselines[key]
                if value not in drawn:
                    drawn.add(value)
                    answer = r.baselines.get(key.replace("_accuracy", ""))
                    what = f"always {answer!r}" if answer is not None and "token" in key else what
                    shown = f"{value:.1%}" if "accuracy" in metric else f"{value:.2f}"
                    ax.axhline(value, color=DARK, ls="--", lw=1.3, label=f"baseline: {what} ({shown})")
        if not drawn:
            without_baseline.append(f"held-out {metric_label(metric)}")
        ax.set_title(f"held-out {metric_label(metric)}", fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel(metric_label(metric) + (" (nats)" if metric.endswith("_loss") else ""))
        if "accuracy" in metric:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        low, high = ax.get_ylim()  # room around the curves, so that a baseline never sits on the frame
        ax.set_ylim(low - 0.08 * (high - low), high + 0.08 * (high - low))
        ax.legend(fontsize=8, frameon=False)
    for ax in axes[n:]:
        ax.axis("off")
    last = max(x["step"] for r in results.values() for x in r.history + r.evals)
    for ax in axes[:n]:  # one step axis for every panel: the same range and the same ticks
        ax.grid(alpha=0.3)
        ax.set_xlim(-0.02 * last, 1.02 * last)
        ax.xaxis.set_major_locator(MaxNLocator(nbins=8, steps=[1, 2, 5, 10], integer=True))  # 600 steps: 0-600 by 100
        ax.xaxis.set_major_formatter(StrMethodFormatter("{x:,.0f}"))
    title = "Learning = curves moving away from the dashed line (a model that ignores its input)"
    if without_baseline:
        title += f"; none is recorded for the {' or the '.join(without_baseline)}"
    suptitle(fig, title)
    return fig


def plot_top_k(candidates, title=None, answer=None, panel_titles=None, k=None, xmax=None):
    """Top-k predictions as horizontal bars, most likely on top, on one scale for every panel.
    candidates: a list of (token, probability) pairs, most likely first, or one such list per [MASK]
    (what BertForMaskedLM.fill_mask returns). For the next token: probs.topk(k) of BertForCausalLM's
    last logits, as (token, probability) pairs. answer: the true token (or one per list), drawn in
    orange; one not among the bars is drawn below them with its rank where the list goes on that far
    (fill_mask with a larger top_k), else said to be outside the list. k: how many bars (default: the
    longest list). xmax: the probability at the axis's right end; 1 draws 0-100%, so that two pictures
    compare; None fits the largest bar."""
    lists = candidates if candidates and isinstance(candidates[0], list) else [candidates]
    answers = answer if isinstance(answer, (list, tuple)) else [answer] * len(lists)
    k = k or max(len(c) for c in lists)
    top = max((float(p) for c in lists for _, p in c[:k]), default=1.0)
    right = xmax or top * 1.25  # fitted: room for the percentages right of the bars
    missing = [a is not None and a not in [str(t) for t, _ in c[:k]] for c, a in zip(lists, answers)]
    fig = Figure(figsize=(4.6 * len(lists) + 0.4, 0.36 * (k + 1.5 * any(missing)) + 1.7), dpi=100,
                 layout="constrained")
    axes = fig.subplots(1, len(lists), squeeze=False)[0]
    for i, (ax, pairs) in enumerate(zip(axes, lists)):
        tokens, probs = [str(t) for t, _ in pairs[:k]], [float(p) for _, p in pairs[:k]]
        y = list(k - 1 - np.arange(len(tokens)))  # most likely on top
        ax.barh(y, probs, color=[ORANGE if t == answers[i] else BLUE for t in tokens], height=0.7)
        for yi, p in zip(y, probs):
            if p > 0.8 * right:  # inside a bar that nearly reaches the axis's end
                ax.text(p - 0.01 * right, yi, f"{p:.1%}", va="center", ha="right", fontsize=8.5, color="white")
            else:
                ax.text(p, yi, f" {p:.1%}", va="center", fontsize=8.5)
        labels = [short(t, 14) for t in tokens]
        if missing[i]:  # the true token below the bars, past a dotted line
            ranked = [str(t) for t, _ in pairs]
            ax.axhline(-0.75, color=GREY, lw=0.8, ls=":")
            y.append(-1.5)
            labels.append(short(answers[i], 14))
            if answers[i] in ranked:
                rank = ranked.index(answers[i])
                p = float(pairs[rank][1])
                ax.barh([-1.5], [p], color=ORANGE, height=0.7)
                ax.text(p, -1.5, f" true token: {p:.1%}, rank {rank + 1:,}", va="center", fontsize=8.5)
            else:
                ax.text(0.01 * right, -1.5, f"true token, not in the top {len(pairs)}", va="center", fontsize=8.5,
                        color=DARK)
        ax.set_yticks(y, labels, fontsize=10)
        ax.set_ylim(-2.2 if any(missing) else -0.6, k - 0.4)
        ax.set_xlim(0, right)
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.set_xticks([t for t in ax.get_xticks() if 0 <= t <= min(1.0, right)])  # no tick past 100%
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0 if right > 0.125 else 1))
        ax.set_xlabel("probability the model gives")
        ax.spines[["top", "right"]].set_visible(False)
        if panel_titles:
            ax.set_title(panel_titles[i], fontsize=10)
    suptitle(fig, title or f"The model's top {k} guesses" + (" (orange: the true token)" if answer else ""))
    return fig
