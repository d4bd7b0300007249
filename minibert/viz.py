"""The course's pictures, one function per picture; each returns a matplotlib Figure.

    from minibert import viz
    viz.plot_label_shift(tokens)                    # next-token prediction: the shift inside the model
    viz.plot_double_shift(tokens)                   # the bug: labels shifted twice
    viz.plot_mlm_masking(collator, tokenizer, ids)  # what masked LM did to each token
    viz.plot_nsp_example(tokenizer, example)        # [CLS] A [SEP] B [SEP], segment ids, the label in words
    viz.plot_objectives(tokenizer, a, b)            # the three objectives in one picture
    viz.plot_attention_masks(attention_mask)        # encoder, causal and decoder masks
    viz.plot_attention(out.attentions, tokens, layer, head), plot_attention_heads, plot_attention_overview
    viz.plot_learning_curves(result)                # training loss, held-out metrics, trivial baselines
    viz.plot_top_k(candidates)                      # top-k predictions as bars

Figures are made without pyplot (no global state, nothing shown twice in a notebook): a figure
that is the last value of a cell is displayed, `fig.savefig(path)` writes it. Colours are
Okabe-Ito's, told apart with every common colour-vision deficiency; grey always means "ignored".
Token pictures wrap every `per_line` positions, so 4 to 128 tokens stay legible.
"""

import io
import json
import math
import textwrap
from dataclasses import dataclass, field

import numpy as np
import torch
from matplotlib.colors import ListedColormap, to_rgb
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch, Rectangle
from matplotlib.ticker import MaxNLocator, PercentFormatter

from .data import DECISIONS, IGNORE_INDEX, KEPT, MASKED, NOT_SELECTED, RANDOM, MLMCollator
from .labels import shift_labels

# Okabe & Ito (2008), the colour-blind-safe palette
BLUE, SKY, GREEN, ORANGE, VERMILLION, PURPLE, YELLOW, BLACK = (
    "#0072B2", "#56B4E9", "#009E73", "#E69F00", "#D55E00", "#CC79A7", "#F0E442", "#000000")
GREY, DARK = "#9A9A9A", "#333333"


def tint(colour, amount=0.55):
    """The colour mixed with white: a box fill light enough for black text."""
    return tuple(c + (1 - c) * amount for c in to_rgb(colour))


# box styles of the token pictures: name -> (fill, edge, text colour)
STYLES = {
    "token": ("white", DARK, BLACK),
    "input": (tint(SKY, 0.5), BLUE, BLACK),
    "target": (tint(GREEN), GREEN, BLACK),
    "wrong": (tint(VERMILLION), VERMILLION, BLACK),
    "ignored": ("#EDEDED", "#C8C8C8", GREY),
    "special": ("#F4F4F4", DARK, DARK),
    "segment A": (tint(SKY, 0.5), BLUE, BLACK),
    "segment B": (tint(ORANGE, 0.45), ORANGE, BLACK),
    "not selected": ("white", DARK, BLACK),  # the four names of minibert.data.DECISIONS
    "masked": (tint(BLUE, 0.45), BLUE, BLACK),
    "random token": (tint(VERMILLION, 0.45), VERMILLION, BLACK),
    "kept": (tint(PURPLE, 0.45), PURPLE, BLACK),
}

# sizes in inches: a token column, a row unit, the room for row names and for the title lines
CELL_W, CELL_H, NAME_W, MIN_WIDTH = 0.88, 0.42, 2.0, 8.0
BOX_W, BOX_H = 0.9, 0.8  # a token box, in column and row units
MAX_CHARS = 11  # longer tokens are cut with an ellipsis
FONT, SMALL = 9, 7.5


def short(text, n=MAX_CHARS):
    text = str(text)
    return text if len(text) <= n else text[:n - 1] + "\u2026"


# ---- titles, legends and canvases shared by every picture ----
def wrap(text, width_in, size):
    """Wrap text to a figure width: about 0.55 em per character."""
    return textwrap.fill(text, max(20, int(width_in * 72 / (0.55 * size)))) if text else ""


def header(fig, title, subtitle, width_in, height_in=None):
    """Title (what to notice) and subtitle (how to read) at the top left. Returns the inches they
    take; draws them only once the figure's height is known (fig may then be None)."""
    y = 0.12
    for text, size, weight, colour in ((title, 13, "bold", BLACK), (subtitle, 10, "normal", DARK)):
        text = wrap(text, width_in - 0.3, size)
        if text and height_in:
            fig.text(0.15 / width_in, 1 - y / height_in, text, fontsize=size, weight=weight, color=colour,
                     va="top", ha="left")
        y += (text.count("\n") + 1) * size * 1.35 / 72 + 0.06 if text else 0
    return y + 0.2


def suptitle(fig, title, size=12):
    """The bold title of a chart figure, wrapped to its width."""
    fig.suptitle(wrap(title, fig.get_figwidth() - 0.3, size * 1.1), fontsize=size, weight="bold")


def legend_layout(labels, width_in):
    """(columns, rows) of a legend that fits the width."""
    entry = 0.55 + 0.075 * max(len(s) for s in labels)
    ncol = max(1, min(len(labels), int((width_in - 0.3) / entry)))
    return ncol, math.ceil(len(labels) / ncol)


def style_handles(names, labels=None):
    labels = labels or names
    return [Patch(facecolor=STYLES[n][0], edgecolor=STYLES[n][1], label=label) for n, label in zip(names, labels)]


def add_legend(fig, handles, width_in, height_in):
    ncol, _ = legend_layout([h.get_label() for h in handles], width_in)
    return fig.legend(handles=handles, loc="lower left", bbox_to_anchor=(0.1 / width_in, 0.08 / height_in),
                      ncol=ncol, frameon=False, fontsize=FONT, handlelength=1.6, columnspacing=1.6)


# ---- token rows: boxes aligned by position, wrapped into bands ----
@dataclass
class Row:
    name: str  # shown left of the row
    texts: list  # one per position
    styles: list  # a STYLES key per position
    space: float = 0.3  # empty row units above the row (room for arrows)
    reach: int = 0  # positions drawn past a band's end, faded: where arrows from the band's last positions land


@dataclass
class Section:
    rows: list
    heading: str = ""  # shown above the section (plot_objectives)
    arrows: list = field(default_factory=list)  # (from row, position, to row, position, colour, gid)
    brackets: list = field(default_factory=list)  # (row, first position, last position): pieces of one word


NUMBERS_H, ROW_H, BAND_GAP, HEADING_H = 0.55, 1.0, 0.55, 1.0  # in row units


def section_height(section, per_line):
    n = len(section.rows[0].texts)
    band = NUMBERS_H + sum(r.space + ROW_H for r in section.rows) + BAND_GAP
    return (HEADING_H if section.heading else 0) + math.ceil(n / per_line) * band


def token_figure(sections, per_line, title, subtitle, legend):
    """A figure that draws sections of token rows. sections: list of Section; legend: Patch handles."""
    per_line = max(1, per_line)
    longest = max(len(s.rows[0].texts) + max(r.reach for r in s.rows) for s in sections)
    columns = min(per_line + max(r.reach for s in sections for r in s.rows), longest)
    width = max(MIN_WIDTH, NAME_W + columns * CELL_W + 0.3)
    units = sum(section_height(s, per_line) for s in sections)
    top = header(None, title, subtitle, width)
    _, legend_rows = legend_layout([h.get_label() for h in legend], width) if legend else (0, 0)
    bottom = 0.15 + 0.28 * legend_rows
    height = top + units * CELL_H + bottom
    fig = Figure(figsize=(width, height), dpi=100)
    header(fig, title, subtitle, width, height)
    ax = fig.add_axes((0, bottom / height, 1, units * CELL_H / height))
    ax.set_xlim(-NAME_W / CELL_W, (width - NAME_W) / CELL_W)
    ax.set_ylim(-units, 0)
    ax.axis("off")
    y = 0.0
    for section in sections:
        y = draw_section(ax, section, y, per_line)
    if legend:
        add_legend(fig, legend, width, height)
    return fig


def draw_section(ax, section, y, per_line):
    """Draw one section from height y down; returns the height where it ends."""
    if section.heading:
        ax.text(-NAME_W / CELL_W + 0.2, y - 0.45, section.heading, fontsize=10.5, weight="bold", va="center")
        y -= HEADING_H
    n = len(section.rows[0].texts)
    centres = []  # per band: the y of each row's centre
    for band in range(math.ceil(n / per_line)):
        start, stop = band * per_line, min(n, (band + 1) * per_line)
        for p in range(start, stop):
            ax.text(p - start, y - NUMBERS_H / 2, str(p), fontsize=SMALL - 0.5, color=GREY, ha="center", va="center")
        y -= NUMBERS_H
        ys = []
        for row in section.rows:
            y -= row.space + ROW_H / 2
            ys.append(y)
            ax.text(-0.65, y, row.name, fontsize=FONT, ha="right", va="center", color=DARK)
            for p in range(start, min(len(row.texts), stop + row.reach)):
                token_box(ax, p - start, y, row.texts[p], row.styles[p], faded=p >= stop)
            y -= ROW_H / 2
        centres.append(ys)
        y -= BAND_GAP
    for r, first, last in section.brackets:  # a line under the pieces of one word, cut at band ends
        for band in range(first // per_line, last // per_line + 1):
            start = band * per_line
            a, b = max(first, start) - start, min(last, start + per_line - 1) - start
            yb = centres[band][r] - BOX_H / 2 - 0.12
            ax.plot([a - BOX_W / 2, b + BOX_W / 2], [yb, yb], color=DARK, lw=2.2, solid_capstyle="butt")
    for r0, p0, r1, p1, colour, gid in section.arrows:
        band = p0 // per_line
        x0, x1 = p0 - band * per_line, p1 - band * per_line
        y0, y1 = centres[band][r0], centres[band][r1]
        down = 1 if y1 < y0 else -1
        arrow = FancyArrowPatch((x0, y0 - down * BOX_H / 2), (x1, y1 + down * BOX_H / 2), arrowstyle="-|>",
                                mutation_scale=11, color=colour, lw=1.4, shrinkA=1, shrinkB=1)
        arrow.set_gid(gid)
        ax.add_patch(arrow)
    return y


def token_box(ax, x, y, text, style, faded=False):
    fill, edge, colour = STYLES[style]
    box = FancyBboxPatch((x - BOX_W / 2, y - BOX_H / 2), BOX_W, BOX_H, boxstyle="round,pad=0,rounding_size=0.12",
                         mutation_aspect=CELL_W / CELL_H, facecolor=fill, edgecolor=edge, lw=1.0,
                         alpha=0.45 if faded else 1.0, linestyle="--" if faded else "-")
    box.set_gid(style)
    ax.add_patch(box)
    text = short(text)
    size = FONT if len(text) <= 9 else FONT * 9.5 / len(text)  # long tokens in smaller type, to fit the box
    ax.text(x, y, text, fontsize=size, ha="center", va="center", color=colour, alpha=0.5 if faded else 1.0)


def as_list(x):
    return x.tolist() if hasattr(x, "tolist") else list(x)


def label_text(label):
    """Labels may be token strings or ids; -100 (or None) is shown as -100."""
    return "-100" if is_ignored(label) else str(label)


def is_ignored(label):
    return label is None or label == IGNORE_INDEX or label == str(IGNORE_INDEX)


def check_same_length(**seqs):
    lengths = {k: len(v) for k, v in seqs.items()}
    if len(set(lengths.values())) > 1:
        raise ValueError("these must have one entry per position: " +
                         ", ".join(f"{k} has {n}" for k, n in lengths.items()))
    if not next(iter(lengths.values())):
        raise ValueError("nothing to draw: the sequence is empty")


# ---- next-token prediction ----
def label_shift_section(tokens, labels=None, heading=""):
    """input_ids over labels, an arrow from each position to the label the model's shift gives it."""
    tokens = as_list(tokens)
    labels = tokens if labels is None else as_list(labels)
    check_same_length(tokens=tokens, labels=labels)
    n = len(tokens)
    # the package's own shift, applied to label positions: target[t] is the position of t's label
    where = torch.tensor([IGNORE_INDEX if is_ignored(x) else p for p, x in enumerate(labels)])
    target = shift_labels(where[None])[0].tolist()
    learns = [t != IGNORE_INDEX for t in target]
    inputs = Row("input_ids\n(what it reads)", tokens, ["input" if ok else "ignored" for ok in learns], space=0)
    label_styles = ["ignored" if is_ignored(x) else "target" for x in labels]
    if labels and not is_ignored(labels[0]):
        label_styles[0] = "token"  # nothing predicts the first token: the shift drops it
    row = Row("labels\n(what you pass)", [label_text(x) for x in labels], label_styles, space=1.1, reach=1)
    arrows = [(0, p, 1, t, GREEN, "shift-arrow") for p, t in enumerate(target) if t != IGNORE_INDEX]
    return Section([inputs, row], heading, arrows), n


def plot_label_shift(tokens, labels=None, title=None, per_line=12):
    """Next-token prediction: each position is trained on the label one step to its right.

    tokens: the input tokens as strings; labels: what you pass to BertForCausalLM, one per token, a
    token string or -100 (ignored: padding, a prompt that is not learned); None = the tokens
    themselves (labels = input_ids). The arrows are the model's own shift (minibert.shift_labels).
    """
    section, n = label_shift_section(tokens, labels)
    learned = len(section.arrows)
    title = title or "Each position learns the NEXT token: the model shifts the labels by one itself"
    subtitle = (f"You pass labels = input_ids; position t is trained on label t+1 (arrows). {learned} of {n} "
                "positions learn: -100 labels are ignored, and nothing follows the last token.")
    legend = style_handles(["input", "target", "token", "ignored"],
                           ["position that learns", "label it learns", "first label: nothing predicts it",
                            "ignored (-100, or no next token)"])
    return token_figure([section], per_line, title, subtitle, legend)


def plot_double_shift(tokens, title=None, per_line=12):
    """The bug: labels shifted by the user and again by the model train position t on token t+2."""
    tokens = as_list(tokens)
    n = len(tokens)
    check_same_length(tokens=tokens)
    position = torch.arange(n)[None]
    once = shift_labels(position)[0].tolist()  # the model's shift: what was intended
    twice = shift_labels(shift_labels(position))[0].tolist()  # the user's shift, then the model's
    targets_once, targets_twice = set(once) - {IGNORE_INDEX}, set(twice) - {IGNORE_INDEX}
    rows = [
        Row("intended:\nt learns t+1", tokens, ["target" if p in targets_once else "ignored" for p in range(n)],
            space=0, reach=1),
        Row("input_ids", tokens, ["input"] * n, space=1.0),
        Row("trained:\nt learns t+2", tokens, ["wrong" if p in targets_twice else "ignored" for p in range(n)],
            space=1.0, reach=2),
    ]
    arrows = [(1, p, 0, t, GREEN, "intended-arrow") for p, t in enumerate(once) if t != IGNORE_INDEX]
    arrows += [(1, p, 2, t, VERMILLION, "double-shift-arrow") for p, t in enumerate(twice) if t != IGNORE_INDEX]
    title = title or "Shifting the labels yourself trains every position on the token TWO ahead"
    subtitle = ("labels = input_ids[:, 1:] passed to BertForCausalLM, which shifts them again: each arrow skips a "
                "token. The loss still goes down, but generation is garbage; minibert warns (check_causal_labels).")
    legend = [Patch(facecolor=tint(GREEN), edgecolor=GREEN, label="intended: labels = input_ids, shifted once"),
              Patch(facecolor=tint(VERMILLION), edgecolor=VERMILLION, label="trained: shifted twice (the bug)"),
              style_handles(["ignored"], ["not a target"])[0]]
    return token_figure([Section(rows, arrows=arrows)], per_line, title, subtitle, legend)


# ---- masked language modeling ----
def word_brackets(tokens):
    """(first, last) positions of each word split into several WordPiece pieces (## continues)."""
    spans, start = [], None
    for p, t in enumerate(tokens):
        if str(t).startswith("##"):
            start = p - 1 if start is None else start
            if p + 1 == len(tokens) or not str(tokens[p + 1]).startswith("##"):
                spans.append((start, p))
                start = None
    return spans


def masking_section(tokens, masked_tokens, labels, decisions, words=False, heading=""):
    tokens, masked_tokens, labels = as_list(tokens), as_list(masked_tokens), as_list(labels)
    codes = [DECISIONS.index(d) if isinstance(d, str) else int(d) for d in as_list(decisions)]
    check_same_length(tokens=tokens, masked_tokens=masked_tokens, labels=labels, decisions=codes)
    styles = [DECISIONS[c] for c in codes]
    rows = [Row("original", tokens, ["token"] * len(tokens), space=0),
            Row("input\n(what it reads)", masked_tokens, styles, space=0.45),
            Row("labels", [label_text(x) for x in labels],
                ["ignored" if c == NOT_SELECTED else s for c, s in zip(codes, styles)], space=0.3)]
    brackets = [(0, a, b) for a, b in word_brackets(tokens)] if words else []
    return Section(rows, heading, brackets=brackets), codes


def plot_masking(tokens, masked_tokens, labels, decisions, title=None, whole_words=False, per_line=12):
    """What masked LM did to each token: tokens (the original), masked_tokens (what the model reads),
    labels (a token string where the model must predict, -100 elsewhere) and decisions (codes or
    names of minibert.data.DECISIONS). whole_words underlines the pieces of each split word."""
    section, codes = masking_section(tokens, masked_tokens, labels, decisions, whole_words)
    counts = [codes.count(c) for c in range(len(DECISIONS))]
    chosen = len(codes) - counts[NOT_SELECTED]
    if title is None:
        title = ("Whole-word masking: all the pieces of a word are chosen together" if whole_words else
                 "Masked LM: the model must recover the chosen tokens from both sides")
    subtitle = (f"{chosen} of {len(codes)} tokens chosen: {counts[MASKED]} replaced by [MASK], {counts[RANDOM]} by a "
                f"random token, {counts[KEPT]} kept as they are. Only chosen positions have a label; the rest are "
                "-100 and ignored by the loss." + (" Bars join the pieces of a word; each chosen piece is then "
                                                   "masked, replaced or kept on its own." if whole_words else ""))
    legend = style_handles([*DECISIONS, "ignored"], [*DECISIONS, "label -100: ignored"])
    return token_figure([section], per_line, title, subtitle, legend)


def mask_example(collator, tokenizer, input_ids):
    """(tokens, masked tokens, labels, decisions) of one example masked by an MLMCollator."""
    ids = torch.as_tensor(input_ids).flatten()
    masked, labels, decisions = collator.mask_tokens(ids[None])
    labels = [x if x == IGNORE_INDEX else tokenizer.convert_ids_to_tokens(x) for x in labels[0].tolist()]
    return (tokenizer.convert_ids_to_tokens(ids.tolist()), tokenizer.convert_ids_to_tokens(masked[0].tolist()),
            labels, decisions[0])


def plot_mlm_masking(collator, tokenizer, input_ids, title=None, per_line=12):
    """Mask one example with an MLMCollator (its settings and random state) and draw what happened."""
    if title is None and not collator.whole_word_mask:
        title = (f"Masked LM: {collator.mlm_probability:.0%} of tokens are chosen; of those "
                 f"{collator.mask_replace_prob:.0%} become [MASK], {collator.random_replace_prob:.0%} a random "
                 f"token, {1 - collator.mask_replace_prob - collator.random_replace_prob:.0%} stay")
    return plot_masking(*mask_example(collator, tokenizer, input_ids), title, whole_words=collator.whole_word_mask,
                        per_line=per_line)


# ---- sentence pairs: next sentence prediction and sentence order prediction ----
PAIR_LABELS = {  # objective -> label -> (name, what it means)
    "nsp": {0: ("IsNext", "B is the text that really follows A"), 1: ("NotNext", "B was put there at random")},
    "sop": {0: ("in order", "A and B appear in this order in the text"), 1: ("swapped", "B came before A in the text")},
}
B_FROM = {"next": "the true continuation of A", "random document": "a random other document",
          "same document": "elsewhere in A's document (a hard negative)", "in order": "right after A",
          "swapped": "right BEFORE A (the two were swapped)"}


def pair_section(tokenizer, input_ids, token_type_ids, heading=""):
    tokens = tokenizer.convert_ids_to_tokens(as_list(input_ids))
    segments = as_list(token_type_ids)
    check_same_length(input_ids=tokens, token_type_ids=segments)
    special = set(tokenizer.all_special_tokens)
    segment = [("segment A", "segment B")[min(s, 1)] for s in segments]
    return Section([Row("tokens", tokens, ["special" if t in special else g for t, g in zip(tokens, segment)], space=0),
                    Row("token_type_ids", [str(s) for s in segments], segment, space=0.2)], heading)


def span(source, key, titles):
    doc = source["document"] if key == "a" else source["b_document"]
    first, stop = source[key]
    where = f"sentence {first}" if stop - first == 1 else f"sentences {first}-{stop - 1}"
    name = f'"{titles[doc]}"' if titles is not None else f"document {doc}"
    return f"{where} of {name}"


def plot_nsp_example(tokenizer, example, titles=None, per_line=12):
    """An example of minibert.make_nsp_examples or make_sop_examples: segments A and B with their
    segment ids, the label in words, and where B came from. titles: the corpus's document titles."""
    source = example.get("source", {})
    task = "sop" if source.get("b_from") in ("in order", "swapped") else "nsp"
    label = int(example["next_sentence_label"])
    name, meaning = PAIR_LABELS[task][label]
    what = "Next sentence prediction" if task == "nsp" else "Sentence order prediction"
    title = f'{what}: label {label} = "{name}": {meaning}'
    convention = ('0 = IsNext, 1 = NotNext ("is B random?")' if task == "nsp" else "0 = in order, 1 = swapped")
    subtitle = f"Labels: {convention}. The classifier reads only the [CLS] vector; token_type_ids tell A from B."
    if source:
        subtitle = (f"A is {span(source, 'a', titles)}; B is {span(source, 'b', titles)}: "
                    f"{B_FROM.get(source['b_from'], source['b_from'])}. " + subtitle)
    section = pair_section(tokenizer, example["input_ids"], example["token_type_ids"])
    legend = style_handles(["special", "segment A", "segment B"],
                           ["special token", "segment A (type 0)", "segment B (type 1)"])
    return token_figure([section], per_line, title, subtitle, legend)


def plot_objectives(tokenizer, sentence_a, sentence_b, seed=0, per_line=None):
    """The three pretraining objectives on the same text: next-token prediction on A, masked LM on A,
    next sentence prediction on A and B (B must be the sentence that follows A: label 0)."""
    ids = tokenizer(sentence_a)["input_ids"]
    tokens = tokenizer.convert_ids_to_tokens(ids)
    causal, _ = label_shift_section(tokens, heading="1. Next-token prediction (GPT, BertForCausalLM): "
                                                    "each position predicts the token after it, reading only the past")
    mlm, _ = masking_section(*mask_example(MLMCollator(tokenizer, seed=seed), tokenizer, ids),
                             heading="2. Masked LM (BERT): about 15% of tokens are hidden and predicted from "
                                     "BOTH sides")
    pair = tokenizer(sentence_a, sentence_b, return_token_type_ids=True)
    nsp = pair_section(tokenizer, pair["input_ids"], pair["token_type_ids"],
                       heading='3. Next sentence prediction (BERT): does B follow A? Here it does: label 0 = "IsNext"')
    sections = [causal, mlm, nsp]
    per_line = per_line or min(len(tokens), 16)  # [CLS] A [SEP] fills a line; in NSP, B goes on the next
    title = "Three ways to learn from raw text: the labels come from the text itself"
    subtitle = ("The same model, three kinds of labels. Grey: ignored by the loss (-100). "
                "Masked-LM colours: what happened to a chosen token.")
    names = {"segment A": "sentence A (segment 0)", "segment B": "sentence B (segment 1)", "target": "next-token label",
             "masked": "[MASK]", "random token": "random token", "kept": "kept", "ignored": "ignored (-100)"}
    used = {style for section in sections for row in section.rows for style in row.styles}
    names = {style: label for style, label in names.items() if style in used}
    return token_figure(sections, per_line, title, subtitle, style_handles(list(names), list(names.values())))


# ---- heatmaps: attention masks and attention weights ----
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


def heatmap(ax, weights, tokens, vmax, ticks=True):
    image = ax.imshow(weights, cmap="viridis", vmin=0, vmax=vmax, interpolation="nearest")
    if ticks:
        set_token_ticks(ax, tokens, len(weights))
    else:
        ax.set_xticks([])
        ax.set_yticks([])
    return image


def attention_figure(attentions, tokens, cells, title, note, batch, ticks=True, labels=True):
    """A grid of heatmaps on one colour scale, cells: rows of (layer, head). The colour bar marks 1/T (T: the
    tokens that are not padding), what every cell would hold if attention were uniform: brighter cells
    are what a head singles out."""
    T = check_tokens(attentions, tokens)
    nrows, ncols = len(cells), max(len(r) for r in cells)
    panel = (min(6.5, max(3.0, 0.16 * T + 1.6)) if ticks else min(3.0, max(2.0, 7.5 / ncols)))
    weights = {(l, h): attention_weights(attentions, l, h, batch) for r in cells for l, h in r}
    vmax = max(float(w.max()) for w in weights.values())
    width = ncols * panel + (2.2 if ticks else 1.6)
    fig = Figure(figsize=(width, nrows * panel + (1.2 if ticks else 1.0)), dpi=100, layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for i, r in enumerate(cells):
        for j in range(ncols):
            ax = axes[i][j]
            if j >= len(r):
                ax.axis("off")
                continue
            layer, head = r[j]
            image = heatmap(ax, weights[layer, head], tokens, vmax, ticks)
            if len(weights) > 1:
                ax.set_title(f"layer {layer}, head {head}", fontsize=10)
            if labels and i == nrows - 1:
                ax.set_xlabel("key: the token looked at", fontsize=9)
            if labels and j == 0:
                ax.set_ylabel("query: the token looking", fontsize=9)
    bar = fig.colorbar(image, ax=axes, shrink=0.8, label="attention weight (each row sums to 1)")
    keys = int((sum(w.sum(0) for w in weights.values()) > 1e-6).sum())  # padding receives no attention
    bar.ax.axhline(1 / keys, color="white", lw=2)
    bar.ax.text(-0.3, 1 / keys, f"uniform\n1/{keys}", transform=bar.ax.get_yaxis_transform(), ha="right",
                va="center", fontsize=7.5)
    suptitle(fig, title)
    fig.supxlabel(wrap(note, width, 9.5), fontsize=9.5, color=DARK)
    return fig


def plot_attention(attentions, tokens, layer=0, head=0, batch=0, title=None):
    """One head's attention weights: row = the token looking (query), column = the token looked at (key).
    attentions: out.attentions of any minibert model called with output_attentions=True."""
    return attention_figure(attentions, tokens, [[(layer, head)]],
                            title or f"Layer {layer}, head {head}: each row is one token, spreading its attention "
                                     "over the tokens it reads",
                            "A bright cell: the row's token reads the column's token.", batch)


def plot_attention_heads(attentions, tokens, layer=0, batch=0, per_row=4, title=None):
    """Every head of one layer side by side, on one colour scale: each head learns its own pattern."""
    attention_weights(attentions, layer, 0, batch)  # checks that the layer exists
    heads = attentions[layer].shape[1]
    cells = [[(layer, h) for h in range(s, min(heads, s + per_row))] for s in range(0, heads, per_row)]
    title = title or f"The {heads} heads of layer {layer} look at different things"
    return attention_figure(attentions, tokens, cells, title,
                            "Each head has its own queries and keys, so each learns its own pattern.", batch)


def plot_attention_overview(attentions, tokens=None, batch=0, title=None):
    """Layers x heads small multiples, without token names: the patterns at a glance."""
    layers, heads = len(attentions), attentions[0].shape[1]
    cells = [[(l, h) for h in range(heads)] for l in range(layers)]
    T = check_tokens(attentions, tokens)
    title = title or (f"All {layers * heads} heads at a glance ({T} tokens): a head brighter than the 1/{T} mark "
                      "singles some tokens out")
    return attention_figure(attentions, tokens, cells, title,
                            "Panel rows = layers, panel columns = heads. In each panel: one row per query, one "
                            "column per key, as in plot_attention.", batch,
                            ticks=False, labels=False)


def figure_png(fig, dpi=80):
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=dpi)
    return buffer.getvalue()


def attention_explorer(attentions, tokens, batch=0):
    """An ipywidgets explorer for JupyterLab: sliders for layer and head over one heatmap."""
    import ipywidgets as widgets  # imported here: only the explorer needs it
    check_tokens(attentions, tokens)
    layer = widgets.IntSlider(value=0, min=0, max=len(attentions) - 1, description="layer")
    head = widgets.IntSlider(value=0, min=0, max=attentions[0].shape[1] - 1, description="head")
    image = widgets.Image(format="png")

    def draw(_=None):
        image.value = figure_png(plot_attention(attentions, tokens, layer.value, head.value, batch))

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
    with open(path, "w") as f:
        json.dump(data, f)
    return path


# ---- training: learning curves and predictions ----
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
    from .metrics import BASELINE_OF
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
        ax.set_xlim(0, max(probs) * 1.25 if probs else 1)
        ax.xaxis.set_major_formatter(PercentFormatter(1.0))
        ax.set_xlabel("probability the model gives")
        ax.spines[["top", "right"]].set_visible(False)
        if panel_titles:
            ax.set_title(panel_titles[i], fontsize=10)
    suptitle(fig, title or f"The model's top {k} guesses" + (" (orange: the true token)" if answer else ""))
    return fig
