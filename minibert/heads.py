"""Task heads on BertModel: masked LM, next sentence prediction, both (pretraining), causal LM, classifier.

Class and parameter names follow transformers (`cls.predictions.decoder`, `cls.seq_relationship`), so a
checkpoint of one loads into the other. Conventions, as in Google's BERT and transformers:
  * a label of -100 is ignored by every loss;
  * next-sentence label 0 means "B follows A" (IsNext), 1 means "B is a random sentence" (NotNext);
  * BertForCausalLM takes labels = input_ids and shifts them itself: position t learns token t+1.
"""

import warnings

import torch
import torch.nn.functional as F
from torch import nn

from .labels import check_causal_labels
from .model import ACT2FN, BertModel, BertPreTrainedModel, Dropout, ModelOutput, decoder_config

IGNORE_INDEX = -100


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


def check_labels(name, labels, shape, num_classes):
    if tuple(labels.shape) != tuple(shape):
        raise ValueError(f"{name} has shape {tuple(labels.shape)} but should have shape {tuple(shape)}")
    if labels.dtype.is_floating_point:
        raise TypeError(f"{name} must hold integer class ids, got dtype {labels.dtype}")
    bad = labels[(labels != IGNORE_INDEX) & ((labels < 0) | (labels >= num_classes))]
    if bad.numel():
        raise ValueError(f"{name} contains {int(bad[0])}: use 0..{num_classes - 1}, or -100 to ignore a position")


def token_loss(logits, labels, shift=False, ignore_index=IGNORE_INDEX, reduction="mean"):
    """Cross-entropy of (B, T, V) logits against (B, T) labels; with shift, position t is scored on t+1."""
    if shift:  # move the labels, not the (much larger) logits; the last position has nothing to predict
        labels = F.pad(labels[:, 1:], (0, 1), value=ignore_index)  # (B, T)
    if reduction == "mean" and not (labels != ignore_index).any():
        return logits.sum() * 0.0  # nothing to predict: zero, not the NaN of an empty mean
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]).float(), labels.reshape(-1),
                           ignore_index=ignore_index, reduction=reduction or "none")
    if reduction in (None, "none"):
        loss = loss.view(labels.shape)
        return loss[:, :-1] if shift else loss  # (B, T-1) with shift
    return loss


def token_accuracy(logits, labels, shift=False, ignore_index=IGNORE_INDEX):
    if shift:
        logits, labels = logits[:, :-1], labels[:, 1:]
    keep = labels != ignore_index
    return (logits.argmax(-1)[keep] == labels[keep]).float().mean()


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


def cls_position(input_ids, inputs_embeds):
    """(B, 1) zeros: a head on the pooler reads only [CLS], so the last layer computes only that."""
    source = input_ids if input_ids is not None else inputs_embeds
    return None if source is None else torch.zeros(len(source), 1, dtype=torch.long, device=source.device)


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


def encode_text(tokenizer, text_a, text_b=None, device=None, drop_final_sep=False):
    """Tokenize raw text as BERT does ([CLS] A [SEP] (B [SEP])). For next-token prediction the final
    [SEP] must go, or the model would predict what follows the end marker: it becomes padding."""
    enc = tokenizer(text_a, text_b, return_tensors="pt", padding=True, return_token_type_ids=True)
    enc = {k: v.to(device) for k, v in enc.items() if k in ("input_ids", "attention_mask", "token_type_ids")}
    if drop_final_sep:
        last = enc["attention_mask"].sum(1) - 1  # index of the final [SEP] in each row
        rows = torch.arange(len(last), device=last.device)
        enc["input_ids"][rows, last] = tokenizer.pad_token_id
        enc["attention_mask"][rows, last] = 0
    return enc


class BertForMaskedLM(BertPreTrainedModel):
    hf_architecture = "BertForMaskedLM"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config, add_pooling_layer=False)
        self.cls = BertPreTrainingHeads(config, nsp=False)
        self.init_weights()
        tie_decoder(self)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, masked_only=False, output_attentions=False,
                output_hidden_states=False):
        positions = None
        if masked_only and labels is not None and not (output_attentions or output_hidden_states):
            positions, labels = sparse_labels(labels, input_ids, inputs_embeds, self.config.vocab_size)
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                        positions=positions)
        logits, loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels, masked_only)
        return ModelOutput(loss=loss, logits=logits, hidden_states=out.hidden_states, attentions=out.attentions)

    def get_loss(self, labels, **inputs):
        return self(labels=labels, masked_only=True, **inputs).loss

    @torch.no_grad()
    def get_accuracy(self, labels, **inputs):
        return token_accuracy(self(**inputs).logits, labels)

    @torch.no_grad()
    def predict_token_ids(self, **inputs):
        return self(**inputs).logits.argmax(-1)  # (B, T)

    @torch.no_grad()
    def fill_mask(self, tokenizer, text, top_k=5):
        """For each [MASK] in text, the top_k (token, probability) pairs, most likely first."""
        enc = encode_text(tokenizer, text, device=self.device)
        positions = (enc["input_ids"][0] == tokenizer.mask_token_id).nonzero().flatten()
        if not len(positions):
            raise ValueError(f"fill_mask needs at least one {tokenizer.mask_token} in the text: {text!r}")
        probs = self(**enc).logits[0, positions].softmax(-1)  # (M, V)
        top = probs.topk(top_k, dim=-1)
        return [[(tokenizer.convert_ids_to_tokens(int(i)), float(p)) for p, i in zip(ps, ids)]
                for ps, ids in zip(top.values, top.indices)]


class BertForNextSentencePrediction(BertPreTrainedModel):
    hf_architecture = "BertForNextSentencePrediction"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config)
        self.cls = BertPreTrainingHeads(config, mlm=False)
        self.init_weights()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=False, output_hidden_states=False):
        cls = None if output_attentions or output_hidden_states else cls_position(input_ids, inputs_embeds)
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                        positions=cls)  # the head reads only [CLS]: so does the last layer
        logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        loss = None
        if labels is not None:
            check_labels("labels (0 = IsNext, 1 = NotNext)", labels, logits.shape[:1], 2)
            loss = F.cross_entropy(logits, labels)
        return ModelOutput(loss=loss, logits=logits, hidden_states=out.hidden_states, attentions=out.attentions)

    @torch.no_grad()
    def predict_proba(self, **inputs):
        """(B, 2) probabilities: column 0 "B follows A", column 1 "B is random"."""
        return self(**inputs).logits.softmax(-1)

    def predict_proba_from_text(self, tokenizer, text_a, text_b):
        return self.predict_proba(**encode_text(tokenizer, text_a, text_b, self.device))


class BertForPreTraining(BertPreTrainedModel):
    """BERT's pretraining: masked LM on the tokens and next sentence prediction on [CLS], losses added."""
    hf_architecture = "BertForPreTraining"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config)
        self.cls = BertPreTrainingHeads(config)
        self.init_weights()
        tie_decoder(self)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, next_sentence_label=None, masked_only=False,
                output_attentions=False, output_hidden_states=False):
        positions = None  # with masked_only, the last layer computes [CLS] and the masked positions only
        if masked_only and labels is not None and not (output_attentions or output_hidden_states):
            positions, labels = sparse_labels(labels, input_ids, inputs_embeds, self.config.vocab_size)
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                        positions=positions)
        mlm_logits, mlm_loss = masked_lm(self.cls.predictions, out.last_hidden_state, labels, masked_only)
        nsp_logits = self.cls.seq_relationship(out.pooler_output)  # (B, 2)
        nsp_loss = None
        if next_sentence_label is not None:
            check_labels("next_sentence_label (0 = IsNext, 1 = NotNext)", next_sentence_label,
                         nsp_logits.shape[:1], 2)
            nsp_loss = F.cross_entropy(nsp_logits, next_sentence_label)
        parts = [x for x in (mlm_loss, nsp_loss) if x is not None]
        return ModelOutput(loss=sum(parts) if parts else None, prediction_logits=mlm_logits,
                           seq_relationship_logits=nsp_logits, mlm_loss=mlm_loss, nsp_loss=nsp_loss,
                           hidden_states=out.hidden_states, attentions=out.attentions)


class BertForSequenceClassification(BertPreTrainedModel):
    hf_architecture = "BertForSequenceClassification"

    def __init__(self, config):
        super().__init__(config)
        self.bert = BertModel(config)
        p = config.classifier_dropout if config.classifier_dropout is not None else config.hidden_dropout_prob
        self.dropout = Dropout(p)
        self.classifier = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, labels=None, output_attentions=False, output_hidden_states=False):
        cls = None if output_attentions or output_hidden_states else cls_position(input_ids, inputs_embeds)
        out = self.bert(input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds,
                        output_attentions=output_attentions, output_hidden_states=output_hidden_states,
                        positions=cls)  # the head reads only [CLS]: so does the last layer
        logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
        loss = None
        if labels is not None and self.config.num_labels == 1:  # one output: regression
            loss = F.mse_loss(logits.squeeze(-1), labels.float())
        elif labels is not None:
            check_labels("labels", labels, logits.shape[:1], self.config.num_labels)
            loss = F.cross_entropy(logits, labels)
        return ModelOutput(loss=loss, logits=logits, hidden_states=out.hidden_states, attentions=out.attentions)


class BertForCausalLM(BertPreTrainedModel):
    """BERT as a left-to-right language model (transformers' BertLMHeadModel).

    Attention is always causal, whatever the config says: a bidirectional mask would let position t
    read token t+1, the very token it is asked to predict. Loading an MLM checkpoint here is how a
    decoder is warm-started from BERT; with config.add_cross_attention it can also read an encoder.
    """
    hf_architecture = "BertLMHeadModel"

    def __init__(self, config):
        super().__init__(decoder_config(config))
        self.bert = BertModel(self.config, add_pooling_layer=False)
        self.cls = BertPreTrainingHeads(self.config, nsp=False)
        self.init_weights()
        tie_decoder(self)

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None, labels=None,
                past_key_values=None, use_cache=None, output_attentions=False, output_hidden_states=False):
        if labels is not None:
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
                        output_attentions, output_hidden_states)
        logits = self.cls.predictions(out.last_hidden_state)  # (B, T, V)
        loss = token_loss(logits, labels, shift=True) if labels is not None else None
        return ModelOutput(loss=loss, logits=logits, past_key_values=out.past_key_values,
                           hidden_states=out.hidden_states, attentions=out.attentions,
                           cross_attentions=out.cross_attentions)

    # ---- convenience methods: losses and predictions without writing the shift yourself ----
    def get_loss(self, labels, *, shift_labels=True, ignore_index=IGNORE_INDEX, reduction="mean", **inputs):
        return token_loss(self(**inputs).logits, labels, shift_labels, ignore_index, reduction)

    @torch.no_grad()
    def get_accuracy(self, labels, *, shift_labels=True, ignore_index=IGNORE_INDEX, **inputs):
        return token_accuracy(self(**inputs).logits, labels, shift_labels, ignore_index)

    @torch.no_grad()
    def get_perplexity(self, labels, *, shift_labels=True, ignore_index=IGNORE_INDEX, **inputs):
        return self.get_loss(labels, shift_labels=shift_labels, ignore_index=ignore_index, **inputs).exp()

    @torch.no_grad()
    def predict_token_ids(self, **inputs):
        return self(**inputs).logits.argmax(-1)  # (B, T): the guess for the token after each position

    @torch.no_grad()
    def get_next_token_logits(self, **inputs):
        logits = self(**inputs).logits  # (B, T, V)
        mask = inputs.get("attention_mask")
        last = mask.sum(1) - 1 if mask is not None else torch.full((len(logits),), logits.shape[1] - 1)
        return logits[torch.arange(len(logits)), last.to(logits.device)]  # (B, V) at each last real token

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

    @torch.no_grad()
    def generate(self, input_ids, max_new_tokens=20, do_sample=False, temperature=1.0, top_k=None, top_p=None,
                 eos_token_id=None, use_cache=True, generator=None, encoder_hidden_states=None,
                 encoder_attention_mask=None):
        """Append max_new_tokens tokens to each prompt (all prompts of a batch have the same length).
        Greedy by default; do_sample draws from the softmax with temperature, top_k and top_p. After a
        row produces eos_token_id it is filled with padding, as in transformers."""
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, seq_len), got {tuple(input_ids.shape)}")
        total = input_ids.shape[1] + max_new_tokens
        if total > self.config.max_position_embeddings:
            raise ValueError(f"prompt + max_new_tokens = {total} tokens, more than max_position_embeddings="
                             f"{self.config.max_position_embeddings}")
        ids, past = input_ids, None
        done = torch.zeros(len(ids), dtype=torch.bool, device=ids.device)
        for _ in range(max_new_tokens):
            out = self(ids[:, -1:] if past is not None else ids, past_key_values=past, use_cache=use_cache,
                       encoder_hidden_states=encoder_hidden_states, encoder_attention_mask=encoder_attention_mask)
            past = out.past_key_values if use_cache else None
            logits = out.logits[:, -1]  # (B, V)
            if do_sample:
                next_id = sample_next_token(logits, temperature, top_k, top_p, generator)
            else:
                next_id = logits.argmax(-1)
            if eos_token_id is not None:
                next_id = next_id.masked_fill(done, self.config.pad_token_id)
                done |= next_id == eos_token_id
            ids = torch.cat([ids, next_id[:, None]], dim=1)
            if done.all():
                break
        return ids


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    """Draw one token per row of (B, V) logits. temperature < 1 sharpens, > 1 flattens; top_k keeps
    the k most likely tokens; top_p keeps the smallest set whose probability reaches p."""
    if temperature <= 0:
        raise ValueError(f"temperature must be > 0, got {temperature}; use do_sample=False for greedy decoding")
    if top_p is not None and not 0 < top_p <= 1:
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
    logits = logits / temperature
    if top_k is not None:
        kth = logits.topk(min(top_k, logits.shape[-1]), dim=-1).values[:, -1:]  # (B, 1)
        logits = logits.masked_fill(logits < kth, float("-inf"))
    if top_p is not None and top_p < 1:
        sorted_logits, order = logits.sort(dim=-1, descending=True)
        probs = sorted_logits.softmax(-1)
        outside = probs.cumsum(-1) - probs >= top_p  # tokens after the nucleus already reached top_p
        logits = logits.scatter(-1, order, sorted_logits.masked_fill(outside, float("-inf")))
    return torch.multinomial(logits.softmax(-1), 1, generator=generator).squeeze(-1)


def tie_decoder(model):
    """The MLM decoder reuses the word embedding matrix (config.tie_word_embeddings, as in BERT)."""
    if model.config.tie_word_embeddings:
        model.cls.predictions.decoder.weight = model.bert.embeddings.word_embeddings.weight


__all__ = ["BertForMaskedLM", "BertForNextSentencePrediction", "BertForPreTraining",
           "BertForSequenceClassification", "BertForCausalLM", "sample_next_token"]
