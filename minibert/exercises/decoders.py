"""Exercises and quiz of notebook 09, warm-starting decoders: seq2seq labels and greedy decoding."""

import copy

import torch

from .framework import CLS, PAD, SEP, Question, Slip, exercise, judge_answer

EX = "09"


DECODER_LABEL_SLIPS = [Slip("padding scored", lambda ids: ids,
                            "padding is still a target: put -100 where attention_mask is 0")]


def decoder_labels_hint(got, labels):
    """What is wrong with decoder labels that no slip explains: shifted (whatever the last position holds), or else."""
    if torch.equal(got[:, :-1], labels[:, 1:]):
        return ("you shifted the labels: BertForCausalLM shifts them itself, so position t would learn token "
                "t+2 (shifted twice). Give labels = input_ids with -100 on padding")
    return "labels = input_ids with -100 where attention_mask is 0"


@exercise(EX, 1, "decoder inputs and labels")
def check_decoder_inputs(decoder_inputs):
    """decoder_inputs(targets) -> dict(input_ids, attention_mask, labels) for BertForCausalLM with cross-attention."""
    def judge():
        targets = [[40, 41, 42], [50]]
        got = decoder_inputs([list(t) for t in targets])
        ids = torch.tensor([[CLS, 40, 41, 42, SEP], [CLS, 50, SEP, PAD, PAD]])
        mask = (ids != PAD).long()
        labels = ids.masked_fill(mask == 0, -100)
        if not isinstance(got, dict) or not {"input_ids", "attention_mask", "labels"} <= set(got):
            return "return a dict with input_ids, attention_mask and labels"
        g_ids, g_mask, g_labels = (torch.as_tensor(got[k]) for k in ("input_ids", "attention_mask", "labels"))
        if g_ids.shape != ids.shape or not torch.equal(g_ids, ids):
            if g_ids.shape == (2, 4) and torch.equal(g_ids[0], torch.tensor([CLS, 40, 41, 42])):
                return ("end each target with [SEP]: the decoder must learn to produce it, or it never knows when "
                        "to stop")
            if g_ids.shape == (2, 4) and torch.equal(g_ids[0], torch.tensor([40, 41, 42, SEP])):
                return "start each target with [CLS]: the decoder needs a first token to read before the first word"
            return f"input_ids should be [CLS] target [SEP], padded with {PAD} on the right: {ids.tolist()}"
        if not torch.equal(g_mask.long(), mask):
            return "attention_mask: 1 on real tokens (the special ones too), 0 on padding"
        return judge_answer(g_labels, labels, DECODER_LABEL_SLIPS, (ids,), same=torch.equal,
                            fallback=lambda got: decoder_labels_hint(got, labels))
    return judge


def _decoder():
    from ..model.config import BertConfig
    from ..model.heads import BertForCausalLM
    with torch.random.fork_rng():
        torch.manual_seed(0)
        config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, is_decoder=True, add_cross_attention=True,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.5)
        model = BertForCausalLM(config).eval()
        encoder_states = torch.randn(2, 4, 16)
    return model, encoder_states


@torch.no_grad()
def greedy_from_first_position(model, prompt, n, states):
    """The greedy loop reading the logits of the FIRST position at each step, a usual slip."""
    ids = prompt
    for _ in range(n):
        nxt = model(ids, encoder_hidden_states=states).logits[:, 0].argmax(-1)
        ids = torch.cat([ids, nxt[:, None]], 1)
    return ids


@torch.no_grad()
def greedy_reference(model, prompt, n, states):
    return model.generate(prompt, max_new_tokens=n, encoder_hidden_states=states, use_cache=False)


@torch.no_grad()
def greedy_without_states(model, prompt, n, states):
    """Greedy decoding with the encoder's states left out, a usual slip."""
    return model.generate(prompt, max_new_tokens=n, use_cache=False)


GREEDY_SLIPS = [  # on the case (model, prompt, max_new_tokens, encoder_hidden_states)
    Slip("first position", greedy_from_first_position,
         "read the logits of the LAST position (logits[:, -1]): it is the one that predicts the next token"),
    Slip("no encoder states", greedy_without_states,
         "pass encoder_hidden_states to the model at every step: without them the decoder ignores the source"),
]


def greedy_form(got, expected, n):
    """A hint when `got` is not the prompt and its n new tokens, (batch, prompt + n) token ids, else None."""
    if not isinstance(got, torch.Tensor):
        return "return a tensor of token ids"
    if got.shape == (2, n) and torch.equal(got, expected[:, 2:]):
        return "return the prompt followed by the new tokens, as generate does"
    if got.shape != expected.shape:
        return f"return shape (batch, prompt + max_new_tokens) = {tuple(expected.shape)}, got {tuple(got.shape)}"
    return None


def greedy_hint(got, prompt):
    """What is wrong with decoded ids that no slip explains (every slip keeps the prompt)."""
    if not torch.equal(got[:, :2], prompt):
        return "the output must start with the prompt unchanged"
    return "at each step: logits of the last position, argmax, append, repeat"


@exercise(EX, 2, "greedy decoding")
def check_greedy_decode(greedy_decode):
    """greedy_decode(model, input_ids, max_new_tokens, encoder_hidden_states) -> input_ids and the new tokens."""
    def judge():
        model, states = _decoder()
        prompt = torch.tensor([[CLS, 7], [CLS, 11]])
        n = 6
        expected = greedy_reference(model, prompt, n, states)
        got = greedy_decode(copy.deepcopy(model), prompt.clone(), n, states.clone())  # the slips run on the originals
        return judge_answer(got, expected, GREEDY_SLIPS, (model, prompt, n, states), same=torch.equal,
                            form=lambda got: greedy_form(got, expected, n),
                            fallback=lambda got: greedy_hint(got, prompt))
    return judge


QUIZ = {EX: {
    "q1": Question(
        "Before any training as a decoder, a masked-LM checkpoint loaded into BertForCausalLM guesses, at many "
        "positions, the very token it is reading, and is worse than a model that knows only word frequencies. "
        "Why?",
        {"A": "masked LM scored a visible token only when a chosen one was left unchanged, with itself as the "
              "answer; read causally, this predicts the current token",
         "B": "its output matrix is tied to the word embeddings, and any model with tied weights predicts the "
              "token it reads until training has taught it something else",
         "C": "the causal mask hides the next token, so before training the best any decoder can do is to "
              "repeat the last token it saw",
         "D": "with the causal mask each position attends to itself alone, so its vector is just its own "
              "embedding, and the head maps that back to the same token"},
        "A",
        "masked LM asks about hidden tokens; the only visible ones it scores are the chosen tokens left "
        "unchanged, whose answer is the token itself. A decoder must predict the next token instead.",
        {"B": "the fresh decoder has tied weights too, and it rarely guesses the token it reads: the habit comes "
              "from masked-LM training, not from the tying.",
         "C": "a fresh decoder hides the next token just the same and is about as good as the unigram model; "
              "nothing forces a decoder to repeat its input.",
         "D": "the causal mask lets each position attend to every position on its left, itself included, not "
              "to itself alone."}),
    "q2": Question(
        "Exercise 09.1 built decoder inputs [CLS] target [SEP], padded with 0, and labels = input_ids with -100 on "
        "padding. This program applies minibert's shift_labels, the shift the model does inside. What does it "
        "print last?",
        {"A": "[[41, 42, 3, -100, -100, -100, -100]]",
         "B": "[[2, 40, 41, 42, 3, -100, -100]]",
         "C": "[[40, 41, 42, 3, -100, -100, -100]]",
         "D": "[[40, 41, 42, 3, 0, 0, -100]]"}, "C",
        "each position's target is the next label: [CLS] is trained on 40, ..., 42 on [SEP] (3); the last position "
        "and the padding get -100.",
        {"A": "that is the labels shifted twice: position t would learn token t + 2 (labels shifted by hand, then "
              "again by the model).",
         "B": "those are the labels as you pass them, before the model's shift.",
         "D": "that is what forgetting -100 on padding gives: the model would learn to predict [PAD] (0) after "
              "[SEP]."},
        code='''import torch
from minibert.model.labels import shift_labels

input_ids = torch.tensor([[2, 40, 41, 42, 3, 0, 0]])  # [CLS] 40 41 42 [SEP] [PAD] [PAD]
labels = input_ids.masked_fill(input_ids == 0, -100)
print(shift_labels(labels).tolist())
'''),
    "q3": Question(
        "Section 3 built an encoder-decoder from a masked-LM checkpoint. Its decoder reported a few new tensors, "
        "a small share of its weights. Which weights are they?",
        {"A": "the cross-attention blocks: BERT never attended to another sequence, so it has no weights for that",
         "B": "the decoder's self-attention: a causal mask needs weights of its own, unlike bidirectional attention",
         "C": "the output layer: a decoder predicts the next token, so the masked-LM head cannot serve and restarts",
         "D": "the pooler: the decoder starts from the [CLS] vector of the source, and the masked-LM checkpoint "
              "has no pooler to give it"},
        "A",
        "every other weight of the decoder comes from the checkpoint; only cross-attention is new and starts random "
        "(Rothe et al., 2020).",
        {"B": "the causal mask is not a weight: self-attention keeps the checkpoint's weights, only what each "
              "position may read changes.",
         "C": "the masked-LM head turns a vector into scores over the vocabulary, exactly what a decoder needs: it is "
              "reused (section 2 loaded it with nothing missing).",
         "D": "the pooler is new in the ENCODER, which does not use it here; the decoder reads every source "
              "vector through cross-attention, not a pooled one."}),
    "q4": Question(
        "Section 2 gave three decoders the same steps of next-token training: one from scratch, one "
        "warm-started from the short live masked-LM run, one from the long-trained bert-mlm. Only the last ended "
        "far ahead. What is a fair reading?",
        {"A": "warm-starting a decoder from a masked LM helps whatever the checkpoint: any amount of pretraining "
              "leaves something that next-token training can build on",
         "B": "a warm start pays when the checkpoint knows more than the decoder's steps can teach, and "
              "'same steps' leaves out its masked-LM training",
         "C": "masked-LM checkpoints do not suit decoders: both start worse than the unigram model, and a warm "
              "start cannot make up for that",
         "D": "the decoder from bert-mlm wins because the shipped checkpoint is a larger model than the "
              "one trained from scratch"},
        "B",
        "the gain grows with what the checkpoint learned: none worth having from the short run, a large one "
        "from the long one, whose compute the decoder's step count does not show.",
        {"A": "the decoder warm-started from the short run gained nothing worth having over the one from scratch.",
         "C": "both warm starts end far below the unigram perplexity after training, and the long-trained one far "
              "ahead of the decoder from scratch: only their starting points were worse.",
         "D": "all three decoders have the same shape: every weight of the checkpoint is reused, none added."}),
    "q5": Question(
        "Section 4 printed the layer-0 cache of an encoder-decoder after each decoded token: the self-attention "
        "keys grow by one position per token, the cross-attention keys keep the same length. Why?",
        {"A": "the cross-attention cache has a fixed size and keeps only the keys of the latest decoded tokens, "
              "dropping the oldest",
         "B": "they are recomputed from the whole decoder input at each step, and only the first few of them "
              "are kept",
         "C": "the decoder attends to the source at the first step only; later steps read the self-attention "
              "cache alone",
         "D": "they come from the encoder's output, one per source token, which stays the same while the decoder "
              "writes"},
        "D",
        "cross-attention keys and values depend only on the source: computed once at the first step and reused; the "
        "self-attention cache grows by one position per decoded token.",
        {"A": "their length is the length of the source, not a window over decoded tokens: nothing decoded enters "
              "cross-attention's keys.",
         "B": "cross-attention keys never depend on the decoder's tokens, only on the encoder's output.",
         "C": "every step attends to the source through cross-attention, with its new query; only the keys and "
              "values are computed once."}),
}}
