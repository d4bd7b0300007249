"""Exercises of notebook 09, warm-starting decoders: seq2seq labels and greedy decoding."""

import copy

import torch

from ..model.losses import IGNORE_INDEX
from .framework import CLS, PAD, SEP, Slip, exercise, judge_answer

EX = "09"


DECODER_LABEL_SLIPS = [Slip("padding scored", lambda ids: ids,
                            "padding is still a target: put -100 where attention_mask is 0")]


def decoder_labels_hint(got, labels):
    """What is wrong with decoder labels that no slip explains: shifted (whatever the last position holds), or else."""
    if torch.equal(got[:, :-1], labels[:, 1:]):
        return ("you shifted the labels: BertForCausalLM shifts them itself, so position t would learn token "
                "t+2 (shifted twice). Give labels = input_ids with -100 on padding")
    return "labels = input_ids with -100 where attention_mask is 0"


@exercise(EX, 1, "decoder inputs and labels")
def check_decoder_inputs(decoder_inputs):
    """decoder_inputs(targets) -> dict(input_ids, attention_mask, labels) for BertForCausalLM with cross-attention."""
    targets = [[40, 41, 42], [50]]
    got = decoder_inputs([list(t) for t in targets])
    ids = torch.tensor([[CLS, 40, 41, 42, SEP], [CLS, 50, SEP, PAD, PAD]])
    mask = (ids != PAD).long()
    labels = ids.masked_fill(mask == 0, IGNORE_INDEX)
    if not isinstance(got, dict) or not {"input_ids", "attention_mask", "labels"} <= set(got):
        return "return a dict with input_ids, attention_mask and labels"
    g_ids, g_mask, g_labels = (torch.as_tensor(got[k]) for k in ("input_ids", "attention_mask", "labels"))
    if g_ids.shape != ids.shape or not torch.equal(g_ids, ids):
        if g_ids.shape == (2, 4) and torch.equal(g_ids[0], torch.tensor([CLS, 40, 41, 42])):
            return ("end each target with [SEP]: the decoder must learn to produce it, or it never knows when "
                    "to stop")
        if g_ids.shape == (2, 4) and torch.equal(g_ids[0], torch.tensor([40, 41, 42, SEP])):
            return "start each target with [CLS]: the decoder needs a first token to read before the first word"
        return f"input_ids should be [CLS] target [SEP], padded with {PAD} on the right: {ids.tolist()}"
    if not torch.equal(g_mask.long(), mask):
        return "attention_mask: 1 on real tokens (the special ones too), 0 on padding"
    return judge_answer(g_labels, labels, DECODER_LABEL_SLIPS, (ids,), same=torch.equal,
                        fallback=lambda got: decoder_labels_hint(got, labels))


def _decoder():
    from ..model.config import BertConfig
    from ..model.heads import BertForCausalLM
    with torch.random.fork_rng():
        torch.manual_seed(3)  # a model whose greedy output changes tokens: reading the first position differs
        config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, is_decoder=True, add_cross_attention=True,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.5)
        model = BertForCausalLM(config).eval()
        encoder_states = torch.randn(2, 4, 16)
    return model, encoder_states


@torch.no_grad()
def greedy_from_first_position(model, prompt, n, states):
    """The greedy loop reading the logits of the FIRST position at each step, a usual slip."""
    ids = prompt
    for _ in range(n):
        nxt = model(ids, encoder_hidden_states=states).logits[:, 0].argmax(-1)
        ids = torch.cat([ids, nxt[:, None]], 1)
    return ids


@torch.no_grad()
def greedy_reference(model, prompt, n, states):
    return model.generate(prompt, max_new_tokens=n, encoder_hidden_states=states, use_cache=False)


@torch.no_grad()
def greedy_without_states(model, prompt, n, states):
    """Greedy decoding with the encoder's states left out, a usual slip."""
    return model.generate(prompt, max_new_tokens=n, use_cache=False)


GREEDY_SLIPS = [  # on the case (model, prompt, max_new_tokens, encoder_hidden_states)
    Slip("first position", greedy_from_first_position,
         "read the logits of the LAST position (logits[:, -1]): it is the one that predicts the next token"),
    Slip("no encoder states", greedy_without_states,
         "pass encoder_hidden_states to the model at every step: without them the decoder ignores the source"),
]


def greedy_form(got, expected, n):
    """A hint when `got` is not the prompt and its n new tokens, (batch, prompt + n) token ids, else None."""
    if not isinstance(got, torch.Tensor):
        return "return a tensor of token ids"
    if got.shape == (2, n) and torch.equal(got, expected[:, 2:]):
        return "return the prompt followed by the new tokens, as generate does"
    if got.shape != expected.shape:
        return f"return shape (batch, prompt + max_new_tokens) = {tuple(expected.shape)}, got {tuple(got.shape)}"
    return None


def greedy_hint(got, prompt):
    """What is wrong with decoded ids that no slip explains (every slip keeps the prompt)."""
    if not torch.equal(got[:, :2], prompt):
        return "the output must start with the prompt unchanged"
    return "at each step: logits of the last position, argmax, append, repeat"


@exercise(EX, 2, "greedy decoding")
def check_greedy_decode(greedy_decode):
    """greedy_decode(model, input_ids, max_new_tokens, encoder_hidden_states) -> input_ids and the new tokens."""
    model, states = _decoder()
    prompt = torch.tensor([[CLS, 7], [CLS, 11]])
    n = 6
    expected = greedy_reference(model, prompt, n, states)
    got = greedy_decode(copy.deepcopy(model), prompt.clone(), n, states.clone())  # the slips run on the originals
    return judge_answer(got, expected, GREEDY_SLIPS, (model, prompt, n, states), same=torch.equal,
                        form=lambda got: greedy_form(got, expected, n),
                        fallback=lambda got: greedy_hint(got, prompt))
