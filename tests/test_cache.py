"""A class shares one cache and one checkpoint folder: what minibert saves is readable as the user's umask says."""

import dataclasses
import os
import shutil
import stat
import subprocess
import sys

import pytest
import torch

import minibert
from helpers import ROOT


@pytest.mark.parametrize("umask, mode", [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_saved_files_get_the_permissions_of_the_users_umask(tmp_path, umask, mode):
    model = minibert.BertForMaskedLM(minibert.BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
                                                         num_attention_heads=2, intermediate_size=16))
    old = os.umask(umask)
    try:
        model.save_pretrained(tmp_path / "shared")
        model.save_pretrained(tmp_path / "shared")  # saving over a folder keeps the rule
    finally:
        os.umask(old)
    folder = tmp_path / "shared"
    assert stat.S_IMODE(folder.stat().st_mode) == 0o777 & ~umask
    files = list(folder.iterdir())
    assert any(f.name == "model.safetensors" for f in files)  # safetensors alone would write it 0600
    for f in files:
        assert stat.S_IMODE(f.stat().st_mode) == mode, f.name


# ---- several processes on one cache: each bounded in time, started at the same moment ----

def run_together(script, n, env, timeout=120):
    """Start n copies of a Python script at once; return their outputs (each must succeed)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", **env}
    procs = [subprocess.Popen([sys.executable, "-c", script, str(i)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for i in range(n)]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        assert p.returncode == 0, err[-2000:]
        outs.append(out)
    return outs


def test_processes_asking_for_one_cache_entry_at_once_compute_it_once(tmp_path):
    marks = tmp_path / "computed.txt"
    script = ("import sys, time, torch\nfrom minibert.course import cached\n"
              f"MARKS = {str(marks)!r}\n"
              "def compute():\n"
              "    with open(MARKS, 'a') as f:\n"
              "        f.write('computed\\n')\n"
              "    time.sleep(1.5)\n"
              "    return {'value': torch.arange(3), 'who': sys.argv[1]}\n"
              "print(cached('race', {'k': 1}, compute)['who'])\n")
    outs = run_together(script, 3, {"MINIBERT_CACHE": str(tmp_path / "cache")})
    assert marks.read_text() == "computed\n"  # the others waited and read the first one's result
    assert len({o.strip().splitlines()[-1] for o in outs}) == 1  # after a note that says it waited
    leftovers = [f.name for f in (tmp_path / "cache" / "runs").iterdir() if f.name.endswith(".tmp")]
    assert not leftovers


def test_a_damaged_cache_entry_is_computed_again_with_a_note(tmp_path, monkeypatch, capsys):
    from minibert.course import cached, run_dir
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    os.makedirs(os.path.dirname(run_dir("entry")), exist_ok=True)
    with open(run_dir("entry") + ".pt", "wb") as f:
        f.write(b"PK\x03\x04 cut short")
    assert cached("entry", 1, lambda: [1, 2]) == [1, 2]
    assert "could not be read" in capsys.readouterr().out
    assert cached("entry", 1, lambda: pytest.fail("computed again")) == [1, 2]


@dataclasses.dataclass
class Score:
    value: float


def test_a_value_the_cache_could_not_read_back_is_refused_when_written(tmp_path, monkeypatch):
    from minibert.course import cached, run_dir
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    with pytest.raises(ValueError, match="can keep tensors, numbers, strings"):
        cached("odd", 1, lambda: Score(1.0))
    assert not os.path.exists(run_dir("odd") + ".pt")  # nothing half-usable left behind


def test_a_reader_never_sees_a_folder_that_another_process_is_saving(tmp_path):
    folder = tmp_path / "model"
    config = dict(vocab_size=30, hidden_size=8, num_hidden_layers=1, num_attention_heads=2, intermediate_size=16)
    minibert.BertForMaskedLM(minibert.BertConfig(**config)).save_pretrained(folder)
    writer = subprocess.Popen([sys.executable, "-c", (
        "import sys, minibert\n"
        f"model = minibert.BertForMaskedLM(minibert.BertConfig(**{config!r}))\n"
        f"for _ in range(40): model.save_pretrained({str(folder)!r})\n")],
        env={**os.environ, "OMP_NUM_THREADS": "1"}, stderr=subprocess.PIPE, text=True)
    loads = 0
    try:
        while writer.poll() is None:
            minibert.BertForMaskedLM.from_pretrained(folder)  # raises if it meets half a save
            loads += 1
    finally:
        _, err = writer.communicate(timeout=120)
    assert writer.returncode == 0, err[-2000:]
    assert loads > 10


# ---- a teacher fills the cache, a student (a second Unix user) reads it ----

SITE_PACKAGES = os.path.join(sys.prefix, "lib", f"python{sys.version_info.major}.{sys.version_info.minor}",
                             "site-packages")


def as_another_user(script, user="nobody", umask="022", **env):
    """Run a Python script as another user (`nobody`, or `daemon` for a second student; needs root and
    runuser, as in CI), with this checkout's packages and that umask; skip where that is not possible."""
    python = f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}"
    if os.geteuid() != 0 or not shutil.which("runuser") or not os.path.exists(python):
        pytest.skip("needs root, runuser and the system's Python to act as a second user")
    command = ["runuser", "-u", user, "--", "sh", "-c", f'umask {umask} && exec "$@"', "-",
               "env", f"PYTHONPATH={SITE_PACKAGES}:{ROOT}", "HOME=/tmp",
               "OMP_NUM_THREADS=1", "HF_HUB_OFFLINE=1", *[f"{k}={v}" for k, v in env.items()], python, "-c"]
    probe = subprocess.run(command + ["import minibert"], capture_output=True, text=True, timeout=120)
    if probe.returncode != 0:
        pytest.skip(f"a second user cannot import this checkout here: {probe.stderr[-300:]}")
    return subprocess.run(command + [script], capture_output=True, text=True, timeout=120)


@pytest.fixture
def shared_tmp():
    """A folder that other users may enter (pytest's own are private), as a class's shared one is."""
    import pathlib
    import tempfile
    path = tempfile.mkdtemp(prefix="minibert-shared-")
    os.chmod(path, 0o755)
    yield pathlib.Path(path)
    shutil.rmtree(path, ignore_errors=True)


def test_a_student_reads_what_the_teacher_put_in_the_shared_cache(shared_tmp):
    from minibert.course import cached, run_dir
    cache = shared_tmp / "cache"
    old = os.umask(0o022)
    try:
        os.environ["MINIBERT_CACHE"] = str(cache)
        cached("entry", {"k": 1}, lambda: {"value": torch.arange(4)})
        minibert.BertForMaskedLM(minibert.BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
                                                     num_attention_heads=2, intermediate_size=16)
                                 ).save_pretrained(run_dir("model"))
    finally:
        os.umask(old)
        del os.environ["MINIBERT_CACHE"]
    student = as_another_user(
        "import minibert\nfrom minibert.course import cached, run_dir\n"
        "print(cached('entry', {'k': 1}, lambda: 1 / 0)['value'].tolist())\n"
        "print(type(minibert.BertForMaskedLM.from_pretrained(run_dir('model'))).__name__)\n"
        "print(cached('mine', {'k': 2}, lambda: 7))\n",  # a setting of the student's own: computed, not kept
        MINIBERT_CACHE=str(cache))
    assert student.returncode == 0, student.stderr[-2000:]
    lines = student.stdout.splitlines()
    assert lines[:2] == ["[0, 1, 2, 3]", "BertForMaskedLM"]
    assert "is read-only for you" in lines[2] and lines[3] == "7"


def test_a_student_loads_the_teachers_course_run_and_trains_a_changed_one_without_keeping_it(shared_tmp):
    run = ("import minibert\n"
           "docs = minibert.load_corpus()[:40]\n"
           "tok = minibert.train_tokenizer(docs, vocab_size=1000)\n"
           "def go(steps):\n"
           "    r = minibert.course_run('mlm', docs, tok, steps=steps, batch_size=8, eval_examples=16, max_length=32)\n"
           "    print('history', steps, [round(h['loss'], 6) for h in r.history])\n")
    cache = shared_tmp / "cache"
    teacher = subprocess.run([sys.executable, "-c", run + "go(3)\n"], capture_output=True, text=True, timeout=300,
                             env={**os.environ, "MINIBERT_CACHE": str(cache), "OMP_NUM_THREADS": "1"})
    assert teacher.returncode == 0, teacher.stderr[-2000:]
    student = as_another_user(run + "go(3)\ngo(4)\n", MINIBERT_CACHE=str(cache))
    assert student.returncode == 0, student.stderr[-2000:]
    lines = student.stdout.splitlines()
    taught = [line for line in teacher.stdout.splitlines() if line.startswith("history")]
    assert lines[0] == taught[0]  # the teacher's run, loaded (nothing printed while training): the same losses
    assert any("is read-only for you" in line for line in lines[1:])  # the changed run: trained, not kept
    assert lines[-1].startswith("history 4 ")
    assert len([d for d in os.listdir(cache / "runs") if not d.startswith(".")]) == 1


def test_a_checkpoint_another_user_may_not_read_is_reported_as_such_with_the_fix(shared_tmp):
    folder = shared_tmp / "private"
    old = os.umask(0o077)  # a teacher who keeps files private
    try:
        minibert.BertForMaskedLM(minibert.BertConfig(vocab_size=30, hidden_size=8, num_hidden_layers=1,
                                                     num_attention_heads=2, intermediate_size=16)).save_pretrained(folder)
    finally:
        os.umask(old)
    student = as_another_user(f"import minibert\nminibert.BertForMaskedLM.from_pretrained({str(folder)!r})\n")
    assert student.returncode != 0
    assert "cannot be read by you" in student.stderr and "chmod -R a+rX" in student.stderr, student.stderr[-2000:]


def test_a_cache_path_with_a_tilde_means_the_home_folder(tmp_path, monkeypatch):
    from minibert.data.corpus import cache_dir
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("MINIBERT_CACHE", "~/class-cache")
    monkeypatch.chdir(tmp_path)
    assert cache_dir() == str(tmp_path / "home" / "class-cache")
    assert not (tmp_path / "~").exists()  # not a folder named "~" in the working directory


def test_a_run_into_a_folder_the_user_cannot_write_is_refused_before_training(shared_tmp):
    student = as_another_user(
        "import minibert\n"
        f"try:\n    minibert.pretrain('mlm', steps=100, out={str(shared_tmp / 'run')!r})\n"
        "except PermissionError as e:\n    print(e)\n")
    assert student.returncode == 0, student.stderr[-2000:]
    # the check that runs before the first step says this; a save failing after training would not
    assert "is not writable for you" in student.stdout and "choose a folder of your own" in student.stdout
    assert not os.listdir(shared_tmp)


def test_one_fingerprint_names_a_result_by_all_that_decides_it(tmp_path, monkeypatch):
    from minibert import cache
    monkeypatch.setattr(cache, "__file__", str(tmp_path / "cache.py"))  # code= names files beside it
    (tmp_path / "train.py").write_text("lr = 1e-3\n")
    weights = tmp_path / "model.safetensors"
    weights.write_bytes(b"\x00" * 8)
    key = cache.fingerprint({"steps": 10}, [[2, 5, 3]], code=("train.py",), files=[weights], blobs=[b"init"])
    assert key == cache.fingerprint({"steps": 10}, [[2, 5, 3]], code=("train.py",), files=[weights], blobs=[b"init"])
    changed = [cache.fingerprint({"steps": 11}, [[2, 5, 3]], code=("train.py",), files=[weights], blobs=[b"init"]),
               cache.fingerprint({"steps": 10}, [[2, 5, 4]], code=("train.py",), files=[weights], blobs=[b"init"]),
               cache.fingerprint({"steps": 10}, [[2, 5, 3]], code=("train.py",), files=[weights], blobs=[b"other"])]
    (tmp_path / "train.py").write_text("lr = 2e-3\n")  # a changed line of code
    changed.append(cache.fingerprint({"steps": 10}, [[2, 5, 3]], code=("train.py",), files=[weights], blobs=[b"init"]))
    weights.write_bytes(b"\x01" * 8)  # other weights
    changed.append(cache.fingerprint({"steps": 10}, [[2, 5, 3]], code=("train.py",), files=[weights], blobs=[b"init"]))
    assert key not in changed and len(set(changed)) == len(changed)


def test_a_cache_key_is_exact_or_refused():
    """The key of a cached result must change with anything that decides it: a tensor changed in its
    middle (whose printed text hides the middle) gives another key; a set, whose text has another order
    in every process, is refused; plain settings keep the key they always had."""
    import hashlib
    import json
    from minibert.cache import fingerprint
    a = torch.zeros(10_000)
    b = a.clone()
    b[5_000] = 1.0
    assert str(a) == str(b) and fingerprint(a) != fingerprint(b)
    assert fingerprint({"steps": 3, "lr": 1e-3}) == fingerprint({"lr": 1e-3, "steps": 3})
    settings = {"objective": "mlm", "steps": 200, "lr": None, "pairs": [("a", "b")]}
    assert fingerprint(settings) == hashlib.sha256(json.dumps([settings], sort_keys=True).encode()).hexdigest()[:20]
    with pytest.raises(TypeError, match="holds a set, which has no exact text"):
        fingerprint({"tokens": {"a", "b"}})


def test_a_cache_entry_whose_bytes_changed_is_computed_again(tmp_path, monkeypatch, capsys):
    """torch.load reads a file with a changed byte inside a tensor as if it were whole; the entry's
    digest does not."""
    from minibert.course import cached, run_dir
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    assert torch.equal(cached("entry", 1, lambda: torch.zeros(1000)), torch.zeros(1000))
    path = run_dir("entry") + ".pt"
    with open(path, "rb") as f:
        data = bytearray(f.read())
    data[len(data) // 2] ^= 0xFF  # inside the tensor's bytes
    with open(path, "wb") as f:
        f.write(bytes(data))
    assert torch.equal(cached("entry", 1, lambda: torch.ones(1000)), torch.ones(1000))  # computed again
    assert f"the cache entry {path} could not be read" in capsys.readouterr().out


def test_a_cache_setting_that_cannot_work_is_named(tmp_path, monkeypatch):
    from minibert.cache import cache_dir
    (tmp_path / "notes.txt").write_text("mine")
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "notes.txt"))
    with pytest.raises(OSError, match=r"MINIBERT_CACHE='.*notes.txt' is a file, not a folder"):
        cache_dir()
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "notes.txt" / "cache"))  # under a file: cannot be made
    with pytest.raises(OSError, match=r"MINIBERT_CACHE='.*cache' cannot be made \(.*\): point MINIBERT_CACHE"):
        cache_dir()
    assert (tmp_path / "notes.txt").read_text() == "mine"


def test_waiting_for_another_process_says_whom_it_waits_for(tmp_path, capsys):
    """A notebook waiting on a classmate's run (or any lock of the cache) says so at once, instead of a cell
    that runs on without a word; it goes on when the other process lets go."""
    from minibert.cache import locked, training_lock
    script = ("import sys, time\nfrom minibert.cache import locked, training_lock\n"
              "with locked(sys.argv[1]), training_lock(sys.argv[2]):\n"
              "    print('held', flush=True)\n    time.sleep(3)\n")
    holder = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / ".entry.lock"), str(tmp_path / "run")],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        assert holder.stdout.readline().strip() == "held"
        with locked(str(tmp_path / ".entry.lock")):
            pass
        assert f"note: waiting: another process holds {tmp_path / '.entry.lock'}" in capsys.readouterr().out
    finally:
        holder.wait(timeout=60)
    holder = subprocess.Popen([sys.executable, "-c", script, str(tmp_path / ".other.lock"), str(tmp_path / "run")],
                              stdout=subprocess.PIPE, text=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        assert holder.stdout.readline().strip() == "held"
        with training_lock(tmp_path / "run", wait=True):
            pass
        assert f"note: waiting: process {holder.pid} is training" in capsys.readouterr().out
    finally:
        holder.wait(timeout=60)


# ---- a class whose students may write to the shared cache (docs/teaching.md's chmod 2775) ----

def test_folders_made_in_a_class_cache_keep_its_permissions_whatever_the_umask(shared_tmp, monkeypatch):
    from minibert.cache import cache_folder
    cache = shared_tmp / "cache"
    cache.mkdir()
    os.chmod(cache, 0o2775)  # the teacher's set-up: the group may add entries
    monkeypatch.setenv("MINIBERT_CACHE", str(cache))
    old = os.umask(0o022)  # the first one to need runs/ has the usual umask
    try:
        made = cache_folder("runs", "deeper")
    finally:
        os.umask(old)
    for folder in (cache / "runs", cache / "runs" / "deeper"):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o2775, oct(folder.stat().st_mode)
    assert made == str(cache / "runs" / "deeper")


CLASS = ("from minibert.course import cached\n"
         "import minibert.cache as c, os, sys\n")


def test_an_entry_a_classmate_put_in_the_shared_cache_is_not_read_by_anyone_else(shared_tmp):
    """Two students (nobody and daemon) and the teacher (this process) in a cache everyone may write to:
    daemon replaces the teacher's entry and adds one of its own; nobody reads neither and keeps its own
    results; daemon still reads what it wrote."""
    from minibert.course import cached
    cache = shared_tmp / "cache"
    cache.mkdir()
    os.chmod(cache, 0o2777)  # world- rather than group-writable: the two students share no group here
    os.environ["MINIBERT_CACHE"] = str(cache)
    try:
        assert cached("answer", 1, lambda: 42) == 42
    finally:
        del os.environ["MINIBERT_CACHE"]
    entry = cache / "runs" / "answer.pt"
    forger = as_another_user(
        CLASS + "from minibert.cache import write_entry, fingerprint\n"
        f"os.remove({str(entry)!r})\n"  # the folder is writable by the class: the entry can be replaced ...
        f"write_entry({str(entry)!r}, fingerprint(1), 666)\n"  # ... by one with the right key and digest
        "print(cached('answer', 1, lambda: 0), cached('other', 2, lambda: 7))\n",
        user="daemon", MINIBERT_CACHE=str(cache))
    assert forger.returncode == 0, forger.stderr[-2000:]
    assert forger.stdout.split() == ["666", "7"]  # daemon trusts what it wrote itself
    student = as_another_user(CLASS + "print(cached('answer', 1, lambda: 42))\nprint(cached('other', 2, lambda: 8))\n"
                              "print(cached('answer', 1, lambda: 1 / 0))\n", MINIBERT_CACHE=str(cache))
    assert student.returncode == 0, student.stderr[-2000:]
    out = student.stdout.splitlines()
    assert f"note: {entry} was written by the user daemon, neither you nor the owner of the cache: it is not read" \
        in out[0]
    assert out[1] == "42" and out[3] == "8" and out[-1] == "42"  # computed, then its own copy read back
    assert (cache / "runs" / "answer.pt.nobody").exists()


def test_a_full_disk_while_the_cache_writes_keeps_the_result_with_a_note(tmp_path, monkeypatch, capsys):
    import errno
    import minibert.cache as c
    from minibert.course import cached
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(c.tempfile, "mkstemp", full)
    assert cached("entry", 1, lambda: torch.arange(3)).tolist() == [0, 1, 2]
    assert "could not be written (No space left on device); the result is computed but not kept" in \
        capsys.readouterr().out


def test_two_runs_into_a_folder_whose_parent_is_not_there_yet_are_one_at_a_time(tmp_path):
    """`--out np/x` twice with np/ missing: the lock file could not be made, and both runs saved unlocked."""
    from minibert.cache import RunInUse, training_lock
    script = ("import sys, time\nfrom minibert.cache import training_lock\n"
              "with training_lock(sys.argv[1]):\n    print('held', flush=True)\n    time.sleep(3)\n")
    run = tmp_path / "np" / "x"
    holder = subprocess.Popen([sys.executable, "-c", script, str(run)], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "OMP_NUM_THREADS": "1"})
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunInUse, match="is being trained by process"):
            with training_lock(run):
                pass
    finally:
        holder.wait(timeout=60)


def test_resuming_a_run_folder_that_is_read_only_for_you_is_refused_before_training(shared_tmp, corpus):
    """It trained, saved into a temporary folder, failed on the swap with "Permission denied", and left the
    temporary folder (18 MB for mini) behind."""
    text = shared_tmp / "corpus.txt"
    text.write_text("\n\n".join("\n".join(doc) for doc in corpus[:30]) + "\n", encoding="utf-8")
    os.chmod(shared_tmp, 0o777)  # the parent is anyone's; the run folder is the teacher's (0755)
    minibert.pretrain("mlm", corpus=str(text), out=shared_tmp / "run", steps=2, batch_size=8, max_length=32,
                      vocab_size=500, eval_every=2, eval_examples=8, progress=False, verbose=False)
    os.chmod(text, 0o644)
    student = as_another_user("import sys\nfrom minibert.cli import main\n"
                              f"sys.exit(main(['pretrain', '--out', {str(shared_tmp / 'run')!r}, '--resume', "
                              "'--steps', '4']))\n")
    assert student.returncode == 2, student.stderr[-2000:]
    assert "the folder is read-only for you; make it writable (chmod -R u+w" in student.stderr
    assert [p.name for p in shared_tmp.iterdir() if p.is_dir()] == ["run"]  # no temporary folder left behind
