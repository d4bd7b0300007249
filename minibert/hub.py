"""Checkpoint files in transformers' format: a folder with config.json and model.safetensors.

Writes are all-or-nothing: everything goes into a temporary folder beside the target, which then
replaces it in one rename, so a crash never leaves half a checkpoint behind.
"""

import contextlib
import json
import os
import re
import shutil
import tempfile
import warnings

import torch
from safetensors.torch import load_file, save_file

from .config import BertConfig

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")  # old checkpoints store these


@contextlib.contextmanager
def atomic_folder(path):
    """Yield a temporary folder to fill; on success it replaces `path` whole. Files of an existing
    `path` that were not rewritten (a tokenizer, say) are carried over, old weights are not."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"cannot save a checkpoint folder at {path!r}: a file of that name is in the way; "
                         "choose another path or remove the file")
    os.makedirs(parent, exist_ok=True)
    remove_stale_temporaries(parent, name)
    tmp = tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent)
    umask = os.umask(0)
    os.umask(umask)
    os.chmod(tmp, 0o777 & ~umask)  # mkdtemp makes it private; a checkpoint is shared like any folder
    try:
        yield tmp
        if os.path.isdir(path):
            for entry in os.listdir(path):
                if entry in WEIGHT_FILES or os.path.exists(os.path.join(tmp, entry)):
                    continue
                src, dst = os.path.join(path, entry), os.path.join(tmp, entry)
                shutil.copytree(src, dst) if os.path.isdir(src) else shutil.copy2(src, dst)
            old = tmp + ".old"
            os.rename(path, old)
            os.rename(tmp, path)
            shutil.rmtree(old)
        else:
            os.rename(tmp, path)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def remove_stale_temporaries(parent, name):
    """A save that was killed (not one that failed: that cleans up) leaves its temporary folder
    `.NAME.<random>.tmp`, full weights and all, beside the target; the next save of NAME removes them.
    (Two processes saving to the same folder at once are not supported.)"""
    stale = re.compile(rf"\.{re.escape(name)}\.[^.]+\.tmp(\.old)?")  # what mkdtemp below names, and its .old
    for entry in os.listdir(parent):
        if stale.fullmatch(entry) and os.path.isdir(os.path.join(parent, entry)):
            shutil.rmtree(os.path.join(parent, entry), ignore_errors=True)


def write_weights(model, folder):
    state = model.state_dict()
    if model.config.tie_word_embeddings:
        state.pop("cls.predictions.decoder.weight", None)  # the embedding matrix, stored once
    elif "cls.predictions.bias" in state:  # untied, transformers reads the bias under the decoder's name
        state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].clone()
    state = {k: v.detach().contiguous().cpu() for k, v in state.items()}
    save_file(state, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    model.config.save(folder, model.hf_architecture)


def save_pretrained(model, path):
    with atomic_folder(path) as tmp:
        write_weights(model, tmp)


def damaged(file, why):
    """The error for a checkpoint file that is there but cannot be used: which file, why, and what to do."""
    return ValueError(f"{file!r} cannot be read: {why}. An interrupted save, copy or download leaves a file like "
                      "this: save the model there again, re-download the checkpoint, or re-train it")


def read_config(path, **overrides):
    if os.path.isfile(path):
        raise ValueError(f"{path!r} is a file; pass the checkpoint folder that holds config.json and the weights")
    if not os.path.isdir(path):
        raise FileNotFoundError(f"no checkpoint folder at {path!r}")
    config_file = os.path.join(path, "config.json")
    if not os.path.isfile(config_file):
        raise ValueError(f"{path!r} has no config.json: it is not a transformers/minibert checkpoint folder")
    try:
        with open(config_file) as f:
            raw = json.load(f)
    except (ValueError, UnicodeDecodeError) as e:  # JSONDecodeError is a ValueError
        raise damaged(config_file, f"it is not valid JSON ({e})") from e
    if not isinstance(raw, dict):
        raise damaged(config_file, f"it holds a JSON {type(raw).__name__}, not an object of settings")
    if raw.get("model_type", "bert") != "bert":
        raise ValueError(f"{path!r} holds a {raw['model_type']!r} model, not BERT")
    try:
        return BertConfig.from_dict(raw, **overrides)
    except ValueError as e:  # a value that cannot work: say where it came from
        source = f"{config_file!r}" + (f" with the overrides {overrides}" if overrides else "")
        raise ValueError(f"in {source}: {e}. Correct that value, or save the checkpoint again") from e


def read_state_dict(path):
    present = [os.path.join(path, name) for name in WEIGHT_FILES if os.path.isfile(os.path.join(path, name))]
    if not present:
        raise ValueError(f"{path!r} has a config.json but no weights ({' or '.join(WEIGHT_FILES)})")
    file = present[0]  # model.safetensors when both are there
    try:
        if file.endswith(".safetensors"):
            state = load_file(file)
        else:
            state = torch.load(file, map_location="cpu", weights_only=True)
    except Exception as e:  # safetensors, zip and pickle each fail in their own way on a file cut short
        raise damaged(file, f"{type(e).__name__}: {str(e)[:300]}") from e
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise damaged(file, "it does not hold a dictionary of named tensors (a state_dict)")
    renamed = {}
    for k, v in state.items():  # TF-era names: LayerNorm.gamma/beta
        k = k.replace("LayerNorm.gamma", "LayerNorm.weight").replace("LayerNorm.beta", "LayerNorm.bias")
        renamed[k] = v
    return renamed


def match_keys(state, model):
    """Map checkpoint keys onto the model's: add or strip the `bert.` prefix (a bare encoder loads into
    a model with heads and back), drop buffers, and take the MLM bias from the decoder when it is there."""
    wanted = model.state_dict().keys()
    state = {k.removeprefix("module."): v for k, v in state.items()}  # saved from inside DistributedDataParallel
    has_prefix = any(k.startswith("bert.") for k in state)
    wants_prefix = any(k.startswith("bert.") for k in wanted)
    out = {}
    for k, v in state.items():
        if has_prefix and not wants_prefix:
            if not k.startswith("bert."):
                continue  # a head the bare encoder does not have
            k = k[len("bert."):]
        elif wants_prefix and not has_prefix:
            k = "bert." + k
        if k.removeprefix("bert.") in BUFFERS:
            continue
        out[k] = v
    if "cls.predictions.decoder.bias" in out:  # the bias transformers' decoder actually adds
        out["cls.predictions.bias"] = out.pop("cls.predictions.decoder.bias")
    return out


def load_pretrained(cls, path, **config_overrides):
    config = read_config(path, **config_overrides)
    model = cls(config)
    state = match_keys(read_state_dict(path), model)
    expected = model.state_dict()
    if not any(k in expected for k in state):  # loading would give a random model, with only a warning
        raise ValueError(f"none of the {len(state)} tensors in the weights of {path!r} is a weight of {cls.__name__} "
                         f"(they are named like {', '.join(list(state)[:3])}): it is not a BERT checkpoint")
    wrong = [f"{k}: checkpoint {tuple(v.shape)}, model {tuple(expected[k].shape)}"
             for k, v in state.items() if k in expected and v.shape != expected[k].shape]
    if wrong:
        raise ValueError(f"the checkpoint in {path!r} does not fit this config: " + "; ".join(wrong[:3]))
    missing, unexpected = model.load_state_dict(state, strict=False)
    if model.config.tie_word_embeddings and "cls.predictions.decoder.weight" in missing:
        missing.remove("cls.predictions.decoder.weight")  # tied to the embeddings just loaded
    if missing:
        warnings.warn(f"{cls.__name__}: {len(missing)} weights are not in {path!r} and were freshly "
                      f"initialized: {', '.join(missing[:6])}{' ...' if len(missing) > 6 else ''}. "
                      "Train the model before trusting its outputs.", stacklevel=3)
    model.loading_info = {"missing_keys": missing, "unexpected_keys": unexpected}
    return model.eval()
