"""Classroom use: the student versions, without solutions, still run to the end, with every exercise
"not done" and every quiz "not answered"."""

import ast
import os

import nbformat
import pytest
from helpers import CHECK, ROOT, check_cells

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


# A student version differs from its lesson only in the bodies of its exercises, and the lesson itself runs
# to the end in the test suite (nbval). So a student version runs to the end when (1) nothing after an
# exercise reads what the exercise defines, except behind the exercise's own check, and (2) each exercise's
# check, run on the stub, says "not done yet" (each quiz "not answered yet"). Both are checked here without
# running the lesson a second time: (2) runs each exercise cell alone, after the notebook's imports, since an
# exercise's check tries the student's function on data of its own.

def tree(source):
    return ast.parse("\n".join("" if line.lstrip().startswith(("%", "!")) else line for line in source.splitlines()))


def defined_by(cell_tree):
    """The names an exercise cell binds at its top level: its functions, and anything it assigns."""
    names = set()
    for node in cell_tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.add(node.name)
        else:
            names |= {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return names


def read_outside_its_check(cell_tree, names):
    """Names of `names` that a cell reads other than inside `if check_...(name):`, which is false for a stub."""
    guarded = set()  # the Name nodes inside such an if (and in its test), by identity
    for node in ast.walk(cell_tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Call) and \
                getattr(node.test.func, "id", "").startswith("check_"):
            checked = {a.id for a in node.test.args if isinstance(a, ast.Name)}
            guarded |= {id(n) for part in [node.test, *node.body] for n in ast.walk(part)
                        if isinstance(n, ast.Name) and n.id in checked}
    return {n.id for n in ast.walk(cell_tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
            and n.id in names and id(n) not in guarded}


@pytest.mark.parametrize("index", range(len(NOTEBOOKS)), ids=[os.path.basename(p) for p in NOTEBOOKS])
def test_student_version_runs_to_the_end_with_every_exercise_not_done(student_notebooks, index, monkeypatch):
    path = student_notebooks[index]
    lesson = nbformat.read(NOTEBOOKS[index], as_version=4)
    student = nbformat.read(path, as_version=4)
    assert not any(BEGIN in c.source or END in c.source for c in student.cells if c.cell_type == "code")
    assert all(not c.get("outputs") for c in student.cells if c.cell_type == "code")
    assert [c.source for c in student.cells] == \
        [strip_solutions(c.source) if c.cell_type == "code" else c.source for c in lesson.cells]  # the rest unchanged

    exercises = set()
    for i, cell in enumerate(lesson.cells):
        if cell.cell_type != "code":
            continue
        if BEGIN in cell.source:
            exercises |= defined_by(tree(cell.source))
        elif not CHECK.search(cell.source.strip().splitlines()[-1] + "\n"):
            read = read_outside_its_check(tree(cell.source), exercises)
            assert not read, (f"{os.path.basename(path)}, cell {i} reads {sorted(read)}, which an exercise defines: "
                              "in the student version it is a stub. Read it only inside `if check_...(name):`")

    monkeypatch.chdir(os.path.join(ROOT, "notebooks"))  # where the notebook's own code runs
    namespace = {}
    imports = [ast.unparse(node) for c in student.cells if c.cell_type == "code" for node in tree(c.source).body
               if isinstance(node, (ast.Import, ast.ImportFrom))]
    exec("\n".join(imports), namespace)
    checks = check_cells(student)
    assert checks
    for cell in checks:
        body = tree(cell.source)
        last = body.body.pop()
        exec(compile(body, "exercise", "exec"), namespace)
        text = repr(eval(compile(ast.Expression(last.value), "exercise", "eval"), namespace))
        assert "not done yet" in text or "not answered yet" in text, f"{cell.source}\n-> {text}"
        assert "✓" not in text, f"an unsolved exercise passed:\n{cell.source}\n{text}"


def test_a_lesson_cell_that_reads_an_exercise_outside_its_check_is_caught():
    assert read_outside_its_check(tree("if check_f(f):\n    y = f(1)\nz = f(2)\n"), {"f"}) == {"f"}
    assert read_outside_its_check(tree("if check_f(f):\n    y = f(1)\nelse:\n    y = 0\n"), {"f"}) == set()
    assert read_outside_its_check(tree("if check_g(g):\n    y = f(1)\n"), {"f"}) == {"f"}  # another exercise's check
    assert defined_by(tree("def f(x):\n    return x\n\nanswers = dict(q1='A')\ncheck_f(f)\n")) == {"f", "answers"}
