"""The course's standard training runs, trained once and cached; `say`, which shows a sentence built
from a run's measured values under a cell, and `verdict`, which shows a lesson's conclusion there.

    minibert.course_run("mlm", corpus, tokenizer)     # the notebooks' runs: the first call trains, later ones load
"""

import os

from ..cache import cache_folder, entry_lock, fingerprint, locked, own_name, stranger, untrusted_note, writable
from ..training.objectives import check_objective
from ..training.trainer import pretrain

# The course's standard runs: a tiny model and 64-token sequences, about a minute each on two CPU
# cores. The masked-LM runs take batches of 64 at learning rate 2e-3, the batch and rate that learned
# fastest in runs this short (docs/experiments.md has the comparison). The causal LM gets fewer steps
# because scoring every position over the vocabulary costs more per step.
COURSE_RUNS = {
    "clm": dict(steps=200),
    "mlm": dict(steps=600, batch_size=64, lr=2e-3),
    "nsp": dict(steps=300),
    "sop": dict(steps=300),
    "mlm+nsp": dict(steps=600, batch_size=64, lr=2e-3),
    "mlm+sop": dict(steps=600, batch_size=64, lr=2e-3),
}


def run_dir(name):
    """A folder for a training run inside the minibert cache (MINIBERT_CACHE or ~/.cache/minibert)."""
    return os.path.join(cache_folder("runs"), name)


def course_run(objective, corpus, tokenizer, **overrides):
    """The course's standard run of an objective, saved in the cache and loaded from there when a
    finished run with the same settings, data and code exists: notebooks needing the same model
    share it, and re-running a notebook takes seconds. Pass overrides to change any setting. Two
    processes asking for the same run at once (a class on one server) train it once: the second
    waits for the first and loads its result. The model comes back on the CPU, trained now or read from the
    cache, where the notebooks make their tensors; the training itself takes a GPU where there is one."""
    check_objective(objective)
    settings = {**dict(preset="tiny", max_length=64, batch_size=32, schedule="linear", eval_examples=256,
                       progress=False), **COURSE_RUNS[objective]}
    settings.update(overrides)
    settings = {k: v for k, v in settings.items() if v is not None}  # None: the trainer's default, as if unsaid
    settings.setdefault("eval_every", max(1, settings["steps"] // 10))
    shown = ("progress", "verbose", "callback")  # how a run is displayed or watched does not change the run
    tag = fingerprint({k: v for k, v in settings.items() if k not in shown})[:8]  # the run's folder; its key decides reuse
    out = run_dir(f"{objective}-{tag}")
    who = stranger(out)
    if who:  # a classmate's folder under the run's name: trained again, into a folder of this user's own
        untrusted_note(out, who, "this run is trained and kept under your own name")
        out = own_name(out)
    with locked(entry_lock(out)):
        try:
            result = pretrain(objective, corpus=corpus, tokenizer=tokenizer, out=out, reuse=True, **settings)
        except PermissionError:  # a read-only cache without this run: refused before training
            writable(os.path.dirname(out))  # says so
            result = pretrain(objective, corpus=corpus, tokenizer=tokenizer, **settings)  # trained, not kept
    result.model.cpu()
    return result


def say(text):
    """Show a sentence built from measured values as formatted text under a cell (Markdown), so the
    numbers a conclusion rests on come from this run: say(f"The shipped model is right **{acc:.0%}** of the time.")."""
    from IPython.display import Markdown, display
    display(Markdown(text))


def verdict(sentence):
    """Show a lesson's conclusion, in bold, under the cell whose assertions check exactly what it says:

        assert c.difference.low > 0  # the masked LM alone is ahead
        verdict("Masked LM alone fills in blanks better than masked LM with a sentence task.")

    A conclusion lives in the code, after its assertions, never in the prose around it: a run in which it
    does not hold stops before showing it (tests/course/test_verdicts.py checks that every lesson does this)."""
    say(f"**{sentence}**")
