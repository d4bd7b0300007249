"""Exercises and quiz of notebook 10, fine-tuning: label subsets and frozen encoders."""

import torch

from . import Question, run_check

EX = "10"


def check_stratified_subset(stratified_subset):
    """stratified_subset(labels, fraction, generator) -> indices: about `fraction` of each class, at least
    one of each, no index twice, drawn at random."""
    def judge():
        labels = torch.tensor([0] * 50 + [1] * 30 + [2] * 20)[torch.randperm(100, generator=torch.Generator().manual_seed(3))]
        for fraction in (0.01, 0.1, 0.5, 1.0):
            got = stratified_subset(labels.clone(), fraction, torch.Generator().manual_seed(0))
            if isinstance(got, torch.Tensor) and got.dtype == torch.bool:
                return "that is a mask; return the indices of the chosen examples (mask.nonzero().flatten())"
            got = torch.as_tensor(got).flatten().long()
            if len(got) and (got.min() < 0 or got.max() >= len(labels)):
                return "an index is out of range: return positions in `labels`, not labels"
            if len(got.unique()) != len(got):
                return "an example is chosen twice: draw without replacement (torch.randperm, not torch.randint)"
            counts = torch.bincount(labels[got], minlength=3).tolist()
            expected = [max(1, round(fraction * n)) for n in (50, 30, 20)]
            if 0 in counts:
                return (f"with fraction={fraction} class {counts.index(0)} has no example: a plain random draw of a "
                        "tiny subset can miss a class; draw within each class, at least one each")
            if counts != expected:
                if sum(counts) == sum(expected) or abs(sum(counts) - round(fraction * 100)) <= 3:
                    return (f"with fraction={fraction} you took {counts} per class; take the fraction of EACH class "
                            f"({expected}), so that the subset keeps the classes' proportions")
                return f"with fraction={fraction} expected {expected} examples per class, got {counts}"
        a = torch.as_tensor(stratified_subset(labels.clone(), 0.1, torch.Generator().manual_seed(0))).sort().values
        b = torch.as_tensor(stratified_subset(labels.clone(), 0.1, torch.Generator().manual_seed(1))).sort().values
        if torch.equal(a, b):
            if torch.equal(a, torch.cat([(labels == c).nonzero().flatten()[:k] for c, k in ((0, 5), (1, 3), (2, 2))]).sort().values):
                return "you take the first examples of each class; draw them at random with the generator"
            return "two generators with different seeds gave the same subset: use the generator (torch.randperm(n, generator=g))"
        return None
    return run_check(f"{EX}.1 a stratified subset of the labels", judge)


def check_freeze_encoder(freeze_encoder):
    """freeze_encoder(model) -> None: the encoder (model.bert) no longer trains; the classifier does."""
    def judge():
        from ..config import BertConfig
        from ..heads import BertForSequenceClassification
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
    return run_check(f"{EX}.2 freeze the encoder", judge)


QUIZ = {EX: {
    "q1": Question(
        "In section 3, at which share of the labels was the pretrained start's advantage clearest, judged "
        "against the spread between seeds?",
        {"A": "at 1%: the fewer the labels, the more the start matters, and one sentence per document is "
              "where pretraining must show",
         "B": "at 10%: every seed was ahead by a similar margin, so the paired difference had the narrowest "
              "interval",
         "C": "at 100%: only with every label can a fine-tuned model bring out all that pretraining put into "
              "its weights",
         "D": "nowhere: with three seeds the intervals of the two starts overlap at every share of the labels, "
              "so no advantage was shown"},
        "B", "at 10% the three paired differences were close together; at 1% the seeds spread widely, and at "
        "100% the random start caught up part of the way.",
        {"A": "at 1% the pretrained start was ahead on each seed, but the seeds spread so widely that the "
              "difference is the least certain.",
         "C": "with all the labels the random start catches up part of the way: the gap narrows.",
         "D": "the paired differences are read seed by seed; at 10% their interval is far from 0."}),
    "q2": Question(
        "Why is every task of this notebook built from the HELD-OUT documents?",
        {"A": "because the held-out documents are shorter, so fine-tuning on them fits the notebook's time "
              "budget better than the training documents would",
         "B": "because no pretrained model has read them: a test sentence seen in pretraining would flatter "
              "the pretrained start",
         "C": "because the tokenizer was trained on the training documents and cannot encode the words of "
              "those documents in a fair way any more",
         "D": "because the held-out documents have more sentences per document, which the which-document "
              "task needs for its seven classes"},
        "B", "pretraining on the test text would let the pretrained model recall it; the random start could not.",
        {"A": "length has nothing to do with it; what matters is that no model saw them.",
         "C": "the tokenizer encodes any text; the concern is the model having read the sentences.",
         "D": "the choice is about leakage, not size."}),
    "q3": Question(
        "A model fine-tuned on the real-or-corrupted task scores 50.0% on a test set that is half real, half "
        "corrupted. What did it most likely learn?",
        {"A": "to tell the two kinds apart perfectly, but with its labels swapped, so that every answer "
              "it gives comes out wrong",
         "B": "to answer one class for every sentence, the nearest minimum of the loss on a balanced task",
         "C": "to read the word order of every sentence and to judge it correctly about half the time, "
              "as a person guessing would",
         "D": "nothing, because a model whose accuracy is exactly one half cannot have changed its weights "
              "during fine-tuning"},
        "B", "exactly 50.0% on a balanced test set, from both starts, is the signature of a constant answer.",
        {"A": "swapped labels would give 0%, not 50%.",
         "C": "guessing would land near 50%, and almost never on exactly 50.0% of 1,664 sentences.",
         "D": "the weights changed (the loss fell to log 2); they settled on a constant answer."}),
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
             'from minibert import BertForSequenceClassification, pretrained\n'
             'model = BertForSequenceClassification.from_pretrained(pretrained.path("bert-mlm-nsp"), num_labels=7)\n'
             'print(sorted(model.loading_info["missing_keys"]))'),
    "q5": Question(
        "A frozen probe (notebook 08) and fine-tuning start from the same checkpoint. What does fine-tuning "
        "change that the probe cannot?",
        {"A": "the tokenizer: fine-tuning adds the task's new words to the vocabulary, which a probe has to "
              "do without",
         "B": "nothing that matters: both train the same weights, only with a different optimizer and "
              "learning-rate schedule",
         "C": "the labels: fine-tuning can correct wrong labels in the training data, a probe has to take "
              "them as they are",
         "D": "the encoder's weights: every layer adapts to the task, while a probe only reads the vectors "
              "that pretraining left"},
        "D", "fine-tuning trains every weight; a probe trains only a linear layer on frozen vectors.",
        {"A": "the vocabulary is fixed by the checkpoint's tokenizer in both cases.",
         "B": "a probe trains one linear layer; fine-tuning trains every weight of the encoder as well.",
         "C": "neither method touches the labels."}),
}}
