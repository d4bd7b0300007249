"""Exercises and quiz of notebook 08, comparing pretraining objectives: sentence vectors and honest baselines."""

from collections import Counter

import torch

from ..training.probe import mean_pool as reference_mean_pool
from .framework import Question, Slip, exercise, expect, judge_answer, tensor_of_shape

EX = "08"


MEAN_POOL_SLIPS = [  # on the case (hidden_states, attention_mask)
    Slip("padding included", lambda hidden, mask: hidden.mean(1),
         "padding is included: a mean over every position counts the [PAD] vectors; weight the tokens by "
         "attention_mask and divide by the number of real tokens"),
    Slip("padded length", lambda hidden, mask: (hidden * mask[..., None].float()).sum(1) / hidden.shape[1],
         "divide by the number of REAL tokens of each row (attention_mask.sum(1)), not by the padded length"),
    Slip("[CLS]", lambda hidden, mask: hidden[:, 0],
         "that is the [CLS] vector; the exercise asks for the mean of all real tokens"),
]


@exercise(EX, 1, "mean pooling without padding")
def check_mean_pool(mean_pool):
    """mean_pool(hidden_states, attention_mask) -> (B, C): the mean of each row's real token vectors."""
    def judge():
        g = torch.Generator().manual_seed(0)
        hidden = torch.randn(3, 5, 4, generator=g)
        mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
        hidden[mask == 0] = 10.0  # what padding vectors look like matters: they must not count
        got = mean_pool(hidden.clone(), mask.clone())
        form = tensor_of_shape((3, 4), "return one vector per sequence, shape (batch, hidden) = (3, 4): average over "
                                       "the tokens (axis 1)")
        return judge_answer(got, reference_mean_pool(hidden, mask), MEAN_POOL_SLIPS, (hidden, mask),
                            same=lambda a, b: torch.allclose(a, b, atol=1e-5), form=form,
                            fallback="multiply by attention_mask[..., None], sum over the tokens, divide by "
                                     "attention_mask.sum(1)")
    return judge


def share_of(labels, label):
    return sum(y == label for y in labels) / len(labels)


def commonest(labels):
    return Counter(labels).most_common(1)[0][0]


MAJORITY_SLIPS = [  # on the case (train_labels, test_labels)
    Slip("majority of the test labels", lambda train, test: share_of(test, commonest(test)),
         "you chose the majority class on the TEST labels: that peeks at the answers. Pick it on the training "
         "labels, then score it on the test labels"),
    Slip("share of the training labels", lambda train, test: share_of(train, commonest(train)),
         "that is the majority's share of the training labels; score the majority answer on the test labels"),
    Slip("the label itself", lambda train, test: commonest(train),
         "that is the class itself; return how often answering it is right on the test labels"),
]


def same_answer(got, value):
    """An accuracy agrees to 1e-9; a label must be equal."""
    return abs(got - value) < 1e-9 if isinstance(value, float) else got == value


def as_number(got):
    return got.item() if isinstance(got, torch.Tensor) else got


@exercise(EX, 2, "the majority-class baseline")
def check_majority_baseline(majority_baseline):
    """majority_baseline(train_labels, test_labels) -> test accuracy of always answering the commonest TRAIN label."""
    def judge():
        train, test = [0, 0, 0, 1, 1, 2], [1, 1, 1, 0, 2]  # train's majority (0) is rare in test
        right = share_of(test, commonest(train))
        got = as_number(majority_baseline(list(train), list(test)))
        hint = judge_answer(got, right, MAJORITY_SLIPS, (train, test), same=same_answer,
                            form=expect(lambda got: isinstance(got, (int, float)),
                                        "return the accuracy, a number between 0 and 1"),
                            fallback="find the most common training label, then the share of test labels equal to it")
        if hint is None and not abs(as_number(majority_baseline([2, 2, 1], [2, 1, 1, 1])) - 0.25) < 1e-9:
            return "this must hold for any labels, not just 0 and 1"
        return hint
    return judge


QUIZ = {EX: {
    "q1": Question(
        "In the live runs, the causal LM made fewer steps on smaller batches than the masked models (the budget "
        "table of section 1), and each run took as many minutes as its steps needed. What do the live runs hold "
        "equal?",
        {"A": "the steps: each objective makes the same number of optimizer updates, the fairest budget there is",
         "B": "the tokens: the causal LM reads fewer sequences but learns from every position, which evens it out",
         "C": "the wall time: each run trains for about the same number of minutes on the same machine",
         "D": "none of the three: the masked runs made more steps on more tokens, and the minutes differ too"},
        "D",
        "the live runs hold neither the steps nor the tokens, and their minutes are whatever each run took on a "
        "shared machine; a comparison must say which budget it holds, and the shipped masked checkpoints hold the "
        "steps and the tokens (the same steps and batch shape each; bert-clm had fewer tokens).",
        {"A": "the causal run made fewer steps than the masked ones.",
         "B": "the masked runs saw several times as many tokens; scoring every position is what makes a causal step "
              "cost more, not what makes the token counts equal.",
         "C": "the minutes differ from run to run: a short live run is a teaching budget, not a matched one."}),
    "q2": Question(
        "Suppose the causal LM's held-out loss (next token) is lower than the masked LM's held-out loss (masked "
        "tokens), both trained on the same text. Why does that not make the causal LM the better model?",
        {"A": "a lower loss counts only once the gap is wider than the intervals, and these two have none yet",
         "B": "the losses score different predictions: the next token from the left, a hidden token from both sides",
         "C": "a masked-LM loss covers the masked positions only; rescaled by their share it would be far lower",
         "D": "the masked LM read more tokens, so its loss has to be divided by the ratio of the budgets first"}, "B",
        "each loss measures its own task; compare objectives on a common task instead (sections 3 and 4).",
        {"A": "even a gap far beyond any interval would mean nothing: a next-token loss and a masked-token loss are "
              "not on one scale.",
         "C": "a loss is an average per predicted token; no rescaling turns one task's loss into the other's.",
         "D": "no division by a budget makes two different tasks comparable; budgets matter when the task is the "
              "same."}),
    "q3": Question(
        "On 'which document?', the shipped checkpoints' frozen features score far above the majority class. What "
        "else in the table does a fair reading of that need?",
        {"A": "nothing more: a score that far above the majority class shows that pretraining taught the topics",
         "B": "the order probe: a model that knows topics must also tell the order, or the topic score is luck",
         "C": "the untrained model and bag of words: the gain over random weights, and the bar set by word counts",
         "D": "a probe with a hidden layer: a linear probe understates what frozen features hold, so read that one"},
        "C",
        "random weights already give useful features, and word counts beat every model: the gain over the untrained "
        "model of the same shape is what pretraining gave.",
        {"A": "random transformer features also score far above the majority class: much of that gap is not "
              "pretraining's.",
         "B": "topic and order are different tasks; a probe score is read against its own controls, not another task.",
         "D": "a bigger probe can learn part of the task itself from any features; the controls, read with the same "
              "linear probe, are what make the score mean something."}),
    "q4": Question(
        "Exercise 08.1 wrote mean pooling, the sentence vector of the probes. What does this program, using "
        "minibert's own mean_pool, print last?",
        {"A": "[4.0, 3.0]",
         "B": "[4.0, 5.0]",
         "C": "[4.0, 2.0]",
         "D": "[2.0, 1.0]"}, "A",
        "the mean over the real tokens only: (2 + 4 + 6) / 3 and (1 + 5) / 2; the padding vector (9) is left out.",
        {"B": "that counts the padding vector: (1 + 5 + 9) / 3.",
         "C": "that leaves padding out of the sum but divides by the padded length: (1 + 5) / 3.",
         "D": "those are the first ([CLS]) vectors, not the mean."},
        code='''import torch
from minibert.training.probe import mean_pool

hidden = torch.tensor([[[2.0], [4.0], [6.0]], [[1.0], [5.0], [9.0]]])  # (B=2, T=3, C=1)
mask = torch.tensor([[1, 1, 1], [1, 1, 0]])  # the second row's last token is padding
print(mean_pool(hidden, mask).flatten().tolist())
'''),
    "q5": Question(
        "Asked to predict from the left, a masked model has a perplexity a little above the unigram model's on the "
        "same tokens, and the 95% interval of the ratio of the two perplexities includes 1. What may you conclude?",
        {"A": "the masked model is worse than word frequencies: its perplexity is the higher of the two",
         "B": "the two are equal: the masked model has learned the word frequencies and nothing else",
         "C": "this test cannot tell them apart: it shows neither one better than the other",
         "D": "the interval is too wide to help: compare the two perplexities on their own instead"},
        "C",
        "an interval that includes 1 (or 0, for a difference) means this test set cannot tell the two apart; that "
        "is not the same as showing that they are equal (section 3).",
        {"A": "the estimate is higher, but other test sets of the same size could plausibly put it lower: the "
              "interval includes 1.",
         "B": "'cannot tell' is not 'equal': a larger test set might still separate them, either way.",
         "D": "without the interval a small gap looks like a finding; the interval is what says it is not one."}),
}}
