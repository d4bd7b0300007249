"""python -m minibert: pretrain, eval, fill-mask, generate, next-sentence, and clear errors."""

import os
import subprocess
import sys

import pytest


def cli(*args, check=True):
    out = subprocess.run([sys.executable, "-m", "minibert", *map(str, args)], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if check:
        assert out.returncode == 0, out.stderr
    return out


@pytest.fixture(scope="module")
def text_file(tmp_path_factory, corpus):
    path = tmp_path_factory.mktemp("text") / "corpus.txt"
    path.write_text("\n\n".join("\n".join(doc) for doc in corpus[:30]) + "\n")
    return path


@pytest.fixture(scope="module")
def runs(tmp_path_factory, text_file):
    folder = tmp_path_factory.mktemp("runs")
    for objective in ("mlm+nsp", "clm"):
        cli("pretrain", "--objective", objective, "--preset", "tiny", "--steps", 4, "--batch-size", 8,
            "--max-length", 64, "--vocab-size", 1000, "--corpus", text_file, "--out", folder / objective)
    return folder


def test_pretrain_writes_a_checkpoint_with_tokenizer_and_state(runs):
    assert {"config.json", "model.safetensors", "tokenizer.json", "trainer_state.json", "training_state.pt"} <= set(
        os.listdir(runs / "mlm+nsp"))


def test_eval_prints_metrics_beside_baselines(runs):
    out = cli("eval", runs / "mlm+nsp", "--pppl-sentences", 3).stdout
    assert "mlm accuracy" in out and "(most frequent token" in out and "nsp accuracy" in out
    assert "pseudo-perplexity on 3 held-out sentences" in out


def test_fill_mask_generate_and_next_sentence(runs):
    out = cli("fill-mask", runs / "mlm+nsp", "The [MASK] barks loudly.", "--top-k", 3).stdout
    assert out.startswith("[MASK] 1:") and out.count("%") == 3
    out = cli("generate", runs / "clm", "Deep learning is", "--max-new-tokens", 5).stdout
    assert out.startswith("deep learning is")
    out = cli("next-sentence", runs / "mlm+nsp", "It rained.", "The streets were wet.").stdout
    assert "P(B follows A)" in out


def test_missing_and_foreign_folders_give_clear_errors(runs, tmp_path):
    out = cli("fill-mask", tmp_path / "nope", "a [MASK]", check=False)
    assert out.returncode == 2 and "no checkpoint folder" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "notes.txt").write_text("hello")
    out = cli("generate", tmp_path, "hello", check=False)
    assert out.returncode == 2 and "no config.json" in out.stderr
    out = cli("next-sentence", runs / "clm", "a", "b", check=False)
    assert out.returncode == 2 and "has no NSP head" in out.stderr
    out = cli("pretrain", "--objective", "mlm", "--out", tmp_path / "x", check=False)
    assert out.returncode == 2 and "give a budget" in out.stderr
