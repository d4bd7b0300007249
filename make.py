"""Set up the course, run it and test it with Python alone: on Windows (no make, no POSIX shell), and on
Linux and macOS, where the Makefile calls this file for the same steps.

    python make.py install    # .venv with everything the course and its tests need
    python make.py lab        # JupyterLab on notebooks/ (installs first if needed)
    python make.py course     # run every notebook top to bottom (installs first if needed)
    python make.py test       # the whole test suite, notebooks included

`python` is the Python that creates .venv: it must be 3.11 or newer (transformers 5.24 needs 3.11), and
this file says so before it installs anything. This file itself runs on any Python 3.
"""

import hashlib
import os
import platform
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.abspath(__file__))
VENV = os.path.join(ROOT, ".venv")
WINDOWS = os.name == "nt"
BIN = os.path.join(VENV, "Scripts" if WINDOWS else "bin")
PYTHON = os.path.join(BIN, "python.exe" if WINDOWS else "python")
STAMP = os.path.join(VENV, ".installed")  # written last, holding the hash of what was installed
NEEDS = (3, 11)
TORCH = "torch==2.13.0"  # pinned, installed first and alone: a bare `torch` takes whatever is newest

# Offline by design: nothing downloads weights or data while the course or the tests run.
OFFLINE = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "TOKENIZERS_PARALLELISM": "false", "MPLBACKEND": "Agg",
           "MINIBERT_CACHE": os.environ.get("MINIBERT_CACHE") or os.path.join(ROOT, ".cache", "minibert")}
# PyTorch's and oneDNN's AVX2 kernels on an x86 CPU with AVX-512: a laptop's, for `test`.
AVX2 = {"ATEN_CPU_CAPABILITY": "avx2", "ONEDNN_MAX_CPU_ISA": "AVX2"}


def fail(message):
    print(f"make.py: {message}", file=sys.stderr)
    sys.exit(2)


def check_python():
    """Too old a Python is named before anything is installed, with the way to give another one."""
    if sys.version_info[:2] >= NEEDS:
        return
    have = ".".join(map(str, sys.version_info[:3]))
    fail(f"the course needs Python {NEEDS[0]}.{NEEDS[1]} or newer (transformers 5.24 does), and this is {have} "
         f"({sys.executable}). Install a newer one (python.org; on a Mac `brew install python@3.12`; on Ubuntu "
         "`sudo apt install python3.12 python3.12-venv`) and run the same command with it: "
         "`make PYTHON=python3.12 ...`, or `python3.12 make.py ...` (on Windows `py -3.12 make.py ...`). "
         "Nothing was installed.")


def installed_hash():
    """What an install depends on: the two files that list the packages."""
    h = hashlib.sha256()
    for name in ("pyproject.toml", "requirements.txt"):
        with open(os.path.join(ROOT, name), "rb") as f:
            h.update(f.read())
    return h.hexdigest()


def venv_is_usable():
    """A .venv whose Python runs and is new enough (a half-made one, or one made by an old Python, is not)."""
    if not os.path.isfile(PYTHON):
        return False
    try:
        out = subprocess.run([PYTHON, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                             capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return out.returncode == 0 and tuple(map(int, out.stdout.split())) >= NEEDS


def install(torch_index=None):
    """Make .venv and install the pinned packages into it; the stamp is written only when all of it
    worked, so an install that failed halfway is done again next time, never trusted."""
    check_python()
    current = installed_hash()
    if os.path.isfile(STAMP) and venv_is_usable():
        with open(STAMP) as f:
            if f.read().strip() == current:
                os.utime(STAMP)  # newer than the files it hashes, for make's own check
                return
    if os.path.isdir(VENV) and not venv_is_usable():
        print(f"make.py: {VENV} is unusable (half made, or made by an older Python): making it again", flush=True)
        shutil.rmtree(VENV)
    if not os.path.isdir(VENV):
        run([sys.executable, "-m", "venv", VENV])
    if os.path.exists(STAMP):
        os.remove(STAMP)
    pip = [PYTHON, "-m", "pip", "install", "--quiet"]
    run([*pip, "--upgrade", "pip"])
    run([*pip, TORCH, *(["--index-url", torch_index] if torch_index else [])])
    run([*pip, "-r", os.path.join(ROOT, "requirements.txt")])
    run([*pip, "--no-deps", "-e", ROOT])
    with open(STAMP, "w") as f:
        f.write(current + "\n")


def run(command, env=None):
    """Run a command, stopping make.py with its exit status if it fails."""
    status = subprocess.call(command, env={**os.environ, **OFFLINE, **(env or {})}, cwd=ROOT)
    if status != 0:
        fail(f"`{' '.join(command)}` failed (exit status {status})")


# The order the two workers take the notebooks in (pytest-xdist's loadfile hands out one file at a time, in this
# order with --no-loadscope-reorder): 04 and 08 first, side by side, since 04 trains the runs that 09, 03 and 07
# read and 08 reads none of them; 06 trains the run that 07 and the figures' tests read. A notebook that finds
# its run in training waits for it: an idle core.
LONGEST_FIRST = ["04", "08", "09", "06", "03", "10", "05", "07"]


def notebooks():
    folder = os.path.join(ROOT, "notebooks")
    found = sorted(os.path.join("notebooks", n) for n in os.listdir(folder) if n[:2].isdigit() and n.endswith(".ipynb"))
    rank = {number: i for i, number in enumerate(LONGEST_FIRST)}
    return sorted(found, key=lambda path: rank.get(os.path.basename(path)[:2], len(rank)))


def x86():
    return platform.machine().lower() in ("x86_64", "amd64", "i386", "i686")


def test():
    """Everything on two workers, one thread each where there are up to 3 cores (two-thread jobs side by side
    would spin against each other), the notebooks included (nbval). On an x86 CPU with the AVX2 kernels a
    laptop has, so that a lesson that holds only with AVX-512's bf16 fails on any machine. The notebooks
    train the course's runs into the cache as they need them; one run asked for by two notebooks is trained
    once. The student versions are checked without running the lessons again (test_student_versions.py)."""
    cores = os.cpu_count() or 2
    threads = str(cores // 2 if cores > 3 else 1)
    command = [PYTHON, "-m", "pytest", "-n", "2", "--dist", "loadfile", "--no-loadscope-reorder", *notebooks(), "tests",
               "--nbval-lax", "--nbval-current-env", "--nbval-cell-timeout=1800", "--durations=15"]
    env = {**os.environ, **OFFLINE, "OMP_NUM_THREADS": threads, **(AVX2 if x86() else {})}
    if subprocess.call(command, env=env, cwd=ROOT) != 0:
        fail("the test suite failed (above)")


def lab():
    command = [os.path.join(BIN, "jupyter"), "lab", "notebooks"]
    if not WINDOWS and os.geteuid() == 0:  # as root (a container) Jupyter starts only when told it is on purpose
        command.append("--allow-root")
    run(command)


def course():
    run([PYTHON, "-m", "minibert.course.figures", "figures"])
    run([os.path.join(BIN, "jupyter"), "nbconvert", "--to", "notebook", "--execute", "--inplace",
         "--ExecutePreprocessor.timeout=600", *notebooks()])


STEPS = {"install": install, "lab": lab, "course": course, "test": test}

if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in STEPS:
        print(__doc__.strip(), file=sys.stderr)
        sys.exit(2)
    check_python()
    install(os.environ.get("TORCH_INDEX"))  # every step installs first, unless nothing changed
    if sys.argv[1] != "install":
        STEPS[sys.argv[1]]()
