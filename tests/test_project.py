"""The set-up files agree with each other: pip, conda and the pinned versions that make installs."""

import pathlib
import re
import tomllib

import yaml
from packaging.requirements import Requirement

ROOT = pathlib.Path(__file__).resolve().parents[1]
CONDA_TO_PYPI = {"pytorch-cpu": "torch", "pytorch": "torch"}


def norm(name):
    return re.sub(r"[-_.]+", "-", name).lower()


INSTALLED_EXTRAS = ("notebooks", "course", "site", "test")  # what `make install` puts in .venv; not "classroom"


def pyproject_requirements(extras=INSTALLED_EXTRAS):
    """The package's dependencies and those of the extras that make installs, by name (without the
    extras' references to one another)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = project["dependencies"] + [r for e in extras for r in project["optional-dependencies"][e]]
    return {norm(Requirement(r).name): Requirement(r) for r in reqs if norm(Requirement(r).name) != "minibert-course"}


def test_colab_installs_only_what_the_notebooks_need():
    """A notebook's first cell on Colab installs the package with its "notebooks" extra: nothing of the
    tests, the website or JupyterLab (Colab has its own)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    notebooks = {norm(Requirement(r).name) for r in project["optional-dependencies"]["notebooks"]}
    assert notebooks == {"datasets", "accelerate"}
    everything = set(pyproject_requirements(("notebooks",)))
    assert not everything & {"pytest", "playwright", "jupyterlab", "nbval", "latex2mathml", "jupyterhub"}


def test_environment_yml_lists_the_same_dependencies_as_pyproject():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    assert env["channels"] == ["conda-forge"]
    conda, pip = [], []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            pip = dep["pip"]
        else:
            conda.append(dep)
    names = {norm(CONDA_TO_PYPI.get(re.split(r"[<>=! ]", d)[0], re.split(r"[<>=! ]", d)[0])) for d in conda}
    names |= {norm(Requirement(p).name) for p in pip if p != "-e ."}
    assert "-e ." in pip
    assert "pytorch-cpu" in " ".join(conda)  # the CPU build, as the Makefile installs
    assert names - {"python", "pip"} == set(pyproject_requirements())


def test_pinned_versions_satisfy_the_ranges_in_pyproject():
    pins = {}
    for line in (ROOT / "requirements.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, version = line.split("==")
            pins[norm(name)] = version
    assert pins["torch"] == "2.13.0"  # the CPU wheel kept on disk; anything else pulls CUDA
    for name, req in pyproject_requirements().items():
        assert name in pins, f"{name} is not pinned in requirements.txt"
        assert req.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {req.specifier}"


def test_an_old_transformers_is_named_at_import(tmp_path):
    """Installed with --no-deps beside transformers 4.57, `import minibert` says which version is wrong
    instead of letting generate fail later with an AttributeError inside transformers."""
    import os
    import subprocess
    import sys
    fake = tmp_path / "transformers-4.57.0.dist-info"  # found first on the path: what metadata reports
    fake.mkdir()
    (fake / "METADATA").write_text("Metadata-Version: 2.1\nName: transformers\nVersion: 4.57.0\n")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    result = subprocess.run([sys.executable, "-c", "import minibert"], env=env, capture_output=True, text=True)
    assert result.returncode != 0
    assert "transformers 4.57.0 is installed, but minibert needs transformers<6,>=5.24" in result.stderr
    ok = subprocess.run([sys.executable, "-c", "import minibert"], capture_output=True, text=True)
    assert ok.returncode == 0, ok.stderr


def test_every_name_the_benchmarks_import_from_minibert_exists():
    """`make benchmark` runs scripts that import from the package inside their functions too: a name that
    moved (machine() went from the course to the trainer) fails there only after minutes of timing."""
    import ast
    import importlib
    for script in sorted((ROOT / "benchmarks").glob("*.py")):
        for node in ast.walk(ast.parse(script.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("minibert"):
                module = importlib.import_module(node.module)
                for alias in node.names:
                    assert hasattr(module, alias.name) or importlib.util.find_spec(f"{node.module}.{alias.name}"), \
                        f"{script.name}: from {node.module} import {alias.name}: no such name"
