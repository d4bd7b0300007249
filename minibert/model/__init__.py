"""The model room: BERT as transformers builds it, and what it needs. It imports torch, never the rooms
above it (data, training, the course).

    config.py      BertConfig, the presets, the activation table
    bert.py        the encoder: embeddings, attention, layers, BertModel (the file to read first; of this
                   room it imports only config, checks and outputs)
    heads.py       the classes users build: BertModel and the heads (masked LM, next sentence, pretraining,
                   classification, causal LM), each bert.py's modules with compat.py's habits
    helpers.py     the heads' helper methods (get_loss, fill_mask, predict_*, *_from_text) and encode_text
    losses.py      the heads' losses: cross-entropy with -100 and shifting, classification
    generation.py  generate(): greedy, sampling, beam search
    labels.py      the label rules: -100, shifting for next-token prediction
    scoring.py     pseudo-log-likelihoods of a masked LM
    outputs.py     ModelOutput, the outputs transformers' code reads
    checks.py      input checks that name the argument at fault
    fast.py        the speed tricks, with their reasons, switched on from outside by fast.speed_up
    compat.py      the habits transformers' tools expect of a model (from_pretrained, checkpointing, ...)
    hub.py         checkpoint files: save_pretrained / from_pretrained in transformers' format
"""

from .bert import BertEmbeddings, BertLayer, attention, attention_bias
from .config import PRESETS, BertConfig
from .heads import (BertForCausalLM, BertModel, BertForMaskedLM, BertForNextSentencePrediction, BertForPreTraining,
                    BertForSequenceClassification, BertLMHeadModel)
from .outputs import ModelOutput

__all__ = ["BertConfig", "PRESETS", "BertModel", "BertEmbeddings", "BertLayer", "attention", "attention_bias",
           "ModelOutput", "BertForMaskedLM", "BertForNextSentencePrediction", "BertForPreTraining",
           "BertForSequenceClassification", "BertForCausalLM", "BertLMHeadModel"]
