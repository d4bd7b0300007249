"""The BERT encoder, one class per box of the paper's figure, with transformers' module names.

Embeddings -> N x BertLayer (attention, add & norm, feed-forward, add & norm) -> pooler.
The same blocks run as a decoder (causal self-attention, optional cross-attention, a key/value
cache) for BertForCausalLM. Task heads live in heads.py; checkpoint files in hub.py.

Left out on purpose: TensorFlow loading, head pruning.
"""

import dataclasses
import inspect
import math
from functools import partial

import torch
import torch.utils.checkpoint
from torch import nn

from .checks import ID_ARGUMENTS, as_tensor, check_inputs
from .compat import TransformersHabits, as_minibert_config
from .config import ACT2FN
from .fast import Dropout, fused_attention, gather_positions, use_fused_attention  # speed tricks, see fast.py
from .outputs import ModelOutput, model_output


class BertEmbeddings(nn.Module):
    """token + position + segment embeddings, then LayerNorm and dropout."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size, padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings, config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None, inputs_embeds=None, past_length=0):
        x = self.word_embeddings(input_ids) if inputs_embeds is None else inputs_embeds  # (B, T, C)
        T = x.shape[1]
        if position_ids is None:
            position_ids = torch.arange(past_length, past_length + T, device=x.device)[None]  # (1, T)
        x = x + self.position_embeddings(position_ids)
        if token_type_ids is None:
            x = x + self.token_type_embeddings.weight[0]  # every token in segment 0
        else:
            x = x + self.token_type_embeddings(token_type_ids)
        return self.dropout(self.LayerNorm(x))


def attention(q, k, v, bias=None, is_causal=False, dropout=None):
    """Scaled dot-product attention, written out: each query's weights over the keys are
    softmax(q k^T / sqrt(d) + bias), and its output is the weighted sum of the values.
    q (B, nh, T, hs), k and v (B, nh, S, hs) -> output (B, nh, T, hs) and weights (B, nh, T, S)."""
    scores = (q @ k.transpose(-2, -1)) / math.sqrt(q.shape[-1])  # (B, nh, T, S)
    if bias is not None:
        scores = scores + bias.to(q.dtype)  # -inf-like where a query may not look (padding, the future)
    if is_causal:
        T, S = scores.shape[-2:]
        scores = scores.masked_fill(torch.ones(T, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    weights = scores.softmax(dim=-1)  # each row sums to 1
    return (weights if dropout is None else dropout(weights)) @ v, weights


class MultiHeadAttention(nn.Module):
    """attention() over num_attention_heads heads. Queries come from x; keys and values from `context`:
    x itself (self-attention), the encoder's output (a decoder's cross-attention), or the whole sequence
    when x holds only some of its positions (see BertEncoder). `cache` holds the keys and values of
    earlier decoding steps (or the encoder's, which do not change)."""

    def __init__(self, config, is_cross_attention=False):
        super().__init__()
        self.n_head = config.num_attention_heads
        self.head_size = config.hidden_size // config.num_attention_heads
        self.is_cross_attention = is_cross_attention
        self.query = nn.Linear(config.hidden_size, config.hidden_size)
        self.key = nn.Linear(config.hidden_size, config.hidden_size)
        self.value = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = Dropout(config.attention_probs_dropout_prob)
        self.config = config  # config.attn_implementation: "eager" written out, "sdpa" fused, None: the faster

    def split_heads(self, x):  # (B, T, C) -> (B, nh, T, hs)
        B, T, _ = x.shape
        return x.view(B, T, self.n_head, self.head_size).transpose(1, 2)

    def forward(self, x, context=None, bias=None, is_causal=False, cache=None, output_attentions=False,
                return_state=False):
        """x (B, T, C) -> (B, T, C); with return_state (as the layer asks), also the weights (B, nh, T, S),
        if output_attentions, and the keys and values, for the cache."""
        if self.is_cross_attention and cache is not None:
            k, v = cache  # the encoder's keys and values, computed at the first decoding step
        else:
            source = x if context is None else context
            k, v = self.split_heads(self.key(source)), self.split_heads(self.value(source))  # (B, nh, S, hs)
            if cache is not None:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        q = self.split_heads(self.query(x))  # (B, nh, T, hs)
        if use_fused_attention(self.config.attn_implementation, output_attentions, self.dropout, q):  # faster
            y, weights = fused_attention(q, k, v, bias, is_causal, self.dropout.p if self.training else 0.0), None
        else:
            y, weights = attention(q, k, v, bias, is_causal, self.dropout)
        B, _, T, _ = y.shape
        y = y.transpose(1, 2).reshape(B, T, -1)  # (B, T, C): heads side by side again
        if not return_state:
            return y
        return y, weights if output_attentions else None, (k, v)


class ResidualNorm(nn.Module):
    """dense -> dropout -> add the sub-layer's input -> LayerNorm ("Add & Norm" in the paper).

    transformers calls it BertSelfOutput after attention and BertOutput after the feed-forward layer.
    """

    def __init__(self, config, in_features):
        super().__init__()
        self.dense = nn.Linear(in_features, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = Dropout(config.hidden_dropout_prob)

    def forward(self, x, residual):
        return self.LayerNorm(self.dropout(self.dense(x)) + residual)


class BertAttention(nn.Module):
    def __init__(self, config, is_cross_attention=False):
        super().__init__()
        self.self = MultiHeadAttention(config, is_cross_attention)
        self.output = ResidualNorm(config, config.hidden_size)

    def forward(self, x, return_state=False, **kwargs):
        """x (B, T, C) -> attention, then Add & Norm; with return_state, also the weights and the keys and values."""
        y, weights, kv = self.self(x, return_state=True, **kwargs)
        y = self.output(y, x)
        return (y, weights, kv) if return_state else y


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.act(self.dense(x))


class BertLayer(nn.Module):
    """One transformer block: attention, (cross-attention), feed-forward; each followed by Add & Norm."""

    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        if config.add_cross_attention:
            self.crossattention = BertAttention(config, is_cross_attention=True)
        self.intermediate = BertIntermediate(config)
        self.output = ResidualNorm(config, config.intermediate_size)

    def forward(self, x, context=None, bias=None, is_causal=False, encoder_hidden_states=None, encoder_bias=None,
                cache=None, output_attentions=False, return_state=False):
        """x (B, T, C) -> (B, T, C). With return_state (what BertEncoder asks for), also the attention
        weights, the cross-attention weights and the keys and values of this layer.
        context: what self-attention reads, when x holds only some of its positions (see BertEncoder)."""
        self_cache, cross_cache = (cache[:2], cache[2:] or None) if cache is not None else (None, None)
        x, att, kv = self.attention(x, context=context, bias=bias, is_causal=is_causal, cache=self_cache,
                                    output_attentions=output_attentions, return_state=True)
        cross_att = None
        if hasattr(self, "crossattention") and (encoder_hidden_states is not None or cross_cache):
            x, cross_att, cross_kv = self.crossattention(x, context=encoder_hidden_states, bias=encoder_bias,
                                                         cache=cross_cache, output_attentions=output_attentions,
                                                         return_state=True)
            kv = kv + cross_kv  # (self k, self v, cross k, cross v): one cache entry per layer
        x = self.output(self.intermediate(x), x)  # feed-forward, Add & Norm
        return (x, att, cross_att, kv) if return_state else x


class BertEncoder(nn.Module):
    """The stack of layers. Returns the last hidden states and what each layer produced along the way."""

    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])
        self.checkpoint_every = 0  # n: recompute every n-th layer's activations backward (activation_checkpointing_enable)

    def forward(self, x, bias=None, is_causal=False, encoder_hidden_states=None, encoder_bias=None,
                past_key_values=None, output_attentions=False, positions=None):
        """positions (B, K): the rows the heads will read (the masked ones and [CLS]). The last layer then
        computes only those rows, their attention still reading the whole sequence (its context)."""
        hidden_states, attentions, cross_attentions, presents = (x,), (), (), ()
        for i, layer in enumerate(self.layer):
            context = None
            if positions is not None and i == len(self.layer) - 1:
                context, x = x, gather_positions(x, positions)  # (B, K, C) queries, (B, T, C) keys and values
            if self.training and self.checkpoint_every and i % self.checkpoint_every == 0:  # recomputed backward
                layer = partial(torch.utils.checkpoint.checkpoint, layer, use_reentrant=False)
            x, att, cross_att, kv = layer(
                x, context=context, bias=bias, is_causal=is_causal, encoder_hidden_states=encoder_hidden_states,
                encoder_bias=encoder_bias, cache=past_key_values[i] if past_key_values else None,
                output_attentions=output_attentions, return_state=True)
            hidden_states += (x,)
            attentions += (att,)
            cross_attentions += (cross_att,)
            presents += (kv,)
        return x, hidden_states, attentions, cross_attentions, presents


class BertPooler(nn.Module):
    """The sentence vector: the [CLS] position through dense + tanh (what the NSP head reads)."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        return torch.tanh(self.dense(hidden_states[:, 0]))  # (B, C)


def attention_bias(attention_mask, q_len, k_len, causal, dtype):
    """Additive attention bias, (B|1, 1, q_len, k_len): 0 where a query may look, a large negative
    number where it may not (padding, and for a decoder the future). None when nothing is hidden."""
    keep = None if attention_mask is None else attention_mask[:, None, None, :].bool()  # (B, 1, 1, S)
    if causal and q_len > 1:
        device = attention_mask.device if attention_mask is not None else None
        future = torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril(diagonal=k_len - q_len)
        keep = future if keep is None else keep & future
    if keep is None:
        return None
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, torch.finfo(dtype).min)


class BertPreTrainedModel(TransformersHabits, nn.Module):
    """Shared by every model: weight init and transformers-format checkpoints (and, from compat.py, the
    embedding methods of transformers' models)."""
    hf_architecture = None  # the transformers class that reads our checkpoints

    def __init__(self, config):
        super().__init__()
        self.config = as_minibert_config(config)  # a transformers BertConfig is read as config.json would be

    def init_weights(self):
        std = self.config.initializer_range
        for m in self.modules():
            if isinstance(m, nn.Linear):
                nn.init.normal_(m.weight, std=std)
                if m.bias is not None:
                    nn.init.zeros_(m.bias)
            elif isinstance(m, nn.Embedding):
                nn.init.normal_(m.weight, std=std)
                if m.padding_idx is not None:
                    nn.init.zeros_(m.weight[m.padding_idx])
            elif isinstance(m, nn.LayerNorm):
                nn.init.ones_(m.weight)
                nn.init.zeros_(m.bias)

    def __call__(self, *args, **kwargs):
        """Run forward as nn.Module does, after turning ids, masks and labels given as lists or numpy
        arrays into tensors on the model's device (a tensor is passed on as it is)."""
        arguments = inspect.signature(self.forward).bind(*args, **kwargs).arguments  # every argument by name
        for name in arguments:
            if name in ID_ARGUMENTS:
                arguments[name] = as_tensor(name, arguments[name], self.device)
        return super().__call__(**arguments)

    @property
    def device(self):
        return next(self.parameters()).device

    @property
    def dtype(self):
        return next(self.parameters()).dtype

    def num_parameters(self, only_trainable=False, exclude_embeddings=False):
        """The number of parameters, as transformers counts them: tied weights once, and without the
        embedding tables (word, position, segment) when exclude_embeddings is set."""
        embeddings = {id(m.weight) for m in self.modules() if isinstance(m, nn.Embedding)}
        return sum(p.numel() for p in self.parameters()  # parameters() yields a tied weight once
                   if (p.requires_grad or not only_trainable) and not (exclude_embeddings and id(p) in embeddings))

    @classmethod
    def from_pretrained(cls, pretrained_model_name_or_path, **options):
        """Load a transformers-format folder (config.json + model.safetensors or pytorch_model.bin).
        options: transformers' (dtype, output_loading_info, ignore_mismatched_sizes, attn_implementation)
        and any config field to override (num_labels=7, ...); see hub.load_pretrained."""
        from .hub import load_pretrained
        return load_pretrained(cls, pretrained_model_name_or_path, **options)

    def save_pretrained(self, path):
        """Write config.json + model.safetensors that transformers' matching class loads as is."""
        from .hub import save_pretrained
        save_pretrained(self, path)


class BertModel(BertPreTrainedModel):
    """The bare encoder (or decoder, with config.is_decoder): token ids in, one vector per token out."""
    hf_architecture = "BertModel"

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = BertEmbeddings(self.config)
        self.encoder = BertEncoder(self.config)
        self.pooler = BertPooler(self.config) if add_pooling_layer else None
        self.init_weights()

    def forward(self, input_ids=None, attention_mask=None, token_type_ids=None, position_ids=None,
                inputs_embeds=None, encoder_hidden_states=None, encoder_attention_mask=None,
                past_key_values=None, use_cache=None, output_attentions=None, output_hidden_states=None,
                positions=None, return_dict=None):
        """positions, (B, K) indices, is for heads that read only a few positions (the masked ones, [CLS]):
        the last layer then computes only those (their attention still reads every token) and
        last_hidden_state is (B, K, C). The pooler reads the first of them, which should be [CLS] (0)."""
        cfg = self.config
        output_attentions, output_hidden_states, return_dict = cfg.output_switches(
            output_attentions, output_hidden_states, return_dict)  # the config's, unless given
        past_length = past_key_values[0][0].shape[2] if past_key_values else 0
        check_inputs(cfg, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, past_length,
                     past_key_values, positions)  # a sentence for every mistake, see checks.py
        use_cache = cfg.is_decoder and (cfg.use_cache if use_cache is None else use_cache)

        x = self.embeddings(input_ids, token_type_ids, position_ids, inputs_embeds, past_length)  # (B, T, C)
        T = x.shape[1]
        if attention_mask is not None and bool(attention_mask.all()):
            attention_mask = None  # nothing is padded: let SDPA take its fastest path
        # a decoder without padding or cache can use SDPA's built-in causal mask
        is_causal = cfg.is_decoder and attention_mask is None and past_length == 0 and not output_attentions
        bias = None if is_causal else attention_bias(attention_mask, T, past_length + T, cfg.is_decoder, x.dtype)
        encoder_bias = None
        if encoder_attention_mask is not None:
            encoder_bias = attention_bias(encoder_attention_mask, T, encoder_attention_mask.shape[1], False, x.dtype)

        x, hidden_states, attentions, cross_attentions, presents = self.encoder(
            x, bias=bias, is_causal=is_causal, encoder_hidden_states=encoder_hidden_states, encoder_bias=encoder_bias,
            past_key_values=past_key_values, output_attentions=output_attentions, positions=positions)
        return model_output(ModelOutput(
            last_hidden_state=x,
            pooler_output=self.pooler(x) if self.pooler is not None else None,
            past_key_values=presents if use_cache else None,
            hidden_states=hidden_states if output_hidden_states else None,
            attentions=attentions if output_attentions else None,
            # with output_attentions, transformers returns cross_attentions, empty without an encoder to attend to
            cross_attentions=(cross_attentions if encoder_hidden_states is not None else ()) if output_attentions else None,
        ), return_dict)


def decoder_config(config):
    """A copy of config set up as a decoder (BertForCausalLM always attends causally)."""
    return dataclasses.replace(as_minibert_config(config), is_decoder=True)
