"""Checkpoint files in transformers' format: a folder with config.json and model.safetensors.

Writes are all-or-nothing: everything goes into a temporary folder beside the target, which then
replaces it in one rename, so a crash never leaves half a checkpoint behind.
"""

import contextlib
import dataclasses
import errno
import json
import os
import re
import shutil
import tempfile
import warnings

import torch
from safetensors.torch import load, save_file

from filelock import FileLock, Timeout

from ..cache import locked, share_like_any_file
from .config import as_minibert_config
from .config import BertConfig

WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
GENERATION_FILE = "generation_config.json"  # generate's default settings, beside the weights of a causal LM
BUFFERS = ("embeddings.position_ids", "embeddings.token_type_ids")  # old checkpoints store these


def swap_lock(path):
    """The lock file beside a checkpoint folder that a save holds while it swaps the folder in, and a
    reader while it reads, so that a reader never finds the folder missing between the save's two renames."""
    parent, name = os.path.split(os.path.abspath(path))
    return os.path.join(parent, f".{name}.swap")


def in_use(tmp):
    """The lock file that marks a save's temporary folder as being filled, so that another writer's
    clean-up of interrupted saves leaves it alone."""
    return tmp + ".filling"


@contextlib.contextmanager
def atomic_folder(path, carry_over=True, kept=None, retry="save again"):
    """Yield a temporary folder to fill; on success it replaces `path` whole. With carry_over, files of
    an existing `path` that were not rewritten (a tokenizer, say) are kept, old weights are not. A full
    disk is named, with what is kept (default: what was there before) and what to do then (retry)."""
    path = os.path.abspath(path)
    parent, name = os.path.split(path)
    if os.path.exists(path) and not os.path.isdir(path):
        raise ValueError(f"cannot save a checkpoint folder at {path!r}: a file of that name is in the way; "
                         "choose another path or remove the file")
    os.makedirs(parent, exist_ok=True)
    tmp = filling = None
    try:
        with locked(swap_lock(path)):  # the temporary folder and its mark are made together
            recover_interrupted_saves(parent, name)
            tmp = tempfile.mkdtemp(prefix=f".{name}.", suffix=".tmp", dir=parent)
            filling = FileLock(in_use(tmp))
            filling.acquire()
        yield tmp
        share_like_any_file(tmp)
        with locked(swap_lock(path)):
            if os.path.isdir(path):
                for entry in os.listdir(path) if carry_over else ():
                    if entry in WEIGHT_FILES or os.path.exists(os.path.join(tmp, entry)):
                        continue
                    src, dst = os.path.join(path, entry), os.path.join(tmp, entry)
                    shutil.copytree(src, dst) if os.path.isdir(src) else shutil.copy2(src, dst)
                old = tmp + ".old"
                os.rename(path, old)
                os.rename(tmp, path)
                # Windows deletes no file that another process holds open (a reader of the old
                # checkpoint): what remains is removed by the next save's recover_interrupted_saves
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.rename(tmp, path)
    except BaseException as e:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
        if disk_full(e):
            kept = kept or ("what was there before is intact" if os.path.isdir(path) else "nothing is left behind")
            raise OSError(errno.ENOSPC, f"the disk is full: saving {path!r} failed and was undone ({kept}); "
                                        f"free some space and {retry}") from e
        raise
    finally:
        if filling is not None:
            filling.release()
            with contextlib.suppress(OSError):
                os.remove(in_use(tmp))


def disk_full(error):
    """Is this the failure of a write to a full disk? Python says ENOSPC; torch, "unexpected pos"; safetensors
    raises its own SafetensorError with "No space left on device (os error 28)"."""
    return getattr(error, "errno", None) == errno.ENOSPC or any(
        sign in str(error) for sign in ("unexpected pos", "No space left", "os error 28"))


def recover_interrupted_saves(parent, name):
    """A save that was killed (not one that failed: that cleans up) leaves its temporary folder
    `.NAME.<random>.tmp` beside the target; one killed between its two renames leaves the previous
    checkpoint as `.NAME.<random>.tmp.old` and no NAME. The previous checkpoint is put back; the
    leftovers of dead saves are removed; a temporary folder that another process is filling is kept."""
    stale = re.compile(rf"\.{re.escape(name)}\.[^.]+\.tmp(\.old)?")  # what mkdtemp names, and its .old
    for entry in sorted(os.listdir(parent)):
        full = os.path.join(parent, entry)
        if not (stale.fullmatch(entry) and os.path.isdir(full)):
            continue
        if entry.endswith(".old") and not os.path.exists(os.path.join(parent, name)):
            os.rename(full, os.path.join(parent, name))
            warnings.warn(f"{os.path.join(parent, name)!r} was restored from {entry!r}: a save of it was "
                          "interrupted between its two renames", stacklevel=4)
            continue
        filling = FileLock(in_use(full))
        try:
            filling.acquire(blocking=False)  # taken: nobody is filling it
        except Timeout:
            continue
        filling.release()
        with contextlib.suppress(OSError):
            os.remove(in_use(full))
        shutil.rmtree(full, ignore_errors=True)


def write_weights(model, folder, load_as=None):
    """model.safetensors and config.json, whose dtype is the weights' own unless load_as names the dtype
    transformers should load them in (from_pretrained's default, dtype="auto", reads it)."""
    state = model.state_dict()
    if model.config.tie_word_embeddings:
        state.pop("cls.predictions.decoder.weight", None)  # the embedding matrix, stored once
    elif "cls.predictions.bias" in state:  # untied, transformers reads the bias under the decoder's name
        state["cls.predictions.decoder.bias"] = state["cls.predictions.bias"].clone()
    state = {k: v.detach().contiguous().cpu() for k, v in state.items()}
    save_file(state, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    model.config.save(folder, model.hf_architecture, load_as or model.dtype)
    if model.can_generate():  # generate's default settings, as transformers saves them
        model.generation_config.save_pretrained(folder)


def save_pretrained(model, path):
    with atomic_folder(path) as tmp:
        write_weights(model, tmp)


def unreadable(what, folder):
    """The error for a checkpoint that is there but that this user may not read (another user's cache)."""
    mode = oct(os.stat(what).st_mode & 0o777)[2:]
    return PermissionError(f"{what!r} cannot be read by you (permissions {mode}): it belongs to another user or "
                           f"was saved private. Its owner can share the checkpoint with: chmod -R a+rX {folder!r}")


def damaged(file, why):
    """The error for a checkpoint file that is there but cannot be used: which file, why, and what to do."""
    return ValueError(f"{file!r} cannot be read: {why}. An interrupted save, copy or download leaves a file like "
                      "this: save the model there again, re-download the checkpoint, or re-train it")


def read_config(path, **overrides):
    if os.path.isfile(path):
        raise ValueError(f"{path!r} is a file; pass the checkpoint folder that holds config.json and the weights")
    if not os.path.isdir(path):
        parent, name = os.path.split(os.path.abspath(path))
        left = [e for e in os.listdir(parent) if re.fullmatch(rf"\.{re.escape(name)}\.[^.]+\.tmp\.old", e)] \
            if os.path.isdir(parent) else []
        if left:
            raise FileNotFoundError(f"no checkpoint folder at {path!r}, but a save of it was interrupted between its "
                                    f"two renames and left the previous checkpoint in {left[0]!r}: put it back with "
                                    f"mv {os.path.join(parent, left[0])!r} {os.path.join(parent, name)!r}")
        raise FileNotFoundError(f"no checkpoint folder at {path!r}")
    config_file = os.path.join(path, "config.json")
    for needed in (path, config_file, *[os.path.join(path, w) for w in WEIGHT_FILES]):
        if os.path.exists(needed) and not os.access(needed, os.R_OK | (os.X_OK if os.path.isdir(needed) else 0)):
            raise unreadable(needed, path)
    if not os.path.isfile(config_file):
        raise ValueError(f"{path!r} has no config.json: it is not a transformers/minibert checkpoint folder")
    try:
        with open(config_file, encoding="utf-8") as f:
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
    shards = [name for name in os.listdir(path) if name.endswith((".safetensors.index.json", ".bin.index.json"))]
    if not present and shards:
        raise ValueError(f"{path!r} holds a checkpoint split into shards ({shards[0]}), which minibert does not read: "
                         "load it once with transformers and save it whole, "
                         "model.save_pretrained(folder, max_shard_size='100GB')")
    if not present:
        raise ValueError(f"{path!r} has a config.json but no weights ({' or '.join(WEIGHT_FILES)})")
    file = present[0]  # model.safetensors when both are there
    try:
        if file.endswith(".safetensors"):  # read whole and closed, not mapped: on Windows a file still mapped
            with open(file, "rb") as f:     # by a reader keeps the next save from replacing its folder
                state = load(f.read())
            state = {k: state[k] for k in sorted(state)}  # in name order, as safetensors' load_file gives them
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


class SizeMismatch(ValueError, RuntimeError):
    """A checkpoint's tensor of another shape than the model's: a ValueError like minibert's other errors,
    and the RuntimeError that transformers raises for it, so that code catching either sees it."""


def load_pretrained(cls, path, *, config=None, state_dict=None, dtype=None, torch_dtype=None,
                    output_loading_info=False, ignore_mismatched_sizes=False, **config_overrides):
    """from_pretrained's work, with transformers' options: config (a config to use instead of the
    folder's config.json) and state_dict (weights to use instead of the folder's; with both, path may
    be None), dtype (or its older name torch_dtype: a torch.dtype, its name, or "auto" for the dtype
    config.json records), output_loading_info (return (model, info) with missing, unexpected and
    mismatched keys), ignore_mismatched_sizes (a tensor of another shape, such as a classifier with
    another num_labels, is left freshly initialized instead of refused) and any config field
    (attn_implementation="eager", num_labels=7, ...)."""
    if path is None and (config is None or state_dict is None):
        raise ValueError("from_pretrained(None) needs both config= and state_dict=; otherwise give a checkpoint folder")
    if path is None:
        config, raw_state = dataclasses.replace(as_minibert_config(config), **config_overrides), dict(state_dict)
    else:
        with locked(swap_lock(path)):  # not while a save swaps the folder in
            if config is None:
                config = read_config(path, **config_overrides)
            else:
                config = dataclasses.replace(as_minibert_config(config), **config_overrides)
            raw_state = dict(state_dict) if state_dict is not None else read_state_dict(path)
    model = cls(config)
    state = match_keys(raw_state, model)
    expected = model.state_dict()
    if not any(k in expected for k in state):  # loading would give a random model, with only a warning
        raise ValueError(f"none of the {len(state)} tensors in the weights of {path!r} is a weight of {cls.__name__} "
                         f"(they are named like {', '.join(list(state)[:3])}): it is not a BERT checkpoint")
    mismatched = [(k, tuple(v.shape), tuple(expected[k].shape))
                  for k, v in state.items() if k in expected and v.shape != expected[k].shape]
    if mismatched and not ignore_mismatched_sizes:
        raise SizeMismatch(f"the checkpoint in {path!r} does not fit this config: "
                         + "; ".join(f"{k}: checkpoint {a}, model {b}" for k, a, b in mismatched[:3])
                         + ". ignore_mismatched_sizes=True leaves such weights freshly initialized")
    for k, _, _ in mismatched:
        del state[k]
    missing, unexpected = model.load_state_dict(state, strict=False)
    if model.config.tie_word_embeddings and "cls.predictions.decoder.weight" in missing:
        missing.remove("cls.predictions.decoder.weight")  # tied to the embeddings just loaded
    missing = [k for k in missing if k not in {m for m, _, _ in mismatched}]
    fresh = missing + [f"{k} (checkpoint {a}, model {b})" for k, a, b in mismatched]
    if fresh:
        warnings.warn(f"{cls.__name__}: {len(fresh)} weights are not in {path!r} and were freshly "
                      f"initialized: {', '.join(fresh[:6])}{' ...' if len(fresh) > 6 else ''}. "
                      "Train the model before trusting its outputs.", stacklevel=3)
    model.loading_info = {"missing_keys": list(missing), "unexpected_keys": list(unexpected),
                          "mismatched_keys": mismatched, "error_msgs": []}  # lists, in order, to read and print
    if path is not None and model.can_generate() and os.path.isfile(os.path.join(path, GENERATION_FILE)):
        model.generation_config = read_generation_config(path)
    dtype = weights_dtype(dtype if dtype is not None else torch_dtype, model.config)
    if dtype is not None:
        model.to(dtype)
    model.eval()
    if not output_loading_info:
        return model
    return model, {k: v if k == "error_msgs" else set(v) for k, v in model.loading_info.items()}  # transformers' sets


def read_generation_config(path):
    """The GenerationConfig saved beside a checkpoint's weights (generation_config.json)."""
    from transformers import GenerationConfig
    try:
        return GenerationConfig.from_pretrained(path)
    except (OSError, ValueError) as e:  # a file cut short or edited by hand
        raise damaged(os.path.join(path, GENERATION_FILE), f"{type(e).__name__}: {str(e)[:300]}") from e


def weights_dtype(dtype, config):
    """A torch dtype from what from_pretrained was given: None, a torch.dtype, its name, or "auto"."""
    if dtype == "auto":
        dtype = config.dtype or "float32"
    if dtype is None or isinstance(dtype, torch.dtype):
        return dtype
    if not (isinstance(dtype, str) and isinstance(getattr(torch, dtype, None), torch.dtype)):
        raise ValueError(f"dtype={dtype!r} is not a torch dtype: give torch.bfloat16, 'bfloat16', 'float32' or 'auto'")
    return getattr(torch, dtype)
