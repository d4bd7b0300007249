"""minibert and transformers give the same outputs and losses on the same weights, in both directions."""

import warnings

import pytest
import torch
import transformers

import minibert
from helpers import CONFIGS, PAIRS, labels_for, make_batch, randomize

TOL = 1e-4


def hf_config(name, ours_cls, **extra):
    return transformers.BertConfig(**CONFIGS[name], is_decoder=ours_cls is minibert.BertForCausalLM, **extra)


def run_both(ours, theirs, cls, batch):
    """Forward both models on the batch with each head's labels; return comparable tensors by name."""
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    label_kwargs = labels_for(cls, batch)
    with torch.no_grad():
        a, b = ours(**inputs, **label_kwargs), theirs(**inputs, **label_kwargs)
    real = batch["attention_mask"].bool()
    pairs = {}
    for field in ("last_hidden_state", "pooler_output", "logits", "prediction_logits",
                  "seq_relationship_logits", "loss"):
        x, y = getattr(a, field), getattr(b, field, None)
        if x is None and y is None:
            continue
        assert x is not None and y is not None, f"{field}: only one model returned it"
        if x.dim() == 3:  # padded positions carry no meaning; compare the real tokens
            x, y = x[real], y[real]
        pairs[field] = (x, y)
    return pairs


def assert_close(pairs):
    assert "loss" in pairs or len(pairs) >= 1
    for field, (x, y) in pairs.items():
        assert x.shape == y.shape, f"{field}: shapes {tuple(x.shape)} vs {tuple(y.shape)}"
        diff = (x - y).abs().max().item()
        assert diff < TOL, f"{field}: max abs difference {diff:.2e}"


@pytest.mark.parametrize("config_name", list(CONFIGS))
@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_transformers_checkpoint_loads_into_minibert(tmp_path, config_name, cls):
    theirs = randomize(PAIRS[cls](hf_config(config_name, cls)), seed=1).eval()
    theirs.save_pretrained(tmp_path)
    ours, our_info = cls.from_pretrained(tmp_path, output_loading_info=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        _, their_info = PAIRS[cls].from_pretrained(tmp_path, output_loading_info=True)
    assert our_info == their_info  # nothing missing or unexpected, in transformers' form (sets)
    assert ours.loading_info["missing_keys"] == []  # the model's own record: lists, to print in order
    pairs = run_both(ours, theirs, cls, make_batch(CONFIGS[config_name]))
    if cls is not minibert.BertModel:
        assert "loss" in pairs
    assert_close(pairs)


@pytest.mark.parametrize("config_name", list(CONFIGS))
@pytest.mark.parametrize("cls", list(PAIRS), ids=lambda c: c.__name__)
def test_minibert_checkpoint_loads_into_transformers(tmp_path, config_name, cls):
    ours = randomize(cls(minibert.BertConfig(**CONFIGS[config_name])), seed=2).eval()
    ours.save_pretrained(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        theirs, info = PAIRS[cls].from_pretrained(tmp_path, output_loading_info=True)
    assert not any(info.values()), f"transformers reported {info}"
    assert theirs.config.is_decoder == (cls is minibert.BertForCausalLM)
    assert_close(run_both(ours, theirs.eval(), cls, make_batch(CONFIGS[config_name], seed=3)))


def test_hidden_states_and_attention_weights_match_eager_transformers(tmp_path):
    theirs = randomize(transformers.BertModel(transformers.BertConfig(**CONFIGS["gelu_new"]),
                                              add_pooling_layer=True), seed=4).eval()
    theirs.save_pretrained(tmp_path)
    theirs = transformers.BertModel.from_pretrained(tmp_path, attn_implementation="eager").eval()
    ours = minibert.BertModel.from_pretrained(tmp_path)
    batch = make_batch(CONFIGS["gelu_new"])
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        a = ours(**inputs, output_attentions=True, output_hidden_states=True)
        b = theirs(**inputs, output_attentions=True, output_hidden_states=True)
    assert len(a.attentions) == len(b.attentions) == 3
    assert len(a.hidden_states) == len(b.hidden_states) == 4
    real = batch["attention_mask"].bool()
    for x, y in zip(a.hidden_states, b.hidden_states):
        assert (x[real] - y[real]).abs().max() < TOL
    for x, y in zip(a.attentions, b.attentions):
        assert x.shape == (3, 3, 11, 11)
        assert torch.allclose(x.sum(-1), torch.ones(()), atol=1e-5)  # each row a distribution
        assert (x - y).abs().max() < TOL
    assert a.attentions[0][1, :, :, -4:].max() < 1e-6  # nobody attends to padding


def test_one_layer_and_its_attention_called_alone_give_transformers_hidden_states(tmp_path):
    """What notebook 02 does: call one block, or its attention, on embeddings and read its output back (a
    named tuple, whose first field is the hidden states: transformers' attention returns a tuple too)."""
    theirs = randomize(transformers.BertModel(transformers.BertConfig(**CONFIGS["gelu_new"])), seed=5).eval()
    theirs.save_pretrained(tmp_path)
    ours = minibert.BertModel.from_pretrained(tmp_path).eval()
    x = torch.randn(2, 7, CONFIGS["gelu_new"]["hidden_size"])
    layer, their_layer = ours.encoder.layer[0], theirs.encoder.layer[0]
    with torch.no_grad():
        out, attended = layer(x).hidden_states, layer.attention(x).output
        their_out = their_layer(x)
        their_out = their_out[0] if isinstance(their_out, tuple) else their_out
        their_attended = their_layer.attention(x)[0]
    assert isinstance(out, torch.Tensor) and out.shape == x.shape
    assert (out - their_out).abs().max() < TOL
    assert (attended - their_attended).abs().max() < TOL


def test_sdpa_default_path_returns_attention_weights_that_match_its_own_output():
    """transformers returns attentions=None under SDPA; ours must return the real weights."""
    torch.manual_seed(0)
    model = minibert.BertForMaskedLM(minibert.BertConfig(**CONFIGS["gelu"])).eval()
    batch = make_batch(CONFIGS["gelu"])
    inputs = {k: batch[k] for k in ("input_ids", "attention_mask", "token_type_ids")}
    with torch.no_grad():
        fast = model(**inputs).logits
        slow = model(**inputs, output_attentions=True)
    assert all(a is not None for a in slow.attentions)
    real = batch["attention_mask"].bool()
    assert (fast[real] - slow.logits[real]).abs().max() < 1e-5


def test_causal_lm_shifts_labels_itself_and_ignores_minus_100():
    torch.manual_seed(0)
    model = minibert.BertForCausalLM(minibert.BertConfig(**CONFIGS["gelu"])).eval()
    batch = make_batch(CONFIGS["gelu"])
    ids, mask, labels = batch["input_ids"], batch["attention_mask"], batch["causal_labels"]
    out = model(input_ids=ids, attention_mask=mask, labels=labels)
    logits = out.logits[:, :-1].reshape(-1, out.logits.shape[-1])
    targets = labels[:, 1:].reshape(-1)
    keep = targets != -100
    by_hand = torch.nn.functional.cross_entropy(logits[keep], targets[keep])
    assert abs(out.loss.item() - by_hand.item()) < 1e-5
    assert abs(model.get_loss(labels, input_ids=ids, attention_mask=mask).item() - by_hand.item()) < 1e-5
    assert abs(model.get_perplexity(labels, input_ids=ids, attention_mask=mask).item()
               - by_hand.exp().item()) < 1e-3
