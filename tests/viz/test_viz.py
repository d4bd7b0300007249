"""The viz room: what each of the course's pictures shows, on tokens and attention of any length."""

import json
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.lines import Line2D
from matplotlib.patches import FancyArrowPatch

import minibert
from minibert import viz
from minibert.course import figures
from minibert.data import DECISIONS, KEPT, MASKED, NOT_SELECTED, RANDOM


def words(n):
    pool = ["the", "cat", "sat", "on", "a", "mat", "and", "slept", "##ing", "internationalization"]
    return [pool[i % len(pool)] for i in range(n)]


def artists(fig, cls, gid=None):
    drawn = [a for ax in fig.axes for a in ax.patches + ax.lines]
    return [a for a in drawn if isinstance(a, cls) and (gid is None or a.get_gid() == gid)]


def texts(fig):
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]


def test_label_shift_draws_one_arrow_per_learned_target_and_greys_the_ignored():
    tokens = ["[CLS]", "the", "cat", "sat", "[SEP]", "[PAD]", "[PAD]"]
    labels = [-100, -100, "cat", "sat", "[SEP]", -100, -100]  # a prompt that is not learned, then padding
    fig = viz.plot_label_shift(tokens, labels)
    arrows = artists(fig, FancyArrowPatch, "shift-arrow")
    assert len(arrows) == 3  # positions 1, 2, 3 learn cat, sat, [SEP]
    greyed = [p for p in fig.axes[0].patches if p.get_gid() == "ignored"]
    assert len(greyed) == 4 + 4  # four -100 labels; positions 0, 4, 5, 6 have nothing to learn
    assert texts(fig).count("-100") == 4
    assert any("NEXT token" in t for t in texts(fig))


def test_label_shift_defaults_to_labels_equal_to_input_ids():
    fig = viz.plot_label_shift(["[CLS]", "a", "b", "[SEP]"])
    assert len(artists(fig, FancyArrowPatch, "shift-arrow")) == 3  # every position but the last


def test_double_shift_trains_on_the_token_two_ahead():
    fig = viz.plot_double_shift(words(10))
    assert len(artists(fig, FancyArrowPatch, "intended-arrow")) == 9
    assert len(artists(fig, FancyArrowPatch, "double-shift-arrow")) == 8
    assert any("TWO ahead" in t for t in texts(fig))


def test_a_wrapped_row_points_at_the_next_row_instead_of_drawing_a_copy():
    tokens = words(14)
    fig = viz.plot_label_shift(tokens, per_line=12)
    styles = [p.get_gid() for p in fig.axes[0].patches if not isinstance(p, FancyArrowPatch)]
    assert len(styles) == 2 * 14  # one box per position and row, none past a row's end
    assert len(artists(fig, FancyArrowPatch, "shift-arrow")) == 13
    assert "12: on the\nnext row" in texts(fig)
    assert len([p for p in viz.plot_double_shift(tokens, per_line=12).axes[0].patches
                if not isinstance(p, FancyArrowPatch)]) == 3 * 14
    assert not any("next row" in t for t in texts(viz.plot_label_shift(tokens)))  # 14 fit on one row


def test_masking_legend_names_only_the_decisions_drawn():
    tokens = words(6)
    decisions = [NOT_SELECTED, MASKED, NOT_SELECTED, MASKED, NOT_SELECTED, NOT_SELECTED]
    masked = ["[MASK]" if d == MASKED else t for t, d in zip(tokens, decisions)]
    labels = [t if d == MASKED else -100 for t, d in zip(tokens, decisions)]
    legend = [t.get_text() for t in viz.plot_masking(tokens, masked, labels, decisions).legends[0].get_texts()]
    assert legend == ["not selected", "masked", "label -100: ignored"]


def test_masking_colours_the_four_decisions_and_explains_them_in_the_legend():
    tokens = words(8)
    decisions = [NOT_SELECTED, MASKED, RANDOM, KEPT, NOT_SELECTED, MASKED, NOT_SELECTED, NOT_SELECTED]
    masked = [{MASKED: "[MASK]", RANDOM: "zebra"}.get(d, t) for t, d in zip(tokens, decisions)]
    labels = [t if d != NOT_SELECTED else -100 for t, d in zip(tokens, decisions)]
    fig = viz.plot_masking(tokens, masked, labels, decisions)
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert all(name in legend for name in DECISIONS)
    styles = [p.get_gid() for p in fig.axes[0].patches]
    assert styles.count("masked") == 4 and styles.count("random token") == 2 and styles.count("kept") == 2
    assert any("4 of 8 tokens chosen: 2 replaced by [MASK], 1 by a random token, 1 kept" in t for t in texts(fig))


def test_masking_from_a_collator_marks_whole_words(course):
    tok = course.tokenizer
    ids = torch.tensor(tok(figures.WHOLE_WORDS)["input_ids"])
    fig = viz.plot_mlm_masking(minibert.MLMCollator(tok, whole_word_mask=True, seed=0), tok, ids)
    assert artists(fig, Line2D), "the pieces of split words are joined by a bar"
    assert any("Whole-word" in t for t in texts(fig))
    split_words = viz.tokens.word_brackets(tok.convert_ids_to_tokens(ids.tolist()))
    assert len(artists(fig, Line2D)) == len(split_words), "each split word stays on one line: one bar, not two halves"
    plain = viz.plot_mlm_masking(minibert.MLMCollator(tok, seed=0), tok, ids)
    assert not artists(plain, Line2D) and any("15% of tokens" in t for t in texts(plain))


def test_a_long_word_is_drawn_whole_in_its_box():
    fig = viz.plot_label_shift(["[CLS]", "institutions", "communication", "[SEP]"])
    assert "institutions" in texts(fig) and "communication" in texts(fig)  # not cut to "institutio..."


@pytest.mark.parametrize("n", [4, 128])
def test_token_pictures_stay_legible_from_4_to_128_tokens(n):
    tokens = words(n)
    decisions = [i % 4 for i in range(n)]
    for fig in (viz.plot_label_shift(tokens), viz.plot_double_shift(tokens),
                viz.plot_masking(tokens, tokens, tokens, decisions)):
        width, height = fig.get_size_inches()
        assert 8 <= width <= 15 and height < 80  # long inputs wrap into more lines, never wider
        canvas = FigureCanvasAgg(fig)
        canvas.draw()
        renderer = canvas.get_renderer()
        boxes = [p for p in fig.axes[0].patches if not isinstance(p, FancyArrowPatch)]
        tokens_drawn = [t for t in fig.axes[0].texts if t.get_fontsize() >= 6 and t.get_text() in
                        {viz.short(x) for x in tokens} | {"-100"}]
        widest = max(t.get_window_extent(renderer).width for t in tokens_drawn)
        assert widest < boxes[0].get_window_extent(renderer).width  # no token spills out of its box


def test_nsp_and_sop_examples_say_the_label_in_words(course):
    tok, docs = course.tokenizer, course.heldout_docs
    nsp = minibert.make_nsp_examples(docs, tok, max_length=128, seed=0)
    for label, word in ((0, '"IsNext"'), (1, '"NotNext"')):
        example = next(e for e in nsp if e["next_sentence_label"] == label)
        title = " ".join(viz.plot_nsp_example(tok, example, docs.titles).texts[0].get_text().split())
        assert f"label {label} = {word}" in title
    sop = minibert.make_sop_examples(docs, tok, max_length=128, seed=0)
    swapped = next(e for e in sop if e["next_sentence_label"] == 1)
    fig = viz.plot_nsp_example(tok, swapped, docs.titles)
    assert '"swapped"' in fig.texts[0].get_text() and "BEFORE" in fig.texts[1].get_text()
    assert fig.get_size_inches()[0] <= 14  # 128 tokens wrap


def test_nsp_example_says_which_segment_was_truncated_and_what_a_hard_negative_is(course):
    tok, docs = course.tokenizer, course.heldout_docs
    pairs = minibert.make_nsp_examples(docs, tok, max_length=24, negatives="hard", seed=0)

    def subtitle(example):
        return " ".join(viz.plot_nsp_example(tok, example, docs.titles, documents=docs).texts[1].get_text().split())

    whole = next(e for e in pairs if len(e["input_ids"]) < 24)  # shorter than max_length: nothing was cut
    assert "(truncated)" not in subtitle(whole)
    long_a = next(e for e in pairs if len(tok(docs[e["source"]["document"]][e["source"]["a"][0]])["input_ids"]) > 24)
    a_part = subtitle(long_a).split(";")[0]  # its first sentence alone is longer than the pair may be
    assert a_part.startswith("A is sentence") and a_part.endswith("(truncated)")
    assert f'of the document "{docs.titles[long_a["source"]["document"]]}"' in a_part
    hard = next(e for e in pairs if e["source"]["b_from"] == "same document")
    fig = viz.plot_nsp_example(tok, hard, docs.titles, documents=docs)
    assert "B comes from elsewhere in A's document" in " ".join(fig.texts[0].get_text().split())
    assert "of the same document" in fig.texts[1].get_text()


def test_objectives_show_all_three(course):
    fig = viz.plot_objectives(course.tokenizer, *figures.PAIR)
    headings = [t for t in texts(fig) if t[:2] in ("1.", "2.", "3.")]
    assert len(headings) == 3 and "IsNext" in headings[2]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    assert "special token ([CLS], [SEP])" in legend
    assert "ignored (-100, or no next token)" in legend  # the last input has no next token: greyed, not a -100
    pair = course.tokenizer(*figures.PAIR)["input_ids"]
    first = len(course.tokenizer(figures.PAIR[0])["input_ids"])
    numbers = [t for t in fig.axes[0].texts if t.get_color() == viz.GREY and t.get_text().isdigit()]
    rows = lambda texts: len({t.get_position()[1] for t in texts})  # noqa: E731 -- a row of position numbers per band
    assert [t.get_text() for t in numbers[-len(pair):]] == [str(p) for p in range(len(pair))]  # the pair's come last
    assert rows(numbers[:first]) == 1 and rows(numbers[-len(pair):]) == 2  # [CLS] A [SEP] on one row, the pair on two


def test_attention_masks_combine_causal_and_padding_for_a_decoder():
    mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0]])
    fig = viz.plot_attention_masks(mask, ["[CLS]", "a", "[SEP]", "[PAD]", "[PAD]"])
    encoder, causal, decoder = (ax.images[0].get_array() for ax in fig.axes[1:4])
    allowed = lambda cells: torch.from_numpy(np.asarray(cells) == 1)  # noqa: E731
    keys = mask[1].bool()[None, :].expand(5, 5)
    assert torch.equal(allowed(encoder), keys)  # the row with padding is the one shown
    assert torch.equal(allowed(causal), torch.ones(5, 5, dtype=torch.bool).tril())
    assert torch.equal(allowed(decoder), keys & torch.ones(5, 5, dtype=torch.bool).tril())


@pytest.fixture(scope="module")
def attentions():
    """Real attention weights of a small random model, for 4 and 128 tokens."""
    torch.manual_seed(0)
    model = minibert.BertModel(minibert.BertConfig.tiny(vocab_size=50, num_attention_heads=4)).eval()
    with torch.no_grad():
        return {n: model(torch.randint(5, 50, (2, n)), output_attentions=True).attentions for n in (4, 128)}


@pytest.mark.parametrize("n", [4, 128])
def test_attention_pictures_from_4_to_128_tokens(attentions, n):
    att, tokens = attentions[n], words(n)
    one = viz.plot_attention(att, tokens, layer=1, head=3)
    image = one.axes[0].images[0].get_array()
    assert image.shape == (n, n) and np.allclose(image.sum(1), 1, atol=1e-4)
    assert len(one.axes[0].get_xticklabels()) <= 48  # long inputs label every k-th token
    heads = viz.plot_attention_heads(att, tokens, layer=0)
    assert sum(bool(ax.images) for ax in heads.axes) == 4
    overview = viz.plot_attention_overview(att, tokens)
    panels = [ax for ax in overview.axes if ax.images]
    assert len(panels) == 2 * 4
    named = [bool(ax.get_yticklabels()) for ax in panels]  # the first panel of each layer's row names the tokens
    assert named == [True, False, False, False] * 2
    bar = next(ax for ax in overview.axes if not ax.images and ax.get_yticklabels())
    assert f"uniform: 1/{n}" in [t.get_text() for t in bar.get_yticklabels()]  # a tick of the colour bar
    with pytest.raises(ValueError, match="layer 5"):
        viz.plot_attention(att, tokens, layer=5)
    with pytest.raises(ValueError, match="tokens"):
        viz.plot_attention(att, tokens[:-1])


def test_bertviz_export_has_the_shapes_head_view_reads(attentions, tmp_path):
    att = attentions[4]
    data = viz.to_bertviz(att, words(4), batch=1)
    assert set(data) == {"attention", "tokens"} and len(data["attention"]) == 2
    for layer, a in zip(att, data["attention"]):
        assert a.shape == (1, 4, 4, 4) and torch.equal(a[0], layer[1])
    path = viz.save_bertviz_json(tmp_path / "attention.json", att, words(4), sentence_b_start=2)
    with open(path) as f:
        saved = json.load(f)
    assert torch.tensor(saved["attention"][1]).shape == (1, 4, 4, 4) and saved["sentence_b_start"] == 2


def test_attention_explorer_builds_and_redraws_without_a_display(attentions):
    explorer = viz.attention_explorer(attentions[4], words(4))
    (layer, head), image = explorer.children[0].children, explorer.children[1]
    assert (layer.max, head.max) == (1, 3) and bytes(image.value).startswith(b"\x89PNG")
    before = bytes(image.value)
    head.value = 2
    assert bytes(image.value) != before


def fake_result(shift=0.0):
    history = [{"step": s, "seconds": s / 10, "lr": 1e-3, "loss": 8 - s / 50 + 0.3 * (s % 3)} for s in range(1, 101)]
    evals = [{"step": s, "seconds": s / 10, "mlm_accuracy": 0.05 + s / 2000 + shift, "mlm_loss": 7 - s / 100}
             for s in range(20, 101, 20)]
    baselines = {"mlm_most_frequent_token": "the", "mlm_most_frequent_token_accuracy": 0.054,
                 "mlm_unigram_loss": 7.07}
    return SimpleNamespace(history=history, evals=evals, baselines=baselines, args=SimpleNamespace(objective="mlm"))


def test_learning_curves_show_the_trivial_baseline():
    fig = viz.plot_learning_curves(fake_result())
    assert len([ax for ax in fig.axes if ax.lines]) == 3  # training loss, MLM accuracy, MLM loss
    dashed = [line.get_label() for ax in fig.axes for line in ax.lines if line.get_linestyle() == "--"]
    assert dashed == ["baseline: unigram (7.07)", "baseline: always 'the' (5.4%)", "baseline: unigram (7.07)"]
    assert fig.axes[0].get_ylabel() == "loss (nats)"
    assert len({ax.get_xlim() for ax in fig.axes}) == 1  # one step axis: the same range and ticks in every panel
    assert len({tuple(ax.get_xticks()) for ax in fig.axes}) == 1 and 100 in fig.axes[0].get_xticks()
    summed = fake_result()
    summed.args.objective = "mlm+nsp"  # a sum of two losses: no recorded baseline for the training loss
    fig = viz.plot_learning_curves(summed)
    assert not [line for line in fig.axes[0].lines if line.get_linestyle() == "--"]
    assert "none is recorded for the training loss" in " ".join(fig.get_suptitle().split())
    both = viz.plot_learning_curves({"lr 1e-3": fake_result(), "lr 3e-3": fake_result(0.01)}, metrics=["mlm_accuracy"])
    labels = [line.get_label() for line in both.axes[1].lines]
    assert "lr 1e-3 held-out" in labels and "lr 3e-3 held-out" in labels and len(both.axes) == 2


def test_top_k_draws_one_bar_per_candidate_and_marks_the_answer():
    candidates = [("the", 0.4), ("a", 0.2), ("cat", 0.1)]
    fig = viz.plot_top_k(candidates, answer="cat")
    bars = fig.axes[0].patches
    assert len(bars) == 3 and [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["the", "a", "cat"]
    assert bars[2].get_facecolor() != bars[0].get_facecolor()
    two = viz.plot_top_k([candidates, [("the", 0.98), ("a", 0.01)]], panel_titles=["first [MASK]", "second [MASK]"])
    assert [ax.get_title() for ax in two.axes] == ["first [MASK]", "second [MASK]"]
    assert two.axes[0].get_xlim() == two.axes[1].get_xlim()  # one scale: bars can be compared across panels
    assert all(0 <= t <= 1 for ax in two.axes for t in ax.get_xticks())  # no tick past 100%
    assert viz.plot_top_k(candidates, xmax=1).axes[0].get_xlim() == (0, 1)  # a fixed scale, to compare two pictures


def test_top_k_names_the_rank_of_a_true_token_below_the_bars():
    ranked = [("the", 0.4), ("a", 0.2), ("cat", 0.1), ("dog", 0.05)]
    fig = viz.plot_top_k(ranked, answer="dog", k=2)
    assert [t.get_text() for t in fig.axes[0].get_yticklabels()] == ["the", "a", "dog"]
    assert any("true token: 5.0%, rank 4" in t for t in texts(fig))
    assert any("true token, not in the top 4" in t for t in texts(viz.plot_top_k(ranked, answer="bird", k=2)))


# Attention heatmaps: one colour scale for maps that are compared, the uniform mark of a causal map, small
# multiples whose token names can be read.

def colour_bar_labels(fig):
    bar = next(ax for ax in fig.axes if not ax.images and ax.get_yticklabels())
    return [t.get_text() for t in bar.get_yticklabels()]


def test_attention_maps_put_on_one_colour_scale_with_vmax(attentions):
    att, tokens = attentions[4], words(4)
    fitted = viz.plot_attention_heads(att, tokens, layer=1)
    assert fitted.axes[0].images[0].get_clim()[1] == pytest.approx(att[1][0].max().item())  # default: the largest
    for layer in (0, 1):  # two layers, one scale: a cell as bright as another holds as much weight
        heads = viz.plot_attention_heads(att, tokens, layer=layer, vmax=1)
        assert all(ax.images[0].get_clim() == (0, 1) for ax in heads.axes if ax.images)
    assert viz.plot_attention(att, tokens, 1, 3, vmax=1).axes[0].images[0].get_clim() == (0, 1)
    assert viz.plot_attention_overview(att, tokens, vmax=1).axes[0].images[0].get_clim() == (0, 1)


def test_a_causal_map_marks_the_uniform_weight_of_its_last_row(attentions):
    att, tokens = attentions[4], words(4)
    causal = tuple(a.tril() / a.tril().sum(-1, keepdim=True) for a in att)  # row t spread over keys 0..t
    fig = viz.plot_attention(causal, tokens)
    assert "uniform, last row: 1/4" in colour_bar_labels(fig)  # row t's uniform weight is 1/(t+1), not 1/4
    assert any("1/(t+1)" in t for t in texts(fig))
    assert "uniform: 1/4" in colour_bar_labels(viz.plot_attention(att, tokens))


def test_the_overview_names_the_tokens_of_a_small_model_in_readable_type(attentions):
    overview = viz.plot_attention_overview(attentions[4], words(4))
    sizes = [t.get_fontsize() for ax in overview.axes if ax.images for t in ax.get_xticklabels() + ax.get_yticklabels()]
    assert sizes and min(sizes) >= 7
