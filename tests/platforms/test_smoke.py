"""What a student does first on any computer, in a few seconds each: import the package, let two processes
share the cache and its locks, train a short run, save it, resume it, load it, export it and continue it,
use the command line, and check an exercise. The same file runs in three places:

- in the suite, on this machine (Linux);
- in the suite again with the POSIX-only modules unimportable for minibert's own code, as on Windows
  (test_windows_proxy.py);
- under a real Windows Python, which a Linux machine runs with Wine (docs/teaching.md, "Windows from a
  Linux machine"). Nothing here provokes an error inside torch on purpose: after torch raises a C++
  exception that Python catches, Wine itself crashes at the next allocation.
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest
import torch

import minibert
from minibert.course import pretrained

SETTINGS = dict(objective="mlm+nsp", preset="tiny", steps=6, batch_size=8, max_length=64, vocab_size=1000,
                eval_examples=16, progress=False, verbose=False)
ENV = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1"}


@pytest.fixture(scope="module")
def text_file(tmp_path_factory, corpus):
    path = tmp_path_factory.mktemp("text") / "corpus.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in corpus[:30]) + "\n", encoding="utf-8")
    return str(path)


def python(code, *args, cwd=None):
    """Run Python code in a new process of this interpreter (on Windows, a Windows process)."""
    out = subprocess.run([sys.executable, "-c", textwrap.dedent(code), *map(str, args)], env=ENV, cwd=cwd,
                         capture_output=True, text=True, encoding="utf-8", timeout=300)
    return out


def test_the_package_imports_and_knows_its_checkpoints():
    assert os.path.isfile(os.path.join(pretrained.path("bert-mlm-nsp"), "config.json"))
    if os.environ.get("MINIBERT_POSIX_REFUSED"):  # the Windows proxy is really on: minibert may not import fcntl
        with pytest.raises(ImportError, match="not on Windows"):
            exec("import fcntl", {"__name__": "minibert.probe"})


def test_the_cache_computes_once_for_two_processes(tmp_path):
    """Two processes ask for the same entry at once: one computes it, the other waits on its lock and
    reads it (the locks are the filelock library's, on every system)."""
    script = """
        import sys, time, minibert
        from minibert.cache import cached
        def compute():
            time.sleep(2)
            print("computed", flush=True)
            return {"answer": 42}
        print(cached("shared", {"k": 1}, compute)["answer"])
    """
    env = {**ENV, "MINIBERT_CACHE": str(tmp_path)}
    procs = [subprocess.Popen([sys.executable, "-c", textwrap.dedent(script)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, encoding="utf-8") for _ in range(2)]
    outs = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), [err for _, err in outs]
    lines = [line for out, _ in outs for line in out.splitlines()]
    assert lines.count("computed") == 1 and lines.count("42") == 2  # (a waiting note may come before a 42)


def test_a_run_folder_in_training_is_refused_to_a_second_process(tmp_path):
    from minibert.cache import training_lock
    with training_lock(tmp_path / "run"):
        out = python("""
            import sys
            from minibert.cache import RunInUse, training_lock
            try:
                with training_lock(sys.argv[1]):
                    print("entered")
            except RunInUse as e:
                print("refused:", e)
        """, tmp_path / "run")
    assert f"being trained by process {os.getpid()}" in out.stdout, out.stderr
    out = python("""
        import sys
        from minibert.cache import training_lock
        with training_lock(sys.argv[1]):
            print("entered")
    """, tmp_path / "run")
    assert out.stdout.strip() == "entered", out.stderr  # released: free again


def test_a_short_run_saves_resumes_loads_exports_and_continues(text_file, tmp_path):
    run = tmp_path / "run"

    def stop_at_5(trainer):
        if trainer.step == 5:
            raise KeyboardInterrupt
    with pytest.raises(KeyboardInterrupt):
        minibert.pretrain(**SETTINGS, corpus=text_file, out=run, save_every=4, callback=stop_at_5)
    with open(run / "trainer_state.json") as f:
        assert json.load(f)["step"] == 4
    pretrained.export(run, tmp_path / "piece", unfinished=True)
    resumed = minibert.pretrain(out=run, resume=True, corpus=text_file, progress=False, verbose=False)
    assert resumed.history[-1]["step"] == 6
    model = minibert.BertForPreTraining.from_pretrained(run)
    for name, p in resumed.model.state_dict().items():
        assert torch.equal(p, model.state_dict()[name]), name
    continued = minibert.pretrain(continue_from=tmp_path / "piece", out=tmp_path / "next", corpus=text_file,
                                  progress=False, verbose=False)
    assert [r["step"] for r in continued.history] == [5, 6]
    pretrained.export(run, tmp_path / "exported")
    assert {"model.safetensors", "README.md", "tokenizer.json"} <= set(os.listdir(tmp_path / "exported"))
    model.save_pretrained(run)  # saving over the folder that was just read: the swap on this system
    assert minibert.BertForPreTraining.from_pretrained(run).config.hidden_size == model.config.hidden_size


def test_the_command_line_fills_a_blank_with_a_shipped_checkpoint():
    out = subprocess.run([sys.executable, "-m", "minibert", "fill-mask", pretrained.path("bert-mlm-nsp"),
                          "He drank a cup of [MASK]."], env=ENV, capture_output=True, text=True, encoding="utf-8",
                         timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("[MASK] 1: ") and "%" in out.stdout


def test_a_students_exercise_is_checked():
    from minibert.exercises import check_wordpiece_split
    from minibert.exercises.tokenization import wordpiece_reference

    def unfinished(word, vocab):
        raise NotImplementedError
    assert check_wordpiece_split(wordpiece_reference)
    assert check_wordpiece_split(unfinished).status == "not done"
