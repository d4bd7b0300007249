"""The training room: objectives, the trainer, what a model has learned. It imports the model and
data rooms, never the course.

    objectives.py  the six objectives: the class, the batches and the head's arguments of each
    trainer.py     TrainArgs, Trainer and pretrain(): one loop for every objective, resumable
    metrics.py     held-out scores beside trivial baselines, with bootstrap intervals
    compare.py     two models on the same items: what differs, the paired difference, the verdict
    probe.py       linear probes on frozen features
    finetune.py    fine-tuning a classifier from pretrained or random weights
"""

from .compare import Comparison, block_documents, compare
from .metrics import Interval, baselines, bootstrap, evaluate, proportion
from .objectives import OBJECTIVES
from .trainer import PretrainResult, TrainArgs, Trainer, load_result, pretrain

__all__ = ["OBJECTIVES", "TrainArgs", "Trainer", "PretrainResult", "pretrain", "load_result", "evaluate",
           "baselines", "bootstrap", "proportion", "Interval", "compare", "Comparison", "block_documents"]
