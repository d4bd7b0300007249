"""minibert: a compact BERT with masked-LM, next-sentence and causal-LM heads, interchangeable with
transformers' BERT, and the companion package of the course in notebooks/."""

from .config import PRESETS, BertConfig
from .heads import (BertForCausalLM, BertForMaskedLM, BertForNextSentencePrediction, BertForPreTraining,
                    BertForSequenceClassification, sample_next_token)
from .labels import check_causal_labels, shift_labels
from .model import BertModel, ModelOutput

__version__ = "0.1.0"
