"""Exercises and quiz of notebook 09, warm-starting decoders: seq2seq labels and greedy decoding."""

import torch

from ..labels import shift_labels
from . import Question, run_check

EX = "09"
PAD, CLS, SEP = 0, 2, 3  # the course tokenizer's ids


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


def check_greedy_decode(greedy_decode):
    """greedy_decode(model, input_ids, max_new_tokens, encoder_hidden_states) -> input_ids and the new tokens."""
    def judge():
        model, states = _decoder()
        prompt = torch.tensor([[CLS, 7], [CLS, 11]])
        n = 6
        expected = model.generate(prompt, max_new_tokens=n, encoder_hidden_states=states, use_cache=False)
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
        with torch.no_grad():  # the same loop reading the FIRST position's logits
            ids = prompt
            for _ in range(n):
                nxt = model(ids, encoder_hidden_states=states).logits[:, 0].argmax(-1)
                ids = torch.cat([ids, nxt[:, None]], 1)
        if torch.equal(got, ids):
            return "read the logits of the LAST position (logits[:, -1]): it is the one that predicts the next token"
        with torch.no_grad():
            bare = model.generate(prompt, max_new_tokens=n, use_cache=False)
        if torch.equal(got, bare):
            return "pass encoder_hidden_states to the model at every step: without them the decoder ignores the source"
        return "at each step: logits of the last position, argmax, append, repeat"
    return run_check(f"{EX}.2 greedy decoding", judge)


QUIZ = {EX: {
    "q1": Question(
        "Why does BERT's causal-LM head in transformers (BertLMHeadModel) shift the labels by one?",
        {"A": "BERT was pretrained with next-token prediction",
         "B": "so BERT checkpoints can warm-start decoders, and, like every causal LM in transformers, it takes "
              "labels = input_ids and shifts them itself",
         "C": "masked LM needs shifted labels", "D": "to skip the [CLS] token"}, "B",
        "BERT was pretrained with MLM (+NSP); the causal head exists for warm-starting decoders (Rothe et al., "
        "2020), and the shift is the convention of every causal LM in the library.",
        {"A": "BERT's pretraining objectives are masked LM and NSP."}),
    "q2": Question(
        "You load a masked-LM checkpoint into BertForCausalLM. Which weights are new?",
        {"A": "all of them", "B": "none: same names and shapes; only the attention mask changes (causal), which "
         "is not a weight", "C": "the embeddings", "D": "the pooler"}, "B",
        "a decoder-only warm start reuses every weight; what changes is what each position may read."),
    "q3": Question(
        "For an encoder-decoder warm-started from BERT, which weights start from scratch?",
        {"A": "the encoder", "B": "the decoder's self-attention", "C": "the decoder's cross-attention blocks",
         "D": "the word embeddings"}, "C",
        "BERT has no cross-attention; those blocks are new and randomly initialised (Rothe et al., 2020)."),
    "q4": Question(
        "Generation with a key/value cache gives the same tokens as without it. Why?",
        {"A": "with causal attention the keys and values of earlier positions never change when tokens are "
              "appended, so they can be computed once and reused", "B": "it is a coincidence",
         "C": "the cache stores the outputs", "D": "the cache lowers the precision"}, "A",
        "the cache removes recomputation, not information; the encoder's keys and values are cached too."),
    "q5": Question(
        "After the same 200 decoder steps, the decoder warm-started from bert-mlm (35 minutes of masked LM) has "
        "less than half the perplexity of the one trained from scratch, while the one warm-started from the "
        "course's live masked LM (600 steps) ends slightly behind it. What is a fair reading?",
        {"A": "warm-starting always helps a decoder",
         "B": "a warm start pays when the checkpoint holds more than the decoder's own budget can teach; and "
              "'same steps' is not the same total compute: bert-mlm had 35 minutes of pretraining first",
         "C": "the decoder from scratch had more parameters", "D": "warm-starting changes the tokenizer"}, "B",
        "same steps for the decoder, not the same total compute: say which budget a comparison holds fixed; the "
        "gain grows with what the checkpoint learned.",
        {"A": "the decoder warm-started from the live 600-step checkpoint did not beat the one from scratch.",
         "C": "both decoders have exactly the same shape: every weight of the checkpoint is reused."}),
}}
