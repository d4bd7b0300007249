"""Task heads on BertModel: masked LM, next sentence prediction, both (pretraining), causal LM, classifier.

Class and parameter names follow transformers (`cls.predictions.decoder`, `cls.seq_relationship`), so a
checkpoint of one loads into the other. Conventions, as in Google's BERT and transformers:
  * a label of -100 is ignored by every loss; when every label is -100 there is nothing to learn: the
    loss is 0 (with a zero gradient), while a score of what was learned (accuracy, perplexity) is NaN,
    since nothing was measured;
  * next-sentence label 0 means "B follows A" (IsNext), 1 means "B is a random sentence" (NotNext);
  * BertForCausalLM takes labels = input_ids and shifts them itself: position t learns token t+1.
"""

import warnings
from numbers import Integral

import torch
import torch.nn.functional as F
from torch import nn

from . import bert, fast, generation
from . import labels as label_rules  # label_rules.shift_labels: get_accuracy has an argument of that name
from .bert import decoder_config
from .checks import IGNORE_INDEX, as_tensor, check_labels
from .compat import TransformersHabits
from .config import ACT2FN
from .generation import positions_from_mask
from .labels import check_causal_labels, shift_labels
from .outputs import ModelOutput, model_output
from .scoring import pseudo_perplexity


class BertPreTrainedModel(TransformersHabits, bert.BertPreTrainedModel):
    """What every class below shares: BERT's config and initialisation (bert.py) with transformers' habits
    (compat.py). Each __init__ ends with post_init(), which also switches on the speed tricks (fast.py)."""


class BertModel(TransformersHabits, bert.BertModel):
    __doc__ = bert.BertModel.__doc__
    hf_architecture = "BertModel"

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config, add_pooling_layer)
        self.post_init()


# the weights that are another's (tie_weights), as transformers lists them: tied -> source
TIED_DECODER = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight"}


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = ACT2FN[config.hidden_act]
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, x):
        return self.LayerNorm(self.act(self.dense(x)))


class BertLMPredictionHead(nn.Module):
    """Token vector -> a score for every word of the vocabulary. The decoder matrix is the input
    embedding matrix (tied); the bias is the head's own."""

    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))

    def forward(self, x):  # (..., C) -> (..., V)
        return F.linear(self.transform(x), self.decoder.weight, self.bias)


class BertPreTrainingHeads(nn.Module):
    """The `cls` module: an MLM head (`predictions`), an NSP head (`seq_relationship`), or both."""

    def __init__(self, config, mlm=True, nsp=True):
        super().__init__()
        if mlm:
            self.predictions = BertLMPredictionHead(config)
        if nsp:
            self.seq_relationship = nn.Linear(config.hidden_size, 2)  # logits of (IsNext, NotNext)


def token_loss(logits, labels, shift=False, ignore_index=IGNORE_INDEX, reduction="mean"):
    """Cross-entropy of (..., V) logits against (...) labels (tokens, pairs or texts); with shift, position t
    of (B, T, V) logits is scored on token t+1. Nothing labelled gives 0, the rule of every loss here."""
    if shift:  # move the labels, not the (much larger) logits; the last position has nothing to predict
        labels = shift_labels(labels, ignore_index)  # (B, T)
    if reduction == "mean" and not (labels != ignore_index).any():
        return logits.sum() * 0.0  # nothing to predict: zero, not the NaN of an empty mean
    if reduction == "mean" and logits.dtype == torch.bfloat16:  # training under autocast: the same loss, faster
        return fast.cross_entropy_in_chunks(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1), ignore_index)
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                           ignore_index=ignore_index, reduction=reduction or "none")
    if reduction in (None, "none"):
        loss = loss.view(labels.shape)
        return loss[:, :-1] if shift else loss  # (B, T-1) with shift
    return loss


def read_positions(labels):
    """(B, K) positions the pretraining heads read: [CLS] (position 0, for the pooler) then every
    labelled position, in order; shorter rows are filled with unlabelled positions. The encoder's last
    layer computes only these (see BertModel's positions): at 15% masking, about one position in six."""
    keep = labels != IGNORE_INDEX
    keep[:, 0] = True
    K = int(keep.sum(1).max())
    return keep.byte().argsort(dim=1, descending=True, stable=True)[:, :K]  # kept first, each in order


def sparse_labels(labels, input_ids, inputs_embeds, vocab_size):
    """For masked_only: the positions the heads read (read_positions) and the labels there, (B, K)."""
    source = input_ids if input_ids is not None else inputs_embeds
    if source is not None:  # without an input BertModel names the problem
        check_labels("labels", labels, source.shape[:2], vocab_size)
    positions = read_positions(labels)
    return positions, labels.gather(1, positions)


def encode_for_pooler(bert, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                      output_attentions, output_hidden_states):
    """The encoder's output for a head on the pooler. The head reads only [CLS], so the last layer computes
    only that row, unless every layer's outputs were asked for."""
    source = input_ids if input_ids is not None else inputs_embeds
    only_cls = source is not None and not (output_attentions or output_hidden_states)
    positions = torch.zeros(len(source), 1, dtype=torch.long, device=source.device) if only_cls else None
    return bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                positions=positions, return_dict=True)


def masked_lm(head, hidden, labels, masked_only):
    """MLM logits and loss. With masked_only the head runs only where a label is set (about 15% of
    positions): the loss is the same, the logits are then (N, V) for those positions in order."""
    if labels is None:
        return head(hidden), None
    check_labels("labels", labels, hidden.shape[:2], head.bias.shape[0])
    if masked_only:
        selected = labels != IGNORE_INDEX
        hidden, labels = hidden[selected], labels[selected]  # (N, C), (N,)
    logits = head(hidden)
    return logits, token_loss(logits, labels)


def mlm_fields(logits, masked, name="logits"):
    """Where the MLM logits go in the output. (B, T, V) logits go to `name`; the (N, V) logits of
    masked_only go to masked_logits, beside masked_positions (B, T), True at the N labelled positions.
    Code written for one shape then finds None where it expects the other, instead of misreading it."""
    return {name: logits} if masked is None else dict(masked_logits=logits, masked_positions=masked)


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


class BertForMaskedLM(BertPreTrainedModel):
    hf_architecture = "BertForMaskedLM"
    _tied_weights_keys = TIED_DECODER

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config, add_pooling_layer=False)
        self.cls = BertPreTrainingHeads(self.config, nsp=False)
        self.init_weights()
        self.post_init()  # the MLM decoder is the word embedding matrix (config.tie_word_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, masked_only=False, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        """With labels and masked_only=True the logits are computed at the labelled positions only:
        masked_logits (N, V) and masked_positions (B, T) are set, logits stays None (see mlm_fields)."""
        output_attentions, output_hidden_states, return_dict = self.config.output_switches(
            output_attentions, output_hidden_states, return_dict)  # the config's, unless given
        masked = labels != IGNORE_INDEX if masked_only and labels is not None else None
        positions = None
        if masked is not None and not (output_attentions or output_hidden_states):
            positions, labels = sparse_labels(labels, input_ids, inputs_embeds, self.config.vocab_size)
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                        positions=positions, return_dict=True)
        logits, loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels, masked is not None)
        return model_output(ModelOutput(loss=loss, **mlm_fields(logits, masked), hidden_states=out.hidden_states,
                                        attentions=out.attentions), return_dict)

    def get_loss(self, labels, **inputs):
        return self(labels=labels, masked_only=True, return_dict=True, **inputs).loss

    def get_perplexity(self, tokenizer, text, batch_size=64):
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


class BertForNextSentencePrediction(BertPreTrainedModel):
    hf_architecture = "BertForNextSentencePrediction"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config)
        self.cls = BertPreTrainingHeads(self.config, mlm=False)
        self.init_weights()
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        output_attentions, output_hidden_states, return_dict = self.config.output_switches(
            output_attentions, output_hidden_states, return_dict)  # the config's, unless given
        out = encode_for_pooler(self.bert, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                                output_attentions, output_hidden_states)
        logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        loss = None
        if labels is not None:
            check_labels("labels (0 = IsNext, 1 = NotNext)", labels, logits.shape[:1], 2)
            loss = token_loss(logits, labels)
        return model_output(ModelOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                        attentions=out.attentions), return_dict)

    def get_loss(self, labels, **inputs):
        """Cross-entropy of the (B,) labels: 0 = B follows A, 1 = B is random."""
        return self(labels=labels, return_dict=True, **inputs).loss

    @torch.no_grad()
    def predict_proba(self, **inputs):
        """(B, 2) probabilities: column 0 "B follows A", column 1 "B is random"."""
        return self(**inputs, return_dict=True).logits.softmax(-1)

    def predict_proba_from_text(self, tokenizer, text_a, text_b):
        return self.predict_proba(**encode_text(tokenizer, text_a, text_b, self.device))


class BertForPreTraining(BertPreTrainedModel):
    """BERT's pretraining: masked LM on the tokens and next sentence prediction on [CLS], losses added."""
    hf_architecture = "BertForPreTraining"
    _tied_weights_keys = TIED_DECODER

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config)
        self.cls = BertPreTrainingHeads(self.config)
        self.init_weights()
        self.post_init()  # the MLM decoder is the word embedding matrix (config.tie_word_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, next_sentence_label=None, masked_only=False,
                output_attentions=None, output_hidden_states=None, return_dict=None):
        """With labels and masked_only=True the MLM logits are computed at the labelled positions only:
        masked_logits (N, V) and masked_positions (B, T) are set, prediction_logits stays None."""
        output_attentions, output_hidden_states, return_dict = self.config.output_switches(
            output_attentions, output_hidden_states, return_dict)  # the config's, unless given
        masked = labels != IGNORE_INDEX if masked_only and labels is not None else None
        positions = None  # with masked_only, the last layer computes [CLS] and the masked positions only
        if masked is not None and not (output_attentions or output_hidden_states):
            positions, labels = sparse_labels(labels, input_ids, inputs_embeds, self.config.vocab_size)
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                        positions=positions, return_dict=True)
        mlm_logits, mlm_loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels, masked is not None)
        nsp_logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        nsp_loss = None
        if next_sentence_label is not None:
            check_labels("next_sentence_label (0 = IsNext, 1 = NotNext)", next_sentence_label,
                         nsp_logits.shape[:1], 2)
            nsp_loss = token_loss(nsp_logits, next_sentence_label)
        parts = [x for x in (mlm_loss, nsp_loss) if x is not None]
        return model_output(ModelOutput(loss=sum(parts) if parts else None,
                                        **mlm_fields(mlm_logits, masked, "prediction_logits"),
                                        seq_relationship_logits=nsp_logits, mlm_loss=mlm_loss, nsp_loss=nsp_loss,
                                        hidden_states=out.hidden_states, attentions=out.attentions), return_dict)


class BertForSequenceClassification(BertPreTrainedModel):
    hf_architecture = "BertForSequenceClassification"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config)
        config = self.config
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = nn.Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        output_attentions, output_hidden_states, return_dict = self.config.output_switches(
            output_attentions, output_hidden_states, return_dict)  # the config's, unless given
        out = encode_for_pooler(self.bert, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                                output_attentions, output_hidden_states)
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = classification_loss(logits, labels, self.config) if labels is not None else None
        return model_output(ModelOutput(loss=loss, logits=logits, hidden_states=out.hidden_states,
                                        attentions=out.attentions), return_dict)


def classification_loss(logits, labels, config):
    """The loss of (B, num_labels) logits for config.problem_type, or, when that is None, for the problem
    transformers infers: one output is regression (mean squared error), whole-number labels (B,) are one
    class per text (cross-entropy), float labels (B, num_labels) mark every class that applies
    (multi-label: a sigmoid and binary cross-entropy per class)."""
    problem = config.problem_type or ("regression" if config.num_labels == 1 else "multi_label_classification"
                                      if labels.is_floating_point() else "single_label_classification")
    if problem == "regression":
        if config.num_labels == 1:
            return F.mse_loss(logits.squeeze(-1), labels.reshape(len(logits)).to(logits.dtype))
        return F.mse_loss(logits, labels.to(logits.dtype))
    if problem == "multi_label_classification":
        if labels.shape != logits.shape:
            raise ValueError(f"multi-label labels must be (batch, num_labels) = {tuple(logits.shape)}, a 1 for every "
                             f"class that applies; got {tuple(labels.shape)}")
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))
    if labels.dim() == 2 and labels.shape == logits.shape:
        raise ValueError(f"labels of shape {tuple(labels.shape)}, one column per class, are multi-label targets: "
                         "give them as floats (labels.float()), or set config.problem_type="
                         "'multi_label_classification'; single-label classification takes one class id per text")
    check_labels("labels", labels, logits.shape[:1], config.num_labels)
    return token_loss(logits, labels)


class BertForCausalLM(BertPreTrainedModel):
    """BERT as a left-to-right language model (transformers' BertLMHeadModel).

    Attention is always causal, whatever the config says: a bidirectional mask would let position t
    read token t+1, the very token it is asked to predict. Loading an MLM checkpoint here is how a
    decoder is warm-started from BERT; with config.add_cross_attention it can also read an encoder.
    """
    hf_architecture = "BertLMHeadModel"
    _tied_weights_keys = TIED_DECODER

    def __init__(self, config):
        super().__init__(decoder_config(config))
        self.bert = BertModel(self.config, add_pooling_layer=False)
        self.cls = BertPreTrainingHeads(self.config, nsp=False)
        self.init_weights()
        self.post_init()  # the MLM decoder is the word embedding matrix (config.tie_word_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None, labels=None,
                past_key_values=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, shift_labels=None):
        """labels = input_ids: the model shifts them, and position t is scored on token t+1. shift_labels,
        as in transformers, is a (B, T) tensor of labels already shifted (position t scored on
        shift_labels[:, t]) used instead; not to be confused with the True/False switch of get_loss."""
        output_attentions, output_hidden_states, return_dict = self.config.output_switches(
            output_attentions, output_hidden_states, return_dict)  # the config's, unless given
        if shift_labels is not None:
            shape = input_ids.shape if input_ids is not None else inputs_embeds.shape[:2]
            check_labels("shift_labels", shift_labels, shape, self.config.vocab_size)
            use_cache = False
        elif labels is not None:
            shape = input_ids.shape if input_ids is not None else inputs_embeds.shape[:2]
            check_labels("labels", labels, shape, self.config.vocab_size)
            if labels.shape[1] < 2:
                raise ValueError("next-token prediction needs sequences of at least 2 tokens: with 1 token "
                                 "there is no next token to learn")
            if input_ids is not None:
                verdict = check_causal_labels(input_ids, labels)
                if verdict.shifted:
                    warnings.warn(verdict.message, stacklevel=2)
            use_cache = False
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        encoder_hidden_states, encoder_attention_mask, past_key_values, use_cache,
                        output_attentions, output_hidden_states, return_dict=True)
        logits = self.cls.predictions(out.last_hidden_state)  # (B, T, V)
        loss = None
        if shift_labels is not None:
            loss = token_loss(logits, shift_labels)  # already shifted: position t against shift_labels[:, t]
        elif labels is not None:
            loss = token_loss(logits, labels, shift=True)
        return model_output(ModelOutput(loss=loss, logits=logits, past_key_values=out.past_key_values,
                                        hidden_states=out.hidden_states, attentions=out.attentions,
                                        cross_attentions=out.cross_attentions), return_dict)

    # ---- convenience methods: losses and predictions without writing the shift yourself ----
    def get_loss(self, labels, *, shift_labels=True, ignore_index=IGNORE_INDEX, reduction="mean", **inputs):
        labels = as_tensor("labels", labels, self.device)
        return token_loss(self(**inputs, return_dict=True).logits, labels, shift_labels, ignore_index, reduction)

    @torch.no_grad()
    def get_perplexity(self, labels, *, shift_labels=True, ignore_index=IGNORE_INDEX, **inputs):
        labels = as_tensor("labels", labels, self.device)
        scored = label_rules.shift_labels(labels, ignore_index) if shift_labels else labels
        if not (scored != ignore_index).any():
            return torch.tensor(float("nan"))  # nothing to score: not the 1.0 of a perfect model
        return self.get_loss(labels, shift_labels=shift_labels, ignore_index=ignore_index, **inputs).exp()

    @torch.no_grad()
    def get_accuracy(self, labels, *, shift_labels=True, ignore_index=IGNORE_INDEX, **inputs):
        """The share of scored positions whose argmax is the target (a 0-dim tensor); positions whose
        target is ignore_index leave both the count and the total."""
        labels = as_tensor("labels", labels, self.device)
        predictions = self.predict_token_ids(**inputs)  # (B, T)
        if shift_labels:
            labels = label_rules.shift_labels(labels, ignore_index)  # position t is scored on token t+1
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

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None,
                                      token_type_ids=None, position_ids=None, **kwargs):
        """The forward's inputs at one decoding step: everything so far at the first step, then (with
        past_key_values) only the newest token; positions counted from each row's first real token
        unless given. A prompt given as vectors (inputs_embeds) comes first, then the embeddings of the
        new tokens (input_ids then hold the new tokens only)."""
        if inputs_embeds is not None:
            inputs = dict(inputs_embeds=torch.cat([inputs_embeds, self.get_input_embeddings()(input_ids)], dim=1))
        else:
            inputs = dict(input_ids=input_ids)
        inputs["token_type_ids"] = token_type_ids
        if position_ids is None and attention_mask is not None:
            position_ids = positions_from_mask(attention_mask)
        inputs["position_ids"] = position_ids
        if past_key_values is not None:  # the cache holds all but the newest token
            inputs = {k: None if v is None else v[:, -1:] for k, v in inputs.items()}
        return dict(inputs, attention_mask=attention_mask, past_key_values=past_key_values, **kwargs)

    def generate(self, inputs=None, generation_config=None, **kwargs):
        """Continue each prompt, as transformers' generate does: greedy by default, sampled with
        do_sample=True (temperature, top_k, top_p), or by beam search with num_beams=k (length_penalty,
        early_stopping); max_new_tokens (20 by default) or max_length (prompt included), min_new_tokens,
        repetition_penalty, bad_words_ids, num_return_sequences (the copies of a prompt come one after
        the other), eos_token_id / pad_token_id, return_dict_in_generate with output_scores and the
        other output_* switches, and a GenerationConfig (default: self.generation_config). The prompt
        is input_ids, or inputs_embeds (then the output holds only the new tokens). Prompts of different
        lengths go in padded on the left with their attention_mask; positions count from each prompt's
        first real token. generator= (a torch.Generator) makes sampling repeatable without touching
        torch's global seed. The decoding itself is in generation.py."""
        return generation.generate(self, inputs, generation_config, **kwargs)


class BertLMHeadModel(BertForCausalLM):
    """BertForCausalLM under transformers' name for it, for code (and tools) that look for that name."""


__all__ = ["BertForMaskedLM", "BertLMHeadModel", "BertForNextSentencePrediction", "BertForPreTraining",
           "BertForSequenceClassification", "BertForCausalLM"]
