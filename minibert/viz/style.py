"""The look shared by every picture: the colour-blind-safe palette, the token box styles, sizes in
inches, titles and legends."""

import math
import textwrap

from matplotlib.colors import to_rgb
from matplotlib.patches import Patch

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
    "ignored": ("#F3F3F3", "#CDCDCD", GREY),  # pale, with a pale edge: it fades out
    "special": ("#C9C9C9", DARK, BLACK),  # a darker grey than ignored, with a dark edge: drawn and read
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
MAX_CHARS = 14  # longer tokens are cut with an ellipsis (token_box sets long ones in smaller type)
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
