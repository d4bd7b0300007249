"""The shortcuts that make minibert train faster than transformers change nothing a user can see:
with masked_only the MLM decoder and the last layer run only where a head reads ([CLS] and the
masked tokens), on the CPU dropout draws its mask more cheaply, and the loss of bfloat16 logits is
computed a few rows at a time."""

import pytest
import torch
import transformers

import minibert
from helpers import CONFIGS, make_batch, randomize

TOL = 1e-4
INPUTS = ("input_ids", "attention_mask", "token_type_ids")


@pytest.mark.parametrize("ours_cls, theirs_cls, nsp", [
    (minibert.BertForPreTraining, transformers.BertForPreTraining, True),
    (minibert.BertForMaskedLM, transformers.BertForMaskedLM, False),
], ids=["pretraining", "masked_lm"])
def test_masked_only_gives_the_same_loss_and_gradients_as_full_logits(tmp_path, ours_cls, theirs_cls, nsp):
    config = CONFIGS["gelu"]
    theirs = randomize(theirs_cls(transformers.BertConfig(**config)), seed=5).eval()
    theirs.save_pretrained(tmp_path)
    ours = ours_cls.from_pretrained(tmp_path)
    batch = make_batch(config)
    inputs = {k: batch[k] for k in INPUTS}
    labels = dict(labels=batch["mlm_labels"], **(dict(next_sentence_label=batch["nsp_labels"]) if nsp else {}))
    out = ours(**inputs, **labels, masked_only=True)
    logits = out.masked_logits
    assert logits.shape == ((batch["mlm_labels"] != -100).sum().item(), config["vocab_size"])
    assert torch.equal(out.masked_positions, batch["mlm_labels"] != -100)
    assert out.logits is None and out.prediction_logits is None  # the (B, T, V) fields stay empty
    out.loss.backward()
    ref = theirs(**inputs, **labels)
    ref.loss.backward()
    assert abs(out.loss.item() - ref.loss.item()) < TOL
    if nsp:
        assert abs(out.loss.item() - (out.mlm_loss + out.nsp_loss).item()) < 1e-6
    full_logits = (ref.prediction_logits if nsp else ref.logits)[out.masked_positions]
    assert (logits - full_logits).abs().max() < TOL  # the same rows, in the same order
    grads = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert (p.grad - grads[name].grad).abs().max() < TOL, name


def test_positions_give_the_vectors_of_the_full_sequence_at_those_positions():
    torch.manual_seed(0)
    model = randomize(minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu_new"])), seed=6).eval()
    batch = make_batch(CONFIGS["gelu_new"])
    inputs = {k: batch[k] for k in INPUTS}
    positions = torch.tensor([[0, 3, 4], [0, 1, 6], [0, 9, 10]])  # row 1 is padded from position 7
    with torch.no_grad():
        full = model(**inputs)
        part = model(**inputs, positions=positions)
    assert part.last_hidden_state.shape == (3, 3, 48)
    expected = full.last_hidden_state.gather(1, positions[..., None].expand(-1, -1, 48))
    assert (part.last_hidden_state - expected).abs().max() < 1e-5
    assert (part.pooler_output - full.pooler_output).abs().max() < 1e-5  # the pooler reads position 0


def test_sentence_heads_read_only_cls_and_match_their_hidden_states_path():
    """NSP and classification compute only [CLS] in the last layer unless the hidden states are asked for."""
    for cls in (minibert.BertForNextSentencePrediction, minibert.BertForSequenceClassification):
        model = randomize(cls(minibert.BertConfig(**CONFIGS["silu"])), seed=7).eval()
        inputs = {k: make_batch(CONFIGS["silu"])[k] for k in INPUTS}
        with torch.no_grad():
            fast, full = model(**inputs), model(**inputs, output_hidden_states=True)
        assert full.hidden_states[-1].shape[1] == inputs["input_ids"].shape[1]
        assert (fast.logits - full.logits).abs().max() < 1e-5


def test_positions_are_refused_for_a_decoder_or_outside_the_sequence():
    model = minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"], is_decoder=True))
    with pytest.raises(ValueError, match="positions is for encoders"):
        model(torch.ones(2, 5, dtype=torch.long), positions=torch.zeros(2, 1, dtype=torch.long))
    encoder = minibert.BertModel(minibert.BertConfig(**CONFIGS["gelu"]))
    with pytest.raises(ValueError, match=r"indices in 0..4, one row per sequence; got shape \(2, 1\), values 5..5"):
        encoder(torch.ones(2, 5, dtype=torch.long), positions=torch.full((2, 1), 5))
    with pytest.raises(ValueError, match="one row per sequence"):
        encoder(torch.ones(2, 5, dtype=torch.long), positions=torch.zeros(3, 1, dtype=torch.long))


@pytest.fixture
def fused_calls(monkeypatch):
    """Counts the calls of PyTorch's fused attention kernel: the other path is attention() written out."""
    calls = []
    fused = torch.nn.functional.scaled_dot_product_attention
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        lambda *args, **kwargs: calls.append(1) or fused(*args, **kwargs))
    return calls


@pytest.mark.parametrize("cls", [minibert.BertModel, minibert.BertForPreTraining, minibert.BertForCausalLM,
                                 minibert.BertForSequenceClassification])
def test_the_speed_tricks_are_decided_in_each_module_alike_in_the_model_and_alone(cls, fused_calls):
    """What a module does is decided where it is written: every dropout is built as bert.Dropout (the
    cheaper mask), and each attention call chooses its path from the config and self.training, so that a
    layer called alone takes the path it takes in the model, and hooks on a layer see every call."""
    model = cls(minibert.BertConfig.tiny(vocab_size=99, hidden_dropout_prob=0.1, attention_probs_dropout_prob=0.1))
    dropouts = [m for m in model.modules() if isinstance(m, torch.nn.Dropout)]
    assert dropouts and all(type(m) is minibert.model.bert.Dropout for m in dropouts)
    layer = model.base_model.encoder.layer[0]
    seen = []
    layer.register_forward_hook(lambda module, inputs, output: seen.append(type(output).__name__))
    layer.attention.self.register_forward_hook(lambda module, inputs, output: seen.append(type(output).__name__))
    model.train()(torch.randint(5, 99, (2, 8)))
    assert fused_calls == []  # training on a CPU with attention dropout: written out, in every layer
    assert seen == ["Attended", "LayerOutput"]  # the hooks fired, in the order the modules ran
    x = torch.randn(2, 8, model.config.hidden_size)
    layer(x)
    assert fused_calls == []  # the layer alone: the same path
    with torch.no_grad():
        model.eval()(torch.randint(5, 99, (2, 8)))
        assert len(fused_calls) == model.config.num_hidden_layers  # otherwise the fused kernel
        layer(x)
    assert len(fused_calls) == model.config.num_hidden_layers + 1
    model.set_attn_implementation("eager")
    with torch.no_grad():
        model(torch.randint(5, 99, (2, 8)))
    assert len(fused_calls) == model.config.num_hidden_layers + 1  # the config's choice, read by every layer


def test_cpu_dropout_drops_p_of_the_elements_and_rescales_the_rest():
    drop = minibert.model.bert.Dropout(0.1)
    x = torch.ones(1000, 1000, requires_grad=True)
    torch.manual_seed(0)
    y = drop(x)
    dropped = (y == 0).float().mean().item()
    assert abs(dropped - 0.1) < 0.002, f"dropped {dropped:.4f} of the elements, not 0.1"
    assert torch.allclose(y[y != 0], torch.tensor(1 / 0.9))  # kept ones scaled so the mean is unchanged
    assert abs(y.mean().item() - 1) < 0.01
    y.sum().backward()
    assert torch.equal(x.grad, y.detach())  # the gradient flows through the kept elements only
    for row in (y[:500] == 0, y[:, :500] == 0):  # no stripes: every part of the tensor is dropped alike
        assert abs(row.float().mean().item() - 0.1) < 0.003
    torch.manual_seed(0)
    assert torch.equal(drop(x), y)  # seeded: the same mask
    assert not torch.equal(drop(x), y)  # next call: a new mask
    assert torch.equal(drop.eval()(x), x)


def test_causal_attention_stays_causal_when_training_with_dropout():
    """On the CPU, training with attention dropout takes the spelled-out attention; it must still
    hide the future: changing the last token changes nothing before it."""
    model = minibert.BertForCausalLM(minibert.BertConfig(**CONFIGS["gelu"], attention_probs_dropout_prob=0.3,
                                                         hidden_dropout_prob=0.3)).train()
    ids = torch.randint(5, 99, (2, 9))
    changed = ids.clone()
    changed[:, -1] = (ids[:, -1] + 1) % 99
    torch.manual_seed(1)
    a = model(ids).logits
    torch.manual_seed(1)
    b = model(changed).logits
    assert torch.allclose(a[:, :-1], b[:, :-1], atol=1e-6)
    assert not torch.allclose(a[:, -1], b[:, -1])


@pytest.mark.parametrize("cls", [minibert.BertForMaskedLM, minibert.BertForCausalLM], ids=["encoder", "decoder"])
def test_bf16_training_on_the_cpu_takes_the_spelled_out_attention_with_the_fused_numbers(cls, fused_calls):
    """In bf16 on a CPU the fused attention's backward pass is slow for short sequences, so training
    takes the spelled-out path there; loss and gradients must be those of the fused kernel."""
    config = minibert.BertConfig(**CONFIGS["gelu"], hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0,
                                 is_decoder=cls is minibert.BertForCausalLM)
    model = randomize(cls(config), seed=8).train()
    batch = make_batch(CONFIGS["gelu"])

    def loss_and_grads(implementation):
        model.set_attn_implementation(implementation)
        model.zero_grad()
        before = len(fused_calls)
        with torch.autocast("cpu", dtype=torch.bfloat16):
            out = model(batch["input_ids"], batch["attention_mask"], labels=batch["mlm_labels"])
        out.loss.backward()
        return out.loss.item(), {n: p.grad.clone() for n, p in model.named_parameters()}, len(fused_calls) - before

    spelled = loss_and_grads(None)  # minibert's choice
    fused = loss_and_grads("sdpa")
    layers = config.num_hidden_layers
    assert (spelled[2], fused[2]) == (0, layers)  # every layer took the spelled-out path, then the fused one
    assert abs(spelled[0] - fused[0]) < 1e-2 * abs(fused[0])
    a, b = (torch.cat([g.flatten() for g in grads[1].values()]) for grads in (spelled, fused))
    assert (a - b).norm() < 0.02 * b.norm()  # bf16 rounds differently in the two paths: 1-2%, not more
    model.set_attn_implementation(None)
    before = len(fused_calls)
    with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16):
        model.eval()(batch["input_ids"], batch["attention_mask"])
    assert len(fused_calls) - before == layers  # not training: the fused kernel


@pytest.mark.parametrize("rows", [1, 31, 100], ids=lambda n: f"{n}_rows")
def test_the_chunked_loss_of_bf16_logits_is_float32_cross_entropy(rows):
    from minibert.model.losses import cross_entropy_in_chunks
    torch.manual_seed(0)
    logits = (torch.randn(rows, 500) * 4).bfloat16()
    labels = torch.randint(500, (rows,))
    labels[1::3] = -100  # ignored rows: no loss, no gradient
    plain, chunked = logits.clone().requires_grad_(), logits.clone().requires_grad_()
    expected = torch.nn.functional.cross_entropy(plain.float(), labels, ignore_index=-100)
    expected.backward()
    loss = cross_entropy_in_chunks(chunked, labels, -100)
    loss.backward()
    torch.testing.assert_close(loss, expected, rtol=1e-6, atol=1e-6)
    assert chunked.grad.dtype == torch.bfloat16
    torch.testing.assert_close(chunked.grad, plain.grad, rtol=0, atol=1e-6)
    assert (chunked.grad[1::3] == 0).all()


def test_a_causal_lm_trained_in_bf16_takes_the_chunked_loss_and_the_same_steps(monkeypatch):
    calls = []
    chunked_loss = minibert.model.losses.cross_entropy_in_chunks
    monkeypatch.setattr(minibert.model.losses, "cross_entropy_in_chunks", lambda *a: calls.append(1) or chunked_loss(*a))
    config = minibert.BertConfig.tiny(vocab_size=300, is_decoder=True)
    ids = torch.randint(5, 300, (4, 24))
    losses = {}
    for chunked in (True, False):
        torch.manual_seed(0)
        model = minibert.BertForCausalLM(config)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        losses[chunked] = []
        for _ in range(3):
            with torch.autocast("cpu", dtype=torch.bfloat16):
                logits = model(input_ids=ids).logits
                assert logits.dtype == torch.bfloat16
                if chunked:  # what the model does with labels=ids
                    loss = minibert.model.losses.next_token_loss(logits, ids)
                else:  # the plain line it stands for
                    shifted = minibert.model.losses.shift_labels(ids, -100)
                    loss = torch.nn.functional.cross_entropy(logits.reshape(-1, 300).float(), shifted.reshape(-1))
            loss.backward()
            optimizer.step()
            optimizer.zero_grad()
            losses[chunked].append(loss.item())
    assert len(calls) == 3  # once a step, when the model computes the loss itself
    assert losses[True] == pytest.approx(losses[False], abs=1e-5)


@pytest.mark.parametrize("cls", [minibert.BertForPreTraining, minibert.BertForMaskedLM, minibert.BertForCausalLM,
                                 minibert.BertForSequenceClassification])
def test_a_training_forward_pass_reads_no_value_back_from_an_accelerator(cls):
    """On a GPU, every value read back on the host (int(ids.max()), bool(mask.all()), .item()) makes the
    step wait for the device. A tensor on the meta device has no values, so any such read fails there:
    a forward pass with labels, as training runs it, must go through."""
    with torch.device("meta"):
        model = cls(minibert.BertConfig.tiny(vocab_size=99)).train()
        ids = torch.randint(5, 99, (2, 8))
        labels = dict(labels=torch.zeros(2, dtype=torch.long)) if cls is minibert.BertForSequenceClassification \
            else dict(labels=ids)
        if cls is minibert.BertForPreTraining:
            labels["next_sentence_label"] = torch.zeros(2, dtype=torch.long)
        out = model(ids, attention_mask=torch.ones(2, 8, dtype=torch.long), token_type_ids=torch.zeros_like(ids),
                    **labels)
    assert out.loss.device.type == "meta" and out.loss.shape == ()
