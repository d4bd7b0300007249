"""Exercises and quiz of notebook 06, pretraining BERT: masked LM and next sentence prediction together."""

import inspect

import torch
import torch.nn.functional as F

from .framework import CLS, MASK, SEP, Question, exercise, first_matching_hint

EX = "06"


def _pretraining_batch():
    """Logits and labels of a small batch: 2 sequences of 6 tokens, a vocabulary of 11."""
    g = torch.Generator().manual_seed(0)
    mlm_logits = torch.randn(2, 6, 11, generator=g) * 2
    labels = torch.full((2, 6), -100)
    labels[0, 2], labels[0, 4], labels[1, 1] = 7, 9, 5
    nsp_logits = torch.tensor([[2.0, -1.0], [0.5, 1.5]])
    nsp_labels = torch.tensor([0, 1])
    return mlm_logits, nsp_logits, labels, nsp_labels


def pretraining_loss_variants(mlm_logits, nsp_logits, labels, nsp_labels):
    """The masked-LM loss plus the next-sentence loss first, then the usual slips, name -> loss: one of the two
    alone, their average, the NSP labels swapped, -100 not ignored (the unlabelled positions scored on token 0),
    with or without the NSP loss, and the masked-LM loss summed instead of averaged."""
    V = mlm_logits.shape[-1]
    mlm = F.cross_entropy(mlm_logits.view(-1, V), labels.view(-1), ignore_index=-100).item()
    nsp = F.cross_entropy(nsp_logits, nsp_labels).item()
    pad_targets = F.cross_entropy(mlm_logits.view(-1, V), labels.clamp(min=0).view(-1)).item()
    return {
        "right": mlm + nsp,
        "masked LM only": mlm,
        "NSP only": nsp,
        "averaged": (mlm + nsp) / 2,
        "NSP labels swapped": mlm + F.cross_entropy(nsp_logits, 1 - nsp_labels).item(),
        "-100 not ignored": pad_targets + nsp,
        "-100 not ignored, no NSP": pad_targets,
        "masked LM summed": F.cross_entropy(mlm_logits.view(-1, V), labels.view(-1), reduction="sum").item() + nsp,
    }


NOT_IGNORED = ("-100 is not ignored: positions without a label became targets (token 0). Keep ignore_index=-100 so "
               "only the chosen positions count")
PRETRAINING_LOSS_HINTS = {
    "masked LM only": "that is the masked-LM loss alone: add the next-sentence loss",
    "NSP only": "that is the next-sentence loss alone: add the masked-LM loss",
    "averaged": "BERT adds the two losses; you averaged them (half of each)",
    "NSP labels swapped": "the NSP labels are swapped: label 0 = IsNext is column 0 of seq_relationship_logits; pass "
                          "next_sentence_label to cross_entropy as it is",
    "-100 not ignored": NOT_IGNORED,
    "-100 not ignored, no NSP": NOT_IGNORED,
    "masked LM summed": "average the masked-LM loss over the labelled positions (the default reduction='mean'), not "
                        "the sum",
}


@exercise(EX, 1, "the pretraining loss")
def check_pretraining_loss(pretraining_loss):
    """pretraining_loss(prediction_logits, seq_relationship_logits, labels, next_sentence_label) -> total loss."""
    def judge():
        mlm_logits, nsp_logits, labels, nsp_labels = _pretraining_batch()
        got = pretraining_loss(mlm_logits.clone(), nsp_logits.clone(), labels.clone(), nsp_labels.clone())
        if not isinstance(got, torch.Tensor) or got.numel() != 1:
            return "return the loss as a tensor with one value (a scalar), so that .backward() works"
        got = float(got)
        variants = pretraining_loss_variants(mlm_logits, nsp_logits, labels, nsp_labels)
        close = lambda a, b: abs(a - b) < 1e-4  # noqa: E731
        if close(got, variants["right"]):
            return None
        mlm, nsp = variants["masked LM only"], variants["NSP only"]
        return (first_matching_hint(got, variants, PRETRAINING_LOSS_HINTS, same=close)
                or f"expected {mlm + nsp:.4f} (masked-LM loss {mlm:.4f} + next-sentence loss {nsp:.4f}), got "
                   f"{got:.4f}")
    return judge


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
        labels = torch.full_like(ids, -100)
        labels[:, 2], labels[:, 8] = ids[:, 2], ids[:, 8]
        labels[1, 8] = -100
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


@exercise(EX, 2, "one training step")
def check_train_step(train_step):
    """train_step(model, batch, optimizer) -> the batch's loss as a float, after one update of the model."""
    from ..config import BertConfig
    from ..heads import BertForPreTraining

    def judge():
        with torch.random.fork_rng():  # the notebook's random state is left as it was
            torch.manual_seed(0)
            config = BertConfig.tiny(vocab_size=40, hidden_size=32, num_attention_heads=2, intermediate_size=64,
                                     max_position_embeddings=16)  # no dropout: every forward pass is the same
            model = BertForPreTraining(config)
        optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
        seen = {"forward": [], "backward": 0, "grads": []}
        names = list(inspect.signature(model.forward).parameters)

        def on_forward(module, args, kwargs):
            seen["forward"].append({**dict(zip(names, args)), **kwargs})

        def on_step(opt, args, kwargs):
            seen["grads"].append(_flat_grads(model))

        def on_backward(grad):
            seen["backward"] += 1

        model.register_forward_pre_hook(on_forward, with_kwargs=True)
        optimizer.register_step_pre_hook(on_step)
        model.bert.embeddings.word_embeddings.weight.register_hook(on_backward)
        first, second = _pretraining_batches()

        def call(batch):
            before = [p.detach().clone() for p in model.parameters()]
            expected_loss, expected_grad = _reference(model, batch)
            seen["forward"].clear()
            model.eval()  # as after an evaluation: the step must switch training mode back on
            try:
                loss = train_step(model, {k: v.clone() for k, v in batch.items()}, optimizer)
            except NotImplementedError:
                raise
            except Exception as e:
                given = seen["forward"][0] if seen["forward"] else {}
                if seen["forward"] and given.get("labels") is None and given.get("next_sentence_label") is None:
                    return None, (f"the model returned no loss (your code raised {type(e).__name__}): pass the "
                                  "batch's labels and next_sentence_label to it, e.g. model(**batch)"), None
                raise
            given = seen["forward"][0] if seen["forward"] else {}
            if seen["forward"] and (given.get("labels") is None or given.get("next_sentence_label") is None):
                missing = "labels" if given.get("labels") is None else "next_sentence_label"
                return None, (f"{missing} was not passed to the model, so its loss is one objective only: pass the "
                              "whole batch, model(**batch), and the loss is masked LM + next sentence"), None
            if isinstance(loss, torch.Tensor):
                return None, ("return loss.item(), a Python float, not the tensor: the loss tensor holds the graph of "
                              "the forward pass, and keeping it (in a list of losses, say) keeps all of its memory "
                              "alive"), None
            if not isinstance(loss, (int, float)) or isinstance(loss, bool):
                return None, f"return the loss as a Python float (loss.item()), got {type(loss).__name__}", None
            if not model.training:
                return None, ("the model is in eval mode after your step: call model.train() first. A model often "
                              "comes from an evaluation in eval mode, and dropout would stay off while it trains"), None
            if seen["backward"] == 0:
                return None, ("no gradient was computed: call loss.backward() before optimizer.step(), which uses "
                              "the gradients"), None
            if not seen["grads"] or all(torch.equal(b, p) for b, p in zip(before, model.parameters())):
                return None, "the parameters did not change: call optimizer.step() after loss.backward()", None
            changed_loss = _reference(model, batch)[0]
            if abs(loss - expected_loss) > 1e-4 * max(1.0, abs(expected_loss)):
                if abs(loss - changed_loss) < 1e-4 * max(1.0, abs(changed_loss)):
                    return None, ("that is the loss after the update (a second forward pass after optimizer.step()): "
                                  "return the loss you called backward on, the one the step was computed from"), None
                return None, (f"the loss of this batch before the update is {expected_loss:.4f}, you returned "
                              f"{loss:.4f}"), None
            return loss, None, expected_grad

        loss, hint, grad_1 = call(first)
        if hint:
            return hint
        used_1 = seen["grads"][-1]
        if F.cosine_similarity(used_1, grad_1, dim=0) < 0.999:
            return "the step did not use the gradient of this batch's loss: loss.backward(), then optimizer.step()"
        steps = len(seen["grads"])
        loss, hint, grad_2 = call(second)
        if hint:
            return hint
        if len(seen["grads"]) != steps + 1:
            return f"call optimizer.step() once per call; it ran {len(seen['grads']) - steps} times"
        used_2 = seen["grads"][-1]
        if F.cosine_similarity(used_2, grad_2, dim=0) > 0.999:
            return None
        if F.cosine_similarity(used_2, used_1 + grad_2, dim=0) > 0.999:
            return ("the second step used the gradients of both batches: backward() adds to .grad, so call "
                    "optimizer.zero_grad() after the step (or before the backward), or every step also repeats "
                    "the previous ones")
        return "the second step did not use the gradient of its own batch: loss.backward(), optimizer.step()"
    return judge


PREDICT_LOSSES = """\
import torch
import minibert

torch.manual_seed(0)
model = minibert.BertForPreTraining(minibert.BertConfig.tiny(vocab_size=1000))  # fresh: no init_prior
ids = torch.randint(5, 1000, (8, 16))
labels = torch.full_like(ids, -100)
labels[:, 1::2] = ids[:, 1::2]  # every other token is chosen...
ids[:, 1::2] = 4  # ...and replaced by [MASK]
out = model(ids, labels=labels, next_sentence_label=torch.tensor([0, 1] * 4))
print(round(out.mlm_loss.item(), 1), round(out.nsp_loss.item(), 1))
"""

QUIZ = {EX: {
    "q1": Question(
        "A fresh BertForPreTraining with a vocabulary of 1000 tokens reads eight pairs, half of whose tokens are "
        "masked. What does the last line print (the masked-LM loss, then the NSP loss)?",
        {"A": "0.7 6.9", "B": "9.0 0.7", "C": "441.0 0.7", "D": "6.9 0.7"}, "D",
        "a model that knows nothing spreads its probability evenly: ln 1000 = 6.9 per masked token, averaged over "
        "the 64 of them, and ln 2 = 0.69 for the pair. Without init_prior nothing favours the frequent tokens.",
        {"A": "the larger loss is the masked LM's: it chooses among 1000 tokens (ln 1000 = 6.9), NSP between two "
              "classes (ln 2 = 0.7).",
         "B": "ln 8000 = 9.0 belongs to the notebook's 8000-token vocabulary; this model has 1000 tokens, and "
              "ln 1000 = 6.9.",
         "C": "the masked-LM loss is averaged over the 64 chosen positions (cross_entropy's reduction='mean'), not "
              "summed over them: 64 x 6.9 would be the sum."},
        code=PREDICT_LOSSES),
    "q2": Question(
        "A training loop calls loss.backward() and optimizer.step() for every batch but never "
        "optimizer.zero_grad(). What happens?",
        {"A": "each backward adds to .grad, so the step after batch k follows the sum of the gradients of batches "
              "1 to k: old batches keep steering every update",
         "B": "nothing goes wrong: optimizer.step() uses the gradients up and sets them back to zero, so "
              "zero_grad() only frees their memory a little earlier",
         "C": "the new batch's gradients overwrite the old ones, so the updates are right, but the loss the loop "
              "reports becomes the average over all the steps so far",
         "D": "PyTorch raises an error at the second backward, because the graph of the first batch was freed and "
              "its gradients cannot be combined with the new ones"}, "A",
        "backward() accumulates into .grad (which is how gradient accumulation over several batches works, on "
        "purpose). A train step clears it after the update, or before the backward.",
        {"B": "optimizer.step() reads .grad and leaves it as it is; only zero_grad() (of the optimizer or the "
              "model) clears it.",
         "C": "backward() adds to .grad, it never overwrites it; and the loss a step reports is that batch's, "
              "whatever .grad holds.",
         "D": "each batch builds its own graph, and its backward adds to .grad without complaint: the bug is "
              "silent, which is why the 06.2 check looks for it."}),
    "q3": Question(
        "Scored on the same held-out pairs, model A is right on many more NSP pairs than model B, yet its average "
        "NSP loss is about the same as B's. How can that be?",
        {"A": "A's wrong answers are confident: a pair's loss is minus the log of the probability given to the true "
              "label, so a wrong answer given with probability 0.99 costs about 4.6, and a few of those outweigh "
              "many small gains",
         "B": "one of the two numbers must be wrong: a lower loss always means a higher accuracy on the same pairs, "
              "so two models that are far apart in accuracy must be far apart in loss too",
         "C": "the NSP loss also holds the masked-LM part, so a model that is better at NSP can still have the "
              "larger loss if it is worse at predicting the masked tokens",
         "D": "A's weights are larger, and the weight decay of AdamW adds their size to the reported loss, which "
              "hides A's better predictions"}, "A",
        "accuracy only asks whether the true label gets the most probability; the loss asks how much it gets, and "
        "punishes a confident mistake far more than a hesitant one. Loss and accuracy measure different things.",
        {"B": "accuracy is a threshold (is the truth the top answer?), the loss a mean of -log p: a model can gain "
              "many right answers and pay for them with a few very confident wrong ones.",
         "C": "nsp_loss is the next-sentence cross-entropy alone; the masked-LM part is mlm_loss, and only their "
              "sum, loss, holds both.",
         "D": "AdamW's weight decay shrinks the weights directly in the update step; it is not added to the loss "
              "the model reports."}),
    "q4": Question(
        "transformers' BertForPreTraining loads the saved folder with no missing, unexpected or mismatched keys, "
        "and its MLM and NSP logits match ours within 1e-4. What does that establish?",
        {"A": "that the model is well trained: a checkpoint that transformers loads without a warning has passed "
              "the library's own checks on the values of its weights",
         "B": "that transformers fetched bert-base-uncased and mapped its weights onto our small configuration, "
              "which is why no key is reported missing",
         "C": "that our tokenizer is Google's WordPiece vocabulary, since equal logits are only possible when "
              "both sides read the very same token ids",
         "D": "that both libraries use the same parameter names and shapes and compute the same function; how "
              "well the weights were trained is another question"}, "D",
        "equal logits on the same input prove the computation matches; they say nothing about how well it was "
        "trained (the live model loads just as cleanly and answers \"the\" to almost every blank).",
        {"A": "loading checks names and shapes, not quality: a model trained for a minute loads just as "
              "cleanly as one trained for hours.",
         "B": "everything runs offline (HF_HUB_OFFLINE=1): the weights come from our folder, and a bert-base "
              "checkpoint would not even fit this configuration.",
         "C": "the tokenizer is the one trained in this course; the notebook compares it separately (same token "
              "ids: True), and equal logits concern the model."}),
    "q5": Question(
        "You train with mlm_loss + 5 * nsp_loss and AdamW instead of the plain sum. What is the most likely "
        "effect?",
        {"A": "the shared encoder's updates tilt towards what helps NSP, so NSP tends to improve faster and masked "
              "LM may slow down; each head barely notices",
         "B": "nothing at all: Adam divides every step by the size of its gradient, so a factor of 5 on one loss "
              "cancels out everywhere, in the shared encoder too",
         "C": "the NSP head takes steps 5 times larger than before, while the encoder and the MLM head train "
              "exactly as they did with the plain sum",
         "D": "the total loss is 5 times larger, so training diverges unless the learning rate is divided by 5 to "
              "bring the size of every step back"}, "A",
        "the weight scales NSP's share of the gradient that reaches the shared layers; Adam normalises per "
        "parameter, not per loss. Which weighting is best is an experiment, not a formula.",
        {"B": "Adam's normalisation cancels a factor only for parameters that one loss alone reaches (each head); "
              "the shared encoder gets a different mix of the two gradients.",
         "C": "the NSP head is reached by the NSP loss alone, so Adam cancels the factor there: its steps stay the "
              "same size.",
         "D": "Adam's steps do not grow with the loss (about lr per parameter), and gradient clipping bounds the "
              "rest; nothing forces a divergence."}),
}}
