"""Input checks shared by the models: the mistakes users make become a sentence that names the argument
and says what to do, instead of an error from deep inside torch.

bert.py checks the encoder's inputs (check_inputs); generation.py checks its settings with check_sampling.
The labels are checked by losses.check_labels, beside the rules they follow. Shapes and dtypes are Python
numbers, checked everywhere; the values inside a tensor (an id beyond the vocabulary) are checked where
the tensor is on the CPU: on an accelerator, reading one back would make every step wait for the device.
There the ids come from the tokenizer and the collators, which make them on the CPU.
"""

import math
from numbers import Integral, Real

import numpy as np
import torch


# The arguments that hold ids, masks or labels: a forward also takes them as a list or a numpy array.
ID_ARGUMENTS = ("input_ids", "attention_mask", "token_type_ids", "position_ids", "labels", "next_sentence_label",
                "encoder_attention_mask")
DEFAULT_NEW_TOKENS = 20  # what generate adds when told neither max_new_tokens nor max_length, as transformers


def as_tensor(name, value, device=None):
    """value as a tensor on device when it is a list, tuple or numpy array; a tensor or None as is."""
    if value is None or isinstance(value, torch.Tensor):
        return value
    if not isinstance(value, (list, tuple, np.ndarray)):
        raise ValueError(f"{name} must be a tensor, a list or a numpy array of integers, got "
                         f"{type(value).__name__}" + ("; tokenize the text first" if isinstance(value, str) else ""))
    try:
        tensor = torch.as_tensor(value, device=device)
    except (ValueError, TypeError) as e:  # ragged rows, strings, None inside...
        raise ValueError(f"{name} could not become a tensor ({e}); pass rows of one length (pad the short "
                         "ones and pass an attention_mask) holding integers only") from None
    integers = not tensor.is_floating_point() and tensor.dtype != torch.bool
    return tensor.long() if integers else tensor  # int32 from numpy: the losses need int64


def on_cpu(tensor):
    """Can its values be read without waiting for an accelerator?"""
    return tensor.device.type == "cpu"


def check_ids(name, ids, upper, what):
    if ids.dtype.is_floating_point or ids.dtype == torch.bool:
        raise TypeError(f"{name} must hold integer ids, got dtype {ids.dtype}; use .long()")
    if on_cpu(ids) and ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= upper):
        bad = int(ids.max()) if int(ids.max()) >= upper else int(ids.min())
        raise ValueError(f"{name} contains {bad}, outside 0..{upper - 1} ({what})")


def check_inputs(config, input_ids, attention_mask, token_type_ids, position_ids, inputs_embeds, past_length,
                 past_key_values=None, positions=None):
    """Turn the mistakes users make into a sentence instead of an IndexError deep inside torch."""
    if past_key_values is not None and not config.is_decoder:
        raise ValueError("past_key_values is for decoders (config.is_decoder=True); an encoder sees everything")
    if positions is not None and config.is_decoder:
        raise ValueError("positions is for encoders: a decoder's next layer or step needs every position")
    if (input_ids is None) == (inputs_embeds is None):
        raise ValueError("pass exactly one of input_ids or inputs_embeds")
    if input_ids is not None:
        if input_ids.dim() != 2:
            raise ValueError(f"input_ids must have shape (batch, seq_len), got {tuple(input_ids.shape)}; "
                             "for one sequence use input_ids[None]")
        shape = tuple(input_ids.shape)
    else:
        if inputs_embeds.dim() != 3 or inputs_embeds.shape[-1] != config.hidden_size:
            raise ValueError(f"inputs_embeds must have shape (batch, seq_len, {config.hidden_size}), "
                             f"got {tuple(inputs_embeds.shape)}")
        shape = tuple(inputs_embeds.shape[:2])
    if 0 in shape:
        name = "input_ids" if input_ids is not None else "inputs_embeds"
        raise ValueError(f"{name} is empty (shape {shape}): pass at least one sequence of at least one token")
    if input_ids is not None:
        check_ids("input_ids", input_ids, config.vocab_size,
                  f"vocab_size={config.vocab_size}: was the model built for another tokenizer?")
    if past_length + shape[1] > config.max_position_embeddings:
        raise ValueError(f"sequence of {past_length + shape[1]} tokens is longer than "
                         f"max_position_embeddings={config.max_position_embeddings}; truncate it")
    if attention_mask is not None and tuple(attention_mask.shape) != (shape[0], past_length + shape[1]):
        raise ValueError(f"attention_mask has shape {tuple(attention_mask.shape)} but the input has shape "
                         f"{shape}" + (f" after {past_length} cached tokens" if past_length else ""))
    if token_type_ids is not None:
        if tuple(token_type_ids.shape) != shape:
            raise ValueError(f"token_type_ids has shape {tuple(token_type_ids.shape)}, input has shape {shape}")
        check_ids("token_type_ids", token_type_ids, config.type_vocab_size,
                  f"type_vocab_size={config.type_vocab_size} segments")
    if position_ids is not None:
        check_ids("position_ids", position_ids, config.max_position_embeddings, "max_position_embeddings")
    if positions is not None and (positions.dim() != 2 or len(positions) != shape[0] or on_cpu(positions) and (
            positions.min() < 0 or positions.max() >= shape[1])):
        raise ValueError(f"positions must be (batch, K) indices in 0..{shape[1] - 1}, one row per sequence; got "
                         f"shape {tuple(positions.shape)}, values {int(positions.min())}..{int(positions.max())}")


def check_sampling(temperature, top_k, top_p):
    if not (isinstance(temperature, Real) and math.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature must be a finite number > 0, got {temperature}; use do_sample=False for "
                         "greedy decoding")
    if top_k is not None and (not isinstance(top_k, Integral) or top_k < 0):
        raise ValueError(f"top_k must be a whole number >= 0, got {top_k!r}; top_k=0 keeps every token")
    if top_p is not None and not (isinstance(top_p, Real) and 0 < top_p <= 1):
        raise ValueError(f"top_p must be in (0, 1], got {top_p}")
