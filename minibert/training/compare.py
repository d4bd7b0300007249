"""One way of comparing two models, beside metrics.py's one way of measuring one.

    c = compare(live, "checkpoints/bert-mlm", right_live, right_shipped, groups=documents,
                names=("live run", "bert-mlm"), what="masked-token accuracy")
    print(c)            # what the arms differ in, the paired difference with its interval, the verdict
    c.verdict           # "ahead", "behind" or "cannot tell at this size": the first arm against the second
    c.differs           # {setting: (first arm's value, second arm's value)} for every setting that differs

An arm is anything whose settings were recorded: a run (what pretrain or course_run returns), the folder of
a shipped checkpoint or of a run, or a dict of settings for an arm that is not a run (a table, a control).
Both arms are scored on the same held-out items, in the same order, so the comparison is paired: each item's
difference, averaged, with the bootstrap interval of metrics.bootstrap. Items that share a document are not
independent draws, so `groups` (one document or block id per item) must be given; groups=None says that
every item is a draw of its own.

A verdict says which arm is ahead on this test set, never why: when the arms differ in more than one
setting, the printed comparison says that the difference belongs to none of them alone.
"""

import dataclasses
import json
import math
import os
from typing import NamedTuple

import torch

from ..data.examples import make_lm_examples
from .metrics import Interval, bootstrap

AHEAD, BEHIND, CANNOT_TELL = "ahead", "behind", "cannot tell at this size"

# Settings that change how a run is watched, not what it learns.
NOT_SETTINGS = ("eval_every", "eval_examples", "progress", "verbose", "callback", "save_every", "out")


def block_documents(documents, tokenizer, max_length):
    """The document of each block that make_lm_examples(documents, tokenizer, max_length) makes, in its
    order (blocks never cross documents): the groups of a comparison on those blocks."""
    return [d for d, document in enumerate(documents) for _ in make_lm_examples([document], tokenizer, max_length)]


def settings_of(arm):
    """The recorded settings of an arm: a dict, a run (its TrainArgs and model), or a folder holding
    training_args.json (an exported checkpoint) or trainer_state.json (a run folder). 'tokens seen'
    (steps x batch x block) is added where the three are known: two runs' budgets in one number."""
    if isinstance(arm, dict):
        settings = dict(arm)
    elif isinstance(arm, (str, os.PathLike)):
        settings = folder_settings(os.fspath(arm))
    elif hasattr(arm, "args") and dataclasses.is_dataclass(arm.args):
        settings = dataclasses.asdict(arm.args)
        if settings.get("lr") is None and hasattr(arm, "model"):  # the default the trainer took
            from .trainer import default_lr
            settings["lr"] = default_lr(arm.model.config)
    else:
        raise TypeError(f"compare cannot tell what a {type(arm).__name__} was trained with: give a run, the folder "
                        "of a checkpoint or of a run, or a dict of its settings")
    settings = {k: v for k, v in settings.items() if k not in NOT_SETTINGS}
    if all(isinstance(settings.get(k), int) for k in ("steps", "batch_size", "max_length")):
        settings["tokens seen"] = settings["steps"] * settings["batch_size"] * settings["max_length"]
    return settings


def folder_settings(folder):
    for name, what in (("training_args.json", "an exported checkpoint"), ("trainer_state.json", "a run folder")):
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            try:
                with open(path, encoding="utf-8") as f:
                    info = json.load(f)
                settings = dict(info["args"])
            except (json.JSONDecodeError, KeyError, TypeError) as e:
                raise ValueError(f"{path!r} is damaged ({type(e).__name__}: {e}): compare cannot read what "
                                 f"{what} was trained with") from None
            if isinstance(info.get("steps"), int):  # the steps done: a piece of a longer run stopped early
                settings["steps"] = info["steps"]
            return settings
    raise ValueError(f"{folder!r} holds neither training_args.json nor trainer_state.json: compare needs the "
                     "folder of an exported checkpoint or of a run, or a dict of the arm's settings")


def differences(a, b):
    """{setting: (a's value, b's value)} for every setting the two dicts do not share the value of."""
    missing = "(not recorded)"
    return {k: (a.get(k, missing), b.get(k, missing)) for k in dict.fromkeys([*a, *b]) if a.get(k, missing) != b.get(k, missing)}


class Comparison(NamedTuple):
    """Two arms on the same items: what differs between them, the paired difference, the verdict."""
    names: tuple  # (first arm, second arm)
    what: str  # the score compared, in words
    differs: dict  # setting -> (first arm's value, second arm's value)
    difference: Interval  # first minus second, per item, averaged; a ratio of perplexities when ratio=True
    verdict: str  # AHEAD, BEHIND or CANNOT_TELL: the first arm against the second
    items: int
    groups: int  # the number of documents or blocks resampled; equal to items where each item is its own
    group_name: str  # what a group is: "documents", "blocks"
    ratio: bool
    spec: str  # how the difference prints

    @property
    def one_thing(self):
        """The one setting the arms differ in, or None when they differ in none or in several."""
        return next(iter(self.differs)) if len(self.differs) == 1 else None

    def __str__(self):
        a, b = self.names
        if self.ratio:
            shown, sign = f"{self.difference:{self.spec}}", f"{self.what}, {a} / {b}"
        else:
            shown, sign = f"{self.difference:+{self.spec}}", f"{self.what}, {a} minus {b}"
        drawn = "items" if self.groups == self.items else f"items in {self.groups:,} {self.group_name}, redrawn whole"
        lines = [f"{sign}: {shown}   (paired: {self.items:,} {drawn})"]
        if not self.differs:
            lines.append("  the arms differ in no recorded setting")
        for k, (x, y) in self.differs.items():
            lines.append(f"  differs in {k}: {show(x)} | {show(y)}")
        if self.verdict == CANNOT_TELL:
            lines.append(f"  verdict: cannot tell {a} and {b} apart at this size")
        else:
            lines.append(f"  verdict: {a} {'ahead of' if self.verdict == AHEAD else 'behind'} {b}")
            if len(self.differs) > 1:
                lines.append(f"  ... the arms differ in {len(self.differs)} settings: the difference belongs to none "
                             "of them alone")
        return "\n".join(lines)

    def _repr_pretty_(self, p, cycle):  # a cell that ends in a comparison shows it as print() would
        p.text(str(self))


def show(value):
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= 10_000:
        return f"{value:,}"
    return repr(value) if isinstance(value, str) else str(value)


def compare(first, second, scores_first, scores_second, *, groups, names=("first", "second"), what="score",
            group_name="documents", lower_is_better=False, ratio=False, spec=".1%"):
    """Compare two arms scored on the same items (see the module's docstring).

    scores_*: one number per item, in the same item order for both arms (1/0 right or wrong, a loss).
    groups: one document or block id per item, or None where every item is an independent draw; group_name
    says which they are.
    lower_is_better: for losses; ratio: the scores are log-losses, and the difference is shown as the ratio of
    the two perplexities, exp(mean loss difference), with the verdict read against 1."""
    x = torch.as_tensor(scores_first, dtype=torch.float64).flatten()
    y = torch.as_tensor(scores_second, dtype=torch.float64).flatten()
    if len(x) != len(y):
        raise ValueError(f"compare pairs each item's two scores, but got {len(x)} scores for {names[0]} and {len(y)} "
                         f"for {names[1]}: score both arms on the same items")
    if not (torch.isfinite(x).all() and torch.isfinite(y).all()):
        raise ValueError(f"a score of {names[0] if not torch.isfinite(x).all() else names[1]} is NaN or infinite: "
                         "the model's output broke, and no comparison can be drawn from it")
    if groups is not None:  # any hashable ids (document titles, numbers) -> 0, 1, 2, ... in order of appearance
        ids = {}
        groups = [ids.setdefault(g.item() if isinstance(g, torch.Tensor) else g, len(ids)) for g in groups]
    difference = bootstrap(x - y, groups)
    if difference.low > 0 or difference.high < 0:
        verdict = AHEAD if (difference.low > 0) != lower_is_better else BEHIND
    else:
        verdict = CANNOT_TELL
    count = len(x) if groups is None else len(set(groups))
    if ratio:
        difference, spec = difference.map(math.exp), (".2f" if spec == ".1%" else spec)
    return Comparison(tuple(names), what, differences(settings_of(first), settings_of(second)), difference, verdict,
                      len(x), count, group_name, ratio, spec)
