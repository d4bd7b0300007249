"""Exercises and quiz of notebook 05, next sentence prediction: pairs, the label convention, sentence order."""

import torch

from . import Question, run_check

EX = "05"
CLS, SEP = 2, 3  # the course tokenizer's ids of [CLS] and [SEP]


def _pair(a, b, label):
    return {"input_ids": [CLS, *a, SEP, *b, SEP], "token_type_ids": [0] * (len(a) + 2) + [1] * (len(b) + 1),
            "next_sentence_label": label}


def _structure_hint(got, first, second):
    """A hint when `got` is not the pair [CLS] first [SEP] second [SEP] with the right segment ids, else None."""
    expected = _pair(first, second, 0)
    if not isinstance(got, dict) or not {"input_ids", "token_type_ids", "next_sentence_label"} <= set(got):
        return "return a dict with the keys input_ids, token_type_ids and next_sentence_label"
    ids, types = list(got["input_ids"]), list(got["token_type_ids"])
    if ids != expected["input_ids"]:
        if ids == _pair(second, first, 0)["input_ids"]:
            return "the segments are in the wrong order"
        if ids == [*first, *second]:
            return "add the special tokens: [CLS] A [SEP] B [SEP]"
        if ids == [CLS, *first, SEP, *second]:
            return "the pair ends with a second [SEP]: [CLS] A [SEP] B [SEP]"
        return f"input_ids should be [CLS] A [SEP] B [SEP] = {expected['input_ids']}, got {ids}"
    if len(types) != len(ids):
        return "token_type_ids needs one segment id per token, special tokens included"
    if types != expected["token_type_ids"]:
        if types == [0] * (len(first) + 2) + [1] * len(second) + [0]:
            return "the final [SEP] belongs to segment B: its token type is 1"
        if types == [0] * (len(first) + 1) + [1] * (len(second) + 2):
            return "the first [SEP] closes segment A: its token type is 0, B's tokens start after it"
        return "token_type_ids: 0 for [CLS], A and the first [SEP]; 1 for B and the final [SEP]"
    label = got["next_sentence_label"]
    if isinstance(label, bool) or not isinstance(label, int):
        return f"the label must be the integer 0 or 1 (the loss needs class ids), got {label!r}"
    return None


def check_make_nsp_pair(make_nsp_pair):
    """make_nsp_pair(a, b, is_next) -> {input_ids, token_type_ids, next_sentence_label}."""
    def judge():
        a, b = [40, 41, 42], [50, 51]
        for is_next in (True, False):
            got = make_nsp_pair(list(a), list(b), is_next)
            hint = _structure_hint(got, a, b)
            if hint:
                return hint
            if got["next_sentence_label"] != (0 if is_next else 1):
                return ("0 and 1 are swapped: in BERT and transformers label 0 means IsNext (B follows A) and 1 "
                        "means NotNext (B is random). Think of the label as answering 'is B random?'")
        return None
    return run_check(f"{EX}.1 a next-sentence pair", judge)


def check_make_sop_pair(make_sop_pair):
    """make_sop_pair(first, second, swap) -> a pair in order (label 0) or swapped (label 1)."""
    def judge():
        first, second = [60, 61], [70, 71, 72]
        got = make_sop_pair(list(first), list(second), False)
        hint = _structure_hint(got, first, second)
        if hint:
            return hint
        if got["next_sentence_label"] != 0:
            return "a pair in its original order has label 0; label 1 means swapped"
        got = make_sop_pair(list(first), list(second), True)
        if isinstance(got, dict) and list(got.get("input_ids", [])) == _pair(first, second, 1)["input_ids"]:
            return ("you changed the label but not the order: a swapped pair is [CLS] second [SEP] first [SEP]; "
                    "otherwise the label says nothing about the text")
        hint = _structure_hint(got, second, first)
        if hint:
            return hint
        if got["next_sentence_label"] != 1:
            return "a swapped pair has label 1 (0 = in order, 1 = swapped)"
        return None
    return run_check(f"{EX}.2 a sentence-order pair", judge)


def check_is_next_probability(is_next_probability):
    """is_next_probability(logits) -> (B,) probability that B follows A, from NSP logits (B, 2)."""
    def judge():
        logits = torch.tensor([[2.0, -1.0], [0.0, 0.5], [-1.5, 1.5]])
        got = is_next_probability(logits.clone())
        expected = logits.softmax(-1)[:, 0]
        if not isinstance(got, torch.Tensor) or got.shape != expected.shape:
            return f"return one probability per pair, shape {tuple(expected.shape)}"
        if torch.allclose(got, expected, atol=1e-5):
            return None
        if torch.allclose(got, logits.softmax(-1)[:, 1], atol=1e-5):
            return ("that is column 1, NotNext (B is random). Label 0 = IsNext, so P(B follows A) is the softmax's "
                    "column 0")
        if torch.allclose(got, logits[:, 0]) or torch.allclose(got, logits[:, 1]):
            return "those are logits, not probabilities: apply a softmax over the two classes first"
        if torch.allclose(got, logits.softmax(0)[:, 0], atol=1e-5):
            return "softmax over the two classes (the last axis), not over the pairs of the batch"
        if torch.allclose(got, logits[:, 0].sigmoid(), atol=1e-5):
            return "the two logits compete: use softmax over both (sigmoid of one logit ignores the other)"
        return "softmax over the last axis, then take column 0 (IsNext)"
    return run_check(f"{EX}.3 the probability that B follows A", judge)


QUIZ = {EX: {
    "q1": Question(
        "In BERT, transformers and minibert, what does next_sentence_label = 0 mean?",
        {"A": "B is a random sentence", "B": "B is the sentence that really follows A",
         "C": "the pair is padding", "D": "A and B are swapped"}, "B",
        "0 = IsNext, 1 = NotNext: the label answers 'is B random?'. A model trained the other way round gives "
        "probabilities whose columns mean the opposite of what every reader of the checkpoint expects.",
        {"A": "that is label 1 (NotNext)."}),
    "q2": Question(
        "With nsp_probability 0.5, why do about 57% of the course's pairs get label 1 rather than 50%?",
        {"A": "a bug in the random number generator",
         "B": "a chunk that holds a single sentence cannot be split into A and a true continuation, so it always "
              "gets a random B; with 64-token inputs such chunks are common",
         "C": "truncate_seq_pair removes positive pairs", "D": "random pairs are duplicated on purpose"}, "B",
        "Google's create_pretraining_data.py does the same; with longer inputs (more sentences per chunk) the "
        "balance moves towards 50/50."),
    "q3": Question(
        "Why can a bag-of-words overlap score, with no neural network at all, tell many random-negative NSP pairs "
        "apart?",
        {"A": "a random B comes from another document, usually on another topic, so it shares few words with A",
         "B": "random sentences are shorter", "C": "the [SEP] token gives it away",
         "D": "it cannot: NSP needs a transformer"}, "A",
        "topic is an easy cue; hard negatives from the same document remove most of it."),
    "q4": Question(
        "Sentence order prediction shows two consecutive segments, in order or swapped. Why does a word-overlap "
        "score get about 50% on it?",
        {"A": "the overlap score is symmetric: swapping A and B does not change it, and both classes contain the "
              "same kinds of pairs", "B": "SOP pairs are too long", "C": "SOP uses different token ids",
         "D": "the labels are random"}, "A",
        "any score that treats A and B alike cannot see their order; only coherence cues help."),
    "q5": Question(
        "What did RoBERTa (Liu et al., 2019) report about next sentence prediction?",
        {"A": "NSP is essential: removing it hurt every task",
         "B": "removing NSP and training on full-length inputs of contiguous sentences matched or slightly "
              "improved downstream results",
         "C": "NSP should be replaced by sentence order prediction",
         "D": "NSP should use hard negatives"}, "B",
        "RoBERTa dropped NSP; sentence order prediction is ALBERT's proposal (Lan et al., 2019).",
        {"C": "that is ALBERT's choice, not RoBERTa's."}),
}}
