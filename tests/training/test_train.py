"""The trainer: every objective learns, runs are reproducible, resume is exact, metrics are right."""

import math
import warnings

import pytest
import torch
import transformers

import minibert
from minibert.training.trainer import learning_rate


def tiny_config(tokenizer):
    return minibert.BertConfig.tiny(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                    max_position_embeddings=64)


def run(small, objective, **kwargs):
    docs, tok = small
    settings = dict(steps=8, batch_size=8, max_length=64, eval_examples=32, progress=False, verbose=False)
    return minibert.pretrain(objective, config=tiny_config(tok), corpus=docs, tokenizer=tok, **{**settings, **kwargs})


@pytest.mark.parametrize("objective, metrics", [
    ("clm", {"clm_loss", "clm_accuracy", "clm_perplexity"}),
    ("mlm", {"mlm_loss", "mlm_accuracy"}),
    ("nsp", {"nsp_loss", "nsp_accuracy"}),
    ("sop", {"sop_loss", "sop_accuracy"}),
    ("mlm+nsp", {"mlm_loss", "mlm_accuracy", "nsp_loss", "nsp_accuracy"}),
    ("mlm+sop", {"mlm_loss", "mlm_accuracy", "sop_loss", "sop_accuracy"}),
])
def test_every_objective_trains_and_reports_its_metrics(small, objective, metrics):
    result = run(small, objective, steps=6, eval_every=3)
    assert [e["step"] for e in result.evals] == [3, 6]
    assert set(result.final) - {"step", "seconds"} == metrics
    assert len(result.history) == 6 and all(math.isfinite(r["loss"]) for r in result.history)
    expected_class = {"clm": "BertForCausalLM", "mlm": "BertForMaskedLM", "nsp": "BertForNextSentencePrediction",
                      "sop": "BertForNextSentencePrediction"}.get(objective, "BertForPreTraining")
    assert type(result.model).__name__ == expected_class
    for metric in metrics & set(minibert.training.metrics.BASELINE_OF):
        assert minibert.training.metrics.BASELINE_OF[metric][0] in result.baselines


def test_training_lowers_the_loss_and_the_prior_gives_it_a_head_start(small):
    cold = run(small, "mlm", steps=60, lr=2e-3, eval_every=60, prior_init=False)
    first, last = cold.history[0]["loss"], sum(r["loss"] for r in cold.history[-10:]) / 10
    assert last < first - 0.5  # from ~ln(1500) = 7.3 towards the unigram entropy
    warm = run(small, "mlm", steps=1, prior_init=True)  # output bias = log unigram: starts near the entropy
    assert warm.history[0]["loss"] < first - 0.5


def test_same_seed_same_run(small):
    a, b = run(small, "mlm+nsp"), run(small, "mlm+nsp")
    assert [r["loss"] for r in a.history] == [r["loss"] for r in b.history]
    c = run(small, "mlm+nsp", seed=1)
    assert [r["loss"] for r in a.history] != [r["loss"] for r in c.history]


@pytest.mark.parametrize("objective", ["mlm+nsp", "clm"])
def test_resume_gives_the_same_losses_as_an_uninterrupted_run(small, tmp_path, objective):
    straight = run(small, objective, steps=10, eval_every=5)

    def crash(trainer):
        if trainer.step == 7:
            raise KeyboardInterrupt  # killed after the checkpoint of step 5
    with pytest.raises(KeyboardInterrupt):
        run(small, objective, steps=10, out=tmp_path / "run", eval_every=5, save_every=5, callback=crash)
    docs, _ = small  # no tokenizer given: the run's own is loaded
    resumed = minibert.pretrain(out=tmp_path / "run", resume=True, corpus=docs, progress=False, verbose=False)
    assert [r["loss"] for r in resumed.history] == [r["loss"] for r in straight.history]
    for name, p in straight.model.state_dict().items():
        assert torch.equal(p, resumed.model.state_dict()[name]), name


@pytest.fixture(scope="module")
def few(small):
    """Eight short documents, two of them held out: an epoch of sentence pairs lasts a few steps."""
    docs, tok = small
    short = sorted((d for d in docs if len(d) >= 4), key=lambda d: sum(map(len, d)))[:8]
    return minibert.Corpus(short, name="few"), tok


def trainer_of(few, objective, **kwargs):
    seen = []
    run(few, objective, heldout=0.25, callback=seen.append, **kwargs)
    return seen[-1]


def pairs_of(examples):
    return {(tuple(x["input_ids"]), x["next_sentence_label"]) for x in examples}


@pytest.mark.parametrize("objective", ["mlm+nsp", "mlm+sop"])
def test_sentence_pairs_are_drawn_again_every_epoch(few, objective):
    trainer = trainer_of(few, objective, steps=1, batch_size=2)
    n = len(trainer.train_examples)
    pairs = [pairs_of(trainer.epoch_examples(e)) for e in range(4)]
    assert all(pairs[e] != pairs[e + 1] for e in range(3))  # new cuts and negatives: nothing to learn by heart
    assert pairs_of(trainer.epoch_examples(1)) == pairs[1]  # drawn again the same way: resume stays exact
    first = [trainer.example(i) for i in range(n)]
    assert sorted(map(id, first)) == sorted(map(id, trainer.epoch_examples(0)))  # an epoch: every example once
    second = pairs_of(trainer.example(n + i) for i in range(n))
    assert second <= pairs[1] and len(second) >= 0.9 * min(n, len(pairs[1]))


def test_single_sequences_are_the_same_every_epoch(few):
    trainer = trainer_of(few, "mlm", steps=1, batch_size=2)
    assert trainer.epoch_examples(3) is trainer.train_examples  # blocks of text: the masks are what vary


def test_resume_across_epochs_of_fresh_pairs_is_exact(few, tmp_path):
    settings = dict(steps=48, batch_size=4, eval_every=24, heldout=0.25)
    straight = run(few, "mlm+nsp", callback=lambda t: settings.setdefault("n", len(t.train_examples)),
                   **{k: v for k, v in settings.items()})
    assert 48 * 4 > 2 * settings.pop("n")  # the run crosses two epochs

    def crash(trainer):
        if trainer.step == 30:
            raise KeyboardInterrupt  # killed after the checkpoint of step 24
    with pytest.raises(KeyboardInterrupt):
        run(few, "mlm+nsp", out=tmp_path / "run", save_every=24, callback=crash, **settings)
    resumed = minibert.pretrain(out=tmp_path / "run", resume=True, corpus=few[0], progress=False, verbose=False)
    assert [r["loss"] for r in resumed.history] == [r["loss"] for r in straight.history]


def test_a_run_folder_is_a_real_transformers_checkpoint(small, tmp_path):
    run(small, "mlm+nsp", out=tmp_path / "run")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, info = transformers.BertForPreTraining.from_pretrained(tmp_path / "run", output_loading_info=True)
    assert not any(info.values())
    tokenizer = transformers.AutoTokenizer.from_pretrained(tmp_path / "run")
    assert tokenizer.mask_token_id == 4
    trained = run(small, "mlm+nsp", out=tmp_path / "again")
    loaded = minibert.load_result(tmp_path / "again")  # what was saved is what the run reported
    assert loaded.final == trained.final and loaded.final["step"] == 8 and loaded.history == trained.history


def test_reuse_loads_a_finished_run_and_retrains_when_anything_changes(small, tmp_path):
    calls = []
    first = run(small, "mlm", out=tmp_path / "run", reuse=True, callback=lambda t: calls.append(t.step))
    assert len(calls) == 8
    again = run(small, "mlm", out=tmp_path / "run", reuse=True, callback=lambda t: calls.append(t.step))
    assert len(calls) == 8 and again.history == first.history  # loaded, not trained
    run(small, "mlm", out=tmp_path / "run", reuse=True, lr=5e-4, callback=lambda t: calls.append(t.step))
    assert len(calls) == 16  # other settings: trained again


def test_learning_rate_warms_up_then_decays_to_zero():
    args = minibert.TrainArgs(steps=100, lr=1.0, warmup=0.1, schedule="linear")
    assert learning_rate(args, 0.0) == 0.0 and learning_rate(args, 0.05) == pytest.approx(0.5)
    assert learning_rate(args, 0.1) == pytest.approx(1.0) and learning_rate(args, 0.55) == pytest.approx(0.5)
    assert learning_rate(args, 1.0) == pytest.approx(0.0)
    cosine = minibert.TrainArgs(steps=100, lr=1.0, warmup=0.1, schedule="cosine")
    assert learning_rate(cosine, 0.55) == pytest.approx(0.5) and learning_rate(cosine, 0.3) > 0.5
    wsd = minibert.TrainArgs(steps=100, lr=1.0, warmup=0.1, schedule="wsd")  # constant, then the last fifth
    assert learning_rate(wsd, 0.05) == pytest.approx(0.5) and learning_rate(wsd, 0.8) == pytest.approx(1.0)
    assert learning_rate(wsd, 0.9) == pytest.approx(0.5) and learning_rate(wsd, 1.0) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="schedule must be one of linear, cosine, wsd"):
        minibert.TrainArgs(steps=100, schedule="step")


def test_evaluations_are_spread_over_the_budget(small):
    """Without eval_every, five evaluations at each fifth of the run: the curve the notebooks plot."""
    assert [e["step"] for e in run(small, "mlm", steps=10).evals] == [2, 4, 6, 8, 10]
    assert [e["step"] for e in run(small, "mlm", steps=10, eval_every=4).evals] == [4, 8, 10]


def test_time_budget_stops_the_run_at_the_first_step_past_it(small, monkeypatch):
    import itertools
    clock = itertools.count(0, 0.25)  # a clock that moves a quarter of a second each time it is read
    monkeypatch.setattr(minibert.training.trainer.time, "perf_counter", lambda: next(clock))
    result = run(small, "nsp", steps=None, minutes=0.05)  # 3 seconds
    seconds = [h["seconds"] for h in result.history]
    assert len(seconds) > 1 and seconds[-1] >= 3 and all(s < 3 for s in seconds[:-1])


@pytest.mark.skipif(not minibert.training.trainer.bf16_is_native(torch.device("cpu")),
                    reason="this CPU has no native bf16: a bf16 run would train in float32")
def test_bf16_autocast_trains(small, tmp_path):
    result = run(small, "mlm+nsp", bf16=True, out=tmp_path / "run")
    assert minibert.training.trainer.read_state(tmp_path / "run")["bf16"] is True  # it trained in bf16, not in float32
    assert all(math.isfinite(r["loss"]) for r in result.history)


def test_baselines_are_what_a_blind_model_scores(small):
    docs, tok = small
    train = [{"input_ids": [2, 10, 10, 11, 3], "next_sentence_label": 1}, {"input_ids": [2, 10, 3], "next_sentence_label": 1},
             {"input_ids": [2, 12, 3], "next_sentence_label": 0}]
    held = [{"input_ids": [2, 10, 11, 12, 13, 3], "next_sentence_label": 0}, {"input_ids": [2, 10, 3], "next_sentence_label": 1}]
    base = minibert.baselines("mlm+nsp", train, held, tok)
    assert base["mlm_most_frequent_token_accuracy"] == pytest.approx(2 / 5)  # token 10: 2 of the 5 held-out tokens
    assert base["nsp_majority_class"] == 1 and base["nsp_majority_class_accuracy"] == pytest.approx(0.5)
    counts, total, V = {10: 3, 11: 1, 12: 1, 13: 0}, 5, len(tok)
    expected = -sum(math.log((counts[t] + 1) / (total + V)) for t in [10, 11, 12, 13, 10]) / 5
    assert base["mlm_unigram_loss"] == pytest.approx(expected)


def test_evaluate_matches_a_hand_computed_accuracy(small):
    docs, tok = small
    torch.manual_seed(0)
    model = minibert.BertForMaskedLM(tiny_config(tok)).eval()
    examples = minibert.make_lm_examples(docs[:5], tok, max_length=64)[:16]
    metrics = minibert.evaluate(model, "mlm", examples, tok, batch_size=16, seed=5)
    batch = minibert.MLMCollator(tok, seed=5)(examples)
    with torch.no_grad():
        logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
    keep = batch["labels"] != -100
    assert metrics["mlm_accuracy"] == pytest.approx((logits.argmax(-1)[keep] == batch["labels"][keep]).float().mean().item())
    loss = torch.nn.functional.cross_entropy(logits[keep], batch["labels"][keep]).item()
    assert metrics["mlm_loss"] == pytest.approx(loss, rel=1e-5)


def test_evaluate_scores_a_causal_lm_on_the_next_token_of_real_positions_only(small):
    docs, tok = small
    torch.manual_seed(0)
    model = minibert.BertForCausalLM(tiny_config(tok)).eval()
    examples = [e for e in minibert.make_lm_examples(docs[:5], tok, max_length=64)][:12]
    examples[0] = {**examples[0], "input_ids": examples[0]["input_ids"][:9]}  # a short block: padding in the batch
    batches = []
    metrics = minibert.evaluate(model, "clm", examples, tok, batch_size=5, batches=batches)
    scores, right, n = [], 0, 0
    with torch.no_grad():
        for e in examples:  # one block at a time, no padding: position t predicts token t + 1
            ids = torch.tensor(e["input_ids"])
            logits = model(input_ids=ids[None]).logits[0, :-1]
            scores.append(torch.nn.functional.cross_entropy(logits, ids[1:], reduction="sum").item())
            right += (logits.argmax(-1) == ids[1:]).sum().item()
            n += len(ids) - 1
    assert metrics["clm_loss"] == pytest.approx(sum(scores) / n, rel=1e-4)
    # batch by batch (for intervals that redraw whole batches): blocks 0-4, 5-9, 10-11
    assert [b["clm_n"] for b in batches] == [sum(len(e["input_ids"]) - 1 for e in examples[i:i + 5]) for i in (0, 5, 10)]
    assert sum(b["clm_loss"] for b in batches) == pytest.approx(sum(scores), rel=1e-4)
    assert metrics["clm_accuracy"] == pytest.approx(right / n)
    assert metrics["clm_perplexity"] == pytest.approx(math.exp(sum(scores) / n), rel=1e-4)


def test_pseudo_perplexity_masks_each_token_in_turn(small):
    docs, tok = small
    torch.manual_seed(0)
    model = minibert.BertForMaskedLM(tiny_config(tok)).eval()
    sentence = "The albedo of fresh snow is high."
    ids = tok(sentence, return_tensors="pt")["input_ids"][0]
    nll = 0.0
    for i in range(1, len(ids) - 1):
        masked = ids.clone()
        masked[i] = tok.mask_token_id
        with torch.no_grad():
            nll -= model(input_ids=masked[None]).logits[0, i].log_softmax(-1)[ids[i]].item()
    assert minibert.pseudo_perplexity(model, tok, [sentence]) == pytest.approx(math.exp(nll / (len(ids) - 2)), rel=1e-4)


def test_bad_settings_are_refused(small):
    with pytest.raises(ValueError, match="unknown objective 'lm'"):
        run(small, "lm")
    with pytest.raises(ValueError, match="give a budget"):
        run(small, "mlm", steps=None)
    with pytest.raises(ValueError, match="cannot fill one step"):
        run(small, "mlm", batch_size=100_000)
    with pytest.raises(ValueError, match="not a minibert training run"):
        minibert.pretrain(out="/nonexistent-folder", resume=True, steps=1)


@pytest.mark.parametrize("setting, message", [
    (dict(steps=0), "steps must be positive, got 0"),
    (dict(steps=-5), "steps must be positive, got -5"),
    (dict(steps=None, minutes=-1), "minutes must be positive, got -1"),
    (dict(batch_size=0), "batch_size must be positive, got 0"),
    (dict(lr=-1e-3), "lr must be positive"),
    (dict(lr=float("nan")), "lr must be positive, got nan"),
])
def test_budgets_and_sizes_that_cannot_work_are_refused_before_training(small, setting, message):
    with pytest.raises(ValueError, match=message):
        run(small, "mlm", **setting)


def test_a_loss_that_becomes_nan_stops_the_run_and_keeps_the_last_checkpoint(small, tmp_path):
    def poison(trainer):  # after step 3, a weight turns into NaN: step 4's loss is NaN
        if trainer.step == 3:
            with torch.no_grad():
                trainer.model.bert.embeddings.LayerNorm.weight.fill_(float("nan"))
    with pytest.raises(FloatingPointError, match=r"loss became nan at step 4.*still holds the checkpoint of step 2"):
        run(small, "mlm", out=tmp_path / "run", save_every=2, callback=poison)
    saved = minibert.BertForMaskedLM.from_pretrained(tmp_path / "run")
    assert all(torch.isfinite(p).all() for p in saved.parameters())
    assert minibert.training.trainer.read_state(tmp_path / "run")["step"] == 2


def test_an_output_path_that_is_a_file_is_refused_before_training(small, tmp_path):
    (tmp_path / "taken").write_text("a file")
    calls = []
    with pytest.raises(ValueError, match="is a file; a checkpoint is a folder"):
        run(small, "mlm", out=tmp_path / "taken", callback=lambda t: calls.append(t.step))
    assert calls == []


def test_bf16_only_where_the_hardware_does_it(monkeypatch, capsys):
    from minibert.training import trainer
    cpu = torch.device("cpu")
    monkeypatch.setattr(trainer, "bf16_is_native", lambda device: False)  # an AVX2-only laptop
    assert trainer.resolve_bf16(None, cpu) is False and capsys.readouterr().out == ""  # default: fp32, quietly
    assert trainer.resolve_bf16(True, cpu) is False  # asked for: fp32 all the same, with a note
    assert "no native bf16" in capsys.readouterr().out
    monkeypatch.setattr(trainer, "bf16_is_native", lambda device: True)  # AVX-512 BF16, AMX or a recent GPU
    assert trainer.resolve_bf16(None, cpu) is True and trainer.resolve_bf16(False, cpu) is False


def test_the_precision_a_run_used_is_recorded(small, tmp_path):
    run(small, "mlm", out=tmp_path / "run", bf16=False)
    assert minibert.training.trainer.read_state(tmp_path / "run")["bf16"] is False


def test_a_gpu_that_only_emulates_bf16_trains_in_fp32(monkeypatch):
    """A T4, Colab's free GPU, answers yes to torch.cuda.is_bf16_supported() because it can emulate bf16
    (slowly); only a GPU that multiplies bf16 itself (Ampere and later) gets bf16 by default."""
    from minibert.training import trainer
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: including_emulation)
    assert trainer.bf16_is_native(torch.device("cuda")) is False
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda including_emulation=True: True)  # an A100
    assert trainer.bf16_is_native(torch.device("cuda")) is True
