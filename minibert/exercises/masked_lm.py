"""Exercises and quiz of notebook 04, masked language modeling: masking by hand, and its accuracy."""

import torch

from . import Question, run_check

EX = "04"
PAD, CLS, SEP, MASK = 0, 2, 3, 4
VOCAB_SIZE = 1000


def masking_batch(rows=128, length=128, seed=0):
    """Ids of a padded batch, [CLS] ... [SEP] [PAD]..., and the mask of its special tokens."""
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(40, length + 1, (rows,), generator=g)
    ids = torch.randint(5, VOCAB_SIZE, (rows, length), generator=g)
    positions = torch.arange(length)[None, :]
    ids[positions >= lengths[:, None]] = PAD
    ids[:, 0] = CLS
    ids[torch.arange(rows), lengths - 1] = SEP
    special = (ids == PAD) | (ids == CLS) | (ids == SEP)
    return ids, special


def share(part, whole):
    return float(part.sum()) / max(1, float(whole.sum()))


def check_mask_tokens(mask_tokens):
    """mask_tokens(input_ids, special_tokens_mask, mask_token_id, vocab_size, generator) -> (masked_ids, labels).

    Judged on statistics over ~10,000 tokens: 15% of ordinary tokens selected, 80/10/10 among them."""
    def call(seed):
        ids, special = masking_batch()
        original = ids.clone()
        out = mask_tokens(ids, special.clone(), MASK, VOCAB_SIZE, torch.Generator().manual_seed(seed))
        return original, ids, special, out

    def judge():
        original, ids, special, out = call(0)
        if not isinstance(out, (tuple, list)) or len(out) != 2:
            return "return two tensors: (masked_ids, labels)"
        masked, labels = out
        if not (isinstance(masked, torch.Tensor) and isinstance(labels, torch.Tensor)):
            return "return two tensors: (masked_ids, labels)"
        if masked.shape != ids.shape or labels.shape != ids.shape:
            return f"both outputs have the shape of input_ids {tuple(ids.shape)}"
        if not torch.equal(ids, original):
            return "you changed input_ids in place: work on input_ids.clone() so the caller keeps the original"
        ordinary = ~special
        selected = labels != -100
        if bool(selected.all()) or share(selected & ordinary, ordinary) > 0.5:
            return ("labels must be -100 wherever a token was NOT selected; otherwise the loss also scores the ~85% "
                    "of tokens the model can simply copy from its input")
        if bool((selected & special).any()) or bool((masked != original)[special].any()):
            return ("special tokens ([CLS], [SEP], [PAD]) were selected or changed: choose only where "
                    "special_tokens_mask is False")
        if not torch.equal(labels[selected], original[selected]):
            if torch.equal(labels[selected], masked[selected]):
                return "the labels hold the masked input; they must hold the ORIGINAL ids of the selected tokens"
            return "at selected positions the label is the original token id"
        if bool((masked != original)[~selected].any()):
            return ("tokens that were not selected must stay unchanged: pick the 80/10/10 only among the selected "
                    "ones")
        rate = share(selected, ordinary)
        if not 0.13 <= rate <= 0.17:
            return f"{rate:.1%} of the ordinary tokens are selected; BERT selects 15%"
        if int(masked.max()) >= VOCAB_SIZE or int(masked.min()) < 0:
            return "a random replacement must be a token id in 0..vocab_size-1"
        was_masked = selected & (masked == MASK)
        kept = selected & (masked == original)
        randomised = selected & ~was_masked & ~kept
        m, r, k = share(was_masked, selected), share(randomised, selected), share(kept, selected)
        shares = f"(you have {m:.0%} [MASK], {r:.0%} random, {k:.0%} kept)"
        if m > 0.95:
            return ("every selected token became [MASK]: only 80% should; 10% get a random token and 10% stay as "
                    "they are, because [MASK] never appears when the model is used " + shares)
        if r < 0.02:
            return "no selected token was replaced by a random token: 10% should be " + shares
        if k < 0.02:
            return "no selected token was kept unchanged: 10% should be " + shares
        if not (0.75 <= m <= 0.85 and 0.06 <= r <= 0.14 and 0.06 <= k <= 0.14):
            return "among the selected tokens aim for 80% [MASK], 10% random, 10% unchanged " + shares
        again = call(0)[3]
        if not (torch.equal(again[0], masked) and torch.equal(again[1], labels)):
            return ("the same seed gave different masks: draw every random number from the generator argument "
                    "(torch.rand(..., generator=generator))")
        return None
    return run_check(f"{EX}.1 masking by hand (15%, 80/10/10)", judge)


def accuracy_case():
    """Logits whose argmax is right at 6 of the 10 labelled positions, and at none of the others."""
    g = torch.Generator().manual_seed(0)
    B, T, V = 2, 9, 12
    targets = torch.randint(V, (B, T), generator=g)
    logits = torch.randn(B, T, V, generator=g)
    labels = torch.full((B, T), -100)
    chosen = [(0, 1), (0, 3), (0, 4), (0, 7), (1, 0), (1, 2), (1, 5), (1, 6), (1, 7), (1, 8)]
    for i, (b, t) in enumerate(chosen):
        labels[b, t] = targets[b, t]
        winner = targets[b, t] if i < 6 else (targets[b, t] + 1) % V
        logits[b, t, winner] = 10.0
    return logits, labels


def check_mlm_accuracy(mlm_accuracy):
    """mlm_accuracy(logits, labels) -> the share of labelled positions (labels != -100) predicted right."""
    def judge():
        logits, labels = accuracy_case()
        got = mlm_accuracy(logits.clone(), labels.clone())
        try:
            got = float(got)
        except (TypeError, ValueError):
            return f"return a number (a float or a 0-dim tensor), not {type(got).__name__}"
        def close(value):  # float32 arithmetic: 100 * 0.6 is not exactly 60
            return abs(got - value) < 1e-4 * max(1.0, abs(value))

        if close(0.6):
            return None
        if close(6 / labels.numel()):
            return ("the -100 positions were counted: average only where labels != -100, the positions the model "
                    "was asked about")
        if close(6):
            return "that is the number of right guesses; divide by the number of labelled positions"
        if close(60):
            return "return a fraction between 0 and 1 (0.6), not a percentage"
        if close(0.4):
            return "that is the share of WRONG guesses"
        return "take logits.argmax(-1), compare with labels where labels != -100, and average"
    return run_check(f"{EX}.2 masked-LM accuracy", judge)


QUIZ = {EX: {
    "q1": Question(
        "BERT replaces only 80% of the selected tokens by [MASK], 10% by a random token, and leaves 10% unchanged. "
        "Why not [MASK] them all?",
        {"A": "[MASK] never appears when the model is fine-tuned or used, and since any token it reads might be a "
         "target (even an unchanged one), it must build a good representation of every token",
         "B": "to make training faster", "C": "because 100% masking would make the loss zero",
         "D": "so that rare words are masked more often"}, "A",
        "with only [MASK] as targets the model could treat the other tokens carelessly, and would meet a token "
        "distribution at fine-tuning it never saw."),
    "q2": Question(
        "A common example builds labels = input_ids.clone() and never writes -100. What goes wrong?",
        {"A": "nothing, the loss is the same", "B": "the loss also scores the ~85% unselected tokens, which the model "
         "can copy from its input: most of the signal rewards copying",
         "C": "the model cannot be trained at all", "D": "the [MASK] token gets a label of -100"}, "B",
        "-100 tells cross-entropy to skip a position; without it the easy copies dominate the loss."),
    "q3": Question(
        "With dynamic masking, what happens when the same sentence is seen in two epochs?",
        {"A": "the same tokens are masked both times", "B": "a fresh random 15% is chosen each time, every token "
         "with the same chance, so over many epochs most tokens become a target at some point",
         "C": "rare words are masked more often", "D": "it is skipped the second time"}, "B",
        "the collator draws new masks every time it builds a batch; selection stays uniform over ordinary tokens.",
        {"C": "selection is uniform: a rare word is no more likely to be chosen than a common one."}),
    "q4": Question(
        "After 600 steps our tiny MLM is right at about 14% of the masked held-out positions, while always answering "
        "the most frequent token scores about 6%. What is a fair conclusion?",
        {"A": "the model is useless: 14% is low", "B": "the model uses the context, about twice as well as word "
         "frequencies alone; trained longer (or bigger) it does much better",
         "C": "the model has memorised the held-out text", "D": "accuracy cannot be compared with a baseline"}, "B",
        "a baseline that ignores the input is the bar to clear; the short run clears it, and the shipped BERT, the "
        "same size trained ten times as many steps, is right about five times as often as the baseline."),
    "q5": Question(
        "Why is pseudo-perplexity slow to compute?",
        {"A": "it masks each token of a sentence in turn, one forward pass per token",
         "B": "it needs a causal model", "C": "it samples many masks at random", "D": "it trains the model"}, "A",
        "a sentence of n tokens needs n forward passes (batched, but still n times the work)."),
}}
