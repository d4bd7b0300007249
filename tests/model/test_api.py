"""minibert works the way a transformers user tries it first: outputs that read like transformers', the
config switches, loading options, embedding methods and the names transformers' tools read, each
against transformers on the same weights; transformers' Trainer; lists and numpy arrays as inputs, and
a sentence (a ValueError naming the argument) for the inputs it cannot take. (generate:
tests/model/test_generation.py.)"""

import json
import math
import warnings

import numpy as np
import pytest
import torch
import transformers

import minibert
from helpers import CONFIGS, PAIRS, labels_for, left_padded_batch, make_batch, randomize, word_tokenizer

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def twins(tmp_path, cls, config_name="gelu", seed=1):
    """A transformers model with random weights and the minibert model loaded from its checkpoint."""
    hf_config = transformers.BertConfig(**CONFIGS[config_name], is_decoder=cls is minibert.BertForCausalLM)
    theirs = randomize(PAIRS[cls](hf_config), seed=seed).eval()
    theirs.save_pretrained(tmp_path)
    return cls.from_pretrained(tmp_path).eval(), theirs




# ---- outputs read like transformers' ----

def test_model_output_indexes_unpacks_and_converts_like_transformers():
    loss, logits = torch.tensor(0.5), torch.randn(2, 3)
    out = minibert.ModelOutput(loss=loss, logits=logits)
    theirs = transformers.modeling_outputs.MaskedLMOutput(loss=loss, logits=logits)
    assert out[0] is loss and out[1] is logits and out[-1] is logits
    assert out[1:] == theirs[1:] == (logits,)
    assert out["loss"] is loss and out["attentions"] is None
    assert list(out) == list(theirs) == ["loss", "logits"]  # an output is an ordered dict: its keys
    first, second = out.to_tuple()
    assert first is loss and second is logits
    assert out.to_tuple() == theirs.to_tuple() == (loss, logits) and len(out) == len(theirs) == 2
    assert dict(out) == dict(theirs)
    assert out.keys() == ["loss", "logits"] and out.items() == [("loss", loss), ("logits", logits)]
    assert "loss" in out and "attentions" not in out
    assert dict(**out) == {"loss": loss, "logits": logits}
    with pytest.raises(KeyError, match="no field 'logit'.*'loss', 'logits'"):
        out["logit"]
    no_loss = minibert.ModelOutput(logits=logits)
    assert no_loss[0] is logits  # positions skip the fields that are not set, as in transformers


@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_return_dict_false_gives_the_tuple_transformers_gives(tmp_path, cls):
    ours, theirs = twins(tmp_path, cls)
    batch = make_batch(CONFIGS["gelu"])
    inputs = {k: batch[k] for k in INPUTS}
    with torch.no_grad():
        a = ours(**inputs, **labels_for(cls, batch), return_dict=False)
        b = theirs(**inputs, **labels_for(cls, batch), return_dict=False)
        assert torch.equal(ours(**inputs, **labels_for(cls, batch))[0], a[0])
    assert isinstance(a, tuple) and len(a) >= len(b)
    if cls is minibert.BertForPreTraining:
        assert len(a) == len(b) + 2  # mlm_loss and nsp_loss come after transformers' fields
    real = batch["attention_mask"].bool()
    for x, y in zip(a, b):  # the same fields at the same positions
        assert x.shape == y.shape
        if x.dim() == 3:
            x, y = x[real], y[real]
        assert (x - y).abs().max() < 1e-4


def test_num_parameters_and_dtype_agree_with_transformers(tmp_path):
    for cls in (minibert.BertForPreTraining, minibert.BertForCausalLM):
        for config_name in ("gelu", "gelu_new"):
            ours, theirs = twins(tmp_path / f"{cls.__name__}_{config_name}", cls, config_name)
            for kwargs in ({}, dict(exclude_embeddings=True)):
                assert ours.num_parameters(**kwargs) == theirs.num_parameters(**kwargs), (config_name, kwargs)
            ours.bert.embeddings.requires_grad_(False)
            theirs.bert.embeddings.requires_grad_(False)
            assert ours.num_parameters(only_trainable=True) == theirs.num_parameters(only_trainable=True)
            assert ours.num_parameters(only_trainable=True) < ours.num_parameters()
    assert ours.dtype == torch.float32
    assert ours.to(torch.bfloat16).dtype == torch.bfloat16


def test_transformers_trainer_fine_tunes_a_minibert_classifier(tmp_path):
    torch.manual_seed(0)
    model = minibert.BertForSequenceClassification(minibert.BertConfig.tiny(vocab_size=50, max_position_embeddings=16))
    g = torch.Generator().manual_seed(0)
    data = []
    for i in range(32):  # the class shows in the token at position 1
        ids = torch.randint(5, 50, (8,), generator=g)
        ids[1] = 10 + i % 2
        data.append(dict(input_ids=ids, attention_mask=torch.ones(8, dtype=torch.long), labels=torch.tensor(i % 2)))
    args = transformers.TrainingArguments(output_dir=str(tmp_path), use_cpu=True, report_to=[], max_steps=12,
                                          per_device_train_batch_size=8, learning_rate=1e-3, logging_steps=1,
                                          save_strategy="no", disable_tqdm=True)
    trainer = transformers.Trainer(model=model, args=args, train_dataset=data, eval_dataset=data)
    before = trainer.evaluate()["eval_loss"]
    result = trainer.train()
    after = trainer.evaluate()["eval_loss"]
    assert result.global_step == 12 and math.isfinite(result.training_loss)
    assert after < before - 0.05, (before, after)
    predictions = trainer.predict(data[:8]).predictions
    assert predictions.shape == (8, 2)


# ---- the task heads' helpers ----

def test_masked_lm_perplexity_is_the_pseudo_perplexity_and_nsp_has_get_loss():
    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    model = minibert.BertForMaskedLM(minibert.BertConfig.tiny(vocab_size=10)).eval()

    def masked_nll(ids):  # each word masked in turn, scored on itself: the sum of -log p
        total = 0.0
        for t in range(1, len(ids) - 1):
            masked = ids.clone()
            masked[t] = 4  # [MASK]
            with torch.no_grad():
                total -= model(masked[None]).logits[0, t].log_softmax(-1)[ids[t]].item()
        return total

    fun, hard = masked_nll(torch.tensor([2, 5, 6, 7, 8, 3])), masked_nll(torch.tensor([2, 6, 7, 9, 3]))
    assert model.get_pseudo_perplexity(tokenizer, "deep learning is fun") == pytest.approx(math.exp(fun / 4), rel=1e-5)
    texts = ["deep learning is fun", "learning is hard"]  # pooled over the 7 words of both
    assert model.get_pseudo_perplexity(tokenizer, texts) == pytest.approx(math.exp((fun + hard) / 7), rel=1e-5)

    nsp = minibert.BertForNextSentencePrediction(minibert.BertConfig.tiny(vocab_size=10)).eval()
    labels = torch.tensor([0, 1])
    inputs = dict(input_ids=torch.tensor([[2, 5, 3, 6, 3], [2, 7, 3, 8, 3]]),
                  token_type_ids=torch.tensor([[0, 0, 0, 1, 1]] * 2))
    logits = nsp(**inputs).logits
    by_hand = -(logits.log_softmax(-1)[0, 0] + logits.log_softmax(-1)[1, 1]) / 2  # label 0: B follows A
    torch.testing.assert_close(nsp.get_loss(labels, **inputs), by_hand)


@pytest.mark.parametrize("cls", [minibert.BertForMaskedLM, minibert.BertForPreTraining], ids=lambda c: c.__name__)
def test_masked_only_logits_live_in_their_own_field(cls):
    model = randomize(cls(minibert.BertConfig(**CONFIGS["gelu"])), seed=3).eval()
    batch = make_batch(CONFIGS["gelu"])
    inputs = {k: batch[k] for k in INPUTS}
    name = "prediction_logits" if cls is minibert.BertForPreTraining else "logits"
    with torch.no_grad():
        full = model(**inputs)
        fast = model(**inputs, labels=batch["mlm_labels"], masked_only=True)
    assert getattr(fast, name) is None  # code written for (B, T, V) logits fails, it cannot misread (N, V)
    assert full.masked_logits is None and full.masked_positions is None
    assert torch.equal(fast.masked_positions, batch["mlm_labels"] != -100)
    assert (fast.masked_logits - getattr(full, name)[fast.masked_positions]).abs().max() < 1e-4
    with torch.no_grad():  # without labels there is nothing to select: the (B, T, V) logits as usual
        assert getattr(model(**inputs, masked_only=True), name).shape == (3, 11, 99)
        as_tuple = model(**inputs, labels=batch["mlm_labels"], masked_only=True, return_dict=False)
    assert torch.equal(as_tuple[-1], fast.masked_positions)


# ---- inputs: lists and numpy arrays, and clear errors for what cannot be used ----

@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_every_model_takes_lists_and_numpy_arrays(cls):
    model = randomize(cls(minibert.BertConfig(**CONFIGS["gelu"])), seed=4).eval()
    batch = make_batch(CONFIGS["gelu"])
    tensors = {k: batch[k] for k in INPUTS} | labels_for(cls, batch)
    with torch.no_grad():
        expected = model(**tensors)
        for convert in (lambda t: t.tolist(), lambda t: t.numpy(), lambda t: np.asarray(t, dtype=np.int32)):
            got = model(**{k: convert(v) for k, v in tensors.items()})
            for x, y in zip(got, expected):
                if isinstance(x, torch.Tensor):
                    assert torch.equal(x, y)
        positional = model(batch["input_ids"].tolist())  # input_ids as the first positional argument
    assert len(positional) >= 1


def test_accuracy_and_token_predictions_read_transformers_logits_with_the_shift(causal_pair):
    ours, theirs = causal_pair
    _, ids, mask = left_padded_batch()
    labels = ids.masked_fill(mask == 0, -100)  # padding is never scored
    with torch.no_grad():
        guesses = theirs(ids, attention_mask=mask).logits.argmax(-1)  # (B, T)
    real = mask == 1  # what a padding position guesses is never read
    assert torch.equal(ours.predict_token_ids(input_ids=ids, attention_mask=mask)[real], guesses[real])
    scored = labels[:, 1:] != -100  # position t is scored on token t+1
    expected = (guesses[:, :-1] == labels[:, 1:])[scored].float().mean()
    got = ours.get_accuracy(labels, input_ids=ids, attention_mask=mask)
    assert torch.isclose(got, expected)
    assert 0 < scored.sum() < labels.numel()  # some positions left out: both of the count and of the total
    shifted = torch.cat([labels[:, 1:], torch.full_like(labels[:, :1], -100)], 1)
    assert torch.isclose(ours.get_accuracy(shifted, labels_shifted=True, input_ids=ids, attention_mask=mask), got)
    assert torch.isnan(ours.get_accuracy(torch.full_like(ids, -100), input_ids=ids))  # nothing to score


@pytest.mark.parametrize("cls", [minibert.BertForMaskedLM, minibert.BertForNextSentencePrediction,
                                 minibert.BertForPreTraining, minibert.BertForCausalLM,
                                 minibert.BertForSequenceClassification])
def test_nothing_labelled_is_a_zero_loss_for_every_head_and_no_score(cls, tiny_config):
    torch.manual_seed(0)
    model = cls(tiny_config)
    batch = make_batch(CONFIGS["gelu"])
    unlabelled = {k: torch.full_like(v, -100) for k, v in labels_for(cls, batch).items()}
    out = model(**{k: batch[k] for k in INPUTS}, **unlabelled)
    assert out.loss.item() == 0.0  # not NaN: a batch with nothing to learn teaches nothing
    out.loss.backward()
    assert all(p.grad is None or not p.grad.isnan().any() for p in model.parameters())
    if cls is minibert.BertForCausalLM:  # a score of nothing is no score, not a perfect one
        nothing = unlabelled["labels"]
        assert torch.isnan(model.get_perplexity(nothing, input_ids=batch["input_ids"]))
        assert torch.isnan(model.get_accuracy(nothing, input_ids=batch["input_ids"]))


def test_causal_lm_helpers_take_lists():
    torch.manual_seed(0)
    model = minibert.BertForCausalLM(minibert.BertConfig.tiny(vocab_size=10)).eval()
    ids = [[2, 5, 6, 7, 8]]
    expected = model.get_loss(torch.tensor(ids), input_ids=torch.tensor(ids))
    assert torch.equal(model.get_loss(ids, input_ids=ids), expected)
    assert torch.equal(model.generate(ids, max_new_tokens=3), model.generate(torch.tensor(ids), max_new_tokens=3))
    assert torch.equal(model.predict_next_token_id(input_ids=ids, attention_mask=[[1] * 5]),
                       model.predict_next_token_id(input_ids=torch.tensor(ids)))


@pytest.mark.parametrize("bad, message", [
    (dict(input_ids=[[1, 2, 3], [4, 5]]), "input_ids could not become a tensor.*pad the short"),
    (dict(input_ids="deep learning"), "input_ids must be a tensor, a list or a numpy array.*tokenize the text"),
    (dict(input_ids=torch.zeros(0, 5, dtype=torch.long)), r"input_ids is empty \(shape \(0, 5\)\)"),
    (dict(input_ids=torch.zeros(2, 0, dtype=torch.long)), r"input_ids is empty \(shape \(2, 0\)\)"),
    (dict(input_ids=[[]]), r"input_ids is empty \(shape \(1, 0\)\)"),
    (dict(input_ids=[[1, 2]], attention_mask=[[1], [1, 1]]), "attention_mask could not become a tensor"),
    (dict(inputs_embeds=torch.zeros(0, 4, 32)), "inputs_embeds is empty"),
])
def test_inputs_that_cannot_be_used_raise_a_value_error_naming_them(bad, message):
    config = minibert.BertConfig(**CONFIGS["gelu"])
    for cls in PAIRS:
        model = cls(config).eval()
        with pytest.raises(ValueError, match=message):
            model(**bad)
    with pytest.raises(ValueError, match="labels could not become a tensor"):
        minibert.BertForMaskedLM(config)(input_ids=[[5, 6]], labels=[[5], [6, 7]])
    with pytest.raises(ValueError, match="next_sentence_label must be a tensor"):
        minibert.BertForPreTraining(config)(input_ids=[[5, 6]], next_sentence_label={"a": 1})


# ---- transformers' embedding methods and label names, on the same weights ----
def first_scores(out):
    """The vocabulary scores of an output (the hidden states of a bare encoder, the class scores of a
    classifier), by transformers' field names."""
    for name in ("prediction_logits", "logits", "last_hidden_state"):
        if getattr(out, name, None) is not None:
            return getattr(out, name)
    raise AssertionError(f"no scores in {type(out).__name__}")


@pytest.mark.parametrize("ours_cls", [minibert.BertForMaskedLM, minibert.BertForPreTraining, minibert.BertForCausalLM,
                                      minibert.BertForSequenceClassification, minibert.BertModel],
                         ids=lambda c: c.__name__)
def test_resize_token_embeddings_matches_transformers(tmp_path, ours_cls):
    config = dict(CONFIGS["gelu"], is_decoder=ours_cls is minibert.BertForCausalLM)
    theirs_cls = PAIRS[ours_cls] if ours_cls in PAIRS else transformers.BertModel
    theirs = randomize(theirs_cls(transformers.BertConfig(**config)), seed=3).eval()
    theirs.save_pretrained(tmp_path)
    ours = ours_cls.from_pretrained(tmp_path).eval()
    V = config["vocab_size"]
    assert ours.get_input_embeddings().weight.equal(theirs.get_input_embeddings().weight)
    assert (ours.get_output_embeddings() is None) == (theirs.get_output_embeddings() is None)
    ids = torch.tensor([[2, V + 2, 7, V, 3], [2, 5, V + 1, 9, 3]])  # three new tokens among the old ones
    for new_size, mean_resizing in ((V + 3, True), (V - 4, True), (V + 3, False)):
        model_ids = ids if new_size > V else ids.clamp(max=new_size - 1)
        ours.resize_token_embeddings(new_size, mean_resizing=mean_resizing)
        theirs.resize_token_embeddings(new_size, mean_resizing=mean_resizing)
        assert ours.vocab_size == theirs.vocab_size == new_size
        assert ours.config.vocab_size == theirs.config.vocab_size == new_size
        assert ours.get_input_embeddings().weight.shape == (new_size, config["hidden_size"])
        if ours.get_output_embeddings() is not None:  # the decoder still is the embedding table
            assert ours.get_output_embeddings().weight is ours.get_input_embeddings().weight
        if not mean_resizing:  # new rows random: the same shapes, the old rows kept
            n = min(V, new_size)
            assert ours.get_input_embeddings().weight[:n].equal(theirs.get_input_embeddings().weight[:n])
            continue
        with torch.no_grad():
            a, b = (first_scores(m(input_ids=model_ids)) for m in (ours, theirs))
        assert a.shape == b.shape
        torch.testing.assert_close(a, b, atol=1e-4, rtol=1e-4)  # new rows: the mean of the old (+ 1e-9 noise there)
        theirs = theirs_cls.from_pretrained(tmp_path).eval()  # both from the checkpoint again
        ours = ours_cls.from_pretrained(tmp_path).eval()


def test_a_resized_model_saves_and_loads_in_transformers(tmp_path):
    tokenizer = word_tokenizer()
    model = minibert.BertForMaskedLM(minibert.BertConfig(**dict(CONFIGS["gelu"], vocab_size=len(tokenizer))))
    tokenizer.add_tokens(["minibert", "wordpiece"])
    model.resize_token_embeddings(len(tokenizer))
    model.save_pretrained(tmp_path)
    theirs = transformers.BertForMaskedLM.from_pretrained(tmp_path)
    ids = tokenizer("minibert is fun", return_tensors="pt")["input_ids"]
    assert ids.max().item() == len(tokenizer) - 2  # a new token, read as one
    with torch.no_grad():
        torch.testing.assert_close(model.eval()(input_ids=ids).logits, theirs(input_ids=ids).logits, atol=1e-5, rtol=1e-5)


def test_class_names_in_the_config_reach_transformers_text_classification_pipeline(tmp_path):
    tokenizer = word_tokenizer()
    config = minibert.BertConfig(**dict(CONFIGS["gelu"], vocab_size=len(tokenizer)),
                                 id2label={0: "negative", 1: "neutral", 2: "positive"})
    assert config.num_labels == 3 and config.label2id == {"negative": 0, "neutral": 1, "positive": 2}
    minibert.BertForSequenceClassification(config).save_pretrained(tmp_path)
    tokenizer.save_pretrained(tmp_path)
    reloaded = minibert.BertForSequenceClassification.from_pretrained(tmp_path)
    assert reloaded.config.id2label == config.id2label  # int keys again, though config.json stores strings
    theirs = transformers.AutoConfig.from_pretrained(tmp_path)
    assert theirs.id2label == config.id2label and theirs.label2id == config.label2id
    classify = transformers.pipeline("text-classification", model=str(tmp_path), device="cpu")
    assert classify("deep learning is fun")[0]["label"] in {"negative", "neutral", "positive"}
    assert minibert.BertForSequenceClassification.from_pretrained(tmp_path, num_labels=3).config.id2label == config.id2label
    with pytest.raises(ValueError, match="num_labels=4 but id2label names 3 classes"):
        minibert.BertConfig(num_labels=4, id2label=config.id2label)
    with pytest.raises(ValueError, match=r"id2label must name the classes 0\.\.1"):
        minibert.BertConfig(id2label={0: "a", 2: "b"})


@pytest.mark.parametrize("use_diff", [True, False])
def test_config_to_json_string_reads_as_transformers_config(use_diff):
    values = dict(CONFIGS["gelu_new"], id2label={0: "no", 1: "yes"})
    ours = json.loads(minibert.BertConfig(**values).to_json_string(use_diff=use_diff))
    theirs = json.loads(transformers.BertConfig(**values).to_json_string(use_diff=use_diff))
    shared = {k for k in set(ours) & set(theirs) if theirs[k] is not None}  # transformers leaves label2id None here
    assert {k: ours[k] for k in shared} == {k: theirs[k] for k in shared}
    assert set(values) <= set(ours)  # every field that was set is there
    if use_diff:  # and nothing that was left at its default, beyond model_type
        assert set(ours) - set(values) <= {"model_type", "label2id", "num_labels"}


# ---- the config as transformers' models read it ----
@pytest.mark.parametrize("ours_cls", list(PAIRS), ids=lambda c: c.__name__)
def test_switches_set_on_the_config_act_as_in_transformers(tmp_path, ours_cls):
    config = dict(CONFIGS["gelu"], is_decoder=ours_cls is minibert.BertForCausalLM)
    theirs = randomize(PAIRS[ours_cls](transformers.BertConfig(**config, attn_implementation="eager")), seed=4).eval()
    theirs.save_pretrained(tmp_path)  # eager: transformers returns attention weights only from its spelled-out path
    ours = ours_cls.from_pretrained(tmp_path).eval()
    inputs = {k: make_batch(config)[k] for k in INPUTS}
    for model in (ours, theirs):
        model.config.output_hidden_states = model.config.output_attentions = True
    with torch.no_grad():
        a, b = ours(**inputs), theirs(**inputs)
    assert len(a.hidden_states) == len(b.hidden_states) == config["num_hidden_layers"] + 1
    for x, y in zip(a.hidden_states + a.attentions, b.hidden_states + b.attentions):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)
    for model in (ours, theirs):
        model.config.return_dict = False
    with torch.no_grad():
        a, b = ours(**inputs), theirs(**inputs)
    assert type(a) is type(b) is tuple and len(a) == len(b)
    torch.testing.assert_close(a[0], b[0], atol=1e-5, rtol=1e-5)
    with torch.no_grad():  # an argument given wins over the config
        assert ours(**inputs, output_hidden_states=False, return_dict=True).hidden_states is None


@pytest.mark.parametrize("ours_cls", list(PAIRS), ids=lambda c: c.__name__)
def test_a_transformers_config_builds_the_same_model_and_the_same_tools_read_it(ours_cls):
    config = transformers.BertConfig(**CONFIGS["gelu_new"])
    ours, theirs = ours_cls(config), PAIRS[ours_cls](config)
    assert {k: v.shape for k, v in ours.state_dict().items()} == {
        k: v.shape for k, v in theirs.state_dict().items() if k in ours.state_dict()}
    assert ours.config.hidden_act == "gelu_new" and ours.config.model_type == theirs.config.model_type == "bert"
    assert ours.config.is_encoder_decoder is theirs.config.is_encoder_decoder is False
    assert ours.main_input_name == theirs.main_input_name and ours.base_model_prefix == theirs.base_model_prefix
    assert ours.can_generate() == theirs.can_generate()
    assert minibert.BertConfig.from_dict({**CONFIGS["gelu"], "torch_dtype": "bfloat16"}).dtype == "bfloat16"
    with pytest.raises(TypeError, match="config must be a BertConfig"):
        ours_cls(transformers.GPT2Config())


# ---- loading options, as transformers' from_pretrained takes them ----
def test_loading_options_give_what_transformers_gives(tmp_path):
    config = dict(CONFIGS["gelu"], num_labels=3)
    randomize(transformers.BertForSequenceClassification(transformers.BertConfig(**config)), seed=6).save_pretrained(tmp_path)
    for options in (dict(dtype=torch.bfloat16), dict(torch_dtype="bfloat16"), dict(dtype="auto")):
        ours = minibert.BertForSequenceClassification.from_pretrained(tmp_path, **options)
        theirs = transformers.BertForSequenceClassification.from_pretrained(tmp_path, **options)
        assert ours.dtype == theirs.dtype
    with pytest.warns(UserWarning, match=r"freshly initialized: .*classifier.weight \(checkpoint \(3, 32\), model \(5, 32\)\)"):
        ours, info = minibert.BertForSequenceClassification.from_pretrained(
            tmp_path, num_labels=5, ignore_mismatched_sizes=True, output_loading_info=True)
    theirs, their_info = transformers.BertForSequenceClassification.from_pretrained(
        tmp_path, num_labels=5, ignore_mismatched_sizes=True, output_loading_info=True)
    assert sorted(k for k, _, _ in info["mismatched_keys"]) == sorted(k for k, *_ in their_info["mismatched_keys"])
    assert sorted(info["missing_keys"]) == sorted(their_info["missing_keys"])
    assert ours.classifier.weight.shape == theirs.classifier.weight.shape == (5, config["hidden_size"])
    torch.testing.assert_close(ours.bert.embeddings.word_embeddings.weight, theirs.bert.embeddings.word_embeddings.weight)
    with pytest.raises(ValueError, match="ignore_mismatched_sizes=True leaves such weights freshly initialized"):
        minibert.BertForSequenceClassification.from_pretrained(tmp_path, num_labels=5)
    with pytest.raises(ValueError, match="dtype='bfloat' is not a torch dtype"):
        minibert.BertForSequenceClassification.from_pretrained(tmp_path, dtype="bfloat")


@pytest.mark.parametrize("implementation", ["eager", "sdpa"])
def test_attn_implementation_chooses_the_path_and_keeps_the_numbers(tmp_path, implementation, monkeypatch):
    randomize(transformers.BertModel(transformers.BertConfig(**CONFIGS["gelu"])), seed=2).save_pretrained(tmp_path)
    fused = []
    monkeypatch.setattr(minibert.model.bert.F, "scaled_dot_product_attention",
                        lambda *a, _f=torch.nn.functional.scaled_dot_product_attention, **k: fused.append(1) or _f(*a, **k))
    ours = minibert.BertModel.from_pretrained(tmp_path, attn_implementation=implementation)
    theirs = transformers.BertModel.from_pretrained(tmp_path, attn_implementation=implementation)
    inputs = {k: make_batch(CONFIGS["gelu"])[k] for k in INPUTS}
    with torch.no_grad():
        got = ours(**inputs).last_hidden_state
        assert bool(fused) == (implementation == "sdpa")  # the switch decides the path
        torch.testing.assert_close(got, theirs(**inputs).last_hidden_state, atol=1e-5, rtol=1e-5)
    ours.set_attn_implementation("eager" if implementation == "sdpa" else "sdpa")
    fused.clear()
    with torch.no_grad():
        ours(**inputs)
    assert bool(fused) == (implementation == "eager")
    with pytest.raises(ValueError, match='`attn_implementation="flash_attention_2"` is not supported'):
        minibert.BertModel.from_pretrained(tmp_path, attn_implementation="flash_attention_2")


@pytest.mark.parametrize("num_labels, labels, problem_type", [
    (1, torch.tensor([0.5, -1.0, 2.0]), None),  # regression, inferred from one output
    (3, torch.tensor([2, 0, 1]), None),  # single label, inferred from whole numbers
    (3, torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]), None),  # multi-label, from floats
    (3, torch.tensor([[1.0, 0.0, 1.0], [0.0, 0.0, 1.0], [1.0, 1.0, 0.0]]), "multi_label_classification"),
    (2, torch.tensor([[0.3, 0.1], [1.0, 2.0], [0.0, -1.0]]), "regression"),  # several outputs regressed
], ids=["regression", "single_label", "multi_label_inferred", "multi_label_said", "regression_2_outputs"])
def test_classification_losses_for_each_problem_type_match_transformers(tmp_path, num_labels, labels, problem_type):
    config = dict(CONFIGS["gelu"], num_labels=num_labels, problem_type=problem_type)
    theirs = randomize(transformers.BertForSequenceClassification(transformers.BertConfig(**config)), seed=8).eval()
    theirs.save_pretrained(tmp_path)
    ours = minibert.BertForSequenceClassification.from_pretrained(tmp_path).eval()
    inputs = {k: make_batch(config)[k] for k in INPUTS}
    with torch.no_grad():
        torch.testing.assert_close(ours(**inputs, labels=labels).loss, theirs(**inputs, labels=labels).loss,
                                   atol=1e-5, rtol=1e-5)


def test_shift_labels_given_already_shifted_act_as_in_transformers(tmp_path):
    config = dict(CONFIGS["gelu"], is_decoder=True)
    theirs = randomize(transformers.BertLMHeadModel(transformers.BertConfig(**config)), seed=9).eval()
    theirs.save_pretrained(tmp_path)
    ours = minibert.BertForCausalLM.from_pretrained(tmp_path).eval()
    ids = make_batch(config)["input_ids"]
    shifted = torch.cat([ids[:, 1:], torch.full((len(ids), 1), -100)], dim=1)  # position t learns token t+1
    ahead = torch.cat([ids[:, 2:], torch.full((len(ids), 2), -100)], dim=1)  # another target: two ahead
    with torch.no_grad():
        plain = ours(input_ids=ids, labels=ids).loss
        torch.testing.assert_close(ours(input_ids=ids, labels=ids, shift_labels=shifted).loss, plain)
        for targets in (shifted, ahead):
            torch.testing.assert_close(ours(input_ids=ids, labels=ids, shift_labels=targets).loss,
                                       theirs(input_ids=ids, labels=ids, shift_labels=targets).loss, atol=1e-5, rtol=1e-5)
        assert not torch.isclose(ours(input_ids=ids, shift_labels=ahead).loss, plain)


def test_gradient_checkpointing_gives_the_same_gradients_and_trainer_can_turn_it_on(tmp_path):
    torch.manual_seed(0)
    model = minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"]))
    batch = make_batch(CONFIGS["gelu"])
    inputs = dict(**{k: batch[k] for k in INPUTS}, labels=batch["mlm_labels"])
    grads, feed_forwards = {}, []  # feed-forward passes of one training step: 1 per layer, 2 when recomputed
    for layer in model.bert.encoder.layer:
        layer.intermediate.register_forward_hook(lambda *_: feed_forwards.append(1))
    for on in (False, True):
        model.activation_checkpointing_enable() if on else model.activation_checkpointing_disable()
        assert model.is_gradient_checkpointing is on and model.supports_gradient_checkpointing
        model.zero_grad()
        feed_forwards.clear()
        torch.manual_seed(1)  # the same dropout masks both times (checkpointing redraws them alike)
        model(**inputs).loss.backward()
        grads[on] = [p.grad.clone() for p in model.parameters()]
        assert len(feed_forwards) == (2 if on else 1) * len(model.bert.encoder.layer)  # kept none, computed again
    for a, b in zip(grads[False], grads[True]):
        torch.testing.assert_close(a, b)
    model.gradient_checkpointing_disable()
    dataset = [{"input_ids": batch["input_ids"][i], "labels": batch["mlm_labels"][i]} for i in range(3)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)  # transformers 5 renames it activation_checkpointing
        args = transformers.TrainingArguments(output_dir=str(tmp_path), gradient_checkpointing=True, max_steps=2,
                                              per_device_train_batch_size=3, report_to=[], use_cpu=True,
                                              save_strategy="no", disable_tqdm=True)
    transformers.Trainer(model=model, args=args, train_dataset=dataset).train()
    assert model.is_gradient_checkpointing
    with pytest.raises(ValueError, match="use_reentrant=False only"):
        model.gradient_checkpointing_enable({"use_reentrant": True})  # transformers' older name
    model.gradient_checkpointing_disable()
    assert not model.is_gradient_checkpointing


@pytest.mark.parametrize("ours_cls", list(PAIRS), ids=lambda c: c.__name__)
def test_base_model_is_the_encoder_as_in_transformers(ours_cls):
    config = minibert.BertConfig(**CONFIGS["gelu"])
    ours, theirs = ours_cls(config), PAIRS[ours_cls](transformers.BertConfig(**CONFIGS["gelu"]))
    assert type(ours.base_model).__name__ == type(theirs.base_model).__name__ == "BertModel"


HEADS = [minibert.BertForMaskedLM, minibert.BertForNextSentencePrediction, minibert.BertForPreTraining,
         minibert.BertForSequenceClassification, minibert.BertForCausalLM]


@pytest.mark.parametrize("cls", HEADS, ids=lambda c: c.__name__)
def test_a_head_draws_its_own_weights_and_leaves_the_encoders_as_drawn(cls):
    # the encoder's weights are drawn once, by BertModel: a head built from a seed holds the encoder that seed
    # gives alone, and its own layers have BERT's initialisation (normal with the config's std, zero biases)
    config = minibert.BertConfig(**CONFIGS["gelu"])
    torch.manual_seed(3)
    model = cls(config)
    torch.manual_seed(3)
    alone = minibert.BertModel(model.bert.config, add_pooling_layer=model.bert.pooler is not None)
    for name, weight in alone.state_dict().items():
        assert torch.equal(model.bert.state_dict()[name], weight), name
    own = model.classifier if hasattr(model, "classifier") else model.cls
    tied = model.bert.embeddings.word_embeddings.weight  # the MLM decoder's weight is this table
    layers = [m for m in own.modules() if isinstance(m, torch.nn.Linear) and m.weight is not tied]
    assert layers
    for m in layers:  # PyTorch's own default would give a std near 0.1 here, and nonzero biases
        assert abs(m.weight.std().item() - config.initializer_range) < 0.5 * config.initializer_range
        assert m.bias is None or not m.bias.any()


def test_the_names_and_hooks_that_transformers_code_and_tools_use(tmp_path):
    config = dict(CONFIGS["gelu"], is_decoder=True)
    theirs = randomize(transformers.BertLMHeadModel(transformers.BertConfig(**config)), seed=4).eval()
    theirs.save_pretrained(tmp_path)
    ours = minibert.BertLMHeadModel.from_pretrained(tmp_path)  # transformers' name for BertForCausalLM
    assert type(ours).__name__ == type(theirs).__name__ and isinstance(ours, minibert.BertForCausalLM)
    assert ours.config_class is minibert.BertConfig and ours.config.get_text_config() is ours.config
    # post_init ties the decoder again and keeps trained weights (transformers' keeps them too)
    before = {k: v.clone() for k, v in ours.state_dict().items()}
    ours.post_init()
    assert all(torch.equal(v, ours.state_dict()[k]) for k, v in before.items())
    for tied, source in ours._tied_weights_keys.items():  # the names transformers lists, the same tensor here
        assert tied in theirs._tied_weights_keys and ours.get_parameter(tied) is ours.get_parameter(source)
    # _from_config with transformers' options, and the config field transformers' internals set
    eager = minibert.BertForCausalLM._from_config(ours.config, attn_implementation="eager", dtype=torch.bfloat16)
    assert eager.config.attn_implementation == "eager" and eager.dtype == torch.bfloat16
    eager.config._attn_implementation = "sdpa"
    assert eager.config.attn_implementation == "sdpa"
    with pytest.raises(ValueError, match='`attn_implementation="flex_attention"` is not supported'):
        eager.config._attn_implementation = "flex_attention"
    # a frozen model whose inputs still get gradients (adapters): the hook on the input embeddings
    ids = torch.randint(5, 99, (2, 6), generator=torch.Generator().manual_seed(0))
    for model in (ours, theirs):
        model.requires_grad_(False)
        model.enable_input_require_grads()
        assert model(ids, output_hidden_states=True).hidden_states[0].requires_grad
        model.disable_input_require_grads()
        assert not model(ids, output_hidden_states=True).hidden_states[0].requires_grad
    # the config as transformers reads it: model_type taken, the changed fields in to_diff_dict
    ours_config = minibert.BertConfig(**CONFIGS["gelu"], model_type="bert")
    their_diff = transformers.BertConfig(**CONFIGS["gelu"]).to_diff_dict()
    assert all(their_diff[k] == v for k, v in ours_config.to_diff_dict().items())
    with pytest.raises(ValueError, match="model_type='gpt2'"):
        minibert.BertConfig(model_type="gpt2")
    # a classifier head of another size: both the ValueError of minibert and the RuntimeError of transformers
    transformers.BertForSequenceClassification(transformers.BertConfig(**CONFIGS["gelu"], num_labels=3)).save_pretrained(
        tmp_path / "three")
    for error in (ValueError, RuntimeError):
        with pytest.raises(error, match="does not fit this config"):
            minibert.BertForSequenceClassification.from_pretrained(tmp_path / "three", num_labels=5)


def test_from_pretrained_takes_a_config_and_a_state_dict_instead_of_files(tmp_path):
    theirs = randomize(transformers.BertForMaskedLM(transformers.BertConfig(**CONFIGS["gelu"])), seed=5).eval()
    state = theirs.state_dict()
    ours = minibert.BertForMaskedLM.from_pretrained(None, config=theirs.config, state_dict=state)
    rebuilt = transformers.BertForMaskedLM.from_pretrained(None, config=theirs.config, state_dict=state).eval()
    ids = torch.randint(5, 99, (2, 7), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.allclose(ours(ids).logits, rebuilt(ids).logits, atol=1e-5)
    theirs.save_pretrained(tmp_path)  # a folder, with another config: the one given wins, as in transformers
    wider = minibert.BertForMaskedLM.from_pretrained(tmp_path, config=minibert.BertConfig(**CONFIGS["gelu"],
                                                                                       num_labels=5))
    assert wider.config.num_labels == 5
    with pytest.raises(ValueError, match="from_pretrained\\(None\\) needs both config= and state_dict="):
        minibert.BertForMaskedLM.from_pretrained(None, config=theirs.config)
