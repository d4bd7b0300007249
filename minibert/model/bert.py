"""BERT, one class per box of the paper's figure, with transformers' module names.

Embeddings -> N x BertLayer (attention, add & norm, feed-forward, add & norm) -> pooler.
The same blocks run as a decoder (causal self-attention, optional cross-attention, a key/value
cache) for BertForCausalLM.

One forward pass of a model with labels reads three files: heads.py (the task heads, which call
BertModel), this file (the encoder), losses.py (the losses and the label rules). Each module has one
entry point, its forward, and what it does is decided here, by its arguments, its config and
self.training. The speed tricks are named where they act:
    Dropout                 nn.Dropout with a cheaper random mask on the CPU (at the end of this file)
    writes_attention_out    which of two equal attention paths is the faster (beside attention())
    positions               the last layer computes only the rows a head reads (BertEncoder)

Left out on purpose: TensorFlow loading, head pruning.
"""

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
import torch.utils.checkpoint
from torch import nn

from .checks import check_inputs
from .compat import TransformersHabits
from .config import ACT2FN, as_minibert_config
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


WRITTEN_OUT_MAX_POSITIONS = 256  # in bf16 on a CPU, up to this many positions attention is written out


def writes_attention_out(config, training, device_type, bf16, keys):
    """Does attention take attention() above rather than PyTorch's fused kernel, which computes the same
    numbers? config.attn_implementation "eager" always, "sdpa" never; left to minibert (None), only where
    it is the faster path: training on a CPU with attention dropout (the fused kernel draws its mask
    slowly there), or in bf16 with up to 256 keys (the fused kernel's backward pass is the slower one
    there); benchmarks/attention.py times both."""
    if config.attn_implementation is not None:
        return config.attn_implementation == "eager"
    return training and device_type == "cpu" and (
        config.attention_probs_dropout_prob > 0 or (bf16 and keys <= WRITTEN_OUT_MAX_POSITIONS))


class Attended(NamedTuple):
    """What an attention module returns: the output, the weights (None unless asked for) and the keys and
    values."""
    output: torch.Tensor  # (B, T, C)
    weights: torch.Tensor | None  # (B, nh, T, S)
    cache: tuple  # (k, v), each (B, nh, S, hs): what a later decoding step reads instead of computing again


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
        self.config = config  # the model's own: its attn_implementation picks the path (writes_attention_out)

    def split_heads(self, x):  # (B, T, C) -> (B, nh, T, hs)
        B, T, _ = x.shape
        return x.view(B, T, self.n_head, self.head_size).transpose(1, 2)

    def forward(self, x, context=None, bias=None, is_causal=False, cache=None, output_attentions=False):
        """x (B, T, C) -> Attended: the output (B, T, C), the weights (B, nh, T, S) with output_attentions,
        and the keys and values (the cache of the next decoding step)."""
        if self.is_cross_attention and cache is not None:
            k, v = cache  # the encoder's keys and values, computed at the first decoding step
        else:
            source = x if context is None else context
            k, v = self.split_heads(self.key(source)), self.split_heads(self.value(source))  # (B, nh, S, hs)
            if cache is not None:
                k, v = torch.cat([cache[0], k], dim=2), torch.cat([cache[1], v], dim=2)
        q = self.split_heads(self.query(x))  # (B, nh, T, hs)
        if output_attentions or writes_attention_out(self.config, self.training, q.device.type,  # only it has weights
                                                     q.dtype == torch.bfloat16, keys=k.shape[2]):
            y, weights = attention(q, k, v, bias, is_causal, self.dropout)
        else:  # the same numbers from PyTorch's fused kernel
            bias = None if bias is None else bias.to(q.dtype)
            y = F.scaled_dot_product_attention(q, k, v, attn_mask=bias, is_causal=is_causal,
                                               dropout_p=self.dropout.p if self.training else 0.0)
            weights = None
        B, _, T, _ = y.shape
        y = y.transpose(1, 2).reshape(B, T, -1)  # (B, T, C): heads side by side again
        return Attended(y, weights if output_attentions else None, (k, v))


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

    def forward(self, x, **kwargs):
        """x (B, T, C) -> Attended: attention, then Add & Norm; the weights and cache as MultiHeadAttention's."""
        y, weights, cache = self.self(x, **kwargs)
        return Attended(self.output(y, x), weights, cache)  # Add & Norm: y + x, normalised


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.act = ACT2FN[config.hidden_act]

    def forward(self, x):
        return self.act(self.dense(x))


class LayerOutput(NamedTuple):
    """What a layer returns."""
    hidden_states: torch.Tensor  # (B, T, C)
    attentions: torch.Tensor | None  # (B, nh, T, S), with output_attentions
    cross_attentions: torch.Tensor | None  # (B, nh, T, S_encoder), with output_attentions and an encoder
    cache: tuple  # (self k, self v) or, with cross-attention, (self k, self v, cross k, cross v)


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
                cache=None, output_attentions=False):
        """x (B, T, C) -> LayerOutput. context: what self-attention reads, when x holds only some of its
        positions (see BertEncoder). cache: this layer's keys and values of the earlier decoding steps."""
        self_cache, cross_cache = (cache[:2], cache[2:] or None) if cache is not None else (None, None)
        x, attentions, self_cache = self.attention(x, context=context, bias=bias, is_causal=is_causal,
                                                   cache=self_cache, output_attentions=output_attentions)
        cross_attentions = None
        if hasattr(self, "crossattention") and (encoder_hidden_states is not None or cross_cache):
            x, cross_attentions, cross_cache = self.crossattention(
                x, context=encoder_hidden_states, bias=encoder_bias, cache=cross_cache,
                output_attentions=output_attentions)
        x = self.output(self.intermediate(x), x)  # feed-forward, Add & Norm
        cache = self_cache + (cross_cache or ())  # one cache entry per layer
        return LayerOutput(x, attentions, cross_attentions, cache)


def gather_rows(x, rows):
    """x (B, T, C) -> (B, K, C): the rows of x at positions rows (B, K)."""
    return x.gather(1, rows[..., None].expand(-1, -1, x.shape[-1]))


class BertEncoder(nn.Module):
    """The stack of layers: the last hidden states, and what each layer produced along the way."""

    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])
        # n > 0: in training, every n-th layer keeps none of its activations and computes them again in the
        # backward pass (less memory, about a third more time); set by activation_checkpointing_enable
        self.checkpoint_every = 0

    def forward(self, x, bias=None, is_causal=False, encoder_hidden_states=None, encoder_bias=None,
                past_key_values=None, output_attentions=False, positions=None):
        """-> ModelOutput with last_hidden_state, hidden_states (the input, then each layer's output),
        attentions, cross_attentions and past_key_values (one cache entry per layer).
        positions (B, K): the rows the heads will read (the masked ones and [CLS]). The last layer then
        computes only those rows, their attention still reading the whole sequence (its context)."""
        hidden_states, attentions, cross_attentions, caches = (x,), (), (), ()
        for i, layer in enumerate(self.layer):
            context = None
            if positions is not None and i == len(self.layer) - 1:  # (B, K, C) queries, (B, T, C) keys and values
                context, x = x, gather_rows(x, positions)
            inputs = dict(context=context, bias=bias, is_causal=is_causal, encoder_hidden_states=encoder_hidden_states,
                          encoder_bias=encoder_bias, cache=past_key_values[i] if past_key_values else None,
                          output_attentions=output_attentions)
            if self.training and self.checkpoint_every and i % self.checkpoint_every == 0:
                out = torch.utils.checkpoint.checkpoint(layer, x, use_reentrant=False, **inputs)
            else:
                out = layer(x, **inputs)
            x = out.hidden_states
            hidden_states += (x,)
            attentions += (out.attentions,)
            cross_attentions += (out.cross_attentions,)
            caches += (out.cache,)
        return ModelOutput(last_hidden_state=x, hidden_states=hidden_states, attentions=attentions,
                           cross_attentions=cross_attentions, past_key_values=caches)


class BertPooler(nn.Module):
    """The sentence vector: the [CLS] position through dense + tanh (what the NSP head reads)."""

    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)

    def forward(self, hidden_states):
        return torch.tanh(self.dense(hidden_states[:, 0]))  # (B, C)


def attention_bias(attention_mask, q_len, k_len, causal, dtype, device=None):
    """Additive attention bias, (B|1, 1, q_len, k_len): 0 where a query may look, a large negative
    number where it may not (padding, and for a decoder the future). None when nothing is hidden.
    device: where the hidden states are, for a causal bias without a padding mask."""
    keep = None if attention_mask is None else attention_mask[:, None, None, :].bool()  # (B, 1, 1, S)
    if causal and q_len > 1:
        device = attention_mask.device if attention_mask is not None else device
        future = torch.ones(q_len, k_len, dtype=torch.bool, device=device).tril(diagonal=k_len - q_len)
        keep = future if keep is None else keep & future
    if keep is None:
        return None
    return torch.zeros(keep.shape, dtype=dtype, device=keep.device).masked_fill(~keep, torch.finfo(dtype).min)


class BertPreTrainedModel(TransformersHabits, nn.Module):
    """What every model shares: its config, BERT's weight initialisation, and the habits transformers'
    users and tools expect of a model (from_pretrained, save_pretrained, ...: compat.py)."""

    def __init__(self, config):
        super().__init__()
        self.config = as_minibert_config(config)  # a transformers BertConfig is read as config.json would be

    def init_weights(self, module=None):
        """Draw BERT's initial weights (normal, std config.initializer_range; biases 0, LayerNorm 1 and 0)
        for module's layers, or all of the model's. Each layer is drawn once: BertModel draws the encoder's
        as it is built, and a head then draws only its own layers."""
        std = self.config.initializer_range
        for m in (self if module is None else module).modules():
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

    @property
    def device(self):
        return next(self.parameters()).device

    @property
    def dtype(self):
        return next(self.parameters()).dtype


class BertModel(BertPreTrainedModel):
    """The bare encoder (or decoder, with config.is_decoder): token ids in, one vector per token out."""
    hf_architecture = "BertModel"

    def __init__(self, config, add_pooling_layer=True):
        super().__init__(config)
        self.embeddings = BertEmbeddings(self.config)
        self.encoder = BertEncoder(self.config)
        self.pooler = BertPooler(self.config) if add_pooling_layer else None
        self.init_weights()  # the encoder's weights, drawn once here (a head draws only its own layers)
        self.post_init()

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
        # does the mask hide anything? Read on the CPU only: on an accelerator that would wait for the device
        padded = attention_mask is not None and (
            attention_mask.device.type != "cpu" or not bool(attention_mask.all()))
        # a decoder without padding or cache needs no bias: both attention paths hide the future themselves
        is_causal = cfg.is_decoder and not padded and past_length == 0 and not output_attentions
        bias = None if is_causal else attention_bias(attention_mask if padded else None, T, past_length + T,
                                                     cfg.is_decoder, x.dtype, x.device)
        encoder_bias = None
        if encoder_attention_mask is not None:
            encoder_bias = attention_bias(encoder_attention_mask, T, encoder_attention_mask.shape[1], False, x.dtype)

        out = self.encoder(x, bias=bias, is_causal=is_causal, encoder_hidden_states=encoder_hidden_states,
                           encoder_bias=encoder_bias, past_key_values=past_key_values,
                           output_attentions=output_attentions, positions=positions)
        x = out.last_hidden_state
        return model_output(ModelOutput(
            last_hidden_state=x,
            pooler_output=self.pooler(x) if self.pooler is not None else None,
            past_key_values=out.past_key_values if use_cache else None,
            hidden_states=out.hidden_states if output_hidden_states else None,
            attentions=out.attentions if output_attentions else None,
            # with output_attentions, transformers returns cross_attentions, empty without an encoder to attend to
            cross_attentions=(out.cross_attentions if encoder_hidden_states is not None else ())
            if output_attentions else None,
        ), return_dict)


class Dropout(nn.Dropout):
    """A speed trick: nn.Dropout with a cheaper mask on the CPU. There torch draws one random number per
    element for its Bernoulli mask, a visible share of a training step; here one 64-bit draw makes four
    16-bit ones, and an element is dropped when its draw is among the lowest p of them (p to within
    1/65536). tests/model/test_fast_paths.py checks it against nn.Dropout's drop rate."""

    def forward(self, x):
        if not self.training or self.p in (0.0, 1.0) or x.device.type != "cpu":
            return F.dropout(x, self.p, self.training)
        n = x.numel()
        draws = torch.randint(-2 ** 63, 2 ** 63 - 1, ((n + 3) // 4,), dtype=torch.int64, device=x.device)
        draws = draws.view(torch.int16)[:n].view(x.shape)  # uniform over -32768..32767
        keep = draws >= round(self.p * 2 ** 16) - 2 ** 15
        return x * keep.to(x.dtype).mul_(1 / (1 - self.p))
