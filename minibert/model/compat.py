"""What transformers' users and tools reach for besides the forward pass, with transformers' meaning:
a transformers BertConfig taken as it is, ids given as lists, checkpoint files (`from_pretrained`,
`save_pretrained`), the attributes its tools read (`main_input_name`, `base_model_prefix`,
`can_generate()`, the attention flags), activation checkpointing, and the embedding tables
(`get_input_embeddings`, `get_output_embeddings`, `resize_token_embeddings` after `tokenizer.add_tokens`).
Every model (bert.BertPreTrainedModel) has them through TransformersHabits; tests/model/test_api.py
compares each with transformers' on the same weights. None of them changes what a forward pass computes.
"""

import dataclasses
import inspect

import torch
from torch import nn

from . import hub
from .checks import ID_ARGUMENTS, as_tensor
from .config import BertConfig, as_minibert_config, check_attention


class TransformersHabits:
    """Mixed into every model (bert.BertPreTrainedModel), before nn.Module. The input table is
    `embeddings.word_embeddings` of the encoder (`base_model`: the model's `bert`, or the model itself);
    the output table is the masked-LM decoder (`cls.predictions.decoder`), tied to the input table as in
    BERT, or None for a model without one."""
    hf_architecture = None  # the transformers class that reads our checkpoints
    main_input_name = "input_ids"  # what Trainer and pipelines feed first
    base_model_prefix = "bert"  # the encoder's attribute, and the prefix of its weights' names
    _supports_sdpa = True  # attention through torch's scaled_dot_product_attention (and a spelled-out path)
    _supports_flash_attn = False  # no FlashAttention kernels, no flex attention
    _supports_flex_attn = False
    supports_gradient_checkpointing = True
    config_class = BertConfig
    _is_stateful = False  # no state kept between generate calls (as recurrent models keep)
    _can_compile_fullgraph = False  # no promise that torch.compile(fullgraph=True) works
    _keep_in_fp32_modules = None  # every weight may take another dtype
    _keys_to_ignore_on_load_missing = None  # from_pretrained warns of every weight it does not find
    _keys_to_ignore_on_load_unexpected = None

    @classmethod
    def _can_set_attn_implementation(cls):
        return True

    def post_init(self):
        """What transformers' models call at the end of __init__, and minibert's too: tie the decoder to the
        input table. It never draws weights anew."""
        self.tie_weights()

    def __call__(self, *args, **kwargs):
        """Run forward as nn.Module does, after turning ids, masks and labels given as lists or numpy
        arrays into tensors on the model's device (a tensor is passed on as it is)."""
        if any(not (a is None or isinstance(a, (torch.Tensor, bool, tuple))) for a in args):  # ids as a list, say
            args, kwargs = (), inspect.signature(self.forward).bind(*args, **kwargs).arguments
        for name in set(ID_ARGUMENTS).intersection(kwargs):
            kwargs[name] = as_tensor(name, kwargs[name], self.device)
        return super().__call__(*args, **kwargs)

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
        return hub.load_pretrained(cls, pretrained_model_name_or_path, **options)

    def save_pretrained(self, path):
        """Write config.json + model.safetensors that transformers' matching class loads as is."""
        hub.save_pretrained(self, path)

    @classmethod
    def _from_config(cls, config, dtype=None, torch_dtype=None, **overrides):
        """A new model from a config, with transformers' options (attn_implementation=, dtype=)."""
        model = cls(dataclasses.replace(as_minibert_config(config), **overrides) if overrides else config)
        dtype = dtype if dtype is not None else torch_dtype
        return model if dtype is None else model.to(dtype)

    def activation_checkpointing_enable(self, activation_checkpointing_kwargs=None, every_n_layers=1, offload=False):
        """Keep no activations of every n-th layer in training and compute them again in the backward
        pass: less memory for about a third more time (the encoder's loop calls those layers through
        torch.utils.checkpoint, as transformers' does). TrainingArguments(gradient_checkpointing=True)
        makes Trainer call this."""
        if (activation_checkpointing_kwargs or {}) not in ({}, {"use_reentrant": False}):
            raise ValueError(f"checkpointing kwargs {activation_checkpointing_kwargs!r}: minibert checkpoints "
                             "each layer with use_reentrant=False only (its layers take keyword arguments)")
        if offload:
            raise ValueError("offload=True (activations kept in pinned host memory) is for accelerators; "
                             "minibert does not offload")
        if not isinstance(every_n_layers, int) or every_n_layers < 1:
            raise ValueError(f"every_n_layers must be a whole number above 0, got {every_n_layers!r}")
        self.encoder_stack().checkpoint_every = every_n_layers

    def activation_checkpointing_disable(self):
        self.encoder_stack().checkpoint_every = 0

    def gradient_checkpointing_enable(self, gradient_checkpointing_kwargs=None, **kwargs):
        """transformers' older name for activation_checkpointing_enable."""
        self.activation_checkpointing_enable(gradient_checkpointing_kwargs, **kwargs)

    def gradient_checkpointing_disable(self):
        self.activation_checkpointing_disable()

    @property
    def is_activation_checkpointing(self):
        return self.encoder_stack().checkpoint_every > 0

    @property
    def is_gradient_checkpointing(self):  # transformers' older name
        return self.is_activation_checkpointing

    def enable_input_require_grads(self):
        """Make the input embeddings' output require grad, so that gradients reach a frozen model's inputs
        (adapters, checkpointing a frozen encoder), as in transformers."""
        self.disable_input_require_grads()
        self._require_grads_hook = self.get_input_embeddings().register_forward_hook(
            lambda module, inputs, output: output.requires_grad_(True))

    def disable_input_require_grads(self):
        hook = getattr(self, "_require_grads_hook", None)
        if hook is not None:
            hook.remove()
            self._require_grads_hook = None

    @property
    def base_model(self):
        """The encoder (BertModel): the model's `bert`, or the model itself when it is the encoder."""
        return getattr(self, self.base_model_prefix, self)

    def encoder_stack(self):
        return self.base_model.encoder

    def set_attn_implementation(self, name):
        """Attention written out ("eager"), fused ("sdpa"), or None for the faster of the two for each call
        (bert.writes_attention_out, which reads it from the config every attention module shares)."""
        self.config.attn_implementation = check_attention(name)

    @classmethod
    def can_generate(cls):
        """Whether the model has a generate method: the causal LM does."""
        return callable(getattr(cls, "generate", None))

    @property
    def generation_config(self):
        """generate's default settings, a transformers GenerationConfig made from the model's config;
        saved as generation_config.json beside the weights and read back by from_pretrained. None for a
        model that cannot generate, as in transformers."""
        if not self.can_generate():
            return None
        if getattr(self, "_generation_config", None) is None:
            from .generation import default_generation_config
            self._generation_config = default_generation_config(self.config)
        return self._generation_config

    @generation_config.setter
    def generation_config(self, value):
        self._generation_config = value

    def get_input_embeddings(self):
        return self.base_model.embeddings.word_embeddings

    def set_input_embeddings(self, value):
        self.base_model.embeddings.word_embeddings = value
        self.tie_weights()

    def get_output_embeddings(self):
        head = getattr(getattr(self, "cls", None), "predictions", None)
        return None if head is None else head.decoder

    def set_output_embeddings(self, value):
        self.cls.predictions.decoder = value

    def tie_weights(self):
        """Make the output table the input table again (config.tie_word_embeddings, as in BERT)."""
        output = self.get_output_embeddings()
        if output is not None and self.config.tie_word_embeddings:
            output.weight = self.get_input_embeddings().weight

    def resize_token_embeddings(self, new_num_tokens=None, pad_to_multiple_of=None, mean_resizing=True):
        """Give the vocabulary new_num_tokens rows (e.g. len(tokenizer) after tokenizer.add_tokens): rows are
        kept or cut at the end, and new rows start at the mean of the old ones (mean_resizing, as in
        transformers, so that new tokens do not disturb the model's predictions) or at random. The tied
        decoder follows the input table; the masked-LM bias grows with zeros (as in transformers).
        Returns the input embedding module."""
        embeddings = self.get_input_embeddings()
        if new_num_tokens is None and pad_to_multiple_of is None:
            return embeddings
        n = embeddings.num_embeddings if new_num_tokens is None else new_num_tokens
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise ValueError(f"new_num_tokens must be a whole number above 0, got {new_num_tokens!r}")
        if pad_to_multiple_of is not None:
            if not isinstance(pad_to_multiple_of, int) or pad_to_multiple_of < 1:
                raise ValueError(f"pad_to_multiple_of must be a whole number above 0, got {pad_to_multiple_of!r}")
            n = -(-n // pad_to_multiple_of) * pad_to_multiple_of  # rounded up
        embeddings.weight = nn.Parameter(grown(embeddings.weight, n, mean_resizing, self.config.initializer_range))
        embeddings.num_embeddings = n
        if embeddings.padding_idx is not None and embeddings.padding_idx >= n:
            embeddings.padding_idx = None
        output = self.get_output_embeddings()
        if output is not None:
            if not self.config.tie_word_embeddings:
                output.weight = nn.Parameter(grown(output.weight, n, mean_resizing, self.config.initializer_range))
            output.out_features = n
            head = self.cls.predictions
            head.bias = nn.Parameter(grown(head.bias[:, None], n, mean_resizing=False, std=0.0)[:, 0])
        self.config.vocab_size = self.vocab_size = n  # the model's attribute too, as transformers sets it
        self.tie_weights()
        return embeddings


@torch.no_grad()
def grown(table, n, mean_resizing, std):
    """The first n rows of a (V, C) table; rows past V are the mean of the old rows (mean_resizing) or
    drawn from N(0, std)."""
    old = table.shape[0]
    if n <= old:
        return table[:n].detach().clone()
    if mean_resizing:
        new = table.float().mean(0, keepdim=True).expand(n - old, -1).to(table.dtype)
    else:
        new = torch.randn(n - old, table.shape[1], dtype=table.dtype, device=table.device) * std
    return torch.cat([table.detach(), new])

