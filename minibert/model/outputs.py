"""What the models return: transformers' output classes, as dataclasses that read like ordered dicts."""

import dataclasses
from dataclasses import dataclass

import torch


class FieldsOutput:
    """The dict side of an output dataclass: a field by name (out.loss, out["loss"]) or by position
    among the fields that are set, in their order (out[0], out[1:], out.to_tuple()); iterating gives
    the names of those fields, as a dict's keys do (and as transformers' outputs do)."""

    def keys(self):
        """The names of the fields that are set, in order."""
        return [f.name for f in dataclasses.fields(self) if getattr(self, f.name) is not None]

    def items(self):
        return [(k, getattr(self, k)) for k in self.keys()]

    def to_tuple(self):
        return tuple(getattr(self, k) for k in self.keys())

    def __getitem__(self, key):  # out["logits"] by name, out[0] or out[1:] by position
        if isinstance(key, str):
            if key not in {f.name for f in dataclasses.fields(self)}:
                raise KeyError(f"{type(self).__name__} has no field {key!r}; the fields set here are {self.keys()}")
            return getattr(self, key)
        return self.to_tuple()[key]

    def __iter__(self):  # the names, as iterating a dict (or transformers' output) gives its keys
        return iter(self.keys())

    def __len__(self):
        return len(self.keys())

    def __contains__(self, key):  # "loss" in out
        return key in self.keys()


@dataclass
class ModelOutput(FieldsOutput):
    """What every model returns, in the order of transformers' fields; a field a model does not
    produce stays None. A forward called with return_dict=False returns out.to_tuple() itself."""
    loss: torch.Tensor | None = None
    logits: torch.Tensor | None = None
    prediction_logits: torch.Tensor | None = None  # BertForPreTraining: MLM logits
    seq_relationship_logits: torch.Tensor | None = None  # BertForPreTraining: NSP logits
    last_hidden_state: torch.Tensor | None = None
    pooler_output: torch.Tensor | None = None
    past_key_values: tuple | None = None
    hidden_states: tuple | None = None
    attentions: tuple | None = None
    cross_attentions: tuple | None = None
    # minibert's own fields come last, so that positions agree with transformers' outputs
    mlm_loss: torch.Tensor | None = None  # BertForPreTraining: the two parts of loss
    nsp_loss: torch.Tensor | None = None
    masked_logits: torch.Tensor | None = None  # masked_only=True: (N, V), one row per labelled position...
    masked_positions: torch.Tensor | None = None  # ...where this (B, T) boolean mask is True, in reading order


def model_output(out, return_dict):
    """transformers' convention: return_dict=False returns a tuple (ModelOutput.to_tuple), else the ModelOutput."""
    return out.to_tuple() if return_dict is False else out
