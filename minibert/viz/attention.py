"""Heatmaps: the attention masks of encoder and decoder, and the attention weights of a model's
heads (one head, a layer's heads, every head), with an explorer for JupyterLab and an export for bertviz."""

import io
import json
import math

import numpy as np
import torch
from matplotlib.colors import ListedColormap
from matplotlib.figure import Figure
from matplotlib.patches import Patch, Rectangle
from matplotlib.ticker import MaxNLocator

from .style import BLACK, BLUE, DARK, FONT, GREY, ORANGE, short, suptitle, tint, wrap


def set_token_ticks(ax, tokens, n, axis="both", size=None):
    """Token names on the axes when they fit, every k-th position ('index token') when they do not."""
    step = 1 if n <= 48 else math.ceil(n / 24)
    positions = list(range(0, n, step))
    if tokens is None:
        names = [str(p) for p in positions]
    else:
        names = [short(tokens[p], 12) if step == 1 else f"{p} {short(tokens[p], 8)}" for p in positions]
    size = size or (9 if n <= 16 else 7.5 if n <= 32 else 6)
    if axis in ("both", "x"):
        ax.set_xticks(positions, names, rotation=90, fontsize=size)
    if axis in ("both", "y"):
        ax.set_yticks(positions, names, fontsize=size)


def cell_lines(ax, rows, cols):
    """White lines between the cells of a small grid, so that cells can be counted."""
    if rows <= 64 and cols <= 64:
        ax.set_xticks(np.arange(cols + 1) - 0.5, minor=True)
        ax.set_yticks(np.arange(rows + 1) - 0.5, minor=True)
        ax.grid(which="minor", color="white", lw=0.8)
        ax.tick_params(which="minor", length=0)


MASK_COLOURS = ListedColormap(["#E4E4E4", BLUE, tint(ORANGE, 0.2)])  # blocked (future), allowed, blocked (padding)


def plot_attention_masks(attention_mask, tokens=None, row=None):
    """The batch's attention_mask (B, T) and, for one row, the masks three kinds of model apply: an
    encoder (bidirectional, padding hidden), a plain causal mask, and a decoder's real mask (causal AND
    padding). row: which sequence (default: the first with padding); tokens: that row's tokens."""
    mask = torch.as_tensor(attention_mask).long()
    mask = mask[None] if mask.dim() == 1 else mask
    B, T = mask.shape
    if row is None:
        padded = (mask == 0).any(1).nonzero().flatten()
        row = int(padded[0]) if len(padded) else 0
    if tokens is not None and len(tokens) and isinstance(tokens[0], (list, tuple)):
        tokens = tokens[row]
    keep = mask[row].bool()
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    key_ok = keep[None, :].expand(T, T)
    encoder = torch.where(key_ok, 1, 2)
    causal_only = torch.where(causal, 1, 0)
    decoder = torch.where(~key_ok, 2, causal_only)
    side = min(4.6, max(3.2, 0.13 * T + 1.4))
    fig = Figure(figsize=(3 * side + 1.0, side + 0.6 + 0.25 * B + 1.8), dpi=100, layout="constrained")
    grid = fig.add_gridspec(2, 3, height_ratios=[0.25 * B + 0.35, side])
    top = fig.add_subplot(grid[0, :])
    top.imshow(torch.where(mask.bool(), 1, 2).numpy(), cmap=MASK_COLOURS, vmin=0, vmax=2, aspect="auto",
               interpolation="nearest")
    cell_lines(top, B, T)
    if T <= 40 and B <= 8:  # the tensor's own values
        for (b, p), value in np.ndenumerate(mask.numpy()):
            top.text(p, b, str(value), ha="center", va="center", fontsize=8, color="white" if value else BLACK)
    top.add_patch(Rectangle((-0.5, row - 0.5), T, 1, fill=False, edgecolor=BLACK, lw=2.2))
    top.set_yticks(range(B), [f"{b}" + (" (shown below)" if b == row else "") for b in range(B)], fontsize=8)
    top.set_ylabel("batch row", fontsize=9)
    top.set_xlabel("position", fontsize=9)
    top.xaxis.set_major_locator(MaxNLocator(integer=True))
    top.set_title(f"attention_mask from the tokenizer, shape ({B}, {T}): 1 = real token, 0 = [PAD]",
                  fontsize=10, loc="left")
    panels = [(encoder, "Encoder (BERT): every token sees\nevery real token, both ways"),
              (causal_only, "Causal mask: a token sees itself\nand the past, never the future"),
              (decoder, "Decoder (BertForCausalLM): causal\nAND padding, what it really uses")]
    names = None if tokens is None else [("\u25cf " if not keep[p] else "") + str(t) for p, t in enumerate(tokens)]
    for i, (cells, name) in enumerate(panels):
        ax = fig.add_subplot(grid[1, i])
        ax.imshow(cells.numpy(), cmap=MASK_COLOURS, vmin=0, vmax=2, interpolation="nearest")
        set_token_ticks(ax, names, T)
        cell_lines(ax, T, T)
        ax.set_xlabel("key: the token looked at", fontsize=9)
        if i == 0:
            ax.set_ylabel("query: the token looking", fontsize=9)
        ax.set_title(name, fontsize=10)
    suptitle(fig, "A decoder needs BOTH masks: causal (no peeking ahead) AND padding (no reading [PAD])", 13)
    fig.legend(handles=[Patch(facecolor=BLUE, label="may attend"),
                        Patch(facecolor="#E4E4E4", edgecolor=GREY, label="blocked: a future token"),
                        Patch(facecolor=tint(ORANGE, 0.2), label="blocked: padding (\u25cf marks [PAD] positions)")],
               loc="outside lower center", ncol=3, frameon=False, fontsize=FONT)
    return fig


def attention_weights(attentions, layer, head, batch=0):
    """(T, T) numpy array of one head from out.attentions (a tuple over layers of (B, heads, T, T))."""
    if not 0 <= layer < len(attentions):
        raise ValueError(f"layer {layer} does not exist: the model has {len(attentions)} layers "
                         f"(0..{len(attentions) - 1})")
    heads = attentions[layer].shape[1]
    if not 0 <= head < heads:
        raise ValueError(f"head {head} does not exist: layer {layer} has {heads} heads (0..{heads - 1})")
    return attentions[layer][batch, head].detach().float().cpu().numpy()


def check_tokens(attentions, tokens):
    T = attentions[0].shape[-1]
    if tokens is not None and len(tokens) != T:
        raise ValueError(f"{len(tokens)} tokens for attention over {T} positions: pass the tokens of that input")
    return T


def heatmap(ax, weights, tokens, vmax, ticks="both", size=None):
    """ticks: the axes that get token names ("both", "x", "y" or None)."""
    image = ax.imshow(weights, cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
    ax.set_xticks([])
    ax.set_yticks([])
    if ticks:
        set_token_ticks(ax, tokens, len(weights), ticks, size)
    return image


def attention_figure(attentions, tokens, cells, title, note, batch, ticks=True, labels=True, vmax=None):
    """A grid of heatmaps on one colour scale, cells: rows of (layer, head). vmax: the top of the scale
    (default: the largest weight shown); pass the same vmax (1 suits probabilities) to figures that are to be
    compared. The colour bar marks 1/T (T: the tokens that are not padding), what every cell would hold if
    attention were uniform (in a causal map, what its last row's cells would hold): brighter cells are what a
    head singles out."""
    T = check_tokens(attentions, tokens)
    nrows, ncols = len(cells), max(len(r) for r in cells)
    panel = (min(6.5, max(3.0, 0.16 * T + 1.6)) if ticks else min(4.0, max(2.0, 8.5 / ncols)))
    weights = {(l, h): attention_weights(attentions, l, h, batch) for r in cells for l, h in r}
    largest = max(float(w.max()) for w in weights.values())
    vmax = largest if vmax is None else vmax
    width = ncols * panel + (2.2 if ticks else 1.6)
    fig = Figure(figsize=(width, nrows * panel + (1.2 if ticks else 1.0)), dpi=100, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    small = min(8, max(5, 50 * panel / T))  # about 0.7 of a row's height in points, and 8 pt at most
    for i, r in enumerate(cells):
        for j in range(ncols):
            ax = axes[i][j]
            if j >= len(r):
                ax.axis("off")
                continue
            layer, head = r[j]
            if ticks:
                image = heatmap(ax, weights[layer, head], tokens, vmax)
            else:  # small panels: token names on the left column and the bottom row only, in small type
                axes_named = "".join(a for a, edge in (("x", i == nrows - 1), ("y", j == 0)) if edge)
                image = heatmap(ax, weights[layer, head], tokens, vmax, {"xy": "both"}.get(axes_named, axes_named),
                                size=small)
            if len(weights) > 1:
                ax.set_title(f"layer {layer}, head {head}", fontsize=10)
            if labels and i == nrows - 1:
                ax.set_xlabel("key: the token looked at", fontsize=9)
            if labels and j == 0:
                ax.set_ylabel("query: the token looking", fontsize=9)
    bar = fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight (each row sums to 1)",
                       extend="max" if largest > vmax else "neither")
    keys = int((sum(w.sum(0) for w in weights.values()) > 1e-6).sum())  # padding receives no attention
    if T > 1 and all(np.triu(w, 1).max() == 0 for w in weights.values()):
        # a causal map: query t reads only keys 0..t, so its uniform weight is 1/(t + 1), not 1/T
        mark_uniform(bar, 1 / keys, f"uniform, last row: 1/{keys}")
        note += (" Causal: row t may read only keys 0..t, so uniform attention gives each of them 1/(t+1); "
                 f"the bar marks the last row's 1/{keys}.")
    else:
        mark_uniform(bar, 1 / keys, f"uniform: 1/{keys}")
    suptitle(fig, title)
    fig.supxlabel(wrap(note, width, 9.5), fontsize=9.5, color=DARK)
    return fig


def mark_uniform(bar, level, label):
    """A line across the colour bar at the weight of uniform attention, named among its tick labels."""
    bar.ax.axhline(level, color="white", lw=2.5)
    bar.ax.axhline(level, color=BLACK, lw=1, ls=(0, (2, 2)))
    low, high = bar.ax.get_ylim()
    ticks = [t for t in bar.get_ticks() if low <= t <= high and abs(t - level) > 0.07 * (high - low)]
    bar.set_ticks(ticks + [level], labels=[f"{t:.2g}" for t in ticks] + [label])


def plot_attention(attentions, tokens, layer=0, head=0, batch=0, title=None, vmax=None):
    """One head's attention weights: row = the token looking (query), column = the token looked at (key).
    attentions: out.attentions of any minibert model called with output_attentions=True. vmax: the top of
    the colour scale (default: the largest weight); vmax=1 puts maps that are to be compared on one scale."""
    return attention_figure(attentions, tokens, [[(layer, head)]],
                            title or f"Layer {layer}, head {head}: each row is one token, spreading its attention "
                                     "over the tokens it reads",
                            "A bright cell: the row's token reads the column's token.", batch, vmax=vmax)


def plot_attention_heads(attentions, tokens, layer=0, batch=0, per_row=4, title=None, vmax=None):
    """Every head of one layer side by side, on one colour scale: each head learns its own pattern.
    vmax: as in plot_attention; vmax=1 to compare the figures of two layers."""
    attention_weights(attentions, layer, 0, batch)  # checks that the layer exists
    heads = attentions[layer].shape[1]
    cells = [[(layer, h) for h in range(s, min(heads, s + per_row))] for s in range(0, heads, per_row)]
    title = title or f"The {heads} heads of layer {layer} look at different things"
    return attention_figure(attentions, tokens, cells, title,
                            "Each head has its own queries and keys, so each learns its own pattern.", batch,
                            vmax=vmax)


def plot_attention_overview(attentions, tokens=None, batch=0, title=None, vmax=None):
    """Layers x heads small multiples, token names on the outer panels only: the patterns at a glance.
    vmax: as in plot_attention."""
    layers, heads = len(attentions), attentions[0].shape[1]
    cells = [[(l, h) for h in range(heads)] for l in range(layers)]
    T = check_tokens(attentions, tokens)
    title = title or (f"All {layers * heads} heads at a glance ({T} tokens): a head brighter than the 1/{T} mark "
                      "singles some tokens out")
    return attention_figure(attentions, tokens, cells, title,
                            "Panel rows = layers, panel columns = heads. In each panel: one row per query, one "
                            "column per key, as in plot_attention.", batch,
                            ticks=False, labels=False, vmax=vmax)


def figure_png(fig, dpi=80):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def attention_explorer(attentions, tokens, batch=0, vmax=None):
    """An ipywidgets explorer for JupyterLab: sliders for layer and head over one heatmap. vmax: as in
    plot_attention; a fixed vmax (1) keeps the colours comparable as the sliders move."""
    import ipywidgets as widgets  # imported here: only the explorer needs it
    check_tokens(attentions, tokens)
    layer = widgets.IntSlider(value=0, min=0, max=len(attentions) - 1, description="layer")
    head = widgets.IntSlider(value=0, min=0, max=attentions[0].shape[1] - 1, description="head")
    image = widgets.Image(format="png")

    def draw(_=None):
        image.value = figure_png(plot_attention(attentions, tokens, layer.value, head.value, batch, vmax=vmax))

    layer.observe(draw, names="value")
    head.observe(draw, names="value")
    draw()
    return widgets.VBox([widgets.HBox([layer, head]), image])


def to_bertviz(attentions, tokens, batch=0, sentence_b_start=None):
    """The arguments of bertviz's head_view / model_view: head_view(**to_bertviz(out.attentions, tokens)).
    attention: a tuple over layers of (1, heads, T, T) tensors (one sequence of the batch)."""
    check_tokens(attentions, tokens)
    out = {"attention": tuple(a[batch:batch + 1].detach().float().cpu() for a in attentions), "tokens": list(tokens)}
    if sentence_b_start is not None:
        out["sentence_b_start"] = int(sentence_b_start)
    return out


def save_bertviz_json(path, attentions, tokens, batch=0, sentence_b_start=None):
    """The same as plain JSON lists, to load elsewhere: torch.tensor(data["attention"][layer])."""
    data = to_bertviz(attentions, tokens, batch, sentence_b_start)
    data["attention"] = [a.tolist() for a in data["attention"]]
    with open(path, "w", encoding="utf-8") as f:
        json.dump(data, f)
    return path
