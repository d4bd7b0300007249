"""Exercises and quiz of notebook 09, warm-starting decoders: seq2seq labels and greedy decoding."""

import torch

from ..labels import shift_labels
from . import CLS, PAD, SEP, Question, first_matching_hint, run_check

EX = "09"


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
        if torch.equal(g_labels, labels):
            return None
        if torch.equal(g_labels, shift_labels(labels)) or torch.equal(g_labels[:, :-1], labels[:, 1:]):
            return ("you shifted the labels: BertForCausalLM shifts them itself, so position t would learn token "
                    "t+2 (shifted twice). Give labels = input_ids with -100 on padding")
        if torch.equal(g_labels, ids):
            return "padding is still a target: put -100 where attention_mask is 0"
        return "labels = input_ids with -100 where attention_mask is 0"
    return run_check(f"{EX}.1 decoder inputs and labels", judge)


def _decoder():
    from ..config import BertConfig
    from ..heads import BertForCausalLM
    with torch.random.fork_rng():
        torch.manual_seed(0)
        config = BertConfig(vocab_size=30, hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                            intermediate_size=32, is_decoder=True, add_cross_attention=True,
                            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, initializer_range=0.5)
        model = BertForCausalLM(config).eval()
        encoder_states = torch.randn(2, 4, 16)
    return model, encoder_states


def greedy_variants(model, prompt, n, states):
    """The prompt and its n greedy tokens first, then the usual slips, name -> ids: each step reading the logits of
    the FIRST position instead of the last, and the encoder's states not passed to the decoder."""
    with torch.no_grad():
        ids = prompt
        for _ in range(n):  # the greedy loop, reading the FIRST position's logits
            nxt = model(ids, encoder_hidden_states=states).logits[:, 0].argmax(-1)
            ids = torch.cat([ids, nxt[:, None]], 1)
        return {
            "right": model.generate(prompt, max_new_tokens=n, encoder_hidden_states=states, use_cache=False),
            "first position": ids,
            "no encoder states": model.generate(prompt, max_new_tokens=n, use_cache=False),
        }


GREEDY_HINTS = {
    "first position": "read the logits of the LAST position (logits[:, -1]): it is the one that predicts the next "
                      "token",
    "no encoder states": "pass encoder_hidden_states to the model at every step: without them the decoder ignores the "
                         "source",
}


def check_greedy_decode(greedy_decode):
    """greedy_decode(model, input_ids, max_new_tokens, encoder_hidden_states) -> input_ids and the new tokens."""
    def judge():
        model, states = _decoder()
        prompt = torch.tensor([[CLS, 7], [CLS, 11]])
        n = 6
        variants = greedy_variants(model, prompt, n, states)
        expected = variants["right"]
        got = greedy_decode(model, prompt.clone(), n, states)
        if not isinstance(got, torch.Tensor):
            return "return a tensor of token ids"
        if got.shape == (2, n) and torch.equal(got, expected[:, 2:]):
            return "return the prompt followed by the new tokens, as generate does"
        if got.shape != expected.shape:
            return f"return shape (batch, prompt + max_new_tokens) = {tuple(expected.shape)}, got {tuple(got.shape)}"
        if torch.equal(got, expected):
            return None
        if not torch.equal(got[:, :2], prompt):
            return "the output must start with the prompt unchanged"
        return (first_matching_hint(got, variants, GREEDY_HINTS, same=torch.equal)
                or "at each step: logits of the last position, argmax, append, repeat")
    return run_check(f"{EX}.2 greedy decoding", judge)


QUIZ = {EX: {
    "q1": Question(
        "transformers' BertLMHeadModel, like minibert's BertForCausalLM, scores position t on token t + 1 of the "
        "labels. Why does a BERT class shift its labels, when BERT was pretrained with masked LM?",
        {"A": "BERT was pretrained with next-token prediction beside masked LM, and this head reproduces that task",
         "B": "BERT checkpoints warm-start decoders, and every causal LM in transformers shifts labels = input_ids",
         "C": "masked LM needs shifted labels too: a hidden token's label sits one position after its [MASK]",
         "D": "the shift removes [CLS] from the targets, a token that no model should learn to predict or generate"},
        "B",
        "the causal head exists for warm-starting decoders (Rothe et al., 2020), and the shift is the convention of "
        "every causal LM in the library: pass labels = input_ids, the model moves them.",
        {"A": "BERT's pretraining objectives are masked LM and next sentence prediction; nothing there is shifted.",
         "C": "a masked token's label sits at its own position; masked LM shifts nothing.",
         "D": "dropping the first label is a side effect of the shift (nothing predicts position 0), not its reason: "
              "every position after it is moved too."}),
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
from minibert.labels import shift_labels

input_ids = torch.tensor([[2, 40, 41, 42, 3, 0, 0]])  # [CLS] 40 41 42 [SEP] [PAD] [PAD]
labels = input_ids.masked_fill(input_ids == 0, -100)
print(shift_labels(labels).tolist())
'''),
    "q3": Question(
        "Section 3 built an encoder-decoder from the live masked-LM checkpoint. The decoder reported 20 new tensors, "
        "132,608 of its 1,643,968 parameters. Which weights are they?",
        {"A": "the cross-attention blocks: BERT never attended to another sequence, so it has no weights for that",
         "B": "the decoder's self-attention: a causal mask needs weights of its own, unlike bidirectional attention",
         "C": "the output layer: a decoder predicts the next token, so the masked-LM head cannot serve and restarts",
         "D": "the decoder's word embeddings: the targets are reversed sentences, whose tokens need new vectors"},
        "A",
        "every other weight of the decoder comes from the checkpoint; only cross-attention is new and starts random "
        "(Rothe et al., 2020).",
        {"B": "the causal mask is not a weight: self-attention keeps the checkpoint's weights, only what each "
              "position may read changes.",
         "C": "the masked-LM head turns a vector into scores over the vocabulary, exactly what a decoder needs: it is "
              "reused (section 2 loaded it with nothing missing).",
         "D": "source and target share one vocabulary and one tokenizer; the embeddings are reused."}),
    "q4": Question(
        "After the same 200 decoder steps, the decoder warm-started from the live masked LM (600 steps) reached "
        "perplexity 568, the one from scratch 538, and the one warm-started from bert-mlm (75 minutes) 260. What is "
        "a fair reading?",
        {"A": "warm-starting always helps a decoder: both decoders warm-started from masked-LM checkpoints beat "
              "the one from scratch",
         "B": "masked-LM checkpoints hurt decoders: both started worse than the unigram model, and one ends worse too",
         "C": "the bert-mlm decoder wins because it has more parameters than the decoder trained from scratch",
         "D": "a warm start pays when the checkpoint knows more than 200 decoder steps teach; 'same steps' hides its "
              "75 minutes"},
        "D",
        "the gain grows with what the checkpoint learned (no gain from 600 steps of masked LM, 2.07 times lower "
        "perplexity from bert-mlm), and the warm starts used masked-LM compute that the decoder's steps do not count.",
        {"A": "the decoder warm-started from the live run ended slightly behind the one from scratch (568 against "
              "538).",
         "B": "both warm starts end far below the unigram perplexity (1056) after training; only their starting "
              "points were worse.",
         "C": "all three decoders have exactly the same shape: every weight of the checkpoint is reused, none added."}),
    "q5": Question(
        "Section 4 printed the layer-0 cache after each decoder token: the self-attention keys went from (1, 2, 1, "
        "64) to (1, 2, 3, 64), while the cross-attention keys stayed (1, 2, 6, 64). Why do the cross-attention "
        "keys not grow?",
        {"A": "the cross-attention cache has a fixed size, 6, and keeps only the keys of the last 6 decoded tokens",
         "B": "they are recomputed from the whole decoder input at each step, and the first 6 of them are kept",
         "C": "they come from the encoder's output, the 6 source tokens, which stay the same while the decoder writes",
         "D": "cross-attention keeps no cache at all: its 6 is a head size, the width of each key, not a number of "
              "positions"},
        "C",
        "cross-attention keys and values depend only on the source: computed once at the first step and reused; the "
        "self-attention cache grows by one position per decoded token.",
        {"A": "the 6 is the length of the source (6 tokens), not a limit on the cache: nothing decoded enters "
              "cross-attention's keys.",
         "B": "cross-attention keys never depend on the decoder's tokens, only on the encoder's output.",
         "D": "the last axis (64) is the head size; the third axis counts positions, here the 6 source tokens."}),
}}
