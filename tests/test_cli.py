"""python -m minibert: pretrain, eval, fill-mask, generate, next-sentence, and clear errors."""

import re
import os
import subprocess
import sys
from types import SimpleNamespace

import pytest

from helpers import ROOT


def cli(*args, check=True):
    out = subprocess.run([sys.executable, "-m", "minibert", *map(str, args)], capture_output=True, text=True,
                         env={**os.environ, "HF_HUB_OFFLINE": "1"})
    if check:
        assert out.returncode == 0, out.stderr
    return out


@pytest.fixture
def refuse(capsys):
    """The command line on settings it must refuse, run in this process: a refusal starts nothing, and a
    fresh Python for each case would only pay for importing torch again. Its exit status and output."""
    from minibert.cli import main

    def run(*args):
        try:
            status = main([str(a) for a in args])
        except SystemExit as e:  # argparse's own refusals
            status = e.code
        out = capsys.readouterr()
        return SimpleNamespace(returncode=status, stdout=out.out, stderr=out.err)
    return run


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
    beams = cli("generate", runs / "clm", "Deep learning is", "--max-new-tokens", 5, "--num-beams", 3).stdout
    assert beams.startswith("deep learning is") and len(beams.split()) >= 4
    out = cli("next-sentence", runs / "mlm+nsp", "It rained.", "The streets were wet.").stdout
    assert "P(B follows A)" in out


def test_missing_and_foreign_folders_give_clear_errors(runs, tmp_path, refuse):
    out = refuse("fill-mask", tmp_path / "nope", "a [MASK]")
    assert out.returncode == 2 and "no checkpoint folder" in out.stderr and "Traceback" not in out.stderr
    (tmp_path / "notes.txt").write_text("hello")
    out = refuse("generate", tmp_path, "hello")
    assert out.returncode == 2 and "no config.json" in out.stderr
    out = refuse("next-sentence", runs / "clm", "a", "b")
    assert out.returncode == 2 and "has no NSP head" in out.stderr
    out = refuse("pretrain", "--objective", "mlm", "--out", tmp_path / "x")
    assert out.returncode == 2 and "give a budget" in out.stderr


@pytest.mark.parametrize("args, message", [
    (["--steps", 0], "steps must be positive, got 0"),
    (["--steps", -5], "steps must be positive, got -5"),
    (["--minutes", -1], "minutes must be positive, got -1"),
    (["--steps", 5, "--batch-size", 0], "batch_size must be positive, got 0"),
])
def test_budgets_that_would_never_stop_are_errors(tmp_path, args, message, refuse):
    out = refuse("pretrain", "--objective", "mlm", "--preset", "tiny", *args, "--out", tmp_path / "run")
    assert out.returncode == 2 and message in out.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize("rate", ["0", "1.5", "nan"])
def test_a_masking_rate_outside_0_to_1_is_an_error(tmp_path, rate, refuse):
    out = refuse("pretrain", "--objective", "mlm", "--preset", "tiny", "--steps", 5, "--mlm-probability", rate,
              "--out", tmp_path / "run")
    assert out.returncode == 2 and "mlm_probability is the share of tokens masked, in (0, 1]" in out.stderr
    assert "Traceback" not in out.stderr and not (tmp_path / "run").exists()


def test_eval_refuses_a_run_trained_on_documents_in_memory(tmp_path, corpus, refuse):
    import minibert
    docs = minibert.Corpus(corpus[:30], corpus.titles[:30])
    tok = minibert.train_tokenizer(docs, vocab_size=1000)
    minibert.pretrain("mlm", preset="tiny", corpus=docs, tokenizer=tok, steps=2, batch_size=4, eval_examples=8,
                      out=tmp_path / "run", progress=False, verbose=False)
    out = refuse("eval", tmp_path / "run")
    assert out.returncode == 2 and "trained on documents passed in memory" in out.stderr


def test_fill_mask_on_a_causal_model_says_what_it_is(runs):
    out = cli("fill-mask", runs / "clm", "the [MASK] was hot.")
    assert "is a causal LM" in out.stderr


@pytest.mark.parametrize("args, message", [
    (["eval", "{mlm+nsp}", "--examples", "0"], "--examples must be at least 1"),
    (["eval", "{mlm+nsp}", "--examples", "-5"], "--examples must be at least 1"),
    (["fill-mask", "{mlm+nsp}", "The [MASK] was wide.", "--top-k", "-1"], "top_k must be a whole number from 1"),
    (["fill-mask", "{mlm+nsp}", "The [MASK] was wide.", "--top-k", "100000"], r"vocabulary size \(1000\)"),
    (["generate", "{clm}", "The city", "--sample", "--temperature", "nan"], "temperature must be a finite number"),
])
def test_settings_that_cannot_work_are_refused_by_name(runs, args, message, refuse):
    out = refuse(*[a.format(**{k: runs / k for k in ("mlm+nsp", "clm")}) for a in args])
    assert out.returncode == 2
    assert re.search(message, out.stderr), out.stderr
    assert "Traceback" not in out.stderr


def test_next_sentence_on_a_sentence_order_model_asks_about_order():
    from minibert.course import pretrained
    out = cli("next-sentence", pretrained.path("bert-mlm-sop"), "It rained all day.", "The streets were flooded.").stdout
    assert "right order" in out and "B is random" not in out
    out = cli("next-sentence", pretrained.path("bert-mlm-nsp"), "It rained all day.", "The streets were flooded.").stdout
    assert "P(B follows A)" in out


def test_a_corpus_file_that_is_not_utf8_is_named(tmp_path, refuse):
    latin1 = tmp_path / "notes.txt"
    latin1.write_bytes("Caf\xe9 au lait is a drink.\nIt is served hot.\n".encode("latin-1"))
    out = refuse("pretrain", "--objective", "mlm", "--preset", "tiny", "--steps", 2, "--corpus", latin1,
              "--out", tmp_path / "run")
    assert out.returncode == 2
    assert "notes.txt" in out.stderr and "is not UTF-8" in out.stderr and "Traceback" not in out.stderr


def test_ctrl_c_during_training_says_how_to_continue(monkeypatch, capsys, tmp_path):
    from minibert import cli as minibert_cli
    from minibert.training import trainer

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(trainer, "pretrain", interrupted)
    code = minibert_cli.main(["pretrain", "--steps", "10", "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err
    assert code == 130
    assert "keeps the last checkpoint saved" in err and "--resume" in err and "Traceback" not in err


def test_corpus_says_what_a_corpus_holds_and_what_the_large_one_needs(tmp_path, monkeypatch, refuse):
    assert "Corpus('lee': 300 documents" in cli("corpus", "lee").stdout
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))  # a machine where `make corpus` was never run
    monkeypatch.setenv("MINIBERT_NPM", str(tmp_path / "npm"))
    out = refuse("corpus", "large")
    assert out.returncode == 2 and "run `make corpus`" in out.stderr and "Traceback" not in out.stderr


@pytest.mark.parametrize("module", ["minibert", "minibert.course", "minibert.course.figures", "minibert.course.pretrained"])
def test_every_python_dash_m_entry_point_starts_without_a_warning(module):
    out = subprocess.run([sys.executable, "-W", "error::RuntimeWarning", "-m", module, "--help"], capture_output=True,
                         text=True, env={**os.environ, "HF_HUB_OFFLINE": "1"})
    assert out.returncode == 0 and "Warning" not in out.stderr, out.stderr
    assert out.stdout.strip()  # its usage


def test_an_unknown_shipped_checkpoint_is_named_with_the_ones_there_are():
    out = subprocess.run([sys.executable, "-m", "minibert.course.pretrained", "bert-foo"], capture_output=True, text=True)
    assert out.returncode == 2 and "no shipped checkpoint 'bert-foo'; they are bert-mlm-nsp" in out.stderr


@pytest.fixture
def silent_network():
    """A proxy that accepts connections and never answers, as a network that hangs: returns the
    environment that sends every HTTP(S) request there, without HF_HUB_OFFLINE, and the connection count."""
    import socket
    import threading
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    accepted = []

    def serve():
        while True:
            try:
                accepted.append(server.accept()[0])
            except OSError:
                return
    threading.Thread(target=serve, daemon=True).start()
    proxy = f"http://127.0.0.1:{server.getsockname()[1]}"
    env = {k: v for k, v in os.environ.items()
           if k not in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE", "TRANSFORMERS_OFFLINE", "NO_PROXY", "no_proxy")}
    env.update(HTTPS_PROXY=proxy, HTTP_PROXY=proxy, https_proxy=proxy, http_proxy=proxy)
    yield env, accepted
    server.close()


def test_the_readme_examples_run_from_the_notebooks_folder_without_the_hub(silent_network):
    """Jupyter starts in notebooks/: the README's loading examples work there, with no offline variable
    set, and nothing tries the network (where a relative path would be taken for a Hub model name)."""
    env, accepted = silent_network
    root = ROOT
    readme = open(os.path.join(root, "README.md")).read()
    example = next(block for block in re.findall(r"```python\n(.*?)```", readme, re.S) if 'pipeline("fill-mask"' in block)
    out = subprocess.run([sys.executable, "-c", example + "\nprint('done')"], cwd=os.path.join(root, "notebooks"),
                         env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip().endswith("done"), out.stderr[-2000:]
    out = subprocess.run([sys.executable, "-m", "minibert", "fill-mask", "../checkpoints/bert-mlm-nsp",
                          "He drank a cup of [MASK]."], cwd=os.path.join(root, "notebooks"), env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "[MASK] 1:" in out.stdout, out.stderr[-2000:]
    assert accepted == []  # not one connection


def test_a_checkpoint_that_would_answer_garbage_is_refused_with_what_is_wrong(runs, tmp_path, refuse):
    """NaN weights, a config that says is_decoder on masked-LM weights, a tokenizer of another vocabulary:
    each gave a fill-mask answer (or "nan%") and exit status 0."""
    import json
    import shutil

    import torch

    import minibert

    def copy(name):
        folder = tmp_path / name
        shutil.copytree(runs / "mlm+nsp", folder)
        return folder
    nan = copy("nan")
    model = minibert.BertForPreTraining.from_pretrained(nan)
    with torch.no_grad():
        model.bert.encoder.layer[0].attention.self.query.weight[0, 0] = float("nan")
    model.save_pretrained(nan)
    out = refuse("fill-mask", nan, "the [MASK] was hot.")
    assert out.returncode == 2 and "holds weights that are NaN or infinite (1 tensors" in out.stderr
    decoder = copy("decoder")
    config = json.loads((decoder / "config.json").read_text())
    (decoder / "config.json").write_text(json.dumps({**config, "is_decoder": True}))
    out = refuse("fill-mask", decoder, "the [MASK] was hot.")
    assert out.returncode == 2 and "says is_decoder=true" in out.stderr and "set is_decoder to false" in out.stderr
    other = copy("other")
    minibert.train_tokenizer(minibert.load_corpus()[:10], vocab_size=300, cache=False).save_pretrained(other)
    out = refuse("fill-mask", other, "the [MASK] was hot.")
    assert out.returncode == 2 and "is not the vocabulary the model was trained with" in out.stderr
    assert all("Traceback" not in o for o in (out.stderr,))


def test_a_damaged_file_of_a_run_is_named_by_its_path(runs, tmp_path, refuse):
    import shutil
    for name, command in (("trainer_state.json", ("eval",)), ("tokenizer.json", ("fill-mask",))):
        folder = tmp_path / name
        shutil.copytree(runs / "mlm+nsp", folder)
        file = folder / name
        file.write_bytes(file.read_bytes()[:100])  # an interrupted copy
        out = refuse(*command, folder, *(["the [MASK] was hot."] if command == ("fill-mask",) else []))
        assert out.returncode == 2 and f"{str(file)!r} cannot be read" in out.stderr, out.stderr


def test_generate_on_a_masked_lm_says_what_it_is_and_generates(runs):
    out = cli("generate", runs / "mlm+nsp", "the river", "--max-new-tokens", 3)
    assert out.stdout.startswith("the river") and "not as a causal LM" in out.stderr


def test_a_disk_that_fills_up_during_a_command_is_one_line(tmp_path, refuse, monkeypatch):
    import errno

    import minibert.training.trainer as trainer

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device", str(tmp_path / "run"))
    monkeypatch.setattr(trainer, "pretrain", full)
    out = refuse("pretrain", "--objective", "mlm", "--steps", 2, "--out", tmp_path / "run")
    assert out.returncode == 2 and out.stderr.startswith("error: [Errno 28] No space left on device")
    assert "Traceback" not in out.stderr
