"""Exercises and quiz of notebook 06, pretraining BERT: masked LM and next sentence prediction together."""

import torch
import torch.nn.functional as F

from . import Question, run_check

EX = "06"
MASK = 4  # the course tokenizer's id of [MASK]


def _pretraining_batch():
    """Logits and labels of a small batch: 2 sequences of 6 tokens, a vocabulary of 11."""
    g = torch.Generator().manual_seed(0)
    mlm_logits = torch.randn(2, 6, 11, generator=g) * 2
    labels = torch.full((2, 6), -100)
    labels[0, 2], labels[0, 4], labels[1, 1] = 7, 9, 5
    nsp_logits = torch.tensor([[2.0, -1.0], [0.5, 1.5]])
    nsp_labels = torch.tensor([0, 1])
    return mlm_logits, nsp_logits, labels, nsp_labels


def check_pretraining_loss(pretraining_loss):
    """pretraining_loss(prediction_logits, seq_relationship_logits, labels, next_sentence_label) -> total loss."""
    def judge():
        mlm_logits, nsp_logits, labels, nsp_labels = _pretraining_batch()
        got = pretraining_loss(mlm_logits.clone(), nsp_logits.clone(), labels.clone(), nsp_labels.clone())
        if not isinstance(got, torch.Tensor) or got.numel() != 1:
            return "return the loss as a tensor with one value (a scalar), so that .backward() works"
        got = float(got)
        V = mlm_logits.shape[-1]
        mlm = F.cross_entropy(mlm_logits.view(-1, V), labels.view(-1), ignore_index=-100).item()
        nsp = F.cross_entropy(nsp_logits, nsp_labels).item()
        close = lambda x: abs(got - x) < 1e-4  # noqa: E731
        if close(mlm + nsp):
            return None
        if close(mlm):
            return "that is the masked-LM loss alone: add the next-sentence loss"
        if close(nsp):
            return "that is the next-sentence loss alone: add the masked-LM loss"
        if close((mlm + nsp) / 2):
            return "BERT adds the two losses; you averaged them (half of each)"
        swapped = F.cross_entropy(nsp_logits, 1 - nsp_labels).item()
        if close(mlm + swapped):
            return ("the NSP labels are swapped: label 0 = IsNext is column 0 of seq_relationship_logits; pass "
                    "next_sentence_label to cross_entropy as it is")
        pad_targets = F.cross_entropy(mlm_logits.view(-1, V), labels.clamp(min=0).view(-1)).item()
        if close(pad_targets + nsp) or close(pad_targets):
            return ("-100 is not ignored: positions without a label became targets (token 0). Keep "
                    "ignore_index=-100 so only the chosen positions count")
        summed = F.cross_entropy(mlm_logits.view(-1, V), labels.view(-1), reduction="sum").item()
        if close(summed + nsp):
            return "average the masked-LM loss over the labelled positions (the default reduction='mean'), not the sum"
        return f"expected {mlm + nsp:.4f} (masked-LM loss {mlm:.4f} + next-sentence loss {nsp:.4f}), got {got:.4f}"
    return run_check(f"{EX}.1 the pretraining loss", judge)


def check_gather_masked(gather_masked):
    """gather_masked(hidden_states, input_ids, labels) -> (vectors at the labelled positions, their labels)."""
    def judge():
        g = torch.Generator().manual_seed(1)
        hidden = torch.randn(2, 5, 3, generator=g)
        ids = torch.tensor([[2, 4, 17, 4, 3], [2, 21, 30, 9, 3]])
        # row 0: two [MASK]s; row 1: a random replacement at 2 (30 was 12) and a kept token at 3
        labels = torch.tensor([[-100, 15, -100, 16, -100], [-100, -100, 12, 9, -100]])
        got = gather_masked(hidden.clone(), ids.clone(), labels.clone())
        if not isinstance(got, tuple) or len(got) != 2:
            return "return two things: (vectors, labels)"
        vectors, targets = got
        keep = labels != -100
        if not isinstance(vectors, torch.Tensor) or not isinstance(targets, torch.Tensor):
            return "return tensors"
        if tuple(vectors.shape) == (4, 3) and torch.equal(vectors, hidden[keep]) and torch.equal(targets, labels[keep]):
            return None
        at_mask = ids == MASK
        if tuple(vectors.shape) == (2, 3) and torch.equal(vectors, hidden[at_mask]):
            return ("you kept only the [MASK] positions. Of the chosen tokens 10% became a random token and 10% "
                    "were kept, and they have labels too: select where labels != -100")
        if tuple(vectors.shape) == (6, 3) and torch.equal(vectors, hidden[~keep]):
            return "the condition is inverted: keep the positions whose label is NOT -100"
        if tuple(vectors.shape) == (2, 5, 3):
            return ("index with the boolean mask to get one row per labelled position, shape (N, hidden); zeroing "
                    "the other positions keeps them in the loss")
        if torch.equal(vectors, hidden[keep]):
            return "the vectors are right; the labels must be labels[labels != -100], in the same order"
        return "select hidden_states[labels != -100] and labels[labels != -100]"
    return run_check(f"{EX}.2 gathering the masked positions", judge)


QUIZ = {EX: {
    "q1": Question(
        "How does BertForPreTraining (here and in transformers) combine its two losses?",
        {"A": "it adds them: loss = mlm_loss + nsp_loss", "B": "it averages them",
         "C": "it alternates: one step MLM, one step NSP", "D": "it weights NSP by 0.15"}, "A",
        "one forward pass, both heads, the sum of two cross-entropies; any other weighting is a choice you make "
        "yourself."),
    "q2": Question(
        "At the start of training the MLM loss is about 7 and the NSP loss about 0.69. Where does 0.69 come from?",
        {"A": "ln 2: a model that gives both classes probability 1/2", "B": "15% of 4.6",
         "C": "the share of positive pairs", "D": "the learning rate"}, "A",
        "cross-entropy of a coin flip is ln 2 = 0.693 nats; the MLM loss starts near the unigram loss because of "
        "the prior initialisation of the output bias."),
    "q3": Question(
        "On the shared encoder layers (about 400,000 numbers), the gradient of the MLM loss and that of the NSP loss "
        "have a cosine of 0.01. What can you conclude?",
        {"A": "the two objectives ask for different things",
         "B": "nothing yet: compare it with a control, such as the cosine between the MLM gradients of two different "
              "batches, or between two random vectors of the same size",
         "C": "NSP does not train the encoder", "D": "the two losses should be averaged"}, "B",
        "in hundreds of thousands of dimensions almost any two directions are nearly orthogonal, and one batch's "
        "gradient is mostly the noise of its own examples: a cosine means something only beside its control.",
        {"A": "the same near-zero cosine appears between two batches of the same objective, which cannot ask "
              "for different things."}),
    "q4": Question(
        "transformers' BertForPreTraining loads our checkpoint with no missing and no unexpected keys, and gives "
        "the same logits. What does that show?",
        {"A": "the two implementations have the same parameter names and shapes and compute the same function",
         "B": "transformers downloaded bert-base-uncased", "C": "the model is well trained",
         "D": "the tokenizer is the same as Google's"}, "A",
        "equal logits on the same input prove the computation matches; they say nothing about how well it was "
        "trained."),
    "q5": Question(
        "You change the pretraining loss to mlm_loss + 5 * nsp_loss. What is the most likely effect?",
        {"A": "none: the optimizer normalises the losses",
         "B": "the shared encoder's gradients are dominated more by sentence-pair cues, so NSP tends to improve "
              "faster and masked-LM learning may slow down",
         "C": "the MLM head stops training", "D": "NSP accuracy must reach 100%"}, "B",
        "the weight scales NSP's share of the gradient that reaches the shared layers (Adam normalises per "
        "parameter, not per loss); which weighting is best is an empirical question."),
}}
