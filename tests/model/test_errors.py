"""Bad input to the models, their config and their checkpoint files gets a sentence that names the
problem and says what to do, not an IndexError from deep inside torch, safetensors or json; a NaN-making
config is refused. (Bad documents, tokenizer settings and batches: tests/data/test_bad_data.py.)"""

import json
import os
import re
import warnings

import pytest
import torch
import transformers

import minibert
from helpers import CONFIGS


@pytest.fixture(scope="module")
def models():
    torch.manual_seed(0)
    config = minibert.BertConfig.tiny(vocab_size=50, max_position_embeddings=16)
    return {cls: cls(config).eval() for cls in (minibert.BertModel, minibert.BertForMaskedLM,
                                                 minibert.BertForPreTraining, minibert.BertForCausalLM,
                                                 minibert.BertForNextSentencePrediction)}


ids = torch.randint(1, 50, (2, 8))


@pytest.mark.parametrize("bad, error, message", [
    (dict(input_ids=torch.tensor([[1, 2, 50]])), ValueError, "outside 0..49.*vocab_size=50"),
    (dict(input_ids=torch.tensor([[1, -3, 2]])), ValueError, "contains -3"),
    (dict(input_ids=torch.randint(1, 50, (1, 17))), ValueError, "17 tokens.*max_position_embeddings=16"),
    (dict(input_ids=ids.float()), TypeError, "integer ids"),
    (dict(input_ids=ids[0]), ValueError, r"shape \(batch, seq_len\)"),
    (dict(input_ids=ids, attention_mask=torch.ones(2, 7)), ValueError, "attention_mask has shape"),
    (dict(input_ids=ids, token_type_ids=torch.full((2, 8), 2)), ValueError, "type_vocab_size=2"),
    (dict(input_ids=ids, token_type_ids=torch.zeros(2, 5, dtype=torch.long)), ValueError, "token_type_ids has shape"),
    (dict(), ValueError, "exactly one of input_ids or inputs_embeds"),
])
def test_bad_inputs_raise_clear_errors(models, bad, error, message):
    for model in models.values():
        with pytest.raises(error, match=message):
            model(**bad)


def test_wrong_labels_raise_clear_errors(models):
    mlm, pre, causal, nsp = (models[c] for c in (minibert.BertForMaskedLM, minibert.BertForPreTraining,
                                                  minibert.BertForCausalLM, minibert.BertForNextSentencePrediction))
    with pytest.raises(ValueError, match=r"labels has shape \(2, 7\).*\(2, 8\)"):
        mlm(input_ids=ids, labels=ids[:, 1:])
    with pytest.raises(ValueError, match="labels contains 77"):
        mlm(input_ids=ids, labels=torch.full_like(ids, 77))
    with pytest.raises(ValueError, match="labels has shape"):
        causal(input_ids=ids[:, :-1], labels=ids[:, 1:].reshape(-1))
    with pytest.raises(ValueError, match="at least 2 tokens"):
        causal(input_ids=ids[:, :1], labels=ids[:, :1])
    with pytest.raises(ValueError, match=r"0 = IsNext, 1 = NotNext\) contains 2"):
        nsp(input_ids=ids, labels=torch.tensor([0, 2]))
    with pytest.raises(ValueError, match="next_sentence_label.*shape"):
        pre(input_ids=ids, next_sentence_label=torch.tensor([0, 1, 1]))
    with pytest.raises(TypeError, match="integer class ids"):
        mlm(input_ids=ids, labels=ids.float())
    with pytest.raises(ValueError, match="labels contains 77"):  # the helper method, as the forward
        causal.get_loss(torch.full_like(ids, 77), input_ids=ids)


def test_bad_configs_raise_clear_errors():
    with pytest.raises(ValueError, match="multiple of num_attention_heads"):
        minibert.BertConfig(hidden_size=100, num_attention_heads=3)
    with pytest.raises(ValueError, match="hidden_act 'tanh' is not supported"):
        minibert.BertConfig(hidden_act="tanh")
    with pytest.raises(ValueError, match="needs is_decoder=True"):
        minibert.BertConfig(add_cross_attention=True)
    with pytest.raises(ValueError, match="unknown preset 'huge'"):
        minibert.BertConfig.preset("huge")
    with pytest.raises(TypeError, match=r"config must be a BertConfig \(minibert.s or transformers.\), got dict"):
        minibert.BertModel({"hidden_size": 128})


def test_fill_mask_without_a_mask_token_says_so(models):
    class Tok:  # just enough of a tokenizer to reach the check
        mask_token, mask_token_id, pad_token_id = "[MASK]", 4, 0

        def __call__(self, *args, **kwargs):
            return {"input_ids": torch.tensor([[2, 7, 8, 3]]), "attention_mask": torch.ones(1, 4, dtype=torch.long),
                    "token_type_ids": torch.zeros(1, 4, dtype=torch.long)}
    with pytest.raises(ValueError, match=r"at least one \[MASK\]"):
        models[minibert.BertForMaskedLM].fill_mask(Tok(), "no mask here")


def test_sampling_settings_are_checked():
    logits = torch.zeros(1, 5)
    for temperature in (0, -1.0, float("nan"), float("inf")):
        with pytest.raises(ValueError, match="temperature must be a finite number > 0"):
            minibert.sample_next_token(logits, temperature=temperature)
    with pytest.raises(ValueError, match=r"top_p must be in \(0, 1\]"):
        minibert.sample_next_token(logits, top_p=1.5)


def test_multi_label_targets_are_named_as_such():
    model = minibert.BertForSequenceClassification(minibert.BertConfig(vocab_size=30, hidden_size=8, num_labels=3,
                                                                       num_hidden_layers=1, num_attention_heads=2,
                                                                       intermediate_size=16))
    with pytest.raises(ValueError, match=r"multi-label targets: give them as floats \(labels.float\(\)\), or set "
                                         r"config.problem_type='multi_label_classification'"):
        model(torch.randint(5, 30, (2, 6)), labels=torch.tensor([[1, 0, 1], [0, 1, 0]]))


# ---- BertConfig ----

@pytest.mark.parametrize("field, value", [
    ("vocab_size", 0), ("vocab_size", -5), ("hidden_size", "128"), ("hidden_size", 128.0), ("hidden_size", 0),
    ("num_hidden_layers", 0), ("num_attention_heads", 0), ("num_attention_heads", -2), ("intermediate_size", 0),
    ("max_position_embeddings", -1), ("type_vocab_size", 0), ("num_labels", 0), ("num_hidden_layers", True),
    ("hidden_dropout_prob", 1.0), ("hidden_dropout_prob", -0.1), ("attention_probs_dropout_prob", 1.5),
    ("attention_probs_dropout_prob", "0.1"), ("classifier_dropout", 1), ("layer_norm_eps", 0),
    ("layer_norm_eps", -1e-12), ("layer_norm_eps", float("nan")), ("layer_norm_eps", "1e-12"),
    ("initializer_range", -0.02), ("pad_token_id", 30522), ("pad_token_id", -1), ("eos_token_id", 40000),
    ("is_decoder", "false"), ("tie_word_embeddings", 1), ("use_cache", "true"),
])
def test_config_values_that_cannot_work_are_named(field, value):
    with pytest.raises(ValueError, match="^" + re.escape(f"{field}={value!r} cannot work: {field} must be")):
        minibert.BertConfig(**{field: value})


def test_layer_norm_eps_of_zero_was_a_nan():
    """Why layer_norm_eps must be above 0: a constant vector has variance 0."""
    assert torch.nn.functional.layer_norm(torch.ones(1, 4), (4,), eps=0.0).isnan().all()
    with pytest.raises(ValueError, match="layer_norm_eps=0.0 cannot work.*NaN"):
        minibert.BertConfig(layer_norm_eps=0.0)


def test_unknown_overrides_are_refused_but_unknown_json_keys_ignored(tmp_path):
    with pytest.raises(TypeError, match="unknown config field 'hiden_size' \\(did you mean 'hidden_size'\\?\\).*"
                                        "the fields of BertConfig are: .*vocab_size"):
        minibert.BertConfig.from_dict({}, hiden_size=64)
    minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"])).save_pretrained(tmp_path)
    with pytest.raises(TypeError, match="unknown config fields 'dropout', 'num_layers'"):
        minibert.BertModel.from_pretrained(tmp_path, num_layers=2, dropout=0.0)
    config = json.loads((tmp_path / "config.json").read_text())
    (tmp_path / "config.json").write_text(json.dumps({**config, "position_embedding_type": "absolute"}))
    assert minibert.BertModel.from_pretrained(tmp_path).config.hidden_size == 32  # transformers' keys: ignored


# ---- checkpoint files ----

@pytest.fixture
def checkpoint(tmp_path):
    path = tmp_path / "ckpt"
    minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"])).save_pretrained(path)
    return path


def cut(data):
    return data[:len(data) // 2]


@pytest.mark.parametrize("name, damage, why", [
    ("model.safetensors", cut, "SafetensorError"),
    ("model.safetensors", lambda data: b"", "SafetensorError"),
    ("pytorch_model.bin", cut, ""),
    ("pytorch_model.bin", lambda data: b"", ""),
    ("config.json", cut, "not valid JSON"),
    ("config.json", lambda data: b"", "not valid JSON"),
    ("config.json", lambda data: b"[1, 2]", "holds a JSON list"),
])
def test_damaged_checkpoint_files_are_named_with_what_to_do(checkpoint, name, damage, why):
    if name == "pytorch_model.bin":  # a transformers checkpoint of the older format
        state = minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"])).state_dict()
        torch.save(state, checkpoint / name)
        os.remove(checkpoint / "model.safetensors")
    file = checkpoint / name
    file.write_bytes(damage(file.read_bytes()))
    with pytest.raises(ValueError, match=re.escape(f"'{file}' cannot be read: ") + f".*{why}.*save the model there "
                                         "again, re-download the checkpoint, or re-train it"):
        minibert.BertForMaskedLM.from_pretrained(checkpoint)


def test_a_config_value_that_cannot_work_names_the_file(checkpoint):
    config = json.loads((checkpoint / "config.json").read_text())
    (checkpoint / "config.json").write_text(json.dumps({**config, "hidden_size": "32"}))  # hand-edited
    with pytest.raises(ValueError, match=re.escape(f"in '{checkpoint / 'config.json'}': hidden_size='32' cannot")):
        minibert.BertForMaskedLM.from_pretrained(checkpoint)
    (checkpoint / "config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match=re.escape("with the overrides {'layer_norm_eps': 0}: layer_norm_eps=0 ca")):
        minibert.BertForMaskedLM.from_pretrained(checkpoint, layer_norm_eps=0)


def test_weights_of_something_else_and_wrong_paths_are_named(checkpoint):
    with pytest.raises(ValueError, match="is a file; pass the checkpoint folder"):
        minibert.BertModel.from_pretrained(checkpoint / "model.safetensors")
    torch.save({"fc.weight": torch.zeros(2, 2)}, checkpoint / "pytorch_model.bin")
    os.remove(checkpoint / "model.safetensors")
    with pytest.raises(ValueError, match="none of the 1 tensors .* is a weight of BertModel .*fc.weight"):
        minibert.BertModel.from_pretrained(checkpoint)
    torch.save({"model": {"w": torch.zeros(1)}, "step": 3}, checkpoint / "pytorch_model.bin")
    with pytest.raises(ValueError, match="does not hold a dictionary of named tensors"):
        minibert.BertModel.from_pretrained(checkpoint)


def test_a_checkpoint_that_transformers_split_into_shards_is_named(tmp_path):
    hf = transformers.BertForMaskedLM(transformers.BertConfig(**CONFIGS["gelu"]))
    hf.save_pretrained(tmp_path, max_shard_size="20KB")  # transformers writes an index and several files
    assert any(name.endswith(".index.json") for name in os.listdir(tmp_path))
    with pytest.raises(ValueError, match=r"split into shards .*save it whole"):
        minibert.BertForMaskedLM.from_pretrained(tmp_path)


def test_weights_saved_from_inside_distributed_data_parallel_load(checkpoint):
    model = minibert.BertForMaskedLM.from_pretrained(checkpoint)
    torch.save({"module." + k: v for k, v in model.state_dict().items()}, checkpoint / "pytorch_model.bin")
    os.remove(checkpoint / "model.safetensors")
    again = minibert.BertForMaskedLM.from_pretrained(checkpoint)
    assert again.loading_info["missing_keys"] == []
    assert torch.equal(again.cls.predictions.bias, model.cls.predictions.bias)


def test_a_killed_save_leaves_nothing_behind_after_the_next_save(tmp_path):
    model = minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"]))
    model.save_pretrained(tmp_path / "ckpt")
    stale = [".ckpt.k1ll3d_x.tmp", ".ckpt.a8b7c6d5.tmp.old"]  # what saves killed mid-way leave
    kept = [".ckpt2.a8b7c6d5.tmp", ".ckpt.v2.a8b7c6d5.tmp", "ckpt.tmp", ".ckpt.notes"]  # not the same target's
    for name in stale + kept:
        os.makedirs(tmp_path / name)
        (tmp_path / name / "model.safetensors").write_bytes(b"weights")
    model.save_pretrained(tmp_path / "ckpt")
    assert sorted(os.listdir(tmp_path)) == sorted(kept + ["ckpt", ".ckpt.swap"])  # and the lock file of its swaps
    assert minibert.BertModel.from_pretrained(tmp_path / "ckpt").loading_info["missing_keys"] == []


def test_a_save_killed_between_its_renames_loses_nothing(tmp_path):
    model = minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"]))
    model.save_pretrained(tmp_path / "ckpt")
    (tmp_path / "ckpt" / "notes.txt").write_text("mine")
    os.rename(tmp_path / "ckpt", tmp_path / ".ckpt.k1ll3d_x.tmp.old")  # killed after the first rename
    with pytest.raises(FileNotFoundError, match=r"interrupted between its two renames.*put it back with\s+mv"):
        minibert.BertModel.from_pretrained(tmp_path / "ckpt")
    with pytest.warns(UserWarning, match="restored"):
        model.save_pretrained(tmp_path / "ckpt")  # the next save puts the previous one back first
    assert sorted(os.listdir(tmp_path)) == [".ckpt.swap", "ckpt"]
    assert (tmp_path / "ckpt" / "notes.txt").read_text() == "mine"  # carried over, as by any save


def test_saving_where_a_file_stands_is_refused(tmp_path):
    (tmp_path / "ckpt").write_text("not a folder")
    with pytest.raises(ValueError, match="a file of that name is in the way"):
        minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"])).save_pretrained(tmp_path / "ckpt")
    assert (tmp_path / "ckpt").read_text() == "not a folder"



@pytest.fixture(scope="module")
def shipped():
    """The folder of the shipped masked LM with NSP, its two heads and its tokenizer: a model that reads English."""
    from minibert.course import pretrained
    folder = pretrained.path("bert-mlm-nsp")
    return (folder, minibert.BertForMaskedLM.from_pretrained(folder).eval(),
            minibert.BertForNextSentencePrediction.from_pretrained(folder).eval(),
            transformers.AutoTokenizer.from_pretrained(folder))


def test_fill_mask_answers_every_text_of_a_list_as_the_pipeline_does(shipped):
    folder, mlm, _, tokenizer = shipped
    texts = ["The [MASK] barks loudly.", "He drank a cup of [MASK].", "The [MASK] sat on the [MASK]."]
    answers = mlm.fill_mask(tokenizer, texts, top_k=2)
    assert [len(a) for a in answers] == [1, 1, 2]  # one answer per text, one list of guesses per [MASK]
    assert answers == [mlm.fill_mask(tokenizer, t, top_k=2) for t in texts]  # as if asked one by one
    theirs = transformers.pipeline("fill-mask", model=folder, device="cpu")(texts[:2], top_k=2)
    assert [[token for token, _ in a[0]] for a in answers[:2]] == [[g["token_str"] for g in t] for t in theirs]


def test_fill_mask_names_the_text_of_a_list_that_has_no_mask(shipped):
    _, mlm, _, tokenizer = shipped
    with pytest.raises(ValueError, match=r"\[MASK\] in text 0 of the list: 'No mask here.'"):
        mlm.fill_mask(tokenizer, ["No mask here.", "He drank a cup of [MASK]."])
    with pytest.raises(ValueError, match="empty list"):
        mlm.fill_mask(tokenizer, [])


def test_an_empty_sentence_is_refused_by_every_text_helper(shipped):
    _, mlm, nsp, tokenizer = shipped
    with pytest.raises(ValueError, match="text_b is empty"):
        nsp.predict_proba_from_text(tokenizer, "It rained all day.", "")
    with pytest.raises(ValueError, match="text_a is empty"):
        nsp.predict_proba_from_text(tokenizer, "  ", "The streets were flooded.")
    with pytest.raises(ValueError, match=r"text_a\[1\] is empty"):
        mlm.fill_mask(tokenizer, ["The [MASK] barks.", ""])


@pytest.mark.parametrize("text", ["他喝了一杯[MASK]。", "彼は[MASK]を飲んだ。", "شرب كوبا من [MASK].",
                                  "Ο άντρας ήπιε [MASK]."])  # [UNK] (Chinese, Japanese) or letter by letter
def test_text_the_tokenizer_cannot_read_gets_a_warning_not_a_confident_answer(shipped, text):
    _, mlm, nsp, tokenizer = shipped
    with pytest.warns(UserWarning, match=r"are \[UNK\] or single letters of another script: the tokenizer cannot"):
        mlm.fill_mask(tokenizer, text)
    with pytest.warns(UserWarning, match="cannot read it"):
        nsp.predict_proba_from_text(tokenizer, text.replace("[MASK]", ""), "The streets were flooded.")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # English gets no warning
        mlm.fill_mask(tokenizer, "He drank a cup of [MASK].")


@pytest.mark.parametrize("field, value", [("vocab_size", 10**9), ("num_hidden_layers", 10**6)])
def test_a_config_too_large_for_this_machine_is_refused_before_anything_is_allocated(field, value, tmp_path):
    """It took 34 s of allocation and then the allocator's error; a config.json with it, too."""
    import time
    start = time.perf_counter()
    with pytest.raises(ValueError, match=rf"billion weights .* more than this machine's memory .*: check those sizes"):
        minibert.BertConfig(**{field: value})
    config = minibert.BertConfig.tiny(vocab_size=100).to_dict()
    (tmp_path / "config.json").write_text(json.dumps({**config, field: value}))
    with pytest.raises(ValueError, match="more than this machine's memory"):
        minibert.BertForMaskedLM.from_pretrained(tmp_path)
    assert time.perf_counter() - start < 10  # refused, not attempted
