"""The model room: BERT as transformers builds it, and what it needs. It imports torch, never the rooms
above it (data, training, the course).

    config.py      BertConfig, the presets, the activation table
    bert.py        the encoder: embeddings, attention, layers, BertModel (the file to read first)
    heads.py       the task heads on BertModel: masked LM, next sentence, pretraining, classification,
                   causal LM
    losses.py      the heads' losses and the rules of their labels: -100, shifting for next-token
                   prediction, the check for labels shifted twice
    A forward pass with labels reads those three files.
    helpers.py     the heads' helper methods (get_loss, fill_mask, predict_*, *_from_text) and encode_text
    generation.py  generate(): greedy, sampling, beam search
    scoring.py     pseudo-log-likelihoods of a masked LM
    outputs.py     ModelOutput, the outputs transformers' code reads
    checks.py      input checks that name the argument at fault
    compat.py      the habits transformers' tools expect of a model (from_pretrained, checkpointing, ...);
                   none changes what a forward pass computes
    hub.py         checkpoint files: save_pretrained / from_pretrained in transformers' format
"""

from .bert import BertEmbeddings, BertLayer, BertModel, attention, attention_bias
from .config import PRESETS, BertConfig
from .heads import (BertForCausalLM, BertForMaskedLM, BertForNextSentencePrediction, BertForPreTraining,
                    BertForSequenceClassification, BertLMHeadModel)
from .outputs import ModelOutput

__all__ = ["BertConfig", "PRESETS", "BertModel", "BertEmbeddings", "BertLayer", "attention", "attention_bias",
           "ModelOutput", "BertForMaskedLM", "BertForNextSentencePrediction", "BertForPreTraining",
           "BertForSequenceClassification", "BertForCausalLM", "BertLMHeadModel"]
