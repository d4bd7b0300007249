"""Checkpoints: written whole or not at all, old formats read, encoders warm-start decoders."""

import json
import os
import warnings

import pytest
import torch
import transformers

import minibert
from minibert.model import hub
from helpers import CONFIGS, make_batch, randomize


def logits_of(model, batch):
    with torch.no_grad():
        return model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits


def test_failed_save_leaves_the_previous_checkpoint_intact(tmp_path, monkeypatch):
    path = tmp_path / "ckpt"
    model = randomize(minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"])), seed=0).eval()
    model.save_pretrained(path)
    before = {name: (path / name).read_bytes() for name in os.listdir(path)}

    def crash(*args, **kwargs):
        raise OSError("disk full")
    monkeypatch.setattr(hub, "save_file", crash)
    with pytest.raises(OSError, match="disk full"):
        randomize(model, seed=1).save_pretrained(path)
    assert {name: (path / name).read_bytes() for name in os.listdir(path)} == before
    assert sorted(os.listdir(tmp_path)) == [".ckpt.swap", "ckpt"]  # no temporary folder left behind, a lock file


def test_saving_again_keeps_other_files_and_drops_stale_weights(tmp_path):
    model = minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"]))
    (tmp_path / "tokenizer.json").write_text("{}")
    (tmp_path / "pytorch_model.bin").write_bytes(b"stale")
    model.save_pretrained(tmp_path)
    assert sorted(os.listdir(tmp_path)) == ["config.json", "model.safetensors", "tokenizer.json"]
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["architectures"] == ["BertForMaskedLM"] and config["model_type"] == "bert"


def test_legacy_pytorch_bin_with_gamma_beta_names_loads(tmp_path):
    theirs = randomize(transformers.BertForPreTraining(transformers.BertConfig(**CONFIGS["gelu"])), seed=3).eval()
    state = {k.replace("LayerNorm.weight", "LayerNorm.gamma").replace("LayerNorm.bias", "LayerNorm.beta"): v
             for k, v in theirs.state_dict().items()}
    state["bert.embeddings.position_ids"] = torch.arange(512)[None]  # a buffer old checkpoints carry
    state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"]
    torch.save(state, tmp_path / "pytorch_model.bin")
    theirs.config.to_json_file(tmp_path / "config.json")
    ours = minibert.BertForPreTraining.from_pretrained(tmp_path)
    assert ours.loading_info["missing_keys"] == []
    batch = make_batch(CONFIGS["gelu"])
    with torch.no_grad():
        a = ours(input_ids=batch["input_ids"]).prediction_logits
        b = theirs(input_ids=batch["input_ids"]).prediction_logits
    assert (a - b).abs().max() < 1e-4


def test_real_config_json_with_unknown_keys_is_tolerated(tmp_path):
    minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"])).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "config.json").read_text())
    config.update(position_embedding_type="absolute", gradient_checkpointing=False, transformers_version="4.6.0")
    (tmp_path / "config.json").write_text(json.dumps(config))
    model = minibert.BertModel.from_pretrained(tmp_path, hidden_dropout_prob=0.0)
    assert model.config.hidden_dropout_prob == 0.0 and model.config.hidden_size == 32


def test_encoder_checkpoint_warm_starts_a_causal_decoder_with_cross_attention(tmp_path):
    mlm = randomize(minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"])), seed=4).eval()
    mlm.save_pretrained(tmp_path)
    with pytest.warns(UserWarning, match="crossattention") as record:
        decoder = minibert.BertForCausalLM.from_pretrained(tmp_path, is_decoder=True, add_cross_attention=True)
    assert "freshly initialized" in str(record[0].message)
    assert all("crossattention" in k for k in decoder.loading_info["missing_keys"])
    assert decoder.config.is_decoder
    assert torch.equal(decoder.bert.embeddings.word_embeddings.weight, mlm.bert.embeddings.word_embeddings.weight)
    assert torch.equal(decoder.cls.predictions.bias, mlm.cls.predictions.bias)


def test_causal_head_is_causal_even_with_an_encoder_config():
    """The silent bug of other libraries: a causal head built from is_decoder=False attends both ways."""
    torch.manual_seed(0)
    model = minibert.BertForCausalLM(minibert.BertConfig(**CONFIGS["gelu"], is_decoder=False)).eval()
    ids = torch.randint(5, 99, (1, 10))
    changed = ids.clone()
    changed[0, 7:] = 5  # change the future
    a, b = logits_of(model, dict(input_ids=ids, attention_mask=None)), logits_of(
        model, dict(input_ids=changed, attention_mask=None))
    assert torch.allclose(a[0, :7], b[0, :7], atol=1e-5)  # the past cannot see it
    assert not torch.allclose(a[0, 7:], b[0, 7:], atol=1e-3)


def test_bare_encoder_and_headed_checkpoints_load_into_each_other(tmp_path):
    encoder = randomize(minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"])), seed=5).eval()
    encoder.save_pretrained(tmp_path / "enc")
    with pytest.warns(UserWarning, match="cls.predictions"):
        mlm = minibert.BertForMaskedLM.from_pretrained(tmp_path / "enc")
    assert torch.equal(mlm.bert.encoder.layer[1].output.dense.weight, encoder.encoder.layer[1].output.dense.weight)
    pre = randomize(minibert.BertForPreTraining(minibert.BertConfig(**CONFIGS["gelu"])), seed=6).eval()
    pre.save_pretrained(tmp_path / "pre")
    bare = minibert.BertModel.from_pretrained(tmp_path / "pre")
    assert bare.loading_info["missing_keys"] == []
    assert torch.equal(bare.pooler.dense.weight, pre.bert.pooler.dense.weight)


def test_missing_or_foreign_folders_are_named(tmp_path):
    with pytest.raises(FileNotFoundError, match="no checkpoint folder"):
        minibert.BertModel.from_pretrained(tmp_path / "nothing")
    with pytest.raises(ValueError, match="no config.json"):
        minibert.BertModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "gpt2", "n_embd": 8}))
    with pytest.raises(ValueError, match="'gpt2' model, not BERT"):
        minibert.BertModel.from_pretrained(tmp_path)
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "bert", **CONFIGS["gelu"]}))
    with pytest.raises(ValueError, match="no weights"):
        minibert.BertModel.from_pretrained(tmp_path)
    minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"])).save_pretrained(tmp_path)
    with pytest.raises(ValueError, match="does not fit this config.*word_embeddings"):
        minibert.BertModel.from_pretrained(tmp_path, vocab_size=200)


def test_double_shifted_labels_trigger_a_warning():
    torch.manual_seed(0)
    model = minibert.BertForCausalLM(minibert.BertConfig(**CONFIGS["gelu"]))
    ids = torch.randint(5, 99, (4, 12))
    with pytest.warns(UserWarning, match="shifted twice"):
        model(input_ids=ids[:, :-1], labels=ids[:, 1:])  # the tutorial's mistake
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        model(input_ids=ids, labels=ids)  # the right way: no warning


def test_config_json_records_the_dtype_of_the_weights_and_transformers_loads_them_in_it(tmp_path):
    """A model saved in bf16 says so in config.json, as transformers' own save does: transformers'
    from_pretrained (dtype="auto" by default) then loads it in bf16, and a float32 save in float32."""
    model = minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"]))
    for dtype, name in ((torch.bfloat16, "bfloat16"), (torch.float32, "float32")):
        model.to(dtype).save_pretrained(tmp_path / name)
        assert json.loads((tmp_path / name / "config.json").read_text())["dtype"] == name
        assert transformers.BertForMaskedLM.from_pretrained(tmp_path / name).dtype == dtype
