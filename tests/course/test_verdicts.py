"""A lesson's verdict never outruns its experiment. Read from the notebooks' source (nothing is run):

* a conclusion is shown by `verdict(...)` in a code cell, after the assertions that check it, so a run in
  which it does not hold stops before the student reads it; prose holds no conclusion in bold;
* two arms are compared with `minibert.compare`, which names every setting they differ in, never with a
  hand-made difference bootstrapped on its own; and what a comparison says is asserted.
"""

import ast
import glob
import os
import re

import nbformat
import pytest

ROOT = os.path.join(os.path.dirname(__file__), os.pardir, os.pardir)
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "[0-9][0-9]_*.ipynb")))
LESSONS = [p for p in NOTEBOOKS if int(os.path.basename(p)[:2]) >= 3]  # 00-02 measure; they compare no runs
BOLD = re.compile(r"\*\*(.+?)\*\*", re.S)


def name(path):
    return os.path.basename(path)[:-len(".ipynb")]


def code_cells(path):
    """(index, syntax tree) of each code cell; IPython's %magics and !commands left out."""
    for i, cell in enumerate(nbformat.read(path, as_version=4).cells):
        if cell.cell_type == "code":
            source = "\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in cell.source.splitlines())
            yield i, ast.parse(source)


def calls(tree, function):
    """The calls of `function` (by its last name: verdict, minibert.compare) in a tree, in source order."""
    found = [n for n in ast.walk(tree) if isinstance(n, ast.Call)
             and getattr(n.func, "attr", getattr(n.func, "id", None)) == function]
    return sorted(found, key=lambda n: (n.lineno, n.col_offset))


def bold_conclusions(markdown):
    """Bold spans that read as a conclusion: six words or more, not a question."""
    return [" ".join(span.split()) for span in BOLD.findall(markdown)
            if len(span.split()) >= 6 and not span.rstrip().endswith("?")]


@pytest.mark.parametrize("path", LESSONS, ids=name)
def test_a_conclusion_is_shown_by_the_code_that_checks_it_not_written_in_bold_prose(path):
    cells = nbformat.read(path, as_version=4).cells
    wrong = [f"cell {i}: a conclusion in bold prose is shown whether or not this run supports it; state it with "
             f"verdict(...) after the assertions that check it: {text!r}"
             for i, c in enumerate(cells) if c.cell_type == "markdown" for text in bold_conclusions(c.source)]
    if not any(calls(tree, "verdict") for _, tree in code_cells(path)):
        wrong.append("the lesson draws no verdict: a lesson states its conclusions with verdict(...)")
    for i, tree in code_cells(path):
        asserts = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Assert)]
        wrong += [f"cell {i}: verdict(...) on line {call.lineno} follows no assertion in its cell: assert exactly "
                  "what the sentence says first" for call in calls(tree, "verdict")
                  if not any(line < call.lineno for line in asserts)]
    if wrong:
        pytest.fail(f"{name(path)}:\n" + "\n".join(wrong), pytrace=False)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=name)
def test_two_arms_are_compared_with_compare_and_what_it_says_is_asserted(path):
    cells = list(code_cells(path))
    wrong = []
    for k, (i, tree) in enumerate(cells):
        for call in calls(tree, "bootstrap"):
            first = call.args[0] if call.args else None
            while isinstance(first, ast.Call) and isinstance(first.func, ast.Attribute):  # (a - b).double(), ...
                first = first.func.value
            if isinstance(first, ast.BinOp) and isinstance(first.op, ast.Sub):
                wrong.append(f"cell {i}: bootstrap({ast.unparse(call.args[0])}) compares two arms by hand; "
                             "minibert.compare pairs them, says what else differs between them, and gives the verdict")
        for call in calls(tree, "compare"):
            here_or_next = [tree] + [t for _, t in cells[k + 1:k + 2]]
            if not any(isinstance(n, ast.Assert) for t in here_or_next for n in ast.walk(t)):
                wrong.append(f"cell {i}: a comparison (line {call.lineno}) that no assertion checks: a lesson that "
                             "reads a verdict off it asserts that verdict")
    if not wrong and os.path.basename(path).startswith("00") and not any(calls(t, "compare") for _, t in cells):
        wrong.append("notebook 00 teaches the one way of comparing, minibert.compare, and uses it nowhere")
    if wrong:
        pytest.fail(f"{name(path)}:\n" + "\n".join(wrong), pytrace=False)
