"""Run by test_distributed.py under torchrun: train, and record what each process saw and held."""

import json
import os
import sys

import torch

import minibert

out = sys.argv[1]
# "minutes": a time budget as well (each step then broadcasts how far the run is), with saves on the way
budget = dict(minutes=10, save_every=2) if sys.argv[2:] == ["minutes"] else {}
corpus = minibert.load_corpus()
docs = minibert.Corpus(corpus[:40], corpus.titles[:40])
tokenizer = minibert.train_tokenizer(docs, vocab_size=1500)
config = minibert.BertConfig.tiny(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128,
                                  max_position_embeddings=64)
trace = {"checksums": [], "examples": []}


def record(trainer):
    trace["checksums"].append(sum(p.double().sum().item() for p in trainer.model.parameters()))
    trace["examples"] += trainer.batch_indices(trainer.step - 1)


result = minibert.pretrain("mlm+nsp", config=config, corpus=docs, tokenizer=tokenizer, steps=6, batch_size=4,
                           max_length=64, eval_examples=16, progress=False, verbose=False, callback=record,
                           out=os.path.join(out, "run"), **budget)
rank = torch.distributed.get_rank()
trace["world_size"] = torch.distributed.get_world_size()
trace["final"] = {k: v.tolist() for k, v in result.model.state_dict().items() if k.endswith("LayerNorm.weight")}
with open(os.path.join(out, f"rank{rank}.json"), "w") as f:
    json.dump(trace, f)
