"""A run too large for the machine's memory is refused before its first step, with the batch size that fits,
instead of being killed by the kernel without a word."""

import os
import subprocess
import sys

import pytest
import torch
from transformers import AutoTokenizer

import minibert
from minibert.training import memory, trainer


SHIPPED_TOKENIZER = os.path.join(os.path.dirname(__file__), "..", "..", "checkpoints", "bert-mlm")


def test_a_batch_too_large_for_a_laptop_is_refused_with_the_batch_size_that_fits(corpus, monkeypatch):
    laptop = 8e9  # bytes free
    monkeypatch.setattr(memory, "available_bytes", lambda device: laptop)
    docs = corpus
    tokenizer = AutoTokenizer.from_pretrained(SHIPPED_TOKENIZER)
    with pytest.raises(ValueError, match=r"not enough memory: training this model \(.*M parameters\) on batches of "
                                         r"512 x 128 tokens needs about .* GB, and this CPU has 8.0 GB free\. A "
                                         r"batch_size \(--batch-size\) of at most (\d+) fits") as refused:
        minibert.pretrain("mlm", "base", corpus=docs, tokenizer=tokenizer, batch_size=512, max_length=128, steps=1,
                          progress=False, verbose=False)
    fits = int(refused.value.args[0].split("of at most ")[1].split()[0])
    model = minibert.BertForMaskedLM(minibert.BertConfig.base(  # the model pretrain built
        vocab_size=len(tokenizer), max_position_embeddings=max(trainer.MIN_POSITIONS, 128)))
    bf16 = trainer.resolve_bf16(None, torch.device("cpu"), verbose=False)  # as pretrain trains on this CPU
    share = 0.15 + 1 / 128  # the masked positions and [CLS] get scores over the vocabulary
    assert 1 <= fits < 512
    assert sum(memory.training_bytes(model, fits, 128, share, bf16)) <= laptop  # the batch it names fits
    assert sum(memory.training_bytes(model, fits + 1, 128, share, bf16)) > laptop  # and is the largest that does


def test_the_command_line_refuses_a_batch_no_machine_holds_before_training(tmp_path):
    """4,096 blocks of 128 tokens through bert-base as a causal LM: about 500 GB."""
    refused = subprocess.run(
        [sys.executable, "-m", "minibert", "pretrain", "--objective", "clm", "--preset", "base", "--tokenizer",
         SHIPPED_TOKENIZER, "--batch-size", "4096", "--max-length", "128", "--steps", "1",
         "--out", str(tmp_path / "run")], env={**os.environ, "OMP_NUM_THREADS": "1"}, capture_output=True, text=True,
        timeout=300)
    assert refused.returncode != 0
    assert "not enough memory" in refused.stderr and "of at most" in refused.stderr, refused.stderr[-2000:]
    assert "Traceback" not in refused.stderr  # a sentence, not a crash


def test_the_guard_knows_the_memory_where_there_is_no_proc_file(monkeypatch):
    """On a Mac or on Windows there is no /proc/meminfo and no cgroup: the free memory comes from psutil,
    so the guard still refuses a run too large for the machine."""
    import builtins
    import collections
    real_open = builtins.open

    def no_linux_files(path, *args, **kwargs):
        if str(path).startswith(("/proc", "/sys")):
            raise FileNotFoundError(path)
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(builtins, "open", no_linux_files)
    monkeypatch.setattr(memory.psutil, "virtual_memory", lambda: collections.namedtuple("Memory", "available")(3e9))
    assert memory.available_bytes(torch.device("cpu")) == 3e9


def test_an_address_space_limit_counts_as_memory_too():
    """`ulimit -v` stops allocations as surely as a full RAM; the guard read only RAM and cgroups."""
    script = ("import psutil, torch\nfrom minibert.training import memory\n"
              "p = psutil.Process()\np.rlimit(psutil.RLIMIT_AS, (p.memory_info().vms + 2**30, psutil.RLIM_INFINITY))\n"
              "print(memory.available_bytes(torch.device('cpu')) <= 2**30)\n")
    if not hasattr(__import__("psutil"), "RLIMIT_AS"):
        pytest.skip("no address-space limits here (Linux only)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert out.returncode == 0 and out.stdout.strip() == "True", out.stderr[-1000:]
