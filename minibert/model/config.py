"""BertConfig: the hyperparameters of a BERT model, with transformers' field names and defaults.

A `config.json` written by transformers loads here (unknown keys are ignored) and ours loads there.
Every value is checked when the config is made: a value that cannot work (a width of 0, a dropout of
1.5, "128" as a string from a hand-edited config.json) is named at once, not as a NaN hours later.
"""

import dataclasses
import difflib
import json
import os
from dataclasses import dataclass
from functools import partial

import torch.nn.functional as F

from ..values import check_value, is_number, is_whole


# ---- checking values: a table saying what each field must be (check_value: values.py) ----
POSITIVE = (lambda v: is_whole(v) and v > 0, "a whole number above 0")
DROPOUT = (lambda v: is_number(v) and 0 <= v < 1, "a probability in [0, 1) (0 turns dropout off)")
FLAG = (lambda v: isinstance(v, bool), "True or False (JSON true or false, without quotes)")
FIELD_RULES = {  # field: (test, what the value must be); the token ids are checked against vocab_size below
    "vocab_size": POSITIVE, "hidden_size": POSITIVE, "num_hidden_layers": POSITIVE, "num_attention_heads": POSITIVE,
    "intermediate_size": POSITIVE, "max_position_embeddings": POSITIVE, "type_vocab_size": POSITIVE,
    "num_labels": POSITIVE,
    "hidden_dropout_prob": DROPOUT, "attention_probs_dropout_prob": DROPOUT,
    "classifier_dropout": (lambda v: v is None or DROPOUT[0](v), "None or " + DROPOUT[1]),
    "layer_norm_eps": (lambda v: is_number(v) and v > 0, "a number above 0, such as 1e-12: LayerNorm divides by "
                                                         "sqrt(variance + eps), and 0 gives NaN on a constant vector"),
    "initializer_range": (lambda v: is_number(v) and v > 0, "a number above 0, such as 0.02 (the std of the init)"),
    "is_decoder": FLAG, "add_cross_attention": FLAG, "tie_word_embeddings": FLAG, "use_cache": FLAG,
    "output_attentions": FLAG, "output_hidden_states": FLAG, "return_dict": FLAG,
}
TOKEN_IDS = ("pad_token_id", "bos_token_id", "eos_token_id")  # None, or an id of the vocabulary
ACT2FN = {  # hidden_act names -> the functions the model applies
    "gelu": F.gelu,  # the exact erf form, as in the original BERT
    "gelu_new": partial(F.gelu, approximate="tanh"),
    "gelu_pytorch_tanh": partial(F.gelu, approximate="tanh"),
    "relu": F.relu,
    "silu": F.silu,
    "swish": F.silu,
}


@dataclass
class BertConfig:
    is_encoder_decoder = False  # class attributes, not fields
    sub_configs = {}  # no nested configs (a vision-language model has some)
    vocab_size: int = 30522  # WordPiece vocabulary (bert-base-uncased has 30522)
    hidden_size: int = 768  # width of every token vector
    num_hidden_layers: int = 12  # number of transformer blocks
    num_attention_heads: int = 12  # heads per block; hidden_size must divide evenly
    intermediate_size: int = 3072  # width of the feed-forward layer, usually 4 * hidden_size
    hidden_act: str = "gelu"  # activation of the feed-forward layer and of the MLM head
    hidden_dropout_prob: float = 0.1  # dropout on embeddings and after each sub-layer
    attention_probs_dropout_prob: float = 0.1  # dropout on the attention weights
    max_position_embeddings: int = 512  # longest sequence the position table covers
    type_vocab_size: int = 2  # segment ids: 0 for sentence A, 1 for sentence B
    initializer_range: float = 0.02  # std of the normal init of weights
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0
    is_decoder: bool = False  # causal self-attention (set by BertForCausalLM)
    add_cross_attention: bool = False  # decoder blocks also attend to encoder_hidden_states
    tie_word_embeddings: bool = True  # the MLM decoder reuses the input embedding matrix
    num_labels: int = 2  # classes of BertForSequenceClassification
    problem_type: str | None = None  # its loss: see PROBLEM_TYPES; None: chosen from num_labels and the labels
    classifier_dropout: float | None = None  # None: use hidden_dropout_prob
    use_cache: bool = True  # decoders return past_key_values by default
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    output_attentions: bool = False  # what a forward returns when not told: attention weights,
    output_hidden_states: bool = False  # every layer's output,
    return_dict: bool = True  # a ModelOutput (False: a tuple)
    dtype: str | None = None  # the dtype the weights were saved in ("float32"), as transformers records it
    attn_implementation: str | None = None  # "eager" (spelled out), "sdpa" (fused), None: the faster here
    id2label: dict | None = None  # class id -> name, e.g. {0: "negative", 1: "positive"}; None: LABEL_0, LABEL_1, ...
    label2id: dict | None = None  # name -> class id; None: the reverse of id2label
    model_type: dataclasses.InitVar[str] = "bert"  # what transformers' AutoConfig reads: taken, checked, not stored

    def __post_init__(self, model_type="bert"):
        if model_type != "bert":
            raise ValueError(f"model_type={model_type!r}: a minibert BertConfig describes a BERT model ('bert')")
        for name, (ok, must_be) in FIELD_RULES.items():
            check_value(name, getattr(self, name), ok, must_be)
        for name in TOKEN_IDS:
            check_value(name, getattr(self, name), lambda v: v is None or (is_whole(v) and 0 <= v < self.vocab_size),
                        f"None or a token id in 0..{self.vocab_size - 1} (vocab_size={self.vocab_size})")
        if self.hidden_size % self.num_attention_heads:
            raise ValueError(f"hidden_size ({self.hidden_size}) must be a multiple of "
                             f"num_attention_heads ({self.num_attention_heads})")
        if self.hidden_act not in ACT2FN:
            raise ValueError(f"hidden_act {self.hidden_act!r} is not supported; use one of {tuple(ACT2FN)}")
        self.id2label, self.label2id = label_maps(self.id2label, self.label2id, self.num_labels)
        self.num_labels = len(self.id2label)
        if self.problem_type not in PROBLEM_TYPES:
            raise ValueError(f"problem_type={self.problem_type!r} is not one of {PROBLEM_TYPES}")
        check_attention(self.attn_implementation)
        if self.add_cross_attention and not self.is_decoder:
            raise ValueError("add_cross_attention=True needs is_decoder=True: only a decoder attends to an encoder")
        check_size(self)

    # ---- presets sized for this course: the shapes of Google's small BERTs (Turc et al., 2019) ----
    # Without dropout: the course's runs are minutes long and see each sentence a few times, too
    # little to overfit, and dropout would slow the early learning we want to watch.
    @classmethod
    def tiny(cls, **overrides):
        """2 layers, width 128: trains in seconds; used by tests and the notebooks."""
        return cls(**{**dict(hidden_size=128, num_hidden_layers=2, num_attention_heads=2, intermediate_size=512,
                             **NO_DROPOUT), **overrides})

    @classmethod
    def mini(cls, **overrides):
        """4 layers, width 256: for minutes-long CPU runs from the command line."""
        return cls(**{**dict(hidden_size=256, num_hidden_layers=4, num_attention_heads=4, intermediate_size=1024,
                             **NO_DROPOUT), **overrides})

    @classmethod
    def small(cls, **overrides):
        """4 layers, width 512: for a longer CPU run or a GPU."""
        return cls(**{**dict(hidden_size=512, num_hidden_layers=4, num_attention_heads=8, intermediate_size=2048,
                             **NO_DROPOUT), **overrides})

    @classmethod
    def base(cls, **overrides):
        """bert-base: 12 layers, width 768 (110M parameters with a 30522 vocabulary)."""
        return cls(**overrides)

    @classmethod
    def preset(cls, name, **overrides):
        if name not in PRESETS:
            raise ValueError(f"unknown preset {name!r}; choose one of {PRESETS}")
        return getattr(cls, name)(**overrides)

    # ---- json, in the layout of transformers' config.json ----
    @classmethod
    def from_dict(cls, d, **overrides):
        """Keys of `d` that BertConfig does not know are ignored (a transformers config.json has many);
        an unknown override is a typo, and is refused."""
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(overrides) - known)
        if unknown:
            close = difflib.get_close_matches(unknown[0], known, n=1)
            raise TypeError(f"unknown config field{'s' * (len(unknown) > 1)} {', '.join(map(repr, unknown))}"
                            f"{f' (did you mean {close[0]!r}?)' if close else ''}; the fields of BertConfig are: "
                            f"{', '.join(sorted(known))}")
        if "torch_dtype" in d and "dtype" not in d:  # transformers' older name for it
            d = {**d, "dtype": d["torch_dtype"]}
        if "id2label" in d and "num_labels" not in d:  # transformers stores the classes as a label map
            d = {**d, "num_labels": len(d["id2label"])}
        if "id2label" not in overrides and overrides.get("num_labels", len(d.get("id2label") or ())) != len(
                d.get("id2label") or ()):  # another number of classes: new names, as in transformers
            d = {k: v for k, v in d.items() if k not in ("id2label", "label2id")}
        return cls(**{k: v for k, v in {**d, **overrides}.items() if k in known})

    @classmethod
    def from_json_file(cls, path, **overrides):
        with open(path, encoding="utf-8") as f:
            return cls.from_dict(json.load(f), **overrides)

    @property
    def use_return_dict(self):
        return self.return_dict

    def output_switches(self, output_attentions, output_hidden_states, return_dict):
        """A forward's three switches: each one given wins, else the config's (transformers' rule)."""
        return (self.output_attentions if output_attentions is None else output_attentions,
                self.output_hidden_states if output_hidden_states is None else output_hidden_states,
                self.return_dict if return_dict is None else return_dict)

    def to_dict(self):
        return {"model_type": "bert", **dataclasses.asdict(self)}

    def to_diff_dict(self):
        """The fields that differ from BertConfig()'s defaults, and model_type."""
        default = BertConfig().to_dict()
        return {k: v for k, v in self.to_dict().items() if k == "model_type" or v != default[k]}

    def to_json_string(self, use_diff=True):
        """The config as config.json holds it; with use_diff (transformers' default), to_diff_dict()."""
        return json.dumps(self.to_diff_dict() if use_diff else self.to_dict(), indent=2, sort_keys=True) + "\n"

    def get_text_config(self, decoder=None, encoder=None):
        """The config of the text model: this one (transformers asks, for models with several parts)."""
        return self

    @property
    def _attn_implementation(self):  # the name transformers' internals and tests use
        return self.attn_implementation

    @_attn_implementation.setter
    def _attn_implementation(self, name):
        self.attn_implementation = check_attention(name)

    def __iter__(self):  # the field names, as iterating a transformers config gives
        return iter(f.name for f in dataclasses.fields(self))

    def save(self, folder, architecture, dtype):
        """config.json, with the architecture that reads it and the dtype to load the weights in."""
        d = {"architectures": [architecture], **self.to_dict(), "dtype": str(dtype).removeprefix("torch.")}
        with open(os.path.join(folder, "config.json"), "w", encoding="utf-8") as f:
            json.dump(d, f, indent=2, sort_keys=True)


ATTENTION_IMPLEMENTATIONS = (None, "eager", "sdpa")


def check_size(config):
    """Refuse a config whose weights alone would not fit in this machine's memory, before anything is
    allocated: a vocab_size or num_hidden_layers with a few zeros too many would take minutes to fail."""
    import psutil
    h = config.hidden_size
    layer = (8 if config.add_cross_attention else 4) * h * h + 2 * h * config.intermediate_size  # attention, feed-forward
    n = (config.vocab_size + config.max_position_embeddings + config.type_vocab_size) * h + config.num_hidden_layers * layer
    need, total = 4 * n, psutil.virtual_memory().total
    if need > total:
        raise ValueError(f"a model of this config has {n / 1e9:,.1f} billion weights ({need / 2**30:,.0f} GB as float32: "
                         f"vocab_size {config.vocab_size:,}, {config.num_hidden_layers:,} layers of width {h:,}), more "
                         f"than this machine's memory ({total / 2**30:,.0f} GB): check those sizes")


def check_attention(name):
    """name, if minibert has that attention (transformers' wording when it does not)."""
    if name not in ATTENTION_IMPLEMENTATIONS:
        raise ValueError(f'Specified `attn_implementation="{name}"` is not supported: minibert has "eager" (spelled '
                         'out), "sdpa" (fused) and None (the faster of the two for each batch)')
    return name


PROBLEM_TYPES = (None, "regression", "single_label_classification", "multi_label_classification")


def label_maps(id2label, label2id, num_labels):
    """id2label and label2id as transformers builds them: names LABEL_0, LABEL_1, ... unless given, ids
    as whole numbers 0..n-1 (config.json stores them as strings), and each map the other's reverse."""
    if id2label is None:
        id2label = {i: f"LABEL_{i}" for i in range(num_labels)}
    elif not isinstance(id2label, dict):
        raise ValueError(f"id2label must be a dict of class id -> name, got {type(id2label).__name__}")
    else:
        id2label = {int(k): v for k, v in id2label.items()}
        if sorted(id2label) != list(range(len(id2label))):
            raise ValueError(f"id2label must name the classes 0..{len(id2label) - 1}, got ids {sorted(id2label)}")
        if num_labels not in (2, len(id2label)):  # 2 is the default: then id2label decides
            raise ValueError(f"num_labels={num_labels} but id2label names {len(id2label)} classes: give one of them")
    label2id = {v: k for k, v in id2label.items()} if label2id is None else {k: int(v) for k, v in label2id.items()}
    return id2label, label2id


def as_minibert_config(config):
    """A minibert BertConfig; a transformers BertConfig is read through its dict, as config.json would be."""
    if isinstance(config, BertConfig):
        return config
    if getattr(config, "model_type", None) == "bert" and hasattr(config, "to_dict"):
        return BertConfig.from_dict(config.to_dict())
    raise TypeError(f"config must be a BertConfig (minibert's or transformers'), got {type(config).__name__}")


PRESETS = ("tiny", "mini", "small", "base")
NO_DROPOUT = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
