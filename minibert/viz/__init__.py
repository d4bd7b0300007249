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
    viz.plot_top_k(candidates, answer=token)        # top-k predictions as bars, the true token's rank

Figures are made without pyplot (no global state, nothing shown twice in a notebook): a figure
that is the last value of a cell is displayed, `fig.savefig(path)` writes it. Colours are
Okabe-Ito's, told apart with every common colour-vision deficiency; pale grey always means "ignored"
(a darker grey box with a dark edge is a special token).
Token pictures wrap every `per_line` positions, so 4 to 128 tokens stay legible.

    style.py      the palette, box styles, titles and legends every picture shares
    tokens.py     token rows: label shift, masking, sentence pairs, the three objectives
    attention.py  heatmaps: attention masks and attention weights
    curves.py     learning curves and top-k predictions
"""


from .attention import (attention_explorer, attention_weights, plot_attention, plot_attention_heads,
                        plot_attention_masks, plot_attention_overview, save_bertviz_json, to_bertviz)
from .curves import metric_label, plot_learning_curves, plot_top_k, smooth
from .style import BLACK, BLUE, DARK, GREEN, GREY, ORANGE, PURPLE, SKY, VERMILLION, YELLOW, short, tint
from .tokens import (plot_double_shift, plot_label_shift, plot_masking, plot_mlm_masking, plot_nsp_example,
                     plot_objectives)

__all__ = ["plot_label_shift", "plot_double_shift", "plot_masking", "plot_mlm_masking", "plot_nsp_example",
           "plot_objectives", "plot_attention_masks", "attention_weights", "plot_attention", "plot_attention_heads",
           "plot_attention_overview", "attention_explorer", "to_bertviz", "save_bertviz_json",
           "plot_learning_curves", "plot_top_k", "smooth", "metric_label", "short", "tint",
           "BLUE", "SKY", "GREEN", "ORANGE", "VERMILLION", "PURPLE", "YELLOW", "BLACK", "GREY", "DARK"]
