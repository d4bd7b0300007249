"""Exercises of notebook 06, pretraining BERT: masked LM and next sentence prediction together."""

import inspect

import torch
import torch.nn.functional as F

from ..model.losses import IGNORE_INDEX
from .framework import CLS, MASK, SEP, Slip, exercise, expect, judge_answer, same_number

EX = "06"


def _pretraining_batch():
    """Logits and labels of a small batch: 2 sequences of 6 tokens, a vocabulary of 11."""
    g = torch.Generator().manual_seed(0)
    mlm_logits = torch.randn(2, 6, 11, generator=g) * 2
    labels = torch.full((2, 6), IGNORE_INDEX)
    labels[0, 2], labels[0, 4], labels[1, 1] = 7, 9, 5
    nsp_logits = torch.tensor([[2.0, -1.0], [0.5, 1.5]])
    nsp_labels = torch.tensor([0, 1])
    return mlm_logits, nsp_logits, labels, nsp_labels


def _mlm_loss(mlm_logits, labels, reduction="mean"):
    """The masked-LM loss over the labelled positions (labels of -100 are skipped)."""
    return F.cross_entropy(mlm_logits.view(-1, mlm_logits.shape[-1]), labels.view(-1), ignore_index=IGNORE_INDEX,
                           reduction=reduction).item()


def _nsp_loss(nsp_logits, nsp_labels):
    return F.cross_entropy(nsp_logits, nsp_labels).item()


def pretraining_loss_reference(mlm_logits, nsp_logits, labels, nsp_labels):
    """The masked-LM loss (over the labelled positions) plus the next-sentence loss."""
    return _mlm_loss(mlm_logits, labels) + _nsp_loss(nsp_logits, nsp_labels)


NOT_IGNORED = ("-100 is not ignored: positions without a label became targets (token 0). Keep ignore_index=-100 so "
               "only the chosen positions count")
PRETRAINING_LOSS_SLIPS = [  # on the case (prediction_logits p, seq_relationship_logits s, labels, nsp_labels)
    Slip("masked LM only", lambda p, s, labels, nsp_labels: _mlm_loss(p, labels),
         "that is the masked-LM loss alone: add the next-sentence loss"),
    Slip("NSP only", lambda p, s, labels, nsp_labels: _nsp_loss(s, nsp_labels),
         "that is the next-sentence loss alone: add the masked-LM loss"),
    Slip("averaged", lambda *case: pretraining_loss_reference(*case) / 2,
         "BERT adds the two losses; you averaged them (half of each)"),
    Slip("NSP labels swapped",
         lambda p, s, labels, nsp_labels: _mlm_loss(p, labels) + _nsp_loss(s, 1 - nsp_labels),
         "the NSP labels are swapped: label 0 = IsNext is column 0 of seq_relationship_logits; pass "
         "next_sentence_label to cross_entropy as it is"),
    Slip("-100 not ignored",
         lambda p, s, labels, nsp_labels: _mlm_loss(p, labels.clamp(min=0)) + _nsp_loss(s, nsp_labels), NOT_IGNORED),
    Slip("-100 not ignored, no NSP", lambda p, s, labels, nsp_labels: _mlm_loss(p, labels.clamp(min=0)), NOT_IGNORED),
    Slip("masked LM summed",
         lambda p, s, labels, nsp_labels: _mlm_loss(p, labels, reduction="sum") + _nsp_loss(s, nsp_labels),
         "average the masked-LM loss over the labelled positions (the default reduction='mean'), not the sum"),
]


@exercise(EX, 1, "the pretraining loss")
def check_pretraining_loss(pretraining_loss):
    """pretraining_loss(prediction_logits, seq_relationship_logits, labels, next_sentence_label) -> total loss."""
    case = _pretraining_batch()
    got = pretraining_loss(*(x.clone() for x in case))
    mlm, nsp = _mlm_loss(case[0], case[2]), _nsp_loss(case[1], case[3])
    return judge_answer(
        got, pretraining_loss_reference(*case), PRETRAINING_LOSS_SLIPS, case,
        same=lambda a, b: abs(a - b) < 1e-4, convert=float,
        form=expect(lambda got: isinstance(got, torch.Tensor) and got.numel() == 1,
                    "return the loss as a tensor with one value (a scalar), so that .backward() works"),
        fallback=lambda got: f"expected {mlm + nsp:.4f} (masked-LM loss {mlm:.4f} + next-sentence loss "
                             f"{nsp:.4f}), got {got:.4f}")


def _pretraining_batches():
    """Two batches as the MLM collator returns them for BertForPreTraining (vocabulary 40, 4 pairs of 12 tokens)."""
    g = torch.Generator().manual_seed(3)
    batches = []
    for _ in range(2):
        ids = torch.randint(5, 40, (4, 12), generator=g)
        ids[:, 0], ids[:, 6], ids[:, -1] = CLS, SEP, SEP  # [CLS] A [SEP] B [SEP]
        mask = torch.ones_like(ids)
        mask[1, 9:] = 0  # a shorter pair, padded
        ids[1, 8], ids[1, 9:] = 3, 0
        types = torch.zeros_like(ids)
        types[:, 7:] = 1
        types[mask == 0] = 0
        labels = torch.full_like(ids, IGNORE_INDEX)
        labels[:, 2], labels[:, 8] = ids[:, 2], ids[:, 8]
        labels[1, 8] = IGNORE_INDEX
        ids[:, 2] = MASK
        batches.append({"input_ids": ids, "attention_mask": mask, "token_type_ids": types,
                        "next_sentence_label": torch.randint(0, 2, (4,), generator=g), "labels": labels})
    return batches


def _flat_grads(model):
    return torch.cat([(p.grad if p.grad is not None else torch.zeros_like(p)).flatten() for p in model.parameters()])


def _reference(model, batch):
    """The loss of `batch` and its gradient, on a twin of the model (which is left untouched, hooks and all)."""
    twin = type(model)(model.config).train()
    twin.load_state_dict(model.state_dict())
    loss = twin(**batch).loss
    loss.backward()
    return loss.item(), _flat_grads(twin)


def _small_pretraining_model():
    from ..model.config import BertConfig
    from ..model.heads import BertForPreTraining
    with torch.random.fork_rng():  # the notebook's random state is left as it was
        torch.manual_seed(0)
        config = BertConfig.tiny(vocab_size=40, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                                 max_position_embeddings=16)  # no dropout: every forward pass is the same
        return BertForPreTraining(config)


class _Watch:
    """What a training step does, seen through hooks: the arguments of each forward pass of the model (forward),
    how many backward passes reach the word embeddings (backward), and the gradient each optimizer step uses
    (grads)."""

    def __init__(self, model, optimizer):
        self.forward, self.backward, self.grads = [], 0, []
        names = list(inspect.signature(model.forward).parameters)
        model.register_forward_pre_hook(
            lambda module, args, kwargs: self.forward.append({**dict(zip(names, args)), **kwargs}), with_kwargs=True)
        optimizer.register_step_pre_hook(lambda opt, args, kwargs: self.grads.append(_flat_grads(model)))
        model.bert.embeddings.word_embeddings.weight.register_hook(self._on_backward)

    def _on_backward(self, grad):
        self.backward += 1

    def given(self, name):
        """What the first forward pass got as `name` (None when it got nothing)."""
        return self.forward[0].get(name) if self.forward else None


def _no_loss_hint(watch, error):
    """A hint when the student's step raised because the model, given no labels, returned no loss, else None."""
    if watch.forward and watch.given("labels") is None and watch.given("next_sentence_label") is None:
        return (f"the model returned no loss (your code raised {type(error).__name__}): pass the batch's labels and "
                "next_sentence_label to it, e.g. model(**batch)")
    return None


def _inputs_hint(watch):
    """A hint when the model was not given both objectives' labels, else None."""
    if watch.forward and (watch.given("labels") is None or watch.given("next_sentence_label") is None):
        missing = "labels" if watch.given("labels") is None else "next_sentence_label"
        return (f"{missing} was not passed to the model, so its loss is one objective only: pass the whole batch, "
                "model(**batch), and the loss is masked LM + next sentence")
    return None


def _loss_form_hint(loss):
    """A hint when the step's result is not a Python float, else None."""
    if isinstance(loss, torch.Tensor):
        return ("return loss.item(), a Python float, not the tensor: the loss tensor holds the graph of the forward "
                "pass, and keeping it (in a list of losses, say) keeps all of its memory alive")
    if not isinstance(loss, (int, float)) or isinstance(loss, bool):
        return f"return the loss as a Python float (loss.item()), got {type(loss).__name__}"
    return None


def _update_hint(model, before, watch):
    """A hint when the step did not train the model: eval mode, no backward pass, or no change, else None."""
    if not model.training:
        return ("the model is in eval mode after your step: call model.train() first. A model often comes from an "
                "evaluation in eval mode, and dropout would stay off while it trains")
    if watch.backward == 0:
        return "no gradient was computed: call loss.backward() before optimizer.step(), which uses the gradients"
    if not watch.grads or all(torch.equal(b, p) for b, p in zip(before, model.parameters())):
        return "the parameters did not change: call optimizer.step() after loss.backward()"
    return None


def _loss_value_hint(loss, expected, after_update):
    """A hint when the returned loss is not the batch's loss before the update, else None."""
    if not abs(loss - expected) > 1e-4 * max(1.0, abs(expected)):  # `not >`, not `<=`: a NaN loss passes here
        return None
    if same_number(loss, after_update):
        return ("that is the loss after the update (a second forward pass after optimizer.step()): return the loss "
                "you called backward on, the one the step was computed from")
    return f"the loss of this batch before the update is {expected:.4f}, you returned {loss:.4f}"


def _run_step(train_step, model, optimizer, watch, batch):
    """Run the student's step on `batch`, the model in eval mode as after an evaluation. Returns (hint, gradient):
    the hint is None when the step looks right; the gradient is the batch's, which the step should have used."""
    before = [p.detach().clone() for p in model.parameters()]
    expected_loss, expected_grad = _reference(model, batch)
    watch.forward.clear()
    model.eval()  # the step must switch training mode back on
    try:
        loss = train_step(model, {k: v.clone() for k, v in batch.items()}, optimizer)
    except NotImplementedError:
        raise
    except Exception as e:
        hint = _no_loss_hint(watch, e)
        if hint:
            return hint, None
        raise
    hint = (_inputs_hint(watch) or _loss_form_hint(loss) or _update_hint(model, before, watch)
            or _loss_value_hint(loss, expected_loss, _reference(model, batch)[0]))
    return hint, expected_grad


STEP_GRADIENT_SLIPS = [  # the gradient of the second step, on the case (first step's gradient, second batch's)
    Slip("gradients not zeroed", lambda first, second: first + second,
         "the second step used the gradients of both batches: backward() adds to .grad, so call "
         "optimizer.zero_grad() after the step (or before the backward), or every step also repeats the previous "
         "ones"),
]


def _same_direction(a, b):
    return F.cosine_similarity(a, b, dim=0) > 0.999


@exercise(EX, 2, "one training step")
def check_train_step(train_step):
    """train_step(model, batch, optimizer) -> the batch's loss as a float, after one update of the model."""
    model = _small_pretraining_model()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    watch = _Watch(model, optimizer)
    first, second = _pretraining_batches()
    hint, grad_1 = _run_step(train_step, model, optimizer, watch, first)
    if hint:
        return hint
    used_1 = watch.grads[-1]
    if F.cosine_similarity(used_1, grad_1, dim=0) < 0.999:
        return "the step did not use the gradient of this batch's loss: loss.backward(), then optimizer.step()"
    steps = len(watch.grads)
    hint, grad_2 = _run_step(train_step, model, optimizer, watch, second)
    if hint:
        return hint
    if len(watch.grads) != steps + 1:
        return f"call optimizer.step() once per call; it ran {len(watch.grads) - steps} times"
    return judge_answer(watch.grads[-1], grad_2, STEP_GRADIENT_SLIPS, (used_1, grad_2), same=_same_direction,
                        fallback="the second step did not use the gradient of its own batch: loss.backward(), "
                                 "optimizer.step()")
