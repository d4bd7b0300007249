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


def test_a_full_disk_is_named_and_the_last_checkpoint_kept(small, tmp_path, monkeypatch):
    out = tmp_path / "run"
    run(small, out, steps=2)
    before = (out / "model.safetensors").read_bytes()

    def no_space(model, folder):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(trainer, "write_weights", no_space)
    with pytest.raises(OSError, match=r"the disk is full.*checkpoint of step \d+ in .* is intact|disk is full"):
        minibert.pretrain(out=out, resume=True, corpus=small[0], steps=4, progress=False, verbose=False)
    assert (out / "model.safetensors").read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run"]  # no temporary folder left behind


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
