"""Windows, as far as a Linux machine can show it: the smoke tests (test_smoke.py) again, in a Python
where minibert's own code cannot import the modules that Windows' Python does not have, and a scan for
the POSIX-only functions of `os`. Libraries keep theirs (they have Windows code of their own)."""

import os
import subprocess
import sys

from helpers import ROOT

# Imported by Python at start-up when its folder is on PYTHONPATH: an import statement of minibert's own
# code (a module named minibert.*) that names a POSIX-only module fails as it does on Windows.
SITECUSTOMIZE = '''
import builtins
POSIX_ONLY = {"fcntl", "resource", "pwd", "grp", "termios", "posix", "pty", "tty", "syslog"}
real_import = builtins.__import__


def windows_import(name, globals=None, locals=None, fromlist=(), level=0):
    importer = (globals or {}).get("__name__") or ""
    if level == 0 and name.split(".")[0] in POSIX_ONLY and importer.split(".")[0] == "minibert":
        raise ModuleNotFoundError(f"No module named {name!r} ({importer} imported it: it is not on Windows)")
    return real_import(name, globals, locals, fromlist, level)


builtins.__import__ = windows_import
'''
POSIX_ONLY_OS = ("pread", "pwrite", "getuid", "geteuid", "getgid", "fchown", "getloadavg", "sched_getaffinity")


def test_the_smoke_tests_pass_where_posix_only_modules_are_refused(tmp_path):
    (tmp_path / "sitecustomize.py").write_text(SITECUSTOMIZE)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT)]), "MINIBERT_POSIX_REFUSED": "1",
           "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                          str(ROOT / "tests" / "platforms" / "test_smoke.py")], env=env, cwd=tmp_path,
                         capture_output=True, text=True, timeout=900)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert " passed" in out.stdout and "skipped" not in out.stdout


def package_nodes():
    """(file relative to the repository, node) for every node of the package's source."""
    import ast
    for path in sorted((ROOT / "minibert").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            yield os.path.relpath(path, ROOT), node


def test_the_package_calls_no_posix_only_function_of_os():
    """What the import guard above cannot see: os.pread and the like exist on Linux, not on Windows."""
    import ast
    found = [f"{path}:{node.lineno} os.{node.attr}" for path, node in package_nodes()
             if isinstance(node, ast.Attribute) and node.attr in POSIX_ONLY_OS
             and isinstance(node.value, ast.Name) and node.value.id == "os"]
    assert not found, found


def test_the_package_names_the_encoding_of_every_text_file_it_opens():
    """Windows' Python reads and writes text in the machine's code page (cp1252 in Western Europe) unless
    told otherwise: a card or a corpus with a character outside it would fail there, or be misread."""
    import ast
    found = []
    for path, node in package_nodes():
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "open"):
            continue
        mode = node.args[1] if len(node.args) > 1 else next((k.value for k in node.keywords if k.arg == "mode"), None)
        binary = isinstance(mode, ast.Constant) and "b" in str(mode.value)
        if not binary and not any(k.arg == "encoding" for k in node.keywords):
            found.append(f"{path}:{node.lineno}")
    assert not found, found
