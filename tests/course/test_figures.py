"""The course's figures: the committed ones are what the code draws now, from the runs it records."""

import json
import os
import re
import subprocess
import sys

import pytest
from matplotlib.testing.compare import compare_images

from minibert.course import figures
from helpers import ROOT

COMMITTED = os.path.join(ROOT, "figures")
TOL = 2.0  # RMS difference on a 0-255 scale: fonts may differ by a pixel here and there, a changed picture does not


@pytest.fixture(scope="module")
def drawn(course, tmp_path_factory):
    out = tmp_path_factory.mktemp("figures")
    figures.generate(str(out), list(figures.FIGURES), course=course)
    return out


def committed_record(name):
    path = os.path.join(COMMITTED, figures.RECORDED_RUNS[name])
    assert os.path.exists(path), f"figures/{figures.RECORDED_RUNS[name]} is missing: run `make figures` and commit it"
    with open(path) as f:
        return json.load(f)


@pytest.mark.parametrize("name", list(figures.FIGURES))
def test_figure_is_the_committed_one(drawn, name, tmp_path):
    expected = os.path.join(COMMITTED, name)
    assert os.path.exists(expected), f"figures/{name} is missing: run `make figures` and commit it"
    actual = str(drawn / name)
    if name in figures.RECORDED_RUNS:  # a live run: drawn from the numbers of the run it shows
        actual = str(tmp_path / name)
        figures.save(figures.learning_curves_of(committed_record(name)), actual)
    diff = compare_images(expected, actual, tol=TOL)
    assert diff is None, f"figures/{name} is not what the code draws now ({diff}); if that is intended, " \
                         "run `make figures` and commit the new picture"


@pytest.mark.parametrize("name", list(figures.RECORDED_RUNS))
def test_a_picture_of_the_live_run_shows_the_run_the_course_trains(course, name):
    """Another CPU trains the course's run to slightly different numbers; a changed recipe or code moves
    them further or changes the settings, and the committed picture would then show a run nobody trains."""
    committed, here = committed_record(name), course.record
    assert committed["settings"] == here["settings"], f"figures/{name} shows a run with other settings than the " \
        "course's: run `make figures` and commit the new picture"
    assert [h["step"] for h in committed["history"]] == [h["step"] for h in here["history"]]
    assert [e["step"] for e in committed["evals"]] == [e["step"] for e in here["evals"]]
    assert committed["baselines"] == pytest.approx(here["baselines"], abs=1e-4)  # the same held-out data
    for old, new in zip(committed["evals"], here["evals"]):
        assert old.keys() == new.keys()
        for metric in old.keys() - {"step"}:  # within what arithmetic alone moves (bf16 or fp32, threads)
            # NSP and SOP are scored on 256 pairs, where a few pairs move the accuracy by points
            tol = 0.15 if metric.startswith(("nsp", "sop")) else 0.05 if "loss" in metric else 0.02
            assert old[metric] == pytest.approx(new[metric], abs=tol), \
                f"figures/{name} shows {metric} {old[metric]:.3f} at step {old['step']}, the course's run " \
                f"{new[metric]:.3f} here: run `make figures` and commit the new picture"


def test_files_carry_no_version_or_date(drawn):
    data = (drawn / "label_shift.png").read_bytes()
    assert b"matplotlib" not in data.lower() and b"Software" not in data


def test_every_figure_in_the_readme_exists():
    with open(os.path.join(ROOT, "README.md")) as f:
        names = re.findall(r"\]\((figures/[^)\s]+)\)", f.read())
    assert names, "the README shows no figure"
    for name in names:
        assert os.path.exists(os.path.join(ROOT, name)), f"README shows {name}, which does not exist"
        assert os.path.basename(name) in figures.FIGURES, f"{name} is not drawn by `make figures`"


def test_import_minibert_does_not_import_the_pictures():
    code = "import sys, minibert; print('minibert.viz' in sys.modules, 'matplotlib' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
