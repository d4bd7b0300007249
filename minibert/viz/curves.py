"""Training pictures: learning curves beside their trivial baselines, and top-k predictions as bars."""

import math

import numpy as np
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator, PercentFormatter

from .style import BLACK, BLUE, DARK, GREEN, ORANGE, PURPLE, SKY, VERMILLION, short, suptitle

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


def plot_learning_curves(result, metrics=None, smoothing=0.9):
    """Training loss (raw and smoothed) and held-out metrics over steps, each beside its trivial
    baseline (a dashed line). result: a PretrainResult, or a dict name -> PretrainResult to compare."""
    from ..training.metrics import BASELINE_OF
    results = result if isinstance(result, dict) else {"": result}
    if metrics is None:  # the metrics that have a trivial baseline to beat
        metrics = [m for m in BASELINE_OF if any(m in e for r in results.values() for e in r.evals)]
    n = 1 + len(metrics)
    ncols = 2 if n in (2, 4) else min(3, n)
    nrows = math.ceil(n / ncols)
    fig = Figure(figsize=(5.2 * ncols, 3.6 * nrows + 0.9), dpi=100, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False).flatten()
    ax = axes[0]
    for (name, r), colour in zip(results.items(), LINE_COLOURS):
        steps = [h["step"] for h in r.history]
        losses = [h["loss"] for h in r.history]
        ax.plot(steps, losses, color=colour, alpha=0.25, lw=1, label=f"{name} each batch".strip())
        ax.plot(steps, smooth(losses, smoothing), color=colour, lw=2, label=f"{name} smoothed".strip())
    objectives = {r.args.objective.upper() for r in results.values() if getattr(r, "args", None)}
    ax.set_title(f"training loss{' of ' + ', '.join(sorted(objectives)) if objectives else ''}, one batch per step",
                 fontsize=10)
    ax.set_xlabel("training step")
    ax.set_ylabel("loss")
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
        ax.set_title(f"held-out {metric_label(metric)}", fontsize=10)
        ax.set_xlabel("training step")
        ax.set_ylabel(metric_label(metric))
        if "accuracy" in metric:
            ax.yaxis.set_major_formatter(PercentFormatter(1.0))
        low, high = ax.get_ylim()  # room around the curves, so that a baseline never sits on the frame
        ax.set_ylim(low - 0.08 * (high - low), high + 0.08 * (high - low))
        ax.legend(fontsize=8, frameon=False)
    for ax in axes[n:]:
        ax.axis("off")
    for ax in axes[:n]:
        ax.grid(alpha=0.3)
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    suptitle(fig, "Learning = held-out scores moving away from the dashed line (a model that ignores its input)")
    return fig


def plot_top_k(candidates, title=None, answer=None, panel_titles=None):
    """Top-k predictions as horizontal bars, most likely on top. candidates: a list of (token,
    probability) pairs, or one such list per [MASK] (what BertForMaskedLM.fill_mask returns). For the
    next token: probs.topk(k) of BertForCausalLM's last logits, as (token, probability) pairs.
    answer: the true token (or one per list), drawn in orange."""
    lists = candidates if candidates and isinstance(candidates[0], list) else [candidates]
    answers = answer if isinstance(answer, (list, tuple)) else [answer] * len(lists)
    k = max(len(c) for c in lists)
    top = max((float(p) for c in lists for _, p in c), default=1.0)  # one scale for every panel
    fig = Figure(figsize=(4.6 * len(lists) + 0.4, 0.36 * k + 1.7), dpi=100, layout="constrained")
    axes = fig.subplots(1, len(lists), squeeze=False)[0]
    for i, (ax, pairs) in enumerate(zip(axes, lists)):
        tokens, probs = [str(t) for t, _ in pairs], [float(p) for _, p in pairs]
        colours = [ORANGE if t == answers[i] else BLUE for t in tokens]
        y = np.arange(len(pairs))[::-1]  # most likely on top
        ax.barh(y, probs, color=colours, height=0.7)
        ax.set_yticks(y, [short(t, 14) for t in tokens], fontsize=10)
        for yi, p in zip(y, probs):
            ax.text(p, yi, f" {p:.1%}", va="center", fontsize=8.5)
        ax.set_xlim(0, top * 1.25)  # room for the percentages right of the bars
        ax.xaxis.set_major_locator(MaxNLocator(5))
        ax.set_xticks([t for t in ax.get_xticks() if 0 <= t <= min(1.0, top * 1.25)])  # no tick past 100%
        ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0 if top > 0.1 else 1))
        ax.set_xlabel("probability the model gives")
        ax.spines[["top", "right"]].set_visible(False)
        if panel_titles:
            ax.set_title(panel_titles[i], fontsize=10)
    suptitle(fig, title or f"The model's top {k} guesses" + (" (orange: the true token)" if answer else ""))
    return fig
