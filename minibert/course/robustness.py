"""How far each notebook's assertions are from failing, across seeds, precisions and CPU kinds.

A lesson's assertion is its claim, so it must hold with a margin on any student's machine. This runs
the notebooks in several settings, each with a cache of its own (so every live run is trained in that
setting), and records every assertion instead of stopping at the first that fails: its two sides and its
margin (how far the value is from the bound, on the passing side when positive).

    python -m minibert.course robustness                          # every setting, every notebook
    python -m minibert.course robustness avx2-fp32-0 native-bf16-1 --notebooks 05 09

A setting is KIND-PRECISION-SEED:
    KIND       native: this CPU's own kernels; avx2: PyTorch's and oneDNN's AVX2 kernels, as on most
               laptops (ATEN_CPU_CAPABILITY=avx2, ONEDNN_MAX_CPU_ISA=AVX2), where bf16 is not native
    PRECISION  bf16 (where native; refused elsewhere) or fp32: what a live run trains in
    SEED       added to every seed a notebook sets with torch.manual_seed and to the live runs' seed (their
               weights, batches, masks and pairs; not their held-out documents, which stay the notebooks')
Not a test: a setting takes as long as `make course` from an empty cache. The executed notebooks, with each
cell's start and end in its metadata, are kept in build/robustness/executed/SETTING/.
"""

import ast
import itertools
import json
import os
import shutil
import subprocess
import sys
import time

SETTINGS = [f"{kind}-{precision}-{seed}" for kind, precision in (("native", "bf16"), ("native", "fp32"), ("avx2", "fp32"))
            for seed in (0, 1, 2)]
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
LOWER_BOUNDS, UPPER_BOUNDS = (ast.Gt, ast.GtE), (ast.Lt, ast.LtE)


# ---- inside the notebook's kernel: every assert becomes a record ----
class RecordAsserts(ast.NodeTransformer):
    """Rewrite `assert a < b and c > d` into one record per comparison, which never raises."""

    def visit_Assert(self, node):
        parts = node.test.values if isinstance(node.test, ast.BoolOp) and isinstance(node.test.op, ast.And) else [node.test]
        calls = []
        for part in parts:
            text = ast.unparse(part)
            if isinstance(part, ast.Compare):
                sides = [part.left, *part.comparators]
                for op, (left, right) in zip(part.ops, itertools.pairwise(sides)):
                    kind = "upper" if isinstance(op, UPPER_BOUNDS) else "lower" if isinstance(op, LOWER_BOUNDS) else None
                    if kind:
                        calls.append(self.record(text, kind, left, right))
                        continue
                    calls.append(self.record(text, "holds", ast.Compare(left, [op], [right])))
            else:
                calls.append(self.record(text, "holds", part))
        return [ast.copy_location(ast.Expr(call), node) for call in calls]

    @staticmethod
    def record(text, kind, *values):
        return ast.Call(ast.Name("_robustness_record", ast.Load()), [ast.Constant(text), ast.Constant(kind), *values], [])


def kernel_setup(log, seed, fp32):
    """The first cell run in each notebook: seeds offset, fp32 forced where asked, asserts recorded."""
    return f"""
import ast as _ast, json as _json, torch as _torch
from minibert.course import robustness as _robustness
from minibert.training import trainer as _trainer
_manual_seed = _torch.manual_seed
_torch.manual_seed = lambda s: _manual_seed(s + {seed})
_trainer.TrainArgs.__init__.__defaults__ = tuple(
    ({seed} if f.name == "seed" else f.default) for f in _trainer.dataclasses.fields(_trainer.TrainArgs)
    if f.default is not _trainer.dataclasses.MISSING)
_split_corpus = _trainer.split_corpus  # a run's seed also picks its held-out documents: keep the notebooks' own
_trainer.split_corpus = lambda documents, heldout=0.1, seed=0: _split_corpus(documents, heldout, seed=0)
if {fp32}:
    _trainer.bf16_is_native = lambda device: False
def _robustness_record(text, kind, *values):
    with open({log!r}, "a", encoding="utf-8") as f:
        f.write(_json.dumps(_robustness.measure(text, kind, *values)) + "\\n")
get_ipython().ast_transformers.append(_robustness.RecordAsserts())
"""


def measure(text, kind, *values):
    """One assertion's record: its text, whether it holds, and its margin (positive: on the passing side)."""
    if kind == "holds":
        return {"assertion": text, "holds": bool(values[0]), "margin": None, "value": None, "bound": None}
    try:
        left, right = (float(v) for v in values)
    except TypeError:  # not numbers (sets: a <= b says a is a subset of b): whether it holds, without a margin
        a, b = values if kind == "upper" else values[::-1]
        return {"assertion": text, "holds": bool(a <= b if "=" in text else a < b), "margin": None, "value": None,
                "bound": None}
    value, bound = (left, right)
    margin = right - left if kind == "upper" else left - right
    return {"assertion": text, "holds": margin > 0 or (margin == 0 and "=" in text), "margin": margin,
            "value": value, "bound": bound}


# ---- outside: one process per setting and notebook ----
def environment(setting, cache):
    kind, precision, seed = setting.split("-")
    if kind not in ("native", "avx2") or precision not in ("bf16", "fp32") or not seed.isdigit():
        raise ValueError(f"a setting is KIND-PRECISION-SEED with KIND native or avx2 and PRECISION bf16 or fp32, "
                         f"e.g. avx2-fp32-0; got {setting!r}")
    env = {**os.environ, "MINIBERT_CACHE": cache, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "TOKENIZERS_PARALLELISM": "false", "MPLBACKEND": "Agg", **(AVX2 if kind == "avx2" else {})}
    return env, int(seed), precision == "fp32"


def run_notebook(path, setting, log, cache):
    """Execute one notebook in a setting (its own kernel process, in notebooks/), appending its records to log."""
    import nbformat
    from nbclient import NotebookClient
    env, seed, fp32 = environment(setting, cache)
    if precision_refused(setting, env):
        raise ValueError(f"{setting}: bf16 is not native with these kernels; choose fp32")
    nb = nbformat.read(path, as_version=4)
    nb.cells.insert(0, nbformat.v4.new_code_cell(kernel_setup(log, seed, fp32)))
    client = NotebookClient(nb, timeout=1800, allow_errors=True, kernel_name="python3",
                            resources={"metadata": {"path": os.path.join(ROOT, "notebooks")}})
    begin = time.perf_counter()
    client.execute(env=env)
    errors = [o.get("ename", "") + ": " + o.get("evalue", "")[:200] for c in nb.cells if c.cell_type == "code"
              for o in c.get("outputs", []) if o.get("output_type") == "error"]
    executed = os.path.join(os.path.dirname(log), "executed", setting)  # to read, with each cell's timing
    os.makedirs(executed, exist_ok=True)
    nbformat.write(nb, os.path.join(executed, os.path.basename(path)))
    return time.perf_counter() - begin, errors


def precision_refused(setting, env):
    if not setting.split("-")[1] == "bf16":
        return False
    check = "from minibert.training.trainer import bf16_is_native; import torch; print(bf16_is_native(torch.device('cpu')))"
    return subprocess.run([sys.executable, "-c", check], env=env, capture_output=True, text=True).stdout.strip() != "True"


def main(argv):
    import argparse
    from .notebooks import notebook_paths
    parser = argparse.ArgumentParser(prog="python -m minibert.course robustness", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("settings", nargs="*", metavar="SETTING", help="default: all nine")
    parser.add_argument("--notebooks", nargs="+", metavar="NN", default=[], help="default: every notebook")
    args = parser.parse_args(argv)
    settings = args.settings or SETTINGS
    for setting in settings:
        environment(setting, cache="")  # a misspelt setting stops here, not after an hour of the others
    folder = os.path.join(ROOT, "build", "robustness")
    snapshot = os.path.join(folder, "notebooks")  # the notebooks as they are now: editing them meanwhile changes nothing
    os.makedirs(snapshot, exist_ok=True)
    paths = []
    for path in notebook_paths(os.path.join(ROOT, "notebooks")):
        if not args.notebooks or os.path.basename(path)[:2] in args.notebooks:
            paths.append(shutil.copy(path, snapshot))
    if not paths:
        parser.error(f"no notebook numbered {' or '.join(args.notebooks)}")
    for setting in settings:
        log = os.path.join(folder, f"{setting}.jsonl")
        cache = os.path.join(folder, "cache", setting)
        for path in paths:
            name = os.path.basename(path)[:2]
            mark = len(open(log, encoding="utf-8").readlines()) if os.path.exists(log) else 0
            seconds, errors = run_notebook(path, setting, log, cache)
            with open(log, encoding="utf-8") as f:
                rows = [json.loads(line) for line in f][mark:]
            with open(log, "r+", encoding="utf-8") as f:  # tag this notebook's records with its name and time
                lines = f.readlines()
                f.seek(0)
                f.writelines(lines[:mark] + [json.dumps({**r, "notebook": name, "setting": setting, "seconds": seconds}) + "\n"
                                             for r in rows])
                f.truncate()
            failed = [r for r in rows if not r["holds"]]
            print(f"{setting} {name}: {len(rows)} assertions, {len(failed)} failed, {seconds:.0f} s"
                  + "".join(f"\n  FAILED {r['assertion']} (margin {r['margin']})" for r in failed)
                  + "".join(f"\n  ERROR {e}" for e in errors), flush=True)
    print(table(folder))
    return 0


def relative(record):
    """A margin as a share of the larger side: 0.107 for 0.586 < ln 2 is 15%."""
    return record["margin"] / max(abs(record["value"]), abs(record["bound"]), 1e-12)


def table(folder):
    """Every assertion's worst margin over the settings recorded in folder, as a Markdown table."""
    rows = {}
    for name in sorted(os.listdir(folder)):
        if name.endswith(".jsonl"):
            with open(os.path.join(folder, name), encoding="utf-8") as f:
                for line in f:
                    r = json.loads(line)
                    if "notebook" in r:  # a notebook still running has not tagged its records yet
                        rows.setdefault((r["notebook"], r["assertion"]), []).append(r)
    lines = ["| notebook | assertion | worst margin (value vs bound: share of the larger) | in setting | settings | all hold |",
             "|---|---|---|---|---|---|"]
    for (notebook, assertion), records in sorted(rows.items()):
        measured = [r for r in records if r["margin"] is not None]
        worst = min(measured, key=relative) if measured else None
        shown = (f"{worst['margin']:+.3g} ({worst['value']:.4g} vs {worst['bound']:.4g}: {relative(worst):+.0%})"
                 if worst else "-")
        where = (worst or min(records, key=lambda r: r["holds"]))["setting"]
        lines.append(f"| {notebook} | `{assertion.replace('|', '/')}` | {shown} | {where} | {len(records)} | "
                     f"{'yes' if all(r['holds'] for r in records) else '**no**'} |")
    return "\n".join(lines)
