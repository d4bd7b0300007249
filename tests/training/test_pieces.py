"""A training longer than one machine's stay: its last save is exported as an unfinished checkpoint (what
lands in the repository), and another machine continues it from those weights at the same step, on the
same data, with a fresh optimizer that warms up again."""

import json
import os
import shutil

import pytest
import torch

import minibert
from minibert.course import pretrained
from minibert.training.trainer import REWARMUP, learning_rate

SETTINGS = dict(objective="mlm+nsp", preset="tiny", steps=10, batch_size=8, max_length=64, vocab_size=1000,
                eval_every=5)


@pytest.fixture(scope="module")
def text_file(tmp_path_factory, corpus):
    path = tmp_path_factory.mktemp("text") / "corpus.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in corpus[:40]) + "\n", encoding="utf-8")
    return str(path)


def batches_read(into):
    """A callback that records the (unmasked) examples each step read."""
    def record(trainer):
        into[trainer.step] = [trainer.example(i)["input_ids"] for i in trainer.batch_indices(trainer.step - 1)]
    return record


def stopped_at_7(trainer):
    if trainer.step == 7:
        raise KeyboardInterrupt  # the machine went away after the save of step 5


@pytest.fixture(scope="module")
def piece(text_file, tmp_path_factory):
    """A run of 10 steps that stopped after its save of step 5, exported unfinished: (run, export)."""
    root = tmp_path_factory.mktemp("pieces")
    with pytest.raises(KeyboardInterrupt):
        minibert.pretrain(**SETTINGS, corpus=text_file, out=root / "run", save_every=5, progress=False,
                          verbose=False, callback=stopped_at_7)
    pretrained.export(root / "run", root / "landed", unfinished=True)
    return root / "run", root / "landed"


def test_an_unfinished_run_is_exported_only_when_asked_and_its_card_says_where_it_stands(piece, tmp_path):
    run, landed = piece
    with pytest.raises(ValueError, match=r"has not finished training \(step 5\).*--unfinished"):
        pretrained.export(run, tmp_path / "other")
    info = json.load(open(landed / "training_args.json"))
    assert info["steps"] == 5 and info["finished"] is False and info["args"]["steps"] == 10
    assert [(p["from"], p["to"], p["start"]) for p in info["pieces"]] == [(0, 5, "new")]
    card = open(landed / "README.md").read()
    assert "**In training: step 5 of 10.**" in card and "python -m minibert.course.pretrained landed" in card
    assert not {"trainer_state.json", "training_state.pt"} & set(os.listdir(landed))  # weights only


def test_a_continued_run_reads_the_next_data_from_the_exported_weights_and_warms_up_again(piece, text_file, tmp_path):
    _, landed = piece
    straight = {}
    minibert.pretrain(**SETTINGS, corpus=text_file, progress=False, verbose=False, callback=batches_read(straight))
    exported = minibert.BertForPreTraining.from_pretrained(landed).state_dict()
    moved = []

    def first_step(trainer):  # after one update at 1/REWARMUP of the rate, the weights are still the exported ones
        if not moved:
            moved.append(max((p - exported[n]).abs().max().item() for n, p in trainer.model.state_dict().items()))
    read = {}
    result = minibert.pretrain(corpus=text_file, continue_from=landed, out=tmp_path / "next", progress=False,
                               verbose=False, callback=lambda t: (first_step(t), batches_read(read)(t)))
    assert [r["step"] for r in result.history] == [6, 7, 8, 9, 10]
    assert read == {step: straight[step] for step in range(6, 11)}  # the data goes on where the piece stopped
    assert moved[0] < 1e-4  # a fresh model, or a full-rate first step of Adam, moves weights by 1e-3 and more
    lrs = [r["lr"] for r in result.history]
    args = result.args
    assert lrs[0] == pytest.approx(learning_rate(args, 5 / 10) / REWARMUP)
    assert all(b > a for a, b in zip(lrs, lrs[1:4]))  # warming up again, not jumping to the peak
    assert [e["step"] for e in result.evals] == [5, 10]  # the exported curve goes on
    state = json.load(open(tmp_path / "next" / "trainer_state.json"))
    assert [(p["from"], p["to"], p["start"]) for p in state["pieces"]] == [(0, 5, "new"), (5, 10, "continued")]


def test_a_continued_run_cannot_change_its_settings_or_its_past(piece, text_file, tmp_path):
    _, landed = piece
    with pytest.raises(ValueError, match=r"continues its run as it was trained; it cannot change batch_size \(8 -> 16\)"):
        minibert.pretrain(corpus=text_file, continue_from=landed, batch_size=16, out=tmp_path / "a")
    with pytest.raises(ValueError, match=r"already holds 5 steps of this run.*larger --steps"):
        minibert.pretrain(corpus=text_file, continue_from=landed, steps=5, out=tmp_path / "b")
    with pytest.raises(ValueError, match=r"not an exported minibert checkpoint \(no training_args.json\)"):
        minibert.pretrain(corpus=text_file, continue_from=tmp_path, out=tmp_path / "c")
    with pytest.raises(ValueError, match="not several"):
        minibert.pretrain(corpus=text_file, continue_from=landed, resume=True, out=tmp_path / "d")
    assert not any((tmp_path / x).exists() for x in "abcd")


def test_make_pretrained_continues_a_landed_piece_on_a_new_machine(piece, text_file, tmp_path, monkeypatch):
    """The shipped folder holds an unfinished piece and runs/ is empty (a fresh clone): `make pretrained`
    continues from the piece, finishes, and replaces it with the finished checkpoint and its whole story."""
    _, landed = piece
    checkpoints = tmp_path / "checkpoints"
    checkpoints.mkdir()
    shutil.copytree(landed, checkpoints / "toy")
    monkeypatch.setattr(pretrained, "CHECKPOINTS", str(checkpoints))
    monkeypatch.setattr(pretrained, "RECIPES", {"toy": {**SETTINGS, "corpus": text_file}})
    monkeypatch.chdir(tmp_path)
    pretrained.main(["toy"])
    info = json.load(open(checkpoints / "toy" / "training_args.json"))
    assert info["finished"] and info["steps"] == 10
    assert [(p["from"], p["to"], p["start"]) for p in info["pieces"]] == [(0, 5, "new"), (5, 10, "continued")]
    card = open(checkpoints / "toy" / "README.md").read()
    assert "In training" not in card and "| 5 to 10 | from the exported weights before it" in card


def test_steps_saved_before_pieces_were_recorded_are_one_piece_of_unknown_machine(piece, tmp_path):
    run, _ = piece
    old = tmp_path / "old-run"
    shutil.copytree(run, old)
    state = json.loads((old / "trainer_state.json").read_text())
    del state["pieces"]  # as the trainer saved it before it recorded pieces
    (old / "trainer_state.json").write_text(json.dumps(state))
    pretrained.export(old, tmp_path / "landed", unfinished=True)
    info = json.load(open(tmp_path / "landed" / "training_args.json"))
    assert [(p["from"], p["to"], p["machine"]) for p in info["pieces"]] == [(0, 5, "not recorded")]
    assert info["pieces"][0]["seconds"] == pytest.approx(state["seconds"])


def test_a_run_whose_corpus_changed_since_its_save_is_not_resumed_scored_or_continued(piece, text_file, tmp_path):
    """An edited corpus file moved documents between the training and held-out sides without a word."""
    run, landed = piece
    edited = tmp_path / "corpus.txt"
    text = open(text_file, encoding="utf-8").read()
    edited.write_text(text.replace("\n\n", "\n\nA new first sentence of every document.\n", 3), encoding="utf-8")
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    state = json.loads((copy / "trainer_state.json").read_text())
    (copy / "trainer_state.json").write_text(json.dumps({**state, "args": {**state["args"], "corpus": str(edited)}}))
    with pytest.raises(ValueError, match="was trained on other text than the corpus gives now"):
        minibert.pretrain(out=copy, resume=True, progress=False, verbose=False)
    from minibert.cli import main
    assert main(["eval", str(copy)]) == 2
    moved = tmp_path / "landed"  # the landed piece, its corpus file edited in place
    shutil.copytree(landed, moved)
    info = json.loads((moved / "training_args.json").read_text())
    (moved / "training_args.json").write_text(json.dumps({**info, "args": {**info["args"], "corpus": str(edited)}}))
    with pytest.raises(ValueError, match="was trained on other text than the corpus gives now"):
        minibert.pretrain(continue_from=moved, out=tmp_path / "next", progress=False, verbose=False)


def test_a_run_whose_saved_weights_are_nan_is_refused_on_resume_with_what_happened(piece, tmp_path):
    from safetensors.torch import load_file, save_file
    run, _ = piece
    copy = tmp_path / "run"
    shutil.copytree(run, copy)
    weights = load_file(copy / "model.safetensors")
    name = next(iter(weights))
    weights[name] = torch.full_like(weights[name], float("nan"))
    save_file(weights, copy / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(ValueError, match="holds weights that are NaN or infinite .* damaged, or the run had diverged"):
        minibert.pretrain(out=copy, resume=True, progress=False, verbose=False)
