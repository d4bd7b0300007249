"""What a model has learned, on held-out text, next to what a model that learned nothing would score.

  masked LM     accuracy and loss at the masked positions   vs. always the most frequent token,
                pseudo-perplexity (scoring.py)                 and the unigram distribution
  causal LM     next-token accuracy, loss, perplexity       vs. the same two
  NSP / SOP     accuracy on sentence pairs                  vs. always the majority class
"""

import math
from collections import Counter
from typing import NamedTuple

import torch
import torch.nn.functional as F

from ..model.losses import IGNORE_INDEX, next_token_loss, shift_labels
from .objectives import check_objective, make_collator, model_inputs

# ---- how sure a score is: one kind of interval for the whole course ----

class Interval(NamedTuple):
    """A score measured on a sample of held-out text and its 95% bootstrap interval: the range of
    scores that other samples of the same size would plausibly give. f"{iv:.1%}" -> "11.4% [10.2%, 12.6%]"."""
    estimate: float
    low: float
    high: float

    def __format__(self, spec):
        return f"{format(self.estimate, spec)} [{format(self.low, spec)}, {format(self.high, spec)}]"

    def includes(self, value):
        return self.low <= value <= self.high

    def map(self, f):
        """The interval of f(score) for an increasing f: bootstrap(losses).map(math.exp) is a perplexity."""
        return Interval(f(self.estimate), f(self.low), f(self.high))


BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 0  # a fixed seed: the same scores always get the same interval


def bootstrap(values, groups=None, samples=BOOTSTRAP_SAMPLES, level=0.95):
    """The mean of `values` (one number per scored item: 1/0 for right/wrong, a loss, the difference
    between two models on the same item) and its bootstrap interval. The held-out set is drawn again
    `samples` times with replacement, and the middle `level` of the resampled means is the interval.
    `groups` (one id per value: the block or document it came from) resamples whole groups, since
    the tokens of one block are not independent draws. To compare two models, pass the per-item
    differences: an interval that excludes 0 is a difference this test set can see."""
    values = torch.as_tensor(values, dtype=torch.float64).flatten()
    if len(values) == 0:
        raise ValueError("bootstrap needs at least one value: nothing was scored")
    groups = torch.arange(len(values)) if groups is None else torch.as_tensor(groups).flatten()
    if len(groups) != len(values):
        raise ValueError(f"bootstrap got {len(values)} values but {len(groups)} group ids: give one per value")
    groups = torch.unique(groups, return_inverse=True)[1]
    sums = torch.zeros(int(groups.max()) + 1, dtype=torch.float64).index_add_(0, groups, values)  # per group
    counts = torch.bincount(groups).double()
    picks = torch.randint(len(sums), (samples, len(sums)), generator=torch.Generator().manual_seed(BOOTSTRAP_SEED))
    means = sums[picks].sum(1) / counts[picks].sum(1)  # (samples,) the mean on each redrawn test set
    tail = (1 - level) / 2
    low, high = torch.quantile(means, torch.tensor([tail, 1 - tail], dtype=torch.float64)).tolist()
    return Interval(values.mean().item(), low, high)


def proportion(right, total):
    """`right` of `total` items right (a score reported as a count), with its bootstrap interval."""
    if not 0 <= right <= total or total == 0:
        raise ValueError(f"a proportion needs 0 <= right <= total and total > 0, got {right} of {total}")
    return bootstrap(torch.cat([torch.ones(right), torch.zeros(total - right)]))


EVALUATION_SEED = 1234  # the held-out masks and pairs are drawn from this seed: the same for every model


@torch.no_grad()
def evaluate(model, objective, examples, tokenizer, batch_size=32, seed=EVALUATION_SEED, mlm_probability=0.15,
             batches=None):
    """Held-out metrics. Masks come from a fixed seed, so two evaluations see the same masks. `batches`:
    a list that receives each batch's sums (a Counter: mlm_correct, mlm_n, clm_loss, ...), for an interval
    that redraws whole batches, since the tokens of one block are not independent (bootstrap's groups)."""
    _, pair_task, mlm = check_objective(objective)
    pairs = pair_task is not None
    was_training = model.training
    model.eval()
    collator = make_collator(objective, tokenizer, mlm_probability, seed)
    device = next(model.parameters()).device
    total = Counter()
    for i in range(0, len(examples), batch_size):
        before = total.copy()
        batch = {k: v.to(device) for k, v in collator(examples[i:i + batch_size]).items()}
        inputs = model_inputs(objective, batch)
        if objective == "clm":  # scored below, once: the model need not compute its own loss as well
            del inputs["labels"]
        out = model(**inputs, return_dict=True)
        if mlm:  # masked_only: (N, V) logits at the N masked positions, in order
            add_token_scores(total, "mlm", out.masked_logits, batch["labels"][out.masked_positions])
        if objective == "clm":  # position t predicts t+1: the labels move, not the (much larger) logits
            targets = shift_labels(batch["labels"])
            total["clm_loss"] += next_token_loss(out.logits, batch["labels"], reduction="sum").item()
            total["clm_correct"] += (out.logits.argmax(-1) == targets).sum().item()  # never equal to -100
            total["clm_n"] += (targets != IGNORE_INDEX).sum().item()
        if pairs:
            logits = out.seq_relationship_logits if mlm else out.logits
            labels = batch["next_sentence_label"]
            total[f"{pair_task}_loss"] += F.cross_entropy(logits.float(), labels, reduction="sum").item()
            total[f"{pair_task}_correct"] += (logits.argmax(-1) == labels).sum().item()
            total[f"{pair_task}_n"] += len(labels)
        if batches is not None:
            batches.append(Counter({k: v - before[k] for k, v in total.items()}))
    model.train(was_training)
    metrics = {}
    for task in ("mlm", "clm", "nsp", "sop"):
        if total[f"{task}_n"]:
            n = total[f"{task}_n"]
            metrics[f"{task}_loss"] = total[f"{task}_loss"] / n
            metrics[f"{task}_accuracy"] = total[f"{task}_correct"] / n
    if "clm_loss" in metrics:
        metrics["clm_perplexity"] = math.exp(metrics["clm_loss"])
    return metrics


def add_token_scores(total, task, logits, targets):
    total[f"{task}_loss"] += F.cross_entropy(logits.float(), targets, reduction="sum").item()
    total[f"{task}_correct"] += (logits.argmax(-1) == targets).sum().item()
    total[f"{task}_n"] += len(targets)


def target_tokens(objective, examples, tokenizer):
    """The tokens a model is asked to predict: every token after the first for a causal LM ([SEP]
    included: it ends the text), every ordinary token for masked LM (masks are drawn uniformly)."""
    if objective == "clm":
        return [t for e in examples for t in e["input_ids"][1:]]
    special = set(tokenizer.all_special_ids)
    return [t for e in examples for t in e["input_ids"] if t not in special]


def baselines(objective, train_examples, heldout_examples, tokenizer):
    """Scores of models that ignore the input: the bar a trained model must clear.

    most_frequent_token_accuracy: always answer the commonest training token.
    unigram_loss / unigram_perplexity: answer with the training frequencies (add-one smoothed).
    majority_class_accuracy: always answer the commoner training label.
    """
    _, pair_task, mlm = check_objective(objective)
    pairs = pair_task is not None
    out = {}
    if mlm or objective == "clm":
        task = "clm" if objective == "clm" else "mlm"
        counts = Counter(target_tokens(objective, train_examples, tokenizer))
        total, vocab = sum(counts.values()), len(tokenizer)
        top_token = counts.most_common(1)[0][0]
        targets = target_tokens(objective, heldout_examples, tokenizer)
        nll = -sum(math.log((counts[t] + 1) / (total + vocab)) for t in targets) / len(targets)
        out[f"{task}_most_frequent_token"] = tokenizer.convert_ids_to_tokens(top_token)
        out[f"{task}_most_frequent_token_accuracy"] = sum(t == top_token for t in targets) / len(targets)
        out[f"{task}_unigram_loss"] = nll
        if objective == "clm":
            out["clm_unigram_perplexity"] = math.exp(nll)
    if pairs:
        ones = sum(e["next_sentence_label"] for e in train_examples) / len(train_examples)
        majority = int(ones > 0.5)
        out[f"{pair_task}_majority_class"] = majority
        out[f"{pair_task}_majority_class_accuracy"] = (
            sum(e["next_sentence_label"] == majority for e in heldout_examples) / len(heldout_examples))
    return out


BASELINE_OF = {  # metric -> (its baseline, how to print both)
    "mlm_accuracy": ("mlm_most_frequent_token_accuracy", "most frequent token"),
    "mlm_loss": ("mlm_unigram_loss", "unigram"),
    "clm_accuracy": ("clm_most_frequent_token_accuracy", "most frequent token"),
    "clm_perplexity": ("clm_unigram_perplexity", "unigram"),
    "nsp_accuracy": ("nsp_majority_class_accuracy", "majority class"),
    "sop_accuracy": ("sop_majority_class_accuracy", "majority class"),
}


def format_metrics(metrics, base):
    """One line: each metric with its trivial baseline beside it."""
    parts = []
    for name, (base_name, what) in BASELINE_OF.items():
        if name in metrics:
            fmt = (lambda x: f"{x:.1%}") if "accuracy" in name else (lambda x: f"{x:.2f}")
            beside = f" ({what} {fmt(base[base_name])})" if base_name in base else ""
            parts.append(f"{name.replace('_', ' ')} {fmt(metrics[name])}{beside}")
    return " | ".join(parts)
