"""Draw every picture of the README and the course as PNG:  python -m minibert.course.figures OUTDIR [NAME ...]

The same input gives the same bytes: fixed examples and seeds, a fixed dpi, and no timestamp or
version string in the files (matplotlib's Agg renderer, without pyplot). tests/course/test_figures.py
redraws them and compares with the ones committed in figures/, so a picture that changes or breaks
is noticed. The learning curves are those of the course's live mlm+nsp run (trained once, about a
minute on a laptop CPU, then loaded from the cache); its numbers are written beside the picture
(learning_curves.json), since another CPU trains the same run to slightly different numbers. The
attention and top-k pictures read the shipped BERT, checkpoints/<SHIPPED>.
"""

import dataclasses
import json
import os
import sys
import time
from functools import cached_property
from types import SimpleNamespace

import torch

from .. import viz
from ..data.collators import DECISIONS, MASKED, NOT_SELECTED, CausalLMCollator, MLMCollator
from ..data.corpus import load_corpus, split_corpus
from ..data.examples import make_nsp_examples, make_sop_examples
from ..model.heads import BertForMaskedLM, BertForPreTraining
from . import pretrained
from .runs import course_run

DPI = 100
SHIPPED = "bert-mini-mlm-nsp"  # the shipped BERT whose attention and guesses the pictures show

# Real sentences of the corpus, chosen short enough to read in one line.
SENTENCE = "The secondary literature on Aristotle is vast."  # "Aristotle"
LONGER = "Recollection occurs when one experience naturally follows another."  # "Aristotle": pads SENTENCE
PAIR = ("Water tends toward a sphere surrounding the center.",  # "Aristotle": B follows A
        "Air tends toward a sphere surrounding the water sphere.")
MASKING = ("It comprises about 300 or so living languages and dialects, according to the 2009 Ethnologue "
           "estimate.")  # "Afroasiatic languages"
WHOLE_WORDS = "Actinopterygians are divided into the subclasses Chondrostei and Neopterygii."  # "Actinopterygii"
FILL = ("It includes languages spoken predominantly in [MASK] Middle East, North Africa, the Horn of [MASK], and "
        "parts of the Sahel.")  # "Afroasiatic languages", a held-out document


class Course:
    """The data every picture draws from, built once: corpus, split, tokenizer, a trained model."""

    def __init__(self):
        torch.manual_seed(0)
        self.corpus = load_corpus()
        self.train_docs, self.heldout_docs = split_corpus(self.corpus)
        self.tokenizer = pretrained.tokenizer()  # the notebooks' and the checkpoints' own

    def ids(self, text):
        return self.tokenizer(text)["input_ids"]

    def tokens(self, text):
        return self.tokenizer.convert_ids_to_tokens(self.ids(text))

    @cached_property
    def result(self):
        """The course's standard mlm+nsp run (notebook 06 trains the same one): cached while settings,
        data and code are unchanged."""
        return course_run("mlm+nsp", self.corpus, self.tokenizer, verbose=False)

    @cached_property
    def record(self):
        """The numbers of that run that its learning-curve picture shows (see recorded_run)."""
        return recorded_run(self.result)

    @cached_property
    def shipped(self):
        """The shipped BERT (checkpoints/<SHIPPED>), pretrained for hours rather than seconds."""
        return BertForPreTraining.from_pretrained(pretrained.path(SHIPPED)).eval()

    @cached_property
    def attention(self):
        """(attentions, tokens) of the shipped BERT on a sentence pair, in eval mode (no dropout)."""
        model = self.shipped
        enc = self.tokenizer(*PAIR, return_tensors="pt", return_token_type_ids=True)
        with torch.no_grad():
            out = model(**enc, output_attentions=True)
        return out.attentions, self.tokenizer.convert_ids_to_tokens(enc["input_ids"][0].tolist())

    def first_seed(self, ids, shows, **collator_settings):
        """The first collator seed whose masking of ids passes shows(decisions): a fixed search, so the
        picture shows the case it is about without bending the masking rule."""
        for seed in range(1000):
            _, _, decisions = MLMCollator(self.tokenizer, seed=seed, **collator_settings).mask_tokens(ids[None])
            if shows(decisions[0].tolist()):
                return seed
        raise ValueError("no seed below 1000 shows the case")


# ---- the pictures: file name -> function of a Course ----
def label_shift(course):
    batch = CausalLMCollator(course.tokenizer)([course.ids(SENTENCE), course.ids(LONGER)])
    ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()  # row 0 is padded
    tokens = course.tokenizer.convert_ids_to_tokens(ids)
    labels = [label if label == -100 else tokens[i] for i, label in enumerate(labels)]
    return viz.plot_label_shift(tokens, labels, per_line=len(tokens))


def double_shift(course):
    tokens = course.tokens(SENTENCE)
    return viz.plot_double_shift(tokens, per_line=len(tokens))


def attention_masks(course):
    sentences = [LONGER, SENTENCE, PAIR[0]]
    enc = course.tokenizer(sentences, padding=True)
    tokens = [course.tokenizer.convert_ids_to_tokens(ids) for ids in enc["input_ids"]]
    return viz.plot_attention_masks(torch.tensor(enc["attention_mask"]), tokens)


def masking(course):
    ids = torch.tensor(course.ids(MASKING))
    seed = course.first_seed(ids, lambda decisions: set(decisions) == set(range(len(DECISIONS))))  # all four
    return viz.plot_mlm_masking(MLMCollator(course.tokenizer, seed=seed), course.tokenizer, ids, per_line=12)


def whole_word_masking(course):
    ids = torch.tensor(course.ids(WHOLE_WORDS))
    pieces = [t.startswith("##") for t in course.tokenizer.convert_ids_to_tokens(ids.tolist())]

    def shows(decisions):  # a word of several pieces is chosen, and at least one piece becomes [MASK]
        return MASKED in decisions and any(d != NOT_SELECTED and piece for d, piece in zip(decisions, pieces))

    seed = course.first_seed(ids, shows, whole_word_mask=True)
    collator = MLMCollator(course.tokenizer, whole_word_mask=True, seed=seed)
    return viz.plot_mlm_masking(collator, course.tokenizer, ids, per_line=11)


def pair_example(examples, label, length=32):
    """The example with this label whose length is closest to `length` tokens (a few lines), the first if tied."""
    with_label = [e for e in examples if e["next_sentence_label"] == label]
    return min(with_label, key=lambda e: abs(len(e["input_ids"]) - length))


def nsp_pair(course):
    examples = make_nsp_examples(course.heldout_docs, course.tokenizer, max_length=64, seed=0)
    return viz.plot_nsp_example(course.tokenizer, pair_example(examples, 1), course.heldout_docs.titles, per_line=14)


def sop_pair(course):
    examples = make_sop_examples(course.heldout_docs, course.tokenizer, max_length=64, seed=0)
    return viz.plot_nsp_example(course.tokenizer, pair_example(examples, 1), course.heldout_docs.titles, per_line=14)


def previous_token_head(attentions):
    """(layer, head) of the head that gives the previous token the largest mean share on this sentence:
    the picture shows the sharpest pattern the model has, chosen by a rule rather than by eye."""
    shares = torch.stack([a[0].diagonal(offset=-1, dim1=-2, dim2=-1).mean(-1) for a in attentions])  # (layers, heads)
    return divmod(int(shares.argmax()), shares.shape[1])


def attention_head(course):
    attentions, tokens = course.attention
    layer, head = previous_token_head(attentions)
    return viz.plot_attention(attentions, tokens, layer=layer, head=head)


def attention_grid(course):
    attentions, tokens = course.attention
    return viz.plot_attention_heads(attentions, tokens, layer=previous_token_head(attentions)[0])


def attention_overview(course):
    attentions, tokens = course.attention
    return viz.plot_attention_overview(attentions, tokens)


def learning_curves(course):
    return learning_curves_of(course.record)


def learning_curves_of(record):
    """The learning-curve picture of a recorded run."""
    return viz.plot_learning_curves(as_run(record))


# A live run's numbers depend on the CPU's arithmetic (bf16 or fp32 kernels, thread count), so the
# picture of it is drawn from a record of the run, committed beside it: the test redraws the picture
# from the record and checks that the record is still the run the course trains.
RECORDED_RUNS = {"learning_curves.png": "learning_curves.json"}


def recorded_run(result):
    """What a learning-curve picture needs from a training run, rounded, as plain JSON."""
    def rounded(row):
        return {k: round(v, 5) if isinstance(v, float) else v for k, v in row.items() if k not in ("seconds", "lr")}
    return {"settings": dataclasses.asdict(result.args),
            "history": [{"step": h["step"], "loss": round(h["loss"], 4)} for h in result.history],
            "evals": [rounded(e) for e in result.evals],
            "baselines": rounded(result.baselines)}


def as_run(record):
    """A recorded run in the shape viz.plot_learning_curves reads (a PretrainResult's fields)."""
    return SimpleNamespace(history=record["history"], evals=record["evals"], baselines=record["baselines"],
                           args=SimpleNamespace(objective=record["settings"]["objective"]))


def top_k(course):
    model = BertForMaskedLM.from_pretrained(pretrained.path(SHIPPED)).eval()  # its MLM half
    candidates = model.fill_mask(course.tokenizer, FILL, top_k=8)
    return viz.plot_top_k(candidates, answer=["the", "africa"], panel_titles=[
        "... spoken predominantly in [MASK] Middle East ...", "... North Africa, the Horn of [MASK], ..."],
        title="The shipped BERT's top 8 guesses for two held-out blanks (orange: the true token)")


def objectives(course):
    ids = torch.tensor(course.ids(PAIR[0]))
    return viz.plot_objectives(course.tokenizer, *PAIR, seed=course.first_seed(ids, lambda d: MASKED in d))


FIGURES = {
    "label_shift.png": label_shift,
    "double_shift.png": double_shift,
    "attention_masks.png": attention_masks,
    "masking.png": masking,
    "whole_word_masking.png": whole_word_masking,
    "nsp_pair.png": nsp_pair,
    "sop_pair.png": sop_pair,
    "objectives.png": objectives,
    "attention_head.png": attention_head,
    "attention_grid.png": attention_grid,
    "attention_overview.png": attention_overview,
    "learning_curves.png": learning_curves,
    "top_k.png": top_k,
}


def save(fig, path):
    fig.savefig(path, dpi=DPI, metadata={"Software": None})  # no version string: same picture, same bytes


def generate(outdir, names=None, course=None, verbose=False):
    """Draw the named figures (default: all) into outdir, with the records of the runs they show;
    returns the paths written."""
    names = [n if n.endswith(".png") else n + ".png" for n in names or ()]  # "top_k" or "top_k.png"
    unknown = set(names) - set(FIGURES)
    if unknown:
        raise ValueError(f"unknown figures {sorted(unknown)}; choose from {', '.join(FIGURES)}")
    os.makedirs(outdir, exist_ok=True)
    course, paths = course or Course(), []
    for name, draw in FIGURES.items():
        if names and name not in names:
            continue
        start = time.perf_counter()
        path = os.path.join(outdir, name)
        save(draw(course), path)
        paths.append(path)
        if name in RECORDED_RUNS:
            record_path = os.path.join(outdir, RECORDED_RUNS[name])
            with open(record_path, "w", encoding="utf-8") as f:  # one row of the run a line
                f.write(json.dumps(course.record).replace("}, {", "},\n{") + "\n")
            paths.append(record_path)
        if verbose:
            print(f"{path}  ({time.perf_counter() - start:.1f} s)", flush=True)
    return paths


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        print("\nfigures: " + ", ".join(FIGURES))
        return 0 if argv else 2
    start = time.perf_counter()
    paths = generate(argv[0], argv[1:], verbose=True)
    print(f"{len(paths)} files in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
