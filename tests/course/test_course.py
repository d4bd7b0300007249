"""Classroom use: solutions are stripped cleanly, the solution versions pass every check, and the
website loads in a real browser (tests/course/test_student_versions.py runs the student versions)."""

import functools
import http.server
import json
import os
import re
import shutil
import threading

import nbformat
import pytest
from helpers import ROOT, check_cells, outputs_text

from minibert.course.notebooks import (BEGIN, COURSE_WORD_BUDGET, NUMBER_BUDGET, WORD_BUDGET, build_site,
                                      learning_goals, notebook_paths, prose_numbers, prose_words, quoted_measurements,
                                      run_facts, stale_facts)
from minibert.course.runs import COURSE_RUNS

NOTEBOOKS = notebook_paths(os.path.join(ROOT, "notebooks"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_solution_notebook_has_exercises_that_pass(path):
    nb = nbformat.read(path, as_version=4)
    regions = sum(c.source.count(BEGIN) for c in nb.cells if c.cell_type == "code")
    checks = check_cells(nb)
    exercises = [c for c in checks if "quiz(" not in c.source]
    assert len(exercises) >= 2, "each notebook has at least two exercises"
    assert any("quiz(" in c.source for c in checks), "each notebook ends with a quiz"
    assert regions >= len(checks)
    for cell in exercises:
        text = outputs_text(cell)
        assert "✓" in text and "✗" not in text and "○" not in text, f"a check does not pass:\n{cell.source}\n{text}"
    quiz_out = outputs_text([c for c in checks if "quiz(" in c.source][-1])
    m = re.search(r"(\d+) of (\d+) right", quiz_out)
    assert m and m.group(1) == m.group(2), quiz_out


# ---- the lessons read as lessons: one sitting, conclusions in words, measurements in outputs ----

@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_a_lesson_fits_one_sitting_and_quotes_no_measurement_its_outputs_print(path):
    nb = nbformat.read(path, as_version=4)
    assert prose_words(nb) <= WORD_BUDGET, f"{prose_words(nb)} words before the exercises: too long for one sitting"
    numbers = prose_numbers(nb)
    assert len(numbers) <= NUMBER_BUDGET, f"{len(numbers)} numbers in the prose: {numbers}"
    quoted = quoted_measurements(nb)
    assert not quoted, (f"the prose copies numbers that the notebook's outputs print: {quoted}; a rerun on "
                        "another CPU would contradict it (let a cell print them)")


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_a_lesson_says_no_run_length_and_no_number_of_a_card_or_a_run(path):
    facts = run_facts(os.path.join(ROOT, "checkpoints"), COURSE_RUNS)
    stale = stale_facts(nbformat.read(path, as_version=4), facts)
    assert not stale, (f"the prose restates properties of runs or checkpoints: {stale}; the next retraining (or "
                       "another CPU) makes them false: let a cell print them from the run or the card")


def test_the_stale_fact_rule_sees_durations_steps_and_card_numbers_and_not_reading_times():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · Title\n\n**Time.** About 20 minutes to read; seconds to run.\n\n"
                                      "`bert-clm`, the same model trained for half an hour, beside a one-minute run "
                                      "and notebook 04's; it trained for 50,000 steps at learning rate 0.001, not "
                                      "15% of 600 tokens; Seventy-five minutes of it."),
        nbformat.v4.new_markdown_cell("## 3. Exercises\n\nTrain it for 50,000 steps, a few minutes."),
    ])
    found = [words for words, why in stale_facts(nb, facts={50000.0, 0.001, 600.0})]
    assert found == ["half an hour", "a one-minute", "Seventy-five minutes", "50,000 steps", "0.001", "a few minutes"]


def test_the_facts_are_read_from_the_cards_and_the_course_runs():
    facts = run_facts(os.path.join(ROOT, "checkpoints"), COURSE_RUNS)
    with open(os.path.join(ROOT, "checkpoints", "bert-mlm-nsp", "training_args.json")) as f:
        info = json.load(f)
    assert {float(info["steps"]), info["minutes"], info["args"]["lr"]} <= facts
    assert {float(settings["steps"]) for settings in COURSE_RUNS.values()} <= facts


def test_the_course_fits_its_word_budget():
    words = {os.path.basename(p): prose_words(nbformat.read(p, as_version=4)) for p in NOTEBOOKS}
    assert sum(words.values()) <= COURSE_WORD_BUDGET, words


def test_the_prose_rules_see_a_copied_measurement_and_not_a_reference():
    nb = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_markdown_cell("# 99 · Title\n\nAs notebook 04 and exercise 06.1 show, we mask 15% "
                                      "and reach `0.25` and $0.5$."),
        nbformat.v4.new_code_cell("print(acc)", outputs=[nbformat.v4.new_output(
            "stream", text="accuracy 11.4% after 600 steps, 0.25\n")]),
        nbformat.v4.new_markdown_cell("The live run reaches 11.4%, far above 5.3%."),
        nbformat.v4.new_markdown_cell("## 3. Exercises\n\nMany words here do not count, nor does 11.4."),
    ])
    assert prose_numbers(nb) == ["15", "11.4", "5.3"]  # code, formulas, references and exercises left out
    assert quoted_measurements(nb) == ["11.4", "11.4"]  # 5.3 is not printed; the exercises count here too
    assert prose_words(nb) == 27  # the markdown before the exercises, word by word


@pytest.fixture(scope="module")
def chromium():
    path = shutil.which("chromium") or "/usr/bin/chromium"
    if not os.path.exists(path):  # CI's .ci/run installs it; a test never touches the network
        pytest.skip("Chromium is not installed: install Debian's chromium package to run the browser test")
    return path


def test_website_pages_load_in_chromium_with_titles_headings_and_images(tmp_path, chromium):
    from playwright.sync_api import sync_playwright
    site = tmp_path / "site"
    pages = build_site(os.path.join(ROOT, "notebooks"), site, os.path.join(ROOT, "figures"))
    assert len(pages) == len(NOTEBOOKS) + 1
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    handler.log_message = lambda *args: None
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    screenshots = os.path.join(ROOT, "build", "screenshots")
    os.makedirs(screenshots, exist_ok=True)
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=chromium, args=[
                "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-sync",
                "--disable-background-networking", "--disable-component-update"])
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            for path in pages:
                name = os.path.basename(path)
                response = page.goto(f"http://127.0.0.1:{server.server_address[1]}/{name}", wait_until="load")
                assert response.status == 200
                expected = "minibert: how language models learn" if name == "index.html" else \
                    notebook_title_of(os.path.join(ROOT, "notebooks", name[:-5] + ".ipynb"))
                assert page.title() == expected
                assert page.locator("h1").count() >= 1 and page.locator("h2").count() >= 1
                images = page.eval_on_selector_all("img", "els => els.map(e => [e.complete && e.naturalWidth > 0, e.alt])")
                if name == "index.html":
                    assert len(images) >= 6, "the contents page shows the course's pictures"
                broken = [alt for ok, alt in images if not ok]
                assert not broken, f"{name}: broken images {broken}"
                prose = page.evaluate("() => { const b = document.body.cloneNode(true); "
                                      "b.querySelectorAll('pre, code').forEach(e => e.remove()); return b.innerText; }")
                raw = re.findall(r"\$[^$\n]+\$", prose)  # formulas must be drawn (MathML), not shown as LaTeX
                assert not raw, f"{name}: formulas shown as raw LaTeX: {raw[:3]}"
                if name.startswith("03_"):
                    assert page.locator("math").count() >= 3
                page.screenshot(path=os.path.join(screenshots, name[:-5] + ".png"))
            browser.close()
    finally:
        server.shutdown()
    assert len(os.listdir(screenshots)) >= len(pages)


def notebook_title_of(path):
    from minibert.course.notebooks import notebook_title
    return notebook_title(nbformat.read(path, as_version=4))


def test_the_teaching_guide_lists_every_notebooks_goals_as_the_notebook_states_them():
    with open(os.path.join(ROOT, "docs", "teaching.md")) as f:
        guide = f.read()
    for path in NOTEBOOKS:
        nb = nbformat.read(path, as_version=4)
        goals = learning_goals(nb)
        assert len(goals) >= 3, f"{os.path.basename(path)}: no learning goals found"
        missing = [g for g in goals if f"- {g}\n" not in guide]
        assert not missing, f"docs/teaching.md lacks goals of {os.path.basename(path)}: {missing}"
        assert os.path.basename(path)[:2] in re.findall(r"^\| (\d\d) ", guide, re.M), \
            f"docs/teaching.md's plan has no row for {os.path.basename(path)}"


def test_the_robustness_command_refuses_a_misspelt_setting_or_notebook_before_running_anything(capsys):
    from minibert.course import robustness
    with pytest.raises(ValueError, match="KIND-PRECISION-SEED"):
        robustness.main(["avx2-fp32-0", "avx2-bf17-0"])  # the second is checked before the first runs
    with pytest.raises(SystemExit):
        robustness.main(["avx2-fp32-0", "--notebooks", "99"])
    assert "no notebook numbered 99" in capsys.readouterr().err
    with pytest.raises(SystemExit) as stop:
        robustness.main(["--help"])
    assert stop.value.code == 0 and "KIND-PRECISION-SEED" in capsys.readouterr().out


def test_the_robustness_record_of_an_assertion_gives_its_margin_or_for_sets_whether_it_holds():
    """Every lesson assertion is recorded in each setting; one comparing sets (the masking decisions a
    sentence shows) holds or not, with no margin, instead of stopping the notebook."""
    from minibert.course.robustness import measure
    assert measure("a < 0.5", "upper", 0.2, 0.5) == {"assertion": "a < 0.5", "holds": True, "margin": 0.3,
                                                     "value": 0.2, "bound": 0.5}
    assert measure("a > 0.5", "lower", 0.2, 0.5)["holds"] is False
    assert measure("{1, 2} <= seen", "upper", {1, 2}, {0, 1, 2})["holds"] is True
    assert measure("{1, 3} <= seen", "upper", {1, 3}, {0, 1, 2}) == {"assertion": "{1, 3} <= seen", "holds": False,
                                                                     "margin": None, "value": None, "bound": None}
    assert measure("seen > {1}", "lower", {0, 1}, {1})["holds"] is True


def test_every_notebook_opens_with_the_colab_cell_made_from_the_one_repository_address():
    import tomllib
    from minibert.course.notebooks import colab_cell
    url = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
    assert url in colab_cell()
    for path in NOTEBOOKS:
        first = nbformat.read(path, as_version=4).cells[0]
        assert first.cell_type == "code" and first.source == colab_cell(), f"{path}: `python -m minibert.course colab`"


def test_the_colab_cell_fetches_and_installs_on_colab_only(tmp_path, monkeypatch):
    """Off Colab it does nothing; on Colab (google.colab imported) it clones the repository once,
    installs the package with the notebooks' extra only, and makes it importable from notebooks/."""
    import subprocess
    import sys
    import types
    from minibert.course.notebooks import COLAB_CELL
    folder = tmp_path / "content" / "minibert"
    cell = COLAB_CELL.format(url="https://example.org/minibert", folder=folder)
    commands = []

    def run(command, check=False):
        commands.append(command)
        if command[0] == "git":
            (folder / "notebooks").mkdir(parents=True)
    monkeypatch.setattr(subprocess, "run", run)
    monkeypatch.chdir(tmp_path)
    exec(cell, {})
    assert commands == [] and os.getcwd() == str(tmp_path)  # not on Colab
    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    exec(cell, {})
    assert commands == [["git", "clone", "--depth", "1", "https://example.org/minibert", str(folder)],
                        [sys.executable, "-m", "pip", "install", "--quiet", "-e", f"{folder}[notebooks]"]]
    assert os.getcwd() == str(folder / "notebooks") and sys.path[0] == str(folder)
    exec(cell, {})  # run again (a second notebook): nothing fetched again
    assert len(commands) == 2
