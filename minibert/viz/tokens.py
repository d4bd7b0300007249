"""Token pictures: one row of boxes per view of a sequence, aligned by position and wrapped into
bands; the label shift, masked-LM masking and sentence pairs are drawn with them."""

import bisect
import math
from dataclasses import dataclass, field

import torch
from matplotlib.figure import Figure
from matplotlib.font_manager import FontProperties
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch
from matplotlib.textpath import TextToPath

from ..data.collators import DECISIONS, KEPT, MASKED, NOT_SELECTED, RANDOM, MLMCollator
from ..model.losses import IGNORE_INDEX, shift_labels
from .style import (BOX_H, BOX_W, CELL_H, CELL_W, DARK, FONT, GREEN, GREY, MIN_WIDTH, NAME_W, SMALL, STYLES, VERMILLION,
                    add_legend, header, legend_layout, short, style_handles, tint)


@dataclass
class Row:
    name: str  # shown left of the row
    texts: list  # one per position
    styles: list  # a STYLES key per position
    space: float = 0.3  # empty row units above the row (room for arrows)
    reach: int = 0  # room past a band's end where arrows from its last positions land, marked "on the next row"


@dataclass
class Section:
    rows: list
    heading: str = ""  # shown above the section (plot_objectives)
    arrows: list = field(default_factory=list)  # (from row, position, to row, position, colour, gid)
    brackets: list = field(default_factory=list)  # (row, first position, last position): pieces of one word
    words: bool = False  # break lines where a word of the first row starts, so that a word stays on one line


NUMBERS_H, ROW_H, BAND_GAP, HEADING_H = 0.55, 1.0, 0.55, 1.0  # in row units
TEXT_W = BOX_W * CELL_W * 72 - 7  # points of text a box holds, with a little room on each side
MEASURE = TextToPath()  # text widths in points, without a figure


def band_starts(section, per_line):
    """The first position of each band (line of boxes): every per_line positions, or for a section of words,
    where the word that would not fit starts; a word longer than a line is cut where the line ends."""
    tokens, starts = [str(t) for t in section.rows[0].texts], [0]
    while len(tokens) - starts[-1] > per_line:
        cut = starts[-1] + per_line
        if section.words:
            word, end = cut, cut  # the word cut in two: its first position, and the one after its last
            while word > starts[-1] and tokens[word].startswith("##"):  # ## continues the word before it
                word -= 1
            while end < len(tokens) and tokens[end].startswith("##"):
                end += 1
            cut = word if word > starts[-1] and end - word <= per_line else cut
        starts.append(cut)
    return starts


def section_height(section, per_line):
    band = NUMBERS_H + sum(r.space + ROW_H for r in section.rows) + BAND_GAP
    return (HEADING_H if section.heading else 0) + len(band_starts(section, per_line)) * band


def token_figure(sections, per_line, title, subtitle, legend):
    """A figure that draws sections of token rows. sections: list of Section; legend: Patch handles."""
    per_line = max(1, per_line)
    longest = max(len(s.rows[0].texts) for s in sections)
    reach = max(r.reach for s in sections for r in s.rows)  # needed only where a row wraps
    columns = longest if longest <= per_line else per_line + reach
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
    starts = band_starts(section, per_line)
    bands = list(zip(starts, starts[1:] + [len(section.rows[0].texts)]))  # (first, stop) position of each band
    centres = []  # per band: the y of each row's centre
    for start, stop in bands:
        for p in range(start, stop):
            ax.text(p - start, y - NUMBERS_H / 2, str(p), fontsize=SMALL - 0.5, color=GREY, ha="center", va="center")
        y -= NUMBERS_H
        ys = []
        for row in section.rows:
            y -= row.space + ROW_H / 2
            ys.append(y)
            ax.text(-0.65, y, row.name, fontsize=FONT, ha="right", va="center", color=DARK)
            for p in range(start, stop):
                token_box(ax, p - start, y, row.texts[p], row.styles[p])
            for p in range(stop, min(len(row.texts), stop + row.reach)):  # an arrow's end that wrapped
                ax.text(p - start, y, f"{p}: on the\nnext row", fontsize=SMALL, color=GREY, ha="center", va="center",
                        style="italic")
            y -= ROW_H / 2
        centres.append(ys)
        y -= BAND_GAP
    for r, first, last in section.brackets:  # a line under the pieces of one word, cut at band ends
        for band, (start, stop) in enumerate(bands):
            a, b = max(first, start) - start, min(last, stop - 1) - start
            if a <= b:
                yb = centres[band][r] - BOX_H / 2 - 0.12
                ax.plot([a - BOX_W / 2, b + BOX_W / 2], [yb, yb], color=DARK, lw=2.2, solid_capstyle="butt")
    for r0, p0, r1, p1, colour, gid in section.arrows:
        band = bisect.bisect_right(starts, p0) - 1
        x0, x1 = p0 - starts[band], p1 - starts[band]
        y0, y1 = centres[band][r0], centres[band][r1]
        down = 1 if y1 < y0 else -1
        arrow = FancyArrowPatch((x0, y0 - down * BOX_H / 2), (x1, y1 + down * BOX_H / 2), arrowstyle="-|>",
                                mutation_scale=11, color=colour, lw=1.4, shrinkA=1, shrinkB=1)
        arrow.set_gid(gid)
        ax.add_patch(arrow)
    return y


def token_box(ax, x, y, text, style):
    fill, edge, colour = STYLES[style]
    box = FancyBboxPatch((x - BOX_W / 2, y - BOX_H / 2), BOX_W, BOX_H, boxstyle="round,pad=0,rounding_size=0.12",
                         mutation_aspect=CELL_W / CELL_H, facecolor=fill, edgecolor=edge, lw=1.0)
    box.set_gid(style)
    ax.add_patch(box)
    text = short(text)
    width = MEASURE.get_text_width_height_descent(text, FontProperties(size=FONT), ismath=False)[0]
    size = min(FONT, FONT * TEXT_W / width) if width else FONT  # long tokens in smaller type, to fit the box
    ax.text(x, y, text, fontsize=size, ha="center", va="center", color=colour)


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


def one_row_up_to(n, most=14, wrapped=12):
    """Positions per row: one row for a short sentence, rows of `wrapped` for a longer one (with room at their
    ends for the arrows that continue on the next row)."""
    return n if n <= most else wrapped


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


def plot_label_shift(tokens, labels=None, title=None, per_line=None):
    """Next-token prediction: each position is trained on the label one step to its right.

    tokens: the input tokens as strings; labels: what you pass to BertForCausalLM, one per token, a
    token string or -100 (ignored: padding, a prompt that is not learned); None = the tokens
    themselves (labels = input_ids). The arrows are the model's own shift (minibert.shift_labels).
    """
    section, n = label_shift_section(tokens, labels)
    per_line = per_line or one_row_up_to(n)
    learned = len(section.arrows)
    title = title or "Each position learns the NEXT token: the model shifts the labels by one itself"
    subtitle = (f"You pass labels = input_ids; position t is trained on label t+1 (arrows). {learned} of {n} "
                "positions learn: -100 labels are ignored, and nothing follows the last token.")
    legend = style_handles(["input", "target", "token", "ignored"],
                           ["position that learns", "label it learns", "first label: nothing predicts it",
                            "ignored (-100, or no next token)"])
    return token_figure([section], per_line, title, subtitle, legend)


def plot_double_shift(tokens, title=None, per_line=None):
    """The bug: labels shifted by the user and again by the model train position t on token t+2."""
    tokens = as_list(tokens)
    n = len(tokens)
    check_same_length(tokens=tokens)
    per_line = per_line or one_row_up_to(n)
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
    subtitle = ("Drawn on the full input_ids: you pass labels already shifted by one (input_ids[:, 1:]), and "
                "BertForCausalLM shifts them again, so each orange arrow skips a token. The loss still goes down, but "
                "generation is garbage; minibert warns (check_causal_labels).")
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
    return Section(rows, heading, brackets=brackets, words=words), codes


def plot_masking(tokens, masked_tokens, labels, decisions, title=None, whole_words=False, per_line=12):
    """What masked LM did to each token: tokens (the original), masked_tokens (what the model reads),
    labels (a token string where the model must predict, -100 elsewhere) and decisions (codes or
    names of minibert.data.DECISIONS). whole_words underlines the pieces of each split word and keeps each word
    on one line."""
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
    shown = [d for c, d in enumerate(DECISIONS) if counts[c]]  # only the kinds this example has
    legend = style_handles([*shown, "ignored"], [*shown, "label -100: ignored"])
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
          "same document": "a hard negative, not next to A", "in order": "right after A",
          "swapped": "right BEFORE A (the two were swapped)"}


def pair_section(tokenizer, input_ids, token_type_ids, heading=""):
    tokens = tokenizer.convert_ids_to_tokens(as_list(input_ids))
    segments = as_list(token_type_ids)
    check_same_length(input_ids=tokens, token_type_ids=segments)
    special = set(tokenizer.all_special_tokens)
    segment = [("segment A", "segment B")[min(s, 1)] for s in segments]
    return Section([Row("tokens", tokens, ["special" if t in special else g for t, g in zip(tokens, segment)], space=0),
                    Row("token_type_ids", [str(s) for s in segments], segment, space=0.2)], heading)


def span(source, key, titles, cut=False):
    """Where a segment came from, in words: 'sentences 2-3 of the document "Anarchism" (truncated)'."""
    doc = source["document"] if key == "a" else source["b_document"]
    first, stop = source[key]
    where = f"sentence {first}" if stop - first == 1 else f"sentences {first}-{stop - 1}"
    if key == "b" and doc == source["document"]:
        name = "the same document"
    else:  # "the document": a title such as "A" must not read as segment A
        name = f'the document "{titles[doc]}"' if titles is not None else f"document {doc}"
    return f"{where} of {name}" + (" (truncated)" if cut else "")


def truncated_segments(tokenizer, example, documents):
    """{"a": bool, "b": bool}: whether a segment holds fewer tokens than its sentences, cut to fit max_length."""
    source, ids = example["source"], as_list(example["input_ids"])
    seps = [p for p, i in enumerate(ids) if i == tokenizer.sep_token_id]
    drawn = {"a": seps[0] - 1, "b": seps[1] - seps[0] - 1}  # [CLS] A [SEP] B [SEP]
    cut = {}
    for key, doc in (("a", source["document"]), ("b", source["b_document"])):
        first, stop = source[key]
        sentences = tokenizer(list(documents[doc][first:stop]), add_special_tokens=False)["input_ids"]
        cut[key] = drawn[key] < sum(len(s) for s in sentences)
    return cut


def plot_nsp_example(tokenizer, example, titles=None, per_line=12, documents=None):
    """An example of minibert.make_nsp_examples or make_sop_examples: segments A and B with their
    segment ids, the label in words, and where B came from. titles: the corpus's document titles;
    documents: the documents the example was made from, to mark a segment truncated to fit max_length."""
    source = example.get("source", {})
    task = "sop" if source.get("b_from") in ("in order", "swapped") else "nsp"
    label = int(example["next_sentence_label"])
    name, meaning = PAIR_LABELS[task][label]
    hard = source.get("b_from") == "same document"  # a hard negative: not random, only out of place
    if hard:
        meaning = "B comes from elsewhere in A's document"
    what = "Next sentence prediction" if task == "nsp" else "Sentence order prediction"
    title = f'{what}: label {label} = "{name}": {meaning}'
    convention = ("0 = in order, 1 = swapped" if task == "sop" else
                  "0 = IsNext, 1 = NotNext" + ("" if hard else ' ("is B random?")'))
    subtitle = f"Labels: {convention}. The classifier reads only the [CLS] vector; token_type_ids tell A from B."
    if source:
        cut = truncated_segments(tokenizer, example, documents) if documents is not None else {}
        subtitle = (f"A is {span(source, 'a', titles, cut.get('a'))}; B is {span(source, 'b', titles, cut.get('b'))}: "
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
    # [CLS] A [SEP] fills a line, and the pair two (no token left alone on a third)
    per_line = per_line or max(min(len(tokens), 16), math.ceil(len(pair["input_ids"]) / 2))
    title = "Three ways to learn from raw text: the labels come from the text itself"
    subtitle = ("The same model, three kinds of labels. Pale grey: ignored by the loss (-100, or no next token). "
                "Masked-LM colours: what happened to a chosen token.")
    names = {"token": "text as it is (white)", "special": "special token ([CLS], [SEP])",
             "segment A": "sentence A (segment 0)", "segment B": "sentence B (segment 1)", "target": "next-token label",
             "masked": "[MASK]", "random token": "random token", "kept": "kept",
             "ignored": "ignored (-100, or no next token)"}
    used = {style for section in sections for row in section.rows for style in row.styles}
    names = {style: label for style, label in names.items() if style in used}
    return token_figure(sections, per_line, title, subtitle, style_handles(list(names), list(names.values())))
