"""Exercises and quiz of notebook 08, comparing pretraining objectives: sentence vectors and honest baselines."""

import torch

from ..probe import mean_pool as reference_mean_pool
from . import Question, run_check

EX = "08"


def check_mean_pool(mean_pool):
    """mean_pool(hidden_states, attention_mask) -> (B, C): the mean of each row's real token vectors."""
    def judge():
        g = torch.Generator().manual_seed(0)
        hidden = torch.randn(3, 5, 4, generator=g)
        mask = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 1, 0, 0], [1, 1, 0, 0, 0]])
        hidden[mask == 0] = 10.0  # what padding vectors look like matters: they must not count
        got = mean_pool(hidden.clone(), mask.clone())
        m = mask[..., None].float()
        expected = reference_mean_pool(hidden, mask)
        if not isinstance(got, torch.Tensor) or tuple(got.shape) != (3, 4):
            return "return one vector per sequence, shape (batch, hidden) = (3, 4): average over the tokens (axis 1)"
        if torch.allclose(got, expected, atol=1e-5):
            return None
        if torch.allclose(got, hidden.mean(1), atol=1e-5):
            return ("padding is included: a mean over every position counts the [PAD] vectors; weight the tokens "
                    "by attention_mask and divide by the number of real tokens")
        if torch.allclose(got, (hidden * m).sum(1) / hidden.shape[1], atol=1e-5):
            return "divide by the number of REAL tokens of each row (attention_mask.sum(1)), not by the padded length"
        if torch.allclose(got, hidden[:, 0], atol=1e-5):
            return "that is the [CLS] vector; the exercise asks for the mean of all real tokens"
        return "multiply by attention_mask[..., None], sum over the tokens, divide by attention_mask.sum(1)"
    return run_check(f"{EX}.1 mean pooling without padding", judge)


def check_majority_baseline(majority_baseline):
    """majority_baseline(train_labels, test_labels) -> test accuracy of always answering the commonest TRAIN label."""
    def judge():
        train, test = [0, 0, 0, 1, 1, 2], [1, 1, 1, 0, 2]  # train's majority (0) is rare in test
        got = majority_baseline(list(train), list(test))
        if isinstance(got, torch.Tensor):
            got = got.item()
        if not isinstance(got, (int, float)):
            return "return the accuracy, a number between 0 and 1"
        if abs(got - 0.2) < 1e-9:
            more = majority_baseline([2, 2, 1], [2, 1, 1, 1])
            if isinstance(more, torch.Tensor):
                more = more.item()
            return None if abs(more - 0.25) < 1e-9 else "this must hold for any labels, not just 0 and 1"
        if abs(got - 0.6) < 1e-9:
            return ("you chose the majority class on the TEST labels: that peeks at the answers. Pick it on the "
                    "training labels, then score it on the test labels")
        if abs(got - 0.5) < 1e-9:
            return "that is the majority's share of the training labels; score the majority answer on the test labels"
        if got == 0:
            return "that is the class itself; return how often answering it is right on the test labels"
        return "find the most common training label, then the share of test labels equal to it"
    return run_check(f"{EX}.2 the majority-class baseline", judge)


QUIZ = {EX: {
    "q1": Question(
        "The course's live causal LM trains 200 steps of 32 sequences, its masked models 600 steps of 64; the "
        "shipped checkpoints train for a fixed number of minutes each. What must a fair comparison of objectives do?",
        {"A": "give every objective the same number of steps: nothing else is fair",
         "B": "say which budget it holds fixed (steps, tokens or time) and show that it does: print the steps, "
              "tokens and minutes of every run",
         "C": "train every model until its loss stops falling", "D": "nothing: the objective does not matter"}, "B",
        "equal steps, equal tokens and equal time are all defensible and rarely hold together; the live runs hold "
        "none of them exactly (the causal run took longer with fewer tokens), the shipped ones hold wall time.",
        {"A": "equal steps is one defensible budget, not the only one: a causal-LM step and a masked-LM step cost "
              "different amounts of compute."}),
    "q2": Question(
        "Why can't you rank a causal LM and a masked LM by their held-out losses?",
        {"A": "they predict different things from different context: the next token from the left only, versus "
              "a hidden token from both sides", "B": "masked LM has no loss",
         "C": "their vocabularies differ", "D": "you can: lower is better"}, "A",
        "a masked token with both neighbours visible is easier to guess; compare them on a common task instead."),
    "q3": Question(
        "A linear probe on frozen features scores 70% where the majority class scores 50%. What else do you need "
        "before crediting pretraining?",
        {"A": "nothing", "B": "the same probe on a randomly initialised model of the same shape, and a simple "
         "non-neural baseline (e.g. bag of words)", "C": "a larger learning rate", "D": "a GPU"}, "B",
        "random transformer features are often linearly useful too; the gain over them is what pretraining gave."),
    "q4": Question(
        "Does dynamic masking make a masked LM mask rare words more often?",
        {"A": "yes, rare words are chosen more often", "B": "no: tokens are chosen uniformly; dynamic masking "
         "draws a new mask each time a sequence is seen, instead of one mask fixed in advance",
         "C": "yes, it masks only rare words", "D": "no, it never masks rare words"}, "B",
        "RoBERTa's dynamic masking changes WHEN masks are drawn, not WHICH tokens are likely to be chosen."),
    "q5": Question(
        "BERT computes its masked-LM and next-sentence losses on the very same sequences. Does that make one "
        "objective 'overfit' the other's data?",
        {"A": "yes, they always need separate datasets", "B": "no: both labels come from the same text at no "
         "cost; what matters is how the losses are weighted and what the inputs look like",
         "C": "yes, unless NSP uses hard negatives", "D": "only on GPUs"}, "B",
        "sharing text between self-supervised objectives is the normal case (BERT, ALBERT)."),
}}
