"""The package's layout: each module sits in a room, and rooms import only the rooms below them.

    base       values.py: the value checks every room shares; cache.py: the cache folder, whole-file
               writes, locks, permissions
    model      model/: config, encoder, heads, losses and label rules, generation, outputs, input checks,
               transformers habits, checkpoint files, scoring
    data       data/: corpus, tokenizer, examples, collators, the everyday blanks
    training   training/: objectives, the trainer, metrics, probes, fine-tuning
    viz        viz/: the course's pictures
    course     course/: the course's runs, shipped checkpoints, figures, student versions and site
    exercises  exercises/: the checks and quizzes of the notebooks
    cli        cli.py, python -m minibert, and the package face (minibert/__init__.py)

A room is a folder (or, for the two ends, a module). Every import counts, those inside functions too:
an import that goes back up a room, or a cycle between modules, fails here with the line that makes it.
"""

import ast
import pathlib

PACKAGE = pathlib.Path(__file__).resolve().parents[1] / "minibert"
ROOMS = {  # room -> the top-level names under minibert/ that belong to it
    "base": {"values", "cache"},
    "model": {"model"},
    "data": {"data"},
    "training": {"training"},
    "viz": {"viz"},
    "course": {"course"},
    "exercises": {"exercises"},
    "cli": {"cli", "__main__", "__init__"},
}
ORDER = list(ROOMS)


def module_name(path):
    return ".".join(path.relative_to(PACKAGE.parent).with_suffix("").parts).removesuffix(".__init__")


def modules():
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def room_of(module):
    top = module.split(".")[1] if "." in module else "__init__"
    for room, names in ROOMS.items():
        if top in names:
            return room
    raise AssertionError(f"{module} is in no room: add it to ROOMS in tests/test_layout.py")


def imports(module, path, known):
    """(line, imported module) for every import of a minibert module in `path`, at any depth."""
    package = module if path.name == "__init__.py" else module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parent = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                base = f"{parent}.{node.module}" if node.module else parent
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        for target in targets:
            if target.split(".")[0] == "minibert" and target != module:
                yield node.lineno, target if target in known else "minibert"


def import_graph():
    known = modules()
    return {m: list(imports(m, p, known)) for m, p in known.items()}


def test_every_module_is_in_a_room_and_imports_only_the_rooms_below():
    wrong = []
    for module, targets in import_graph().items():
        here = ORDER.index(room_of(module))
        for line, target in targets:
            there = ORDER.index(room_of(target))
            if there > here:
                wrong.append(f"{module}:{line} ({ORDER[here]}) imports {target} ({ORDER[there]})")
    assert not wrong, "imports that go up a room:\n" + "\n".join(wrong)


def test_no_module_imports_itself_back_through_others():
    graph = {m: {t for _, t in targets} for m, targets in import_graph().items()}
    cycles = []

    def visit(module, path):
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append(" -> ".join(path[path.index(target):] + [target]))
            elif target not in done:
                visit(target, path + [target])
        done.add(module)

    done = set()
    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert not cycles, "import cycles:\n" + "\n".join(sorted(set(cycles)))


def test_the_layout_check_sees_an_import_inside_a_function(tmp_path):
    path = tmp_path / "config.py"
    path.write_text("def f():\n    from ..training.trainer import pretrain\n")
    known = {"minibert.model.config", "minibert.training.trainer"}
    assert list(imports("minibert.model.config", path, known)) == [(2, "minibert.training.trainer")]


def test_every_room_is_a_folder_of_the_package():
    for room, names in ROOMS.items():
        if room not in ("base", "cli"):
            assert (PACKAGE / room / "__init__.py").is_file(), f"the {room} room has no folder minibert/{room}/"
    tops = {p.stem if p.is_file() else p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    assert tops == set().union(*ROOMS.values()), f"modules outside the rooms: {tops - set().union(*ROOMS.values())}"
