"""Task heads on BertModel: masked LM, next sentence prediction, both (pretraining), causal LM, classifier.

Class and parameter names follow transformers (`cls.predictions.decoder`, `cls.seq_relationship`), so a
checkpoint of one loads into the other. Conventions, as in Google's BERT and transformers:
  * a label of -100 is ignored by every loss; when every label is -100 there is nothing to learn: the
    loss is 0 (with a zero gradient), while a score of what was learned (accuracy, perplexity) is NaN,
    since nothing was measured;
  * next-sentence label 0 means "B follows A" (IsNext), 1 means "B is a random sentence" (NotNext);
  * BertForCausalLM takes labels = input_ids and shifts them itself: position t learns token t+1.

Every head runs the same pipeline: check its labels, encode (the encoder, reading only the rows the head
needs), score, loss (losses.py), finish (the ModelOutput). Its helper methods come from the mixin it
lists (helpers.py), generation from generation.GenerationMethods.
"""

import dataclasses
import warnings

import torch
import torch.nn.functional as F
from torch import nn

from .bert import BertModel, BertPreTrainedModel, Dropout, gather_rows
from .config import ACT2FN, as_minibert_config
from .generation import GenerationMethods
from .helpers import CausalLMHelpers, MaskedLMHelpers, PairHelpers
from .losses import (IGNORE_INDEX, check_causal_labels, check_labels, classification_loss, cross_entropy,
                     next_token_loss)
from .outputs import ModelOutput, model_output

# the weights that are another's (tie_weights), as transformers lists them: tied -> source
TIED_DECODER = {"cls.predictions.decoder.weight": "bert.embeddings.word_embeddings.weight"}


def encode(model, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
           output_hidden_states, rows=None, **decoding):
    """The encoder's output for a head of model. rows (B, K): the only positions the head reads ([CLS], the
    masked ones); last_hidden_state then holds those rows, (B, K, C), and the last layer computes only
    them unless every layer's outputs were asked for. decoding: the causal LM's cache and encoder."""
    output_attentions, output_hidden_states, _ = model.config.output_switches(
        output_attentions, output_hidden_states, None)  # the config's, unless given
    every_row = output_attentions or output_hidden_states
    out = model.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, **decoding,
                     output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                     positions=None if every_row else rows, return_dict=True)
    if rows is not None and every_row:  # every row was computed: keep the head's own
        out.last_hidden_state = gather_rows(out.last_hidden_state, rows)
    return out


def finish(model, out, return_dict, **fields):
    """A head's output: its fields, then the encoder's hidden states and attentions; a tuple where
    return_dict is False (the config's setting, unless given)."""
    return model_output(ModelOutput(**fields, hidden_states=out.hidden_states, attentions=out.attentions),
                        model.config.output_switches(None, None, return_dict)[2])


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


def batch_shape(input_ids, inputs_embeds):
    """(B, T) of the inputs; None without any (BertModel then names what is missing)."""
    source = input_ids if input_ids is not None else inputs_embeds
    return None if source is None else tuple(source.shape[:2])


def cls_rows(input_ids, inputs_embeds):
    """(B, 1) rows for a head that reads [CLS] alone (through the pooler)."""
    source = input_ids if input_ids is not None else inputs_embeds
    return None if source is None else torch.zeros(len(source), 1, dtype=torch.long, device=source.device)


def labelled_rows(labels):
    """(B, K) rows the pretraining heads read: [CLS] (position 0, for the pooler) then every labelled
    position, in order; shorter rows are filled with unlabelled positions. At 15% masking the encoder's
    last layer then computes about one position in six."""
    keep = labels != IGNORE_INDEX
    keep[:, 0] = True
    K = int(keep.sum(1).max())
    return keep.byte().argsort(dim=1, descending=True, stable=True)[:, :K]  # kept first, each in order


def masked_lm(head, hidden, labels, rows):
    """MLM logits, loss and the (B, T) mask of the scored positions. With rows (labelled_rows), hidden holds
    those rows and the head scores only the labelled ones: the same loss, (N, V) logits in reading order."""
    if labels is None:
        return head(hidden), None, None
    if rows is None:
        logits = head(hidden)  # (B, T, V)
        return logits, cross_entropy(logits, labels), None
    targets = labels.gather(1, rows)  # (B, K)
    scored = targets != IGNORE_INDEX
    logits = head(hidden[scored])  # (N, V)
    return logits, cross_entropy(logits, targets[scored]), labels != IGNORE_INDEX


def mlm_fields(logits, masked, name="logits"):
    """Where the MLM logits go in the output. (B, T, V) logits go to `name`; the (N, V) logits of
    masked_only go to masked_logits, beside masked_positions (B, T), True at the N labelled positions.
    Code written for one shape then finds None where it expects the other, instead of misreading it."""
    return {name: logits} if masked is None else dict(masked_logits=logits, masked_positions=masked)


class BertForMaskedLM(MaskedLMHelpers, BertPreTrainedModel):
    hf_architecture = "BertForMaskedLM"
    _tied_weights_keys = TIED_DECODER

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config, add_pooling_layer=False)
        self.cls = BertPreTrainingHeads(self.config, nsp=False)
        self.init_weights(self.cls)  # the head's layers: BertModel drew the encoder's
        self.post_init()  # the MLM decoder is the word embedding matrix (config.tie_word_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, masked_only=False, output_attentions=None,
                output_hidden_states=None, return_dict=None):
        """With labels and masked_only=True the logits are computed at the labelled positions only:
        masked_logits (N, V) and masked_positions (B, T) are set, logits stays None (see mlm_fields)."""
        check_labels("labels", labels, batch_shape(input_ids, inputs_embeds), self.config.vocab_size)
        rows = labelled_rows(labels) if masked_only and labels is not None else None
        out = encode(self, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                     output_hidden_states, rows)
        logits, loss, masked = masked_lm(self.cls.predictions, out.last_hidden_state, labels, rows)
        return finish(self, out, return_dict, loss=loss, **mlm_fields(logits, masked))


class BertForNextSentencePrediction(PairHelpers, BertPreTrainedModel):
    hf_architecture = "BertForNextSentencePrediction"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config)
        self.cls = BertPreTrainingHeads(self.config, mlm=False)
        self.init_weights(self.cls)  # the head's layers: BertModel drew the encoder's
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        shape = batch_shape(input_ids, inputs_embeds)
        check_labels("labels (0 = IsNext, 1 = NotNext)", labels, shape and shape[:1], 2)
        out = encode(self, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                     output_hidden_states, cls_rows(input_ids, inputs_embeds))
        logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        return finish(self, out, return_dict, loss=None if labels is None else cross_entropy(logits, labels),
                      logits=logits)


class BertForPreTraining(BertPreTrainedModel):
    """BERT's pretraining: masked LM on the tokens and next sentence prediction on [CLS], losses added."""
    hf_architecture = "BertForPreTraining"
    _tied_weights_keys = TIED_DECODER

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config)
        self.cls = BertPreTrainingHeads(self.config)
        self.init_weights(self.cls)  # the head's layers: BertModel drew the encoder's
        self.post_init()  # the MLM decoder is the word embedding matrix (config.tie_word_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, next_sentence_label=None, masked_only=False,
                output_attentions=None, output_hidden_states=None, return_dict=None):
        """With labels and masked_only=True the MLM logits are computed at the labelled positions only:
        masked_logits (N, V) and masked_positions (B, T) are set, prediction_logits stays None."""
        shape = batch_shape(input_ids, inputs_embeds)
        check_labels("labels", labels, shape, self.config.vocab_size)
        check_labels("next_sentence_label (0 = IsNext, 1 = NotNext)", next_sentence_label, shape and shape[:1], 2)
        rows = labelled_rows(labels) if masked_only and labels is not None else None
        out = encode(self, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                     output_hidden_states, rows)
        mlm_logits, mlm_loss, masked = masked_lm(self.cls.predictions, out.last_hidden_state, labels, rows)
        nsp_logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        nsp_loss = None if next_sentence_label is None else cross_entropy(nsp_logits, next_sentence_label)
        parts = [x for x in (mlm_loss, nsp_loss) if x is not None]
        return finish(self, out, return_dict, loss=sum(parts) if parts else None,
                      **mlm_fields(mlm_logits, masked, "prediction_logits"), seq_relationship_logits=nsp_logits,
                      mlm_loss=mlm_loss, nsp_loss=nsp_loss)


class BertForSequenceClassification(BertPreTrainedModel):
    hf_architecture = "BertForSequenceClassification"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(self.config)
        config = self.config
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights(self.classifier)  # the head's layer: BertModel drew the encoder's
        self.post_init()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=None, output_hidden_states=None,
                return_dict=None):
        out = encode(self, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                     output_hidden_states, cls_rows(input_ids, inputs_embeds))
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = None if labels is None else classification_loss(logits, labels, self.config)  # checks the labels
        return finish(self, out, return_dict, loss=loss, logits=logits)


class BertForCausalLM(CausalLMHelpers, GenerationMethods, BertPreTrainedModel):
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
        self.init_weights(self.cls)  # the head's layers: BertModel drew the encoder's
        self.post_init()  # the MLM decoder is the word embedding matrix (config.tie_word_embeddings)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None, labels=None,
                past_key_values=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                return_dict=None, shift_labels=None):
        """labels = input_ids: the model shifts them, and position t is scored on token t+1. shift_labels,
        as in transformers, is a (B, T) tensor of labels already shifted (position t scored on
        shift_labels[:, t]) used instead; not to be confused with the True/False switch of get_loss."""
        shape = batch_shape(input_ids, inputs_embeds)
        if shift_labels is not None:  # already shifted: position t against shift_labels[:, t]
            check_labels("shift_labels", shift_labels, shape, self.config.vocab_size)
        elif labels is not None:
            check_labels("labels", labels, shape, self.config.vocab_size)
            if labels.shape[1] < 2:
                raise ValueError("next-token prediction needs sequences of at least 2 tokens: with 1 token "
                                 "there is no next token to learn")
            # labels shifted twice: checked where they can be read without waiting for an accelerator
            readable = input_ids is not None and labels.device.type == "cpu"
            verdict = check_causal_labels(input_ids, labels) if readable else None
            if verdict is not None and verdict.shifted:
                warnings.warn(verdict.message, stacklevel=2)
        if labels is not None or shift_labels is not None:
            use_cache = False  # training: nothing to decode later
        out = encode(self, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, output_attentions,
                     output_hidden_states, encoder_hidden_states=encoder_hidden_states,
                     encoder_attention_mask=encoder_attention_mask, past_key_values=past_key_values,
                     use_cache=use_cache)
        logits = self.cls.predictions(out.last_hidden_state)  # (B, T, V)
        loss = None
        if shift_labels is not None:
            loss = cross_entropy(logits, shift_labels)
        elif labels is not None:
            loss = next_token_loss(logits, labels)  # position t scored on token t+1
        return finish(self, out, return_dict, loss=loss, logits=logits, past_key_values=out.past_key_values,
                      cross_attentions=out.cross_attentions)


def decoder_config(config):
    """A copy of config set up as a decoder (BertForCausalLM always attends causally)."""
    return dataclasses.replace(as_minibert_config(config), is_decoder=True)


class BertLMHeadModel(BertForCausalLM):
    """BertForCausalLM under transformers' name for it, for code (and tools) that look for that name."""


__all__ = ["BertForMaskedLM", "BertLMHeadModel", "BertForNextSentencePrediction", "BertForPreTraining",
           "BertForSequenceClassification", "BertForCausalLM"]
