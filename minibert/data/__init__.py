"""The data room: from text to batches. It imports the model room (for its label rules and checks),
never training or the course.

    corpus.py      the text: gensim's Wikipedia sample (the course), the large corpus (the checkpoints)
    tokenizer.py   a WordPiece tokenizer trained on a corpus, cached
    examples.py    documents -> examples of each objective: blocks of text, sentence pairs
    collators.py   examples -> padded batches with their labels; masked LM's masking
    blanks.py      the everyday fill-in-the-blank sentences the shipped models are judged on
"""

from .collators import DECISIONS, KEPT, MASKED, NOT_SELECTED, RANDOM, CausalLMCollator, MLMCollator, collate
from .corpus import Corpus, load_corpus, split_corpus, split_sentences
from .examples import (class_balance, make_lm_examples, make_nsp_examples, make_sop_examples, tokenize_documents,
                       truncate_seq_pair)
from .tokenizer import train_tokenizer

__all__ = ["Corpus", "load_corpus", "split_corpus", "split_sentences", "train_tokenizer", "tokenize_documents",
           "make_lm_examples", "make_nsp_examples", "make_sop_examples", "truncate_seq_pair", "class_balance",
           "collate", "CausalLMCollator", "MLMCollator", "DECISIONS", "NOT_SELECTED", "MASKED", "RANDOM", "KEPT"]
