"""Exercises and quiz of notebook 10, fine-tuning: label subsets and frozen encoders."""

import torch

from .framework import Question, exercise, judge_answer

EX = "10"


def subset_counts_hint(counts, expected, fraction):
    """Why the examples per class, counts, are not the expected ones: a class missed, the fraction taken of the
    whole set instead of each class, or else."""
    if 0 in counts:
        return (f"with fraction={fraction} class {counts.index(0)} has no example: a plain random draw of a tiny "
                "subset can miss a class; draw within each class, at least one each")
    if sum(counts) == sum(expected) or abs(sum(counts) - round(fraction * 100)) <= 3:
        return (f"with fraction={fraction} you took {counts} per class; take the fraction of EACH class "
                f"({expected}), so that the subset keeps the classes' proportions")
    return f"with fraction={fraction} expected {expected} examples per class, got {counts}"


@exercise(EX, 1, "a stratified subset of the labels")
def check_stratified_subset(stratified_subset):
    """stratified_subset(labels, fraction, generator) -> indices: about `fraction` of each class, at least
    one of each, no index twice, drawn at random."""
    def judge():
        order = torch.randperm(100, generator=torch.Generator().manual_seed(3))
        labels = torch.tensor([0] * 50 + [1] * 30 + [2] * 20)[order]
        for fraction in (0.01, 0.1, 0.5, 1.0):
            got = stratified_subset(labels.clone(), fraction, torch.Generator().manual_seed(0))
            if isinstance(got, torch.Tensor) and got.dtype == torch.bool:
                return "that is a mask; return the indices of the chosen examples (mask.nonzero().flatten())"
            got = torch.as_tensor(got).flatten().long()
            if len(got) and (got.min() < 0 or got.max() >= len(labels)):
                return "an index is out of range: return positions in `labels`, not labels"
            if len(got.unique()) != len(got):
                return "an example is chosen twice: draw without replacement (torch.randperm, not torch.randint)"
            expected = [max(1, round(fraction * n)) for n in (50, 30, 20)]
            hint = judge_answer(torch.bincount(labels[got], minlength=3).tolist(), expected,
                                fallback=lambda counts: subset_counts_hint(counts, expected, fraction))
            if hint:
                return hint
        a, b = (torch.as_tensor(stratified_subset(labels.clone(), 0.1, torch.Generator().manual_seed(seed)))
                .sort().values for seed in (0, 1))
        if torch.equal(a, b):  # the same subset from two seeds: the generator is not used
            first = torch.cat([(labels == c).nonzero().flatten()[:k] for c, k in ((0, 5), (1, 3), (2, 2))])
            if torch.equal(a, first.sort().values):
                return "you take the first examples of each class; draw them at random with the generator"
            return ("two generators with different seeds gave the same subset: use the generator "
                    "(torch.randperm(n, generator=g))")
        return None
    return judge


@exercise(EX, 2, "freeze the encoder")
def check_freeze_encoder(freeze_encoder):
    """freeze_encoder(model) -> None: the encoder (model.bert) no longer trains; the classifier does."""
    def judge():
        from ..model.config import BertConfig
        from ..model.heads import BertForSequenceClassification
        config = BertConfig(vocab_size=50, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
                            intermediate_size=32, max_position_embeddings=16, num_labels=3)
        torch.manual_seed(0)
        model = BertForSequenceClassification(config)
        model.train()
        freeze_encoder(model)
        encoder = [p.requires_grad for p in model.bert.parameters()]
        head = [p.requires_grad for p in model.classifier.parameters()]
        if all(encoder) and all(head):
            if not model.training:
                return ("model.eval() only turns dropout off; every weight still trains. Set requires_grad = False "
                        "on the encoder's parameters")
            return "every parameter still trains: set requires_grad = False on model.bert's parameters"
        if not any(head):
            return "the classifier is frozen too: then nothing learns. Freeze model.bert only"
        if any(encoder):
            still = [n for n, p in model.bert.named_parameters() if p.requires_grad]
            return f"part of the encoder still trains ({still[0]}, ...): freeze every parameter of model.bert"
        ids = torch.randint(5, 50, (4, 6), generator=torch.Generator().manual_seed(1))
        loss = model(ids, labels=torch.tensor([0, 1, 2, 0])).loss
        loss.backward()
        if any(p.grad is not None for p in model.bert.parameters()):
            return "the encoder still gets gradients"
        return None
    return judge


QUIZ = {EX: {
    "q1": Question(
        "Section 2 chose the learning rate on a validation split carved from the training fold. What would go "
        "wrong if it were chosen by accuracy on the test fold instead?",
        {"A": "nothing worth the trouble: a learning rate is a single number, far too little to fit a test set, "
              "so the test score would stay an honest estimate",
         "B": "the test sentences would become training data: the model would be fine-tuned on them with the "
              "chosen rate, and then scored on what it learned",
         "C": "the rate that won on those very test sentences, partly by luck, would be scored on them again, "
              "so its test score would flatter it",
         "D": "the test fold is too small to tell learning rates apart, so the choice would be random, where "
              "the larger validation split can separate them"},
        "C", "a choice made on the test fold is fitted to it, a little: the test score of the winner is then "
        "biased upward. Choosing on validation keeps the test fold for one final, honest score.",
        {"A": "one number is enough to fit a test set a little: among several rates, the one that did best on "
              "these sentences did so partly by chance, and that luck stays in its score.",
         "B": "choosing a setting by the test score trains on nothing; the harm is that the score of the winner "
              "is no longer independent of the choice.",
         "D": "the validation split is smaller than the test fold here; its job is to keep the test fold "
              "untouched, not to be larger."}),
    "q2": Question(
        "Why is every task of this notebook built from the HELD-OUT documents?",
        {"A": "because fine-tuning on sentences the model read in pretraining would make it forget what "
              "pretraining taught it, which would be unfair to the pretrained start",
         "B": "because no pretrained model has read them: a test sentence seen in pretraining would flatter "
              "the pretrained start",
         "C": "because the tokenizer was trained on the training documents and cannot encode the words of "
              "those documents in a fair way any more",
         "D": "because fine-tuning is meant to teach a model new words, and only the held-out documents "
              "hold words that the pretrained model has not seen"},
        "B", "pretraining on the test text would let the pretrained model recall it; the random start could not.",
        {"A": "forgetting is a risk of long fine-tuning on any text; the concern here is the pretrained model "
              "having read the test sentences.",
         "C": "the tokenizer encodes any text; the concern is the model having read the sentences.",
         "D": "the tokenizer and the vocabulary are fixed by the checkpoint; the held-out documents share most "
              "of their words with the training ones. The point is that no model read these sentences."}),
    "q3": Question(
        "On the real-or-corrupted task both starts ended up answering one class for every sentence. Why can "
        "80 steps of fine-tuning stay there?",
        {"A": "a constant answer is the minimum of the loss on a balanced task, so gradient descent is right to "
              "settle there and stay",
         "B": "the two classes are balanced, so their gradients cancel exactly and the weights cannot change at "
              "all during fine-tuning",
         "C": "one linear layer on the [CLS] vector cannot tell two classes apart, so a constant answer is all "
              "that this small classifier is able to express",
         "D": "a constant answer sits on a plateau: its loss is ln 2 whatever the sentence, the gradient there "
              "is small, and a short run may not leave"},
        "D", "a flat region of the loss, not a minimum: a model that told the sentences apart would have a lower "
        "loss, but near the constant answer the gradient gives little direction.",
        {"A": "it is not a minimum: a model that tells a real sentence from its corrupted copy has a lower loss, "
              "and the pretrained masked LM shows that the information is there.",
         "B": "the gradients of different sentences differ; near a constant answer they nearly cancel, which "
              "makes the gradient small, not zero: the weights still move.",
         "C": "the encoder below [CLS] trains too, and the same classifier learned seven classes on the "
              "which-document task."}),
    "q4": Question(
        "What does the program print? (the shipped bert-mlm-nsp, loaded as a classifier with 7 labels)",
        {"A": "['bert.pooler.dense.bias', 'bert.pooler.dense.weight', 'classifier.bias', 'classifier.weight']",
         "B": "['cls.seq_relationship.bias', 'cls.seq_relationship.weight']",
         "C": "['classifier.bias', 'classifier.weight']",
         "D": "[]"},
        "C", "only the new classifier is missing: the encoder and its pooler come from the checkpoint, and the "
        "pretraining heads are left out (unexpected keys).",
        {"A": "the pooler was trained with NSP and is in the checkpoint; only the new classifier is missing.",
         "B": "those are in the checkpoint but not in the classifier: they are UNEXPECTED keys, not missing ones.",
         "D": "the classifier with 7 outputs did not exist in pretraining, so it must start from random weights."},
        code='import warnings\nwarnings.simplefilter("ignore")\n'
             'from minibert import BertForSequenceClassification\n'
             'from minibert.course import pretrained\n'
             'model = BertForSequenceClassification.from_pretrained(pretrained.path("bert-mlm-nsp"), num_labels=7)\n'
             'print(sorted(model.loading_info["missing_keys"]))'),
    "q5": Question(
        "A frozen probe (notebook 08) and fine-tuning start from the same checkpoint. What does fine-tuning "
        "change that the probe cannot?",
        {"A": "the encoder's weights: every layer adapts to the task, while a probe only reads the vectors "
              "that pretraining left",
         "B": "nothing that matters: both train the same weights, only with a different optimizer and "
              "learning-rate schedule",
         "C": "only the head: fine-tuning puts a deeper, nonlinear classifier on the same frozen vectors, where "
              "a probe fits one linear layer",
         "D": "the tokenizer: fine-tuning adds the task's new words to the vocabulary, which a probe has to "
              "do without"},
        "A", "fine-tuning trains every weight; a probe trains only a linear layer on frozen vectors.",
        {"B": "a probe trains one linear layer; fine-tuning trains every weight of the encoder as well.",
         "C": "the classifier of BertForSequenceClassification is one linear layer too; what differs is that "
              "the encoder below it trains.",
         "D": "the vocabulary is fixed by the checkpoint's tokenizer in both cases."}),
}}
