"""A run or an export never loses the user's files: destinations are checked before training, a resume
cannot silently change what it continues, and a failed save leaves the last checkpoint as it was."""

import errno
import os
import shutil

import pytest

import minibert
from minibert.course import pretrained
from minibert.training import trainer


def run(small, out, **kwargs):
    docs, tok = small
    settings = dict(objective="mlm", steps=4, batch_size=8, max_length=32, eval_examples=16, progress=False,
                    verbose=False, config=minibert.BertConfig.tiny(vocab_size=len(tok), hidden_size=32,
                                                                    intermediate_size=64, max_position_embeddings=32))
    return minibert.pretrain(corpus=docs, tokenizer=tok, out=out, **{**settings, **kwargs})


def never_trained(monkeypatch):
    """Make any training step fail the test: a refusal must come before the first step."""
    monkeypatch.setattr(trainer.Trainer, "train", lambda *a, **k: pytest.fail("trained before refusing"))


def test_a_folder_of_other_files_is_refused_before_training_and_left_as_it_was(small, tmp_path, monkeypatch):
    (tmp_path / "notes.txt").write_text("my notes")
    (tmp_path / "pytorch_model.bin").write_bytes(b"someone else's weights")
    never_trained(monkeypatch)
    with pytest.raises(ValueError, match=r"a folder of other files: notes.txt, pytorch_model.bin"):
        run(small, tmp_path)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="a folder of other files"):  # --out .
        run(small, ".")
    assert sorted(os.listdir(tmp_path)) == ["notes.txt", "pytorch_model.bin"]
    assert (tmp_path / "notes.txt").read_text() == "my notes"
    with pytest.raises(ValueError, match='out="" names no folder'):
        run(small, "")


def test_a_symlinked_run_folder_stays_a_link(small, tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    run(small, tmp_path / "link")
    assert (tmp_path / "link").is_symlink()
    assert (tmp_path / "real" / "config.json").is_file()


@pytest.fixture(scope="module")
def finished(small, tmp_path_factory):
    out = tmp_path_factory.mktemp("runs") / "run"
    run(small, out)
    return out


def test_a_resume_refuses_what_it_cannot_change_and_raises_the_budget(small, finished, tmp_path, monkeypatch):
    copy = tmp_path / "run"
    shutil.copytree(finished, copy)
    docs, _ = small
    for changed, message in ((dict(objective="clm"), r"objective \('mlm' -> 'clm'\)"),
                             (dict(preset="mini"), r"preset \('tiny' -> 'mini'\)"),
                             (dict(vocab_size=3000), r"vocab_size \(8000 -> 3000\)"),
                             (dict(max_length=64), r"max_length \(32 -> 64\)")):
        with pytest.raises(ValueError, match=message + r".*may change only steps, minutes"):
            minibert.pretrain(**changed, out=copy, resume=True, corpus=docs, progress=False, verbose=False)
    more = minibert.pretrain(out=copy, resume=True, corpus=docs, steps=6, progress=False, verbose=False)
    assert more.history[-1]["step"] == 6 and more.args.objective == "mlm"


def test_an_export_never_overwrites_its_run_or_other_files_and_replaces_an_old_export_whole(finished, tmp_path):
    with pytest.raises(ValueError, match="onto itself would replace the run's float32 weights"):
        pretrained.export(finished, finished)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "vocab.txt").write_text("mine")
    with pytest.raises(ValueError, match="a folder of other files: vocab.txt"):
        pretrained.export(finished, tmp_path / "other")
    with pytest.raises(ValueError, match="onto itself"):
        pretrained.export(finished, finished.parent / ".." / finished.parent.name / "run")  # another spelling
    shutil.copytree(finished, tmp_path / "another-run")
    with pytest.raises(ValueError, match="is a training run"):
        pretrained.export(finished, tmp_path / "another-run")
    pretrained.export(finished, tmp_path / "card")
    (tmp_path / "card" / "vocab.txt").write_text("left over from an older export")
    pretrained.export(finished, tmp_path / "card")
    assert "vocab.txt" not in os.listdir(tmp_path / "card")  # an export is written whole, nothing carried over
    assert {"config.json", "model.safetensors", "README.md", "training_args.json"} <= set(os.listdir(tmp_path / "card"))


def test_a_run_cannot_save_over_an_exported_checkpoint(small, finished, tmp_path, monkeypatch):
    pretrained.export(finished, tmp_path / "card")
    never_trained(monkeypatch)
    with pytest.raises(ValueError, match="an exported checkpoint"):
        run(small, tmp_path / "card")


@pytest.fixture
def small_disk(tmp_path):
    """A real 8 MB file system (tmpfs) at tmp_path/disk, where the test may mount one (as root); else skipped."""
    import subprocess
    disk = tmp_path / "disk"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=8m", "tmpfs", str(disk)], capture_output=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small file system here: {mounted.stderr.decode().strip()[:100]}")
    yield disk
    subprocess.run(["umount", str(disk)], check=True)


def fill(disk):
    """Fill the disk to the last byte with one file."""
    with open(disk / "filler", "wb") as f:
        try:
            while True:
                f.write(b"\0" * 65536)
                f.flush()
        except OSError:
            pass
    while True:  # the last block, byte by byte
        try:
            with open(disk / "filler", "ab") as f:
                f.write(b"\0")
        except OSError:
            return


def test_a_full_disk_is_named_and_the_last_checkpoint_kept(small, small_disk):
    out = small_disk / "run"
    run(small, out, steps=2)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    fill(small_disk)
    with pytest.raises(OSError, match=r"the disk is full: saving .* failed and was undone \(the checkpoint of step 2 "
                                      r"in .* is intact\); free some space and --resume"):
        minibert.pretrain(out=out, resume=True, corpus=small[0], steps=4, progress=False, verbose=False)
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # the last checkpoint, as it was
    locks = (".run.training", ".run.trainer", ".run.swap")  # lock files, empty
    assert sorted(p.name for p in small_disk.iterdir() if p.name not in locks) == ["filler", "run"]  # no temporary folder
    (small_disk / "filler").unlink()
    assert minibert.pretrain(out=out, resume=True, corpus=small[0], steps=4, progress=False,
                             verbose=False).history[-1]["step"] == 4  # and the run goes on once there is room


def test_save_pretrained_on_a_full_disk_says_so_and_keeps_the_old_files(small_disk):
    model = minibert.BertForMaskedLM(minibert.BertConfig.tiny(vocab_size=500))
    model.save_pretrained(small_disk / "ckpt")
    before = {p.name: p.read_bytes() for p in (small_disk / "ckpt").iterdir()}
    fill(small_disk)
    with pytest.raises(OSError, match="the disk is full: saving .*ckpt' failed and was undone"):
        model.save_pretrained(small_disk / "ckpt")
    assert {p.name: p.read_bytes() for p in (small_disk / "ckpt").iterdir()} == before


def test_a_relative_corpus_path_is_recorded_whole(small, tmp_path, monkeypatch):
    docs, tok = small
    (tmp_path / "text.txt").write_text("\n\n".join("\n".join(d) for d in docs[:30]) + "\n")
    monkeypatch.chdir(tmp_path)
    result = minibert.pretrain("mlm", corpus="text.txt", tokenizer=tok, steps=2, batch_size=8, max_length=32,
                               eval_examples=16, progress=False, verbose=False,
                               config=minibert.BertConfig.tiny(vocab_size=len(tok), hidden_size=32,
                                                               intermediate_size=64, max_position_embeddings=32))
    assert result.args.corpus == str(tmp_path / "text.txt")


def test_a_learning_rate_that_blows_up_names_no_checkpoint_that_does_not_exist(small, tmp_path):
    with pytest.raises(FloatingPointError, match="before any checkpoint was saved"):
        run(small, tmp_path / "run", lr=1e6, steps=30, save_every=1000)


def test_a_course_run_watched_by_a_callback_is_reused(small, tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    docs, tok = small
    settings = dict(steps=2, batch_size=8, eval_examples=16, max_length=32)
    calls = []
    first = minibert.course_run("mlm", docs, tok, callback=lambda trainer: calls.append(trainer.step), **settings)
    again = minibert.course_run("mlm", docs, tok, callback=lambda trainer: calls.append("again"), **settings)
    assert calls == [1, 2] and again.history == first.history  # loaded, not trained again
    assert len(os.listdir(tmp_path / "runs")) == len(set(os.listdir(tmp_path / "runs")))
    assert len([d for d in os.listdir(tmp_path / "runs") if not d.startswith(".")]) == 1


@pytest.mark.slow
def test_a_run_folder_is_trained_by_one_process_at_a_time(small, tmp_path):
    """A second training of a folder, fresh or --resume, started while the first still trains and saves,
    is refused with the first one's process id: it can never pair one save's weights with another's state.
    Also where the folder's parent did not exist when the first one started (its lock needs the parent)."""
    import subprocess
    import sys
    import time
    docs, _ = small
    text = tmp_path / "corpus.txt"
    text.write_text("\n\n".join("\n".join(doc) for doc in docs))
    out = tmp_path / "new-folder" / "run"
    command = [sys.executable, "-m", "minibert", "pretrain", "--objective", "mlm", "--preset", "tiny", "--corpus",
               str(text), "--vocab-size", "1500", "--batch-size", "8", "--max-length", "32", "--out", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    first = subprocess.Popen(command + ["--steps", "100000", "--save-every", "2"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (out / trainer.STATE_FILE).exists():  # the first has saved at least once and saves on
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read() if first.poll() else "slow"
            time.sleep(0.2)
        for second in (command + ["--steps", "10", "--resume"], command + ["--steps", "10"]):
            refused = subprocess.run(second, env=env, capture_output=True, text=True, timeout=120)
            assert refused.returncode != 0
            assert f"is being trained by process {first.pid}" in refused.stderr, refused.stderr
        assert first.poll() is None  # the first goes on, untouched
    finally:
        first.kill()
        first.wait(timeout=30)
    resumed = subprocess.run(command + ["--steps", "4", "--resume"], env=env, capture_output=True, text=True,
                             timeout=120)  # once it is gone, the folder is free again
    assert resumed.returncode == 0, resumed.stderr
    # a --resume before the first save finds no trainer_state.json; it is refused as in training all the same
    fresh = tmp_path / "fresh"
    first = subprocess.Popen([*command[:-1], str(fresh), "--steps", "100000"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / ".fresh.trainer").exists():  # the first holds the folder's lock
            assert first.poll() is None and time.monotonic() < deadline
            time.sleep(0.2)
        refused = subprocess.run([*command[:-1], str(fresh), "--steps", "10", "--resume"], env=env,
                                 capture_output=True, text=True, timeout=120)
        assert f"is being trained by process {first.pid}" in refused.stderr, refused.stderr
    finally:
        first.kill()
        first.wait(timeout=30)
