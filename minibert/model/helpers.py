"""The heads' helper methods: a loss, a prediction or an answer to raw text in one call, each the head's
forward and a line or two around it (the course's API). A head lists the mixin it has,
so that its own class is its forward and its loss:

    MaskedLMHelpers  get_loss, get_pseudo_perplexity, fill_mask
    PairHelpers      get_loss, predict_proba, predict_proba_from_text
    CausalLMHelpers  get_loss, get_perplexity, get_accuracy, predict_token_ids, get_next_token_logits,
                     predict_next_token_id, and get_loss, get_perplexity and predict_next_token_id
                     from raw text (*_from_text)

encode_text turns raw text into the batch BERT reads.
"""

import warnings
from numbers import Integral

import torch

from .checks import as_tensor
from .generation import positions_from_mask
from .losses import IGNORE_INDEX, check_labels, cross_entropy, next_token_loss, shift_labels
from .scoring import pseudo_perplexity


def encode_text(tokenizer, text_a, text_b=None, device=None, drop_final_sep=False):
    """Tokenize raw text as BERT does ([CLS] A [SEP] (B [SEP])): a text or a list of texts (one row
    each), refusing an empty one and warning when the tokenizer cannot read most of a text. For
    next-token prediction the final [SEP] must go, or the model would predict what follows the end
    marker: drop_final_sep pads the rows on the left, so that each ends with its [SEP], and drops that
    last column. The result is a batch of prompts that generate continues."""
    for name, texts in (("text_a", text_a), ("text_b", text_b)):
        for i, text in enumerate([texts] if isinstance(texts, str) or texts is None else texts):
            if texts is not None and (not isinstance(text, str) or not text.strip()):
                where = name if isinstance(texts, str) else f"{name}[{i}]"
                raise ValueError(f"{where} is {'empty' if isinstance(text, str) else type(text).__name__}: "
                                 "give a sentence to read")
    side = dict(padding_side="left") if drop_final_sep else {}
    enc = tokenizer(text_a, text_b, return_tensors="pt", padding=True, return_token_type_ids=True, **side)
    warn_if_unreadable(tokenizer, enc)
    keep = slice(None, -1) if drop_final_sep else slice(None)
    return {k: v[:, keep].to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}


UNREADABLE = 0.5  # the share of a text's tokens that are [UNK] above which its answers say nothing


def warn_if_unreadable(tokenizer, enc):
    """Warn about each text (each segment of each row) whose tokens are mostly [UNK], as text in a script
    the vocabulary lacks is: a model answers it as confidently as any other, but from nothing."""
    unk = getattr(tokenizer, "unk_token_id", None)
    if unk is None:
        return
    special = set(getattr(tokenizer, "all_special_ids", [])) - {unk}
    segments = enc.get("token_type_ids", torch.zeros_like(enc["input_ids"]))
    for row, (ids, mask, segment) in enumerate(zip(*(enc[k].tolist() for k in ("input_ids", "attention_mask")),
                                                   segments.tolist())):
        for part in sorted(set(segment)):
            words = [t for t, m, s in zip(ids, mask, segment) if m and s == part and t not in special]
            pieces = tokenizer.convert_ids_to_tokens(words) if words else []
            unread = sum(t == unk or (len(p.lstrip("#")) == 1 and not p.isascii()) for t, p in zip(words, pieces))
            if words and unread / len(words) > UNREADABLE:
                name = ("text_a", "text_b")[part] + (f" of row {row}" if len(segments) > 1 else "")
                warnings.warn(f"{unread} of the {len(words)} tokens of {name} are {tokenizer.unk_token} or single "
                              "letters of another script: the tokenizer cannot read it (its vocabulary has no words "
                              "of that script), so the model's answer says nothing about that text", stacklevel=3)


class MaskedLMHelpers:
    """For BertForMaskedLM."""

    def get_loss(self, labels, **inputs):
        return self(labels=labels, masked_only=True, return_dict=True, **inputs).loss

    def get_pseudo_perplexity(self, tokenizer, text, batch_size=64):
        """Pseudo-perplexity of a text or a list of texts: each token masked in turn and scored (see
        scoring.pseudo_perplexity). A masked LM has no left-to-right perplexity; lower is better."""
        return pseudo_perplexity(self, tokenizer, [text] if isinstance(text, str) else text, batch_size)

    @torch.no_grad()
    def fill_mask(self, tokenizer, text, top_k=5):
        """For each [MASK] in text, the top_k (token, probability) pairs, most likely first. A list of
        texts gets one such answer per text, in order, as transformers' fill-mask pipeline does."""
        if not isinstance(top_k, Integral) or not 1 <= top_k <= self.config.vocab_size:
            raise ValueError(f"top_k must be a whole number from 1 to the vocabulary size "
                             f"({self.config.vocab_size}), got {top_k!r}")
        texts = [text] if isinstance(text, str) else list(text)
        if not texts:
            raise ValueError("fill_mask got an empty list of texts")
        enc = encode_text(tokenizer, texts, device=self.device)
        is_mask = enc["input_ids"] == tokenizer.mask_token_id  # (B, T)
        for i, row in enumerate(is_mask):
            if not row.any():
                where = "the text" if isinstance(text, str) else f"text {i} of the list"
                raise ValueError(f"fill_mask needs at least one {tokenizer.mask_token} in {where}: {texts[i]!r}")
        top = self(**enc).logits[is_mask].softmax(-1).topk(top_k, dim=-1)  # (M, k) over all masks, row by row
        answers = [[(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ids)]
                   for ps, ids in zip(top.values, top.indices)]
        per_text, start = [], 0
        for count in is_mask.sum(1).tolist():
            per_text.append(answers[start:start + count])
            start += count
        return per_text[0] if isinstance(text, str) else per_text


class PairHelpers:
    """For BertForNextSentencePrediction."""

    def get_loss(self, labels, **inputs):
        """Cross-entropy of the (B,) labels: 0 = B follows A, 1 = B is random."""
        return self(labels=labels, return_dict=True, **inputs).loss

    @torch.no_grad()
    def predict_proba(self, **inputs):
        """(B, 2) probabilities: column 0 "B follows A", column 1 "B is random"."""
        return self(**inputs, return_dict=True).logits.softmax(-1)

    def predict_proba_from_text(self, tokenizer, text_a, text_b):
        return self.predict_proba(**encode_text(tokenizer, text_a, text_b, self.device))


class CausalLMHelpers:
    """For BertForCausalLM: losses and predictions without writing the shift yourself. Their labels are
    input_ids, which they shift; labels_shifted=True declares labels shifted already (shift_labels(labels))."""

    def get_loss(self, labels, *, labels_shifted=False, ignore_index=IGNORE_INDEX, reduction="mean", **inputs):
        labels = as_tensor("labels", labels, self.device)
        if ignore_index == IGNORE_INDEX:  # token ids of this vocabulary, or -100
            check_labels("labels", labels, labels.shape, self.config.vocab_size)
        loss = cross_entropy if labels_shifted else next_token_loss  # next_token_loss shifts them
        return loss(self(**inputs, return_dict=True).logits, labels, ignore_index, reduction or "none")

    @torch.no_grad()
    def get_perplexity(self, labels, *, labels_shifted=False, ignore_index=IGNORE_INDEX, **inputs):
        labels = as_tensor("labels", labels, self.device)
        scored = labels if labels_shifted else shift_labels(labels, ignore_index)
        if not (scored != ignore_index).any():
            return torch.tensor(float("nan"))  # nothing to score: not the 1.0 of a perfect model
        return self.get_loss(labels, labels_shifted=labels_shifted, ignore_index=ignore_index, **inputs).exp()

    @torch.no_grad()
    def get_accuracy(self, labels, *, labels_shifted=False, ignore_index=IGNORE_INDEX, **inputs):
        """The share of scored positions whose argmax is the target (a 0-dim tensor); positions whose
        target is ignore_index leave both the count and the total."""
        labels = as_tensor("labels", labels, self.device)
        predictions = self.predict_token_ids(**inputs)  # (B, T)
        if not labels_shifted:
            labels = shift_labels(labels, ignore_index)  # position t is scored on token t+1
        scored = labels != ignore_index
        if not scored.any():
            return torch.tensor(float("nan"))  # nothing to score: no accuracy, not 0 and not 1
        return (predictions[scored] == labels[scored]).float().mean()

    @torch.no_grad()
    def predict_token_ids(self, **inputs):
        """(B, T): the most likely next token at every position (position t guesses token t+1)."""
        return self(**inputs, return_dict=True).logits.argmax(-1)

    @torch.no_grad()
    def get_next_token_logits(self, **inputs):
        """(B, V): the scores of the token after each row's last real token. Rows may be padded on the
        right or on the left; left-padded rows get the positions they would have without padding."""
        mask = as_tensor("attention_mask", inputs.get("attention_mask"), self.device)
        if mask is not None and inputs.get("position_ids") is None:
            inputs["position_ids"] = positions_from_mask(mask)
        logits = self(**inputs, return_dict=True).logits  # (B, T, V)
        T = logits.shape[1]
        if mask is None:
            last = torch.full((len(logits),), T - 1, device=logits.device)
        else:  # the index of the last 1 of each row
            last = (torch.arange(T, device=mask.device) * mask).argmax(1).to(logits.device)
        return logits[torch.arange(len(logits), device=logits.device), last]

    def predict_next_token_id(self, **inputs):
        return self.get_next_token_logits(**inputs).argmax(-1)  # (B,)

    def get_loss_from_text(self, tokenizer, text_a, text_b=None, **kwargs):
        enc = encode_text(tokenizer, text_a, text_b, self.device)
        labels = enc["input_ids"].masked_fill(enc["attention_mask"] == 0, IGNORE_INDEX)
        return self.get_loss(labels, **enc, **kwargs)

    def get_perplexity_from_text(self, tokenizer, text_a, text_b=None):
        return self.get_loss_from_text(tokenizer, text_a, text_b).detach().exp()

    def predict_next_token_id_from_text(self, tokenizer, text_a, text_b=None):
        return self.predict_next_token_id(**encode_text(tokenizer, text_a, text_b, self.device,
                                                        drop_final_sep=True))
