"""make.py, the set-up that needs no make: too old a Python is named before anything is installed, and an
install that failed halfway, or a .venv made by an older Python, is done again instead of trusted."""

import importlib.util
import os
import sys

import pytest

from helpers import ROOT

# The stand-in for a venv's Python below is a shell script: these run where make.py meets make (Linux, macOS).
pytestmark = pytest.mark.skipif(os.name == "nt", reason="the stand-in Python is a shell script")


@pytest.fixture
def make(tmp_path, monkeypatch):
    """make.py as a module, with its .venv in tmp_path and every command it runs recorded, not run."""
    spec = importlib.util.spec_from_file_location("make_py", ROOT / "make.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    venv = tmp_path / ".venv"
    python = venv / "bin" / "python"
    monkeypatch.setattr(module, "VENV", str(venv))
    monkeypatch.setattr(module, "PYTHON", str(python))
    monkeypatch.setattr(module, "STAMP", str(venv / ".installed"))
    module.commands = []

    def run(command, env=None):
        module.commands.append(command)
        if command[1:3] == ["-m", "venv"]:
            fake_python(python, "3 12")
        if getattr(module, "fail_on", None) and module.fail_on in command:
            sys.exit(2)
    monkeypatch.setattr(module, "run", run)
    return module


def fake_python(path, version):
    """A stand-in for a venv's python that answers make.py's version question."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!/bin/sh\necho {version}\n")
    path.chmod(0o755)


def test_too_old_a_python_is_named_with_the_fix_before_anything_is_installed(make, monkeypatch, capsys):
    monkeypatch.setattr(sys, "version_info", (3, 9, 6, "final", 0))
    with pytest.raises(SystemExit) as stop:
        make.install()
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert "needs Python 3.11 or newer" in err and "this is 3.9.6" in err
    assert "make PYTHON=python3.12" in err and "Nothing was installed" in err
    assert make.commands == [] and not os.path.exists(make.VENV)


def test_an_install_that_failed_halfway_is_done_again(make):
    make.fail_on = "torch==2.13.0"  # the network went away during the torch download
    with pytest.raises(SystemExit):
        make.install()
    assert not os.path.exists(make.STAMP)
    make.fail_on, make.commands = None, []
    make.install()  # the next attempt does not trust the half-made .venv: it installs again
    assert any("torch==2.13.0" in c for c in make.commands) and any("requirements.txt" in " ".join(c) for c in make.commands)
    assert open(make.STAMP).read().strip() == make.installed_hash()
    make.commands = []
    make.install()  # and once it is whole, nothing more
    assert make.commands == []


def test_a_venv_made_by_an_older_python_is_made_again(make, tmp_path):
    fake_python(tmp_path / ".venv" / "bin" / "python", "3 9")
    (tmp_path / ".venv" / ".installed").write_text(make.installed_hash())
    make.install()
    assert make.commands[0][1:3] == ["-m", "venv"]  # made again with this Python
    assert len(make.commands) > 1
