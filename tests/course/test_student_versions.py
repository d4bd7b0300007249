"""Classroom use: the student versions, without solutions, still run to the end, with every exercise
"not done" and every quiz "not answered"."""

import os

import nbformat
import pytest
from helpers import NOTEBOOK_SECONDS, ROOT, check_cells, outputs_text

from minibert.course.notebooks import BEGIN, END, notebook_paths, strip_solutions, write_student_versions

NOTEBOOKS = notebook_paths(os.path.join(ROOT, "notebooks"))


def test_strip_solutions_keeps_the_function_and_the_check():
    source = ("def make_labels(ids, mask):\n    \"\"\"doc\"\"\"\n    " + BEGIN + "\n    labels = ids.clone()\n"
              "    return labels\n    " + END + "\n\ncheck_make_labels(make_labels)")
    assert strip_solutions(source) == ('def make_labels(ids, mask):\n    """doc"""\n'
                                       '    raise NotImplementedError("Exercise: write the body of make_labels()")\n'
                                       '\ncheck_make_labels(make_labels)')
    with pytest.raises(ValueError, match="without"):
        strip_solutions(BEGIN + "\nx = 1\n")
    with pytest.raises(ValueError, match="without"):
        strip_solutions("x = 1\n" + END)


@pytest.fixture(scope="module")
def student_notebooks(tmp_path_factory):
    if not NOTEBOOKS:
        pytest.skip("no notebooks yet")
    folder = tmp_path_factory.mktemp("student")
    return write_student_versions(os.path.join(ROOT, "notebooks"), folder)


# The student versions run in two kernels side by side, one thread each: two kernels of two threads
# would spin against each other on a 2-core machine, and one kernel at a time leaves the cores idle
# while a notebook tokenizes, plots or starts up. Notebooks read the course runs that others train; a
# run is trained once, by the first notebook that asks for it, while any other that asks waits for it
# (course_run's lock), so a notebook starts as soon as a kernel is free. The order keeps both kernels
# busy: 04 first (it trains the masked LM that 09 reads, then its two short runs), 03 and 09 beside it.
ORDER = ["04", "03", "09", "06", "05", "08", "07", "10"]  # then the rest, in course order


@pytest.fixture(scope="module")
def executed_student_notebooks(student_notebooks, pytestconfig):
    """Number ("03") -> (the executed notebook, None) or (None, the exception that stopped it). The wall
    time of each goes to the end of the test report (conftest.py), which tells a teacher which lesson to
    start early on a slow machine."""
    import time
    from concurrent.futures import ThreadPoolExecutor
    from nbclient import NotebookClient
    paths = {os.path.basename(p)[:2]: p for p in student_notebooks}
    threads = str(max(1, (os.cpu_count() or 2) // 2))
    futures = {}

    def execute(number):
        nb = nbformat.read(paths[number], as_version=4)
        begin = time.perf_counter()
        try:
            NotebookClient(nb, timeout=600, kernel_name="python3",  # a cell may wait for a run, then train two
                           resources={"metadata": {"path": os.path.join(ROOT, "notebooks")}}).execute(
                env={**os.environ, "OMP_NUM_THREADS": threads})
        except Exception as error:  # noqa: BLE001 -- reported by this notebook's own test
            return None, error
        finally:
            pytestconfig.stash.setdefault(NOTEBOOK_SECONDS, {})[number] = time.perf_counter() - begin
        return nb, None

    with ThreadPoolExecutor(max_workers=2) as pool:
        for number in [n for n in ORDER if n in paths] + [n for n in paths if n not in ORDER]:
            futures[number] = pool.submit(execute, number)
    return {number: future.result() for number, future in futures.items()}


@pytest.mark.parametrize("index", range(len(NOTEBOOKS)), ids=[os.path.basename(p) for p in NOTEBOOKS])
@pytest.mark.slow
def test_student_version_runs_to_the_end_with_every_exercise_not_done(student_notebooks, executed_student_notebooks,
                                                                     index):
    path = student_notebooks[index]
    source = nbformat.read(path, as_version=4)
    assert not any(BEGIN in c.source or END in c.source for c in source.cells if c.cell_type == "code")
    assert all(not c.get("outputs") for c in source.cells if c.cell_type == "code")
    nb, error = executed_student_notebooks[os.path.basename(path)[:2]]
    if error is not None:
        raise error
    checks = check_cells(nb)
    assert checks
    for cell in checks:
        text = outputs_text(cell)
        assert "ERROR" not in text, text
        assert "not done yet" in text or "not answered yet" in text, f"{cell.source}\n-> {text}"
        assert "✓" not in text, f"an unsolved exercise passed:\n{cell.source}\n{text}"
