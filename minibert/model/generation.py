"""Decoding: how BertForCausalLM.generate turns next-token scores into text, step by step, as
transformers' generate does it (the same settings give the same tokens on the same weights).

Each step runs the model on what is there so far (the whole prompt once, then only the newest token:
the key/value cache holds the rest) and scores every word of the vocabulary for the next position.
Three ways to choose:
  * greedy (the default): the highest score, every step;
  * sampling (do_sample=True): a draw from the softmax of the scores, sharpened or flattened by
    temperature and cut to the top_k words (50 unless told otherwise; top_k=0 keeps all) or to the
    smallest set holding top_p of the probability;
  * beam search (num_beams=k): keep the k likeliest sequences (by their summed log-probabilities),
    extend each by every word, keep the k best again. A sequence that ends (eos_token_id, or the length
    limit) is put aside with its score divided by (its new tokens) ** length_penalty; the best put aside
    wins. It finds likelier sequences than greedy decoding, at k times the work, and prefers safe,
    repetitive text.
Before choosing, the scores pass through the processors that the settings ask for: repetition_penalty,
bad_words_ids, min_new_tokens / min_length (the end marker is forbidden until then),
remove_invalid_values, the user's own logits_processor.

Settings come as in transformers: a transformers GenerationConfig (the model's generation_config,
saved as generation_config.json beside the weights), updated by keyword arguments. An option that
this module does not implement (contrastive search, assisted decoding, ...) is refused by its name.
"""

import copy
import warnings
import torch
import torch.nn.functional as F

from .checks import DEFAULT_NEW_TOKENS, as_tensor, check_sampling

# The GenerationConfig fields this module reads (or, like bos_token_id, safely ignores); any other one set to a
# value that changes decoding is refused.
SUPPORTED = {
    "max_length", "max_new_tokens", "min_length", "min_new_tokens", "do_sample", "num_beams", "temperature",
    "top_k", "top_p", "repetition_penalty", "length_penalty", "early_stopping", "num_return_sequences",
    "bad_words_ids", "remove_invalid_values", "pad_token_id", "bos_token_id", "eos_token_id", "use_cache",
    "output_scores", "output_logits", "output_attentions", "output_hidden_states", "return_dict_in_generate",
    "decoder_start_token_id", "transformers_version", "_from_model_config",
}
MODEL_INPUTS = {"input_ids", "inputs_embeds", "attention_mask", "token_type_ids", "encoder_hidden_states",
                "encoder_attention_mask", "generator", "logits_processor", "stopping_criteria"}  # generate's other arguments (generator: minibert's)
LEFT_OUT = {  # transformers' generate arguments for decoding that this module does not do
    "assistant_model": "assisted decoding", "prompt_lookup_num_tokens": "prompt lookup decoding",
    "streamer": "streaming the tokens as they come", "prefix_allowed_tokens_fn": "constrained decoding",
    "negative_prompt_ids": "classifier-free guidance", "synced_gpus": "decoding across GPUs in lockstep",
    "custom_generate": "decoding code from the Hub", "tokenizer": "stop_strings",
}
LEFT_OUT_OF_TOP_K = -1e9  # a score that keeps a candidate or a beam out of every top-k (transformers' value)


# ---- settings: a GenerationConfig, its defaults and what is refused ----
def default_generation_config(config):
    """The generation_config of a new model, as transformers builds it from the model's config."""
    import transformers  # imported here: transformers is slow to import
    return transformers.GenerationConfig.from_model_config(transformers.BertConfig.from_dict(config.to_dict()))


def settings(model, generation_config, kwargs):
    """(GenerationConfig with every field decided, the model inputs among kwargs): the given or the
    model's generation_config, updated by kwargs, with transformers' defaults where nothing is set."""
    from transformers import GenerationConfig
    gen = copy.deepcopy(generation_config if generation_config is not None else model.generation_config)
    if not isinstance(gen, GenerationConfig):
        raise ValueError(f"generation_config must be a transformers GenerationConfig, got {type(gen).__name__}; "
                         "pass max_new_tokens and the other settings as keyword arguments")
    inputs = gen.update(**kwargs)  # what is not a GenerationConfig field comes back
    left_out = sorted(set(inputs) & set(LEFT_OUT))
    if left_out:
        raise ValueError(f"minibert's generate does not do {', '.join(f'{LEFT_OUT[k]} ({k}=)' for k in left_out)}: it "
                         "decodes greedily, by sampling or by beam search (see the README's list of what is left out)")
    unknown = sorted(set(inputs) - MODEL_INPUTS)
    if unknown:
        raise ValueError(f"generate got {', '.join(map(repr, unknown))}, which is neither a generation setting nor "
                         f"an input it takes ({', '.join(sorted(MODEL_INPUTS))})")
    defaults = GenerationConfig._get_default_generation_params()
    refused = sorted(k for k, v in gen.to_dict().items()
                     if k not in SUPPORTED and v is not None and v is not False and v != defaults.get(k))
    if refused:
        raise ValueError(f"minibert's generate does not do {', '.join(f'{k}={getattr(gen, k)!r}' for k in refused)}: "
                         "it decodes greedily, by sampling or by beam search (see the README's list of what "
                         "is left out); unset these to decode")
    for name, value in defaults.items():
        if getattr(gen, name, None) is None and name != "max_length":  # None: not given (see check_settings)
            setattr(gen, name, value)
    return gen, inputs


def check_settings(gen, prompt_length, max_positions, vocab_size):
    """The decided settings, checked; returns (max_new_tokens, eos ids as a tensor or None).
    max_new_tokens wins over max_length (which counts the prompt too); with neither, 20 new tokens
    within the position table, as in transformers."""
    if gen.max_new_tokens is not None:
        new = gen.max_new_tokens
    elif gen.max_length is not None:
        new = gen.max_length - prompt_length
    else:
        new = min(DEFAULT_NEW_TOKENS, max_positions - prompt_length)
        if new < 0:
            raise ValueError(f"the prompt has {prompt_length} tokens, more than max_position_embeddings="
                             f"{max_positions}: shorten it")
    if not isinstance(new, int) or new < 0:
        raise ValueError(f"max_new_tokens must be a whole number >= 0, got {new!r}" + (
            f" (max_length={gen.max_length} is shorter than the prompt's {prompt_length} tokens; max_length counts "
            "the prompt too: use max_new_tokens for the tokens to add)" if gen.max_new_tokens is None else ""))
    if prompt_length + new > max_positions:
        raise ValueError(f"prompt + max_new_tokens = {prompt_length + new} tokens, more than max_position_embeddings="
                         f"{max_positions}")
    if not isinstance(gen.num_beams, int) or gen.num_beams < 1:
        raise ValueError(f"num_beams must be a whole number >= 1, got {gen.num_beams!r}")
    n = gen.num_return_sequences
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"num_return_sequences must be an integer >= 1, got {n!r}")
    if n > 1 and gen.num_beams == 1 and not gen.do_sample:
        raise ValueError(f"num_return_sequences={n} with greedy decoding gives the same sequence each time; pass "
                         "do_sample=True to draw different ones, or num_beams >= num_return_sequences")
    if gen.num_beams > 1 and n > gen.num_beams:
        raise ValueError(f"num_return_sequences={n} is more than num_beams={gen.num_beams}: beam search returns "
                         "some of its beams")
    if gen.early_stopping not in (True, False, "never"):
        raise ValueError(f"early_stopping must be True, False or 'never', got {gen.early_stopping!r}")
    if not gen.repetition_penalty > 0:
        raise ValueError(f"repetition_penalty must be above 0 (1.0: none), got {gen.repetition_penalty!r}")
    if gen.do_sample:
        check_sampling(gen.temperature, gen.top_k, gen.top_p)
    eos = gen.eos_token_id
    if eos is None:
        return new, None
    eos = torch.tensor([eos] if isinstance(eos, int) else list(eos))
    if (eos >= vocab_size).any():  # a negative id is never produced: transformers' tests use -1 for "no end"
        raise ValueError(f"eos_token_id={gen.eos_token_id!r} is outside the vocabulary (0..{vocab_size - 1})")
    return new, eos


# ---- processors: the scores of the next token, changed as the settings ask ----
def processors(gen, eos, prompt_length, padding=None, vectors=0, custom=None):
    """A function (ids so far (N, t), scores (N, V)) -> scores, in transformers' order: the penalties
    and bans, the user's processors, then (when sampling) temperature, top_k, top_p. prompt_length: the
    prompt's ids (0 for a prompt given as vectors only); padding: (N,) each row's left padding, which
    the repetition penalty leaves out; vectors: the prompt's vectors without ids."""
    steps = []
    if gen.repetition_penalty != 1.0:
        steps.append(lambda ids, s: penalize_repeats(ids, s, gen.repetition_penalty, padding))
    if gen.bad_words_ids is not None:
        ends = [] if eos is None else [[int(e)] for e in eos]  # a lone end marker is never banned
        banned = list(dict.fromkeys(tuple(w) for w in gen.bad_words_ids if list(w) not in ends))
        steps.append(lambda ids, s: ban_words(ids, s, banned))
    if gen.min_new_tokens is not None:  # it wins over min_length, as in transformers
        least = prompt_length + gen.min_new_tokens
    else:  # min_length counts the prompt; its vectors have no ids here
        least = max(gen.min_length - vectors, 0)
    if eos is not None and least > prompt_length:
        steps.append(lambda ids, s: s.masked_fill(torch.isin(torch.arange(s.shape[-1], device=s.device),
                                                             eos.to(s.device)), float("-inf"))
                     if ids.shape[1] < least else s)
    if gen.remove_invalid_values:
        steps.append(lambda ids, s: finite(s))
    steps += list(custom or [])
    if gen.do_sample:
        keep = 1 if gen.num_beams == 1 else 1 + (1 if eos is None else len(eos))  # beams need a token besides eos
        if gen.temperature != 1.0:
            steps.append(lambda ids, s: s / gen.temperature)
        if gen.top_k:
            steps.append(lambda ids, s: keep_top_k(s, max(gen.top_k, keep)))
        if gen.top_p < 1.0:
            steps.append(lambda ids, s: keep_top_p(s, gen.top_p, keep))

    def process(ids, scores):
        for step in steps:
            scores = step(ids, scores)
        return scores
    return process


def penalize_repeats(ids, scores, penalty, padding=None):
    """Every token already in the sequence (prompt included, its left padding not) scores less: divided
    by penalty if positive, multiplied if negative (the CTRL paper's rule, as in transformers)."""
    if padding is not None:  # the padding points at an extra column, dropped at the end
        ids = ids.masked_fill(torch.arange(ids.shape[1], device=ids.device) < padding[:, None], scores.shape[-1])
    padded = torch.cat([scores, scores.new_zeros(len(scores), 1)], dim=1)
    seen = padded.gather(1, ids)
    return padded.scatter(1, ids, torch.where(seen < 0, seen * penalty, seen / penalty))[:, :-1]


def ban_words(ids, scores, banned):
    """-inf for the last token of every banned word whose earlier tokens end the sequence."""
    scores = scores.clone()
    for word in banned:
        *prefix, last = word
        if not prefix:
            scores[:, last] = float("-inf")
        elif len(prefix) <= ids.shape[1]:
            ends_with = (ids[:, ids.shape[1] - len(prefix):] == torch.tensor(prefix, device=ids.device)).all(1)
            scores[ends_with, last] = float("-inf")
    return scores


def finite(scores):
    """NaN -> 0 and +-inf -> the largest finite numbers, so that no step fails on them."""
    info = torch.finfo(scores.dtype)
    scores = torch.where(scores != scores, 0.0, scores)
    return scores.clamp(info.min, info.max)


def keep_top_k(scores, k):
    kth = scores.topk(min(k, scores.shape[-1]), dim=-1).values[:, -1:]  # (N, 1)
    return scores.masked_fill(scores < kth, float("-inf"))


def keep_top_p(scores, p, keep=1):
    """Keep the smallest set of tokens whose probability reaches p (and at least `keep` tokens)."""
    ascending, order = scores.sort(dim=-1)
    outside = ascending.softmax(-1).cumsum(-1) <= 1 - p  # the unlikely tail that holds at most 1 - p
    outside[:, -keep:] = False
    return scores.masked_fill(outside.scatter(1, order, outside), float("-inf"))


def sample_next_token(logits, temperature=1.0, top_k=None, top_p=None, generator=None):
    """Draw one token per row of (B, V) logits: one step of sampling, for a lesson to call on its own.
    temperature < 1 sharpens, > 1 flattens; top_k keeps the k most likely tokens (here None or 0 keeps
    every token; generate's default is 50, as transformers'); top_p keeps the smallest set whose
    probability reaches p."""
    check_sampling(temperature, top_k, top_p)
    scores = logits / temperature
    if top_k:
        scores = keep_top_k(scores, top_k)
    if top_p is not None and top_p < 1:
        scores = keep_top_p(scores, top_p)
    return torch.multinomial(scores.softmax(-1), 1, generator=generator).squeeze(-1)


def positions_from_mask(attention_mask):
    """Position ids that count from each row's first real token, as transformers' generate does: a
    left-padded prompt gets the positions it would have without its padding (padding gets 0)."""
    return (attention_mask.long().cumsum(-1) - 1).masked_fill(attention_mask == 0, 0)


# ---- the model, one step at a time ----
class Stepper:
    """Runs the model on the sequences so far and returns its output: the whole prompt at the first
    step, then (with the cache) the newest token only (model.prepare_inputs_for_generation says what
    goes in). Keeps the attention mask, the segment ids and the cache in step with the tokens."""

    def __init__(self, model, start, prompt_mask, token_type_ids, use_cache, inputs_embeds, encoder_hidden_states,
                 encoder_attention_mask, output_attentions, output_hidden_states):
        self.model, self.start, self.prompt_mask, self.use_cache = model, start, prompt_mask, use_cache
        self.segments = token_type_ids  # the prompt's; new tokens continue the last one's segment
        self.positions = None if prompt_mask is None else positions_from_mask(prompt_mask)  # new ones: last + 1, ...
        self.embeds = inputs_embeds  # a prompt given as vectors: they stand for the prompt's ids
        self.extra = dict(encoder_hidden_states=encoder_hidden_states, encoder_attention_mask=encoder_attention_mask,
                          output_attentions=output_attentions, output_hidden_states=output_hidden_states)
        self.past = None

    def __call__(self, ids):
        new = ids.shape[1] - self.start  # tokens generated so far
        mask, segments, positions = self.prompt_mask, self.segments, self.positions
        if mask is not None:  # the new tokens are real ones, at the positions after the prompt's last column
            mask = torch.cat([mask, mask.new_ones(len(mask), new)], dim=1)
            positions = torch.cat([positions, positions[:, -1:] + torch.arange(1, new + 1, device=ids.device)], dim=1)
        if segments is not None:
            segments = torch.cat([segments, segments[:, -1:].expand(-1, new)], dim=1)
        inputs = self.model.prepare_inputs_for_generation(
            ids if self.embeds is None else ids[:, self.start:], past_key_values=self.past, attention_mask=mask,
            inputs_embeds=self.embeds, token_type_ids=segments, position_ids=positions, use_cache=self.use_cache,
            **self.extra)
        out = self.model(**inputs, return_dict=True)
        self.past = out.past_key_values if self.use_cache else None
        return out

    def reorder(self, rows):
        """The cache follows the beams: row i now continues row rows[i]."""
        if self.past is not None:
            self.past = tuple(tuple(t.index_select(0, rows) for t in layer) for layer in self.past)


# ---- generate ----
@torch.no_grad()
def generate(model, inputs=None, generation_config=None, **kwargs):
    """BertForCausalLM.generate: see that method, and this module's docstring."""
    gen, given = settings(model, generation_config, kwargs)
    input_ids = as_tensor("input_ids", inputs if inputs is not None else given.get("input_ids"), model.device)
    mask = as_tensor("attention_mask", given.get("attention_mask"), model.device)
    input_ids, embeds, mask = check_prompts(model, input_ids, given.get("inputs_embeds"), mask)
    prompt_length = embeds.shape[1] if embeds is not None else input_ids.shape[1]
    max_new, eos = check_settings(gen, prompt_length, model.config.max_position_embeddings, model.config.vocab_size)
    if gen.pad_token_id is None:
        gen.pad_token_id = int(eos[0]) if eos is not None else model.config.pad_token_id
    segments = as_tensor("token_type_ids", given.get("token_type_ids"), model.device)
    if segments is not None and tuple(segments.shape) != (len(input_ids), prompt_length):
        raise ValueError(f"token_type_ids has shape {tuple(segments.shape)} but the prompt has "
                         f"{(len(input_ids), prompt_length)}")
    enc = given.get("encoder_hidden_states")
    enc_mask = as_tensor("encoder_attention_mask", given.get("encoder_attention_mask"), model.device)
    copies = gen.num_beams if gen.num_beams > 1 else gen.num_return_sequences  # rows per prompt, one after another
    input_ids, embeds, mask, segments, enc, enc_mask = (
        None if x is None else x.repeat_interleave(copies, dim=0) for x in (input_ids, embeds, mask, segments, enc,
                                                                              enc_mask))
    record = gen.return_dict_in_generate
    step = Stepper(model, input_ids.shape[1], mask, segments, gen.use_cache, embeds, enc, enc_mask,
                   record and gen.output_attentions, record and gen.output_hidden_states)
    padding = None if mask is None or embeds is not None else (mask != 0).int().argmax(1)  # left padding per row
    vectors = 0 if embeds is None or input_ids.shape[1] else embeds.shape[1]
    process = processors(gen, eos, input_ids.shape[1], padding, vectors, given.get("logits_processor"))
    decode = beam_search if gen.num_beams > 1 else greedy_or_sample
    return decode(input_ids, step, process, given.get("stopping_criteria") or [], gen, eos, max_new,
                  given.get("generator"))


def check_prompts(model, input_ids, embeds, mask):
    """(input_ids, inputs_embeds, attention_mask) of the prompts. A prompt given as vectors only gets
    input_ids of shape (B, 0): the output then holds the new tokens only, as in transformers."""
    if input_ids is None and embeds is None:
        raise ValueError("generate needs a prompt: input_ids (B, T), or inputs_embeds (B, T, hidden_size)")
    if embeds is not None:
        if embeds.dim() != 3 or embeds.shape[-1] != model.config.hidden_size or 0 in embeds.shape:
            raise ValueError(f"inputs_embeds must have shape (batch, seq_len >= 1, {model.config.hidden_size}), got "
                             f"{tuple(embeds.shape)}")
        if input_ids is None:
            input_ids = torch.zeros(len(embeds), 0, dtype=torch.long, device=embeds.device)
        elif tuple(input_ids.shape) != tuple(embeds.shape[:2]):
            raise ValueError(f"input_ids has shape {tuple(input_ids.shape)} but inputs_embeds has "
                             f"{tuple(embeds.shape[:2])} vectors: give the ids of the same prompt, or input_ids=None")
        shape = tuple(embeds.shape[:2])
    else:
        if input_ids.dim() != 2 or 0 in input_ids.shape:
            raise ValueError(f"input_ids must have shape (batch, seq_len) with at least one token, got "
                             f"{tuple(input_ids.shape)}; for one prompt use input_ids[None]")
        shape = tuple(input_ids.shape)
    if mask is not None:
        if tuple(mask.shape) != shape:
            raise ValueError(f"attention_mask has shape {tuple(mask.shape)} but the prompt has shape {shape}")
        if not mask[:, -1].all():  # new tokens would follow the padding: transformers warns too, and goes on
            warnings.warn("attention_mask shows padding at the end of a prompt: the new tokens follow the padding, "
                          "which the model never saw in training. Pad the prompts on the left "
                          "(tokenizer.padding_side = 'left')", stacklevel=5)
    return input_ids, embeds, mask


def greedy_or_sample(ids, step, process, stop, gen, eos, max_new, generator):
    """One token per row per step: the argmax, or a draw from the softmax of the processed scores.
    A row that produced eos is filled with pad_token_id until every row is done."""
    kept = Record(gen)
    unfinished = torch.ones(len(ids), dtype=torch.bool, device=ids.device)
    for _ in range(max_new):
        out = step(ids)
        raw = out.logits[:, -1].float()  # (N, V)
        processed = process(ids, raw)
        if gen.do_sample:
            next_id = torch.multinomial(processed.softmax(-1), 1, generator=generator).squeeze(1)
        else:
            next_id = processed.argmax(-1)
        if eos is not None:
            next_id = torch.where(unfinished, next_id, gen.pad_token_id)
        ids = torch.cat([ids, next_id[:, None]], dim=1)
        kept.add(processed, raw, out)
        if eos is not None:
            unfinished &= ~torch.isin(next_id, eos.to(ids.device))
        for criterion in stop:
            unfinished &= ~criterion(ids, kept.scores_so_far())
        if not unfinished.any():
            break
    return kept.output(ids, step.past)


def beam_search(ids, step, process, stop, gen, eos, max_new, generator):
    """Keep the num_beams likeliest sequences of each prompt. Each step scores every extension of every
    beam (its log-probability plus the beam's), keeps the best 2*num_beams (so that num_beams go on even
    if some end here), puts aside those that end (with eos, or at the length limit) among the first
    num_beams, and goes on with the num_beams best that did not end. The num_beams best put-aside
    sequences are the result, best first. Tensors are (prompts B, beams K, ...), as in transformers."""
    K = gen.num_beams
    N, start = ids.shape
    B, max_length = N // K, start + max_new
    keep = max(2, 1 + (0 if eos is None else len(eos))) * K
    fill = (gen.pad_token_id or int(eos[0])) if eos is not None else -1  # transformers' filler after an end
    running = torch.full((B, K, max_length), fill, dtype=torch.long, device=ids.device)
    running[:, :, :start] = ids.view(B, K, start)
    running_scores = torch.zeros(B, K, device=ids.device)
    running_scores[:, 1:] = LEFT_OUT_OF_TOP_K  # the K copies of a prompt are one beam at first
    running_from = torch.full((B, K, max_new), -1, dtype=torch.int32, device=ids.device)  # beam of each new token
    done, done_scores, done_from = running.clone(), torch.full((B, K), LEFT_OUT_OF_TOP_K, device=ids.device), running_from.clone()
    is_done = torch.zeros(B, K, dtype=torch.bool, device=ids.device)
    improvable = torch.ones(B, 1, dtype=torch.bool, device=ids.device)
    first_k = torch.arange(keep, device=ids.device) < K
    kept = Record(gen)
    for length in range(start, max_length):
        flat = running[:, :, :length].reshape(N, length)
        out = step(flat)
        raw = out.logits[:, -1].float()
        log_probs = process(flat, F.log_softmax(raw, dim=-1))  # (N, V)
        kept.add(log_probs, raw, out)
        V = log_probs.shape[-1]
        total = (log_probs.view(B, K, V) + running_scores[:, :, None]).view(B, K * V)
        if gen.do_sample:  # beam sampling: draw the candidates instead of taking the best
            picked = torch.multinomial(total.softmax(-1), keep, generator=generator)
            cand_scores, order = total.gather(1, picked).sort(dim=-1, descending=True)
            picked = picked.gather(1, order)
        else:
            cand_scores, picked = total.topk(keep, dim=-1)  # (B, keep)
        beam, token = picked // V, picked % V
        cand = running.gather(1, beam[:, :, None].expand(-1, -1, max_length)).clone()
        cand[:, :, length] = token
        cand_from = running_from.gather(1, beam[:, :, None].expand(-1, -1, max_new)).clone()
        cand_from[:, :, length - start] = beam + K * torch.arange(B, device=ids.device)[:, None]
        ends = torch.zeros_like(cand_scores, dtype=torch.bool) | (length + 1 >= max_length)
        if eos is not None:
            ends |= torch.isin(token, eos.to(token.device))
        for criterion in stop:
            ends |= criterion(cand[:, :, :length + 1].reshape(B * keep, -1), kept.scores_so_far()).view(B, keep)
        # go on with the K best candidates that did not end
        best = (cand_scores + ends * LEFT_OUT_OF_TOP_K).topk(K, dim=-1).indices
        running_scores = (cand_scores + ends * LEFT_OUT_OF_TOP_K).gather(1, best)
        running = cand.gather(1, best[:, :, None].expand(-1, -1, max_length))
        running_from = cand_from.gather(1, best[:, :, None].expand(-1, -1, max_new))
        # put aside the candidates that ended among the first K, scored per new token ** length_penalty
        ended = ends & first_k
        final = cand_scores / (length + 1 - start) ** gen.length_penalty
        full = is_done.all(-1, keepdim=True) & (gen.early_stopping is True)
        final = final + (full | ~improvable | ~ended) * LEFT_OUT_OF_TOP_K
        merged = torch.cat([done_scores, final], dim=1).topk(K, dim=-1).indices
        done = torch.cat([done, cand], dim=1).gather(1, merged[:, :, None].expand(-1, -1, max_length))
        done_from = torch.cat([done_from, cand_from], dim=1).gather(1, merged[:, :, None].expand(-1, -1, max_new))
        is_done = torch.cat([is_done, ended], dim=1).gather(1, merged)
        done_scores = torch.cat([done_scores, final], dim=1).gather(1, merged)
        step.reorder(running_from[:, :, length - start].reshape(N))
        improvable = improvable & could_improve(running_scores, done_scores, is_done, length + 1 - start, max_new,
                                                gen.early_stopping, gen.length_penalty)
        if not improvable.any() or (is_done.all() and gen.early_stopping is True) or ends.all():
            break
    n = gen.num_return_sequences
    sequences, beam_indices = done[:, :n].reshape(B * n, -1), done_from[:, :n].reshape(B * n, -1)
    generated = int((beam_indices >= 0).sum(1).max())
    sequences, beam_indices = sequences[:, :start + generated], beam_indices[:, :generated]
    scores = done_scores[:, :n].reshape(-1) if gen.output_scores else None
    return kept.output(sequences, step.past, sequences_scores=scores, beam_indices=beam_indices)


def could_improve(running_scores, done_scores, is_done, new_tokens, max_new, early_stopping, length_penalty):
    """(B, 1): whether a running beam may still beat the worst sequence put aside. The best running
    score is judged at its present length, or at the longest one with early_stopping="never" and a
    length_penalty > 0 (then longer scores better), as in transformers."""
    if early_stopping == "never" and length_penalty > 0.0:
        new_tokens = max_new
    best_running = running_scores[:, :1] / new_tokens ** length_penalty
    worst_done = torch.where(is_done, done_scores.min(dim=1, keepdim=True).values, LEFT_OUT_OF_TOP_K)
    return (best_running > worst_done).any(dim=-1, keepdim=True)


class Record:
    """What return_dict_in_generate keeps of each step, as the output_* settings ask: the processed
    scores, the raw logits, the attentions and the hidden states (nothing, by default)."""

    def __init__(self, gen):
        asked = lambda switch: [] if gen.return_dict_in_generate and switch else None  # noqa: E731
        self.scores, self.logits = asked(gen.output_scores), asked(gen.output_logits)
        self.attentions, self.hidden_states = asked(gen.output_attentions), asked(gen.output_hidden_states)
        self.wanted = gen.return_dict_in_generate

    def add(self, scores, logits, out):
        for kept, value in ((self.scores, scores), (self.logits, logits), (self.attentions, out.attentions),
                            (self.hidden_states, out.hidden_states)):
            if kept is not None:
                kept.append(value)

    def scores_so_far(self):
        """What a stopping criterion gets, as in transformers: the scores kept so far, or None."""
        return None if self.scores is None else tuple(self.scores)

    def output(self, sequences, cache, **beams):
        """The sequences, or transformers' own output class (GenerateDecoderOnlyOutput, or
        GenerateBeamDecoderOnlyOutput with sequences_scores and beam_indices) with what was kept."""
        if not self.wanted:
            return sequences
        from transformers.generation.utils import GenerateBeamDecoderOnlyOutput, GenerateDecoderOnlyOutput
        cls = GenerateBeamDecoderOnlyOutput if beams else GenerateDecoderOnlyOutput
        as_tuple = lambda kept: None if kept is None else tuple(kept)  # noqa: E731
        return cls(sequences=sequences, scores=as_tuple(self.scores), logits=as_tuple(self.logits),
                   attentions=as_tuple(self.attentions), hidden_states=as_tuple(self.hidden_states), cache=cache,
                   **beams)


__all__ = ["generate", "sample_next_token"]


class GenerationMethods:
    """generate() as a method, and the inputs of each decoding step, as transformers' GenerationMixin has
    them: for BertForCausalLM."""

    def prepare_inputs_for_generation(self, input_ids, past_key_values=None, attention_mask=None, inputs_embeds=None,
                                      token_type_ids=None, position_ids=None, **kwargs):
        """The forward's inputs at one decoding step: everything so far at the first step, then (with
        past_key_values) only the newest token; positions counted from each row's first real token
        unless given. A prompt given as vectors (inputs_embeds) comes first, then the embeddings of the
        new tokens (input_ids then hold the new tokens only)."""
        if inputs_embeds is not None:
            inputs = dict(inputs_embeds=torch.cat([inputs_embeds, self.get_input_embeddings()(input_ids)], dim=1))
        else:
            inputs = dict(input_ids=input_ids)
        inputs["token_type_ids"] = token_type_ids
        if position_ids is None and attention_mask is not None:
            position_ids = positions_from_mask(attention_mask)
        inputs["position_ids"] = position_ids
        if past_key_values is not None:  # the cache holds all but the newest token
            inputs = {k: None if v is None else v[:, -1:] for k, v in inputs.items()}
        return dict(inputs, attention_mask=attention_mask, past_key_values=past_key_values, **kwargs)

    def generate(self, inputs=None, generation_config=None, **kwargs):
        """Continue each prompt, as transformers' generate does: greedy by default, sampled with
        do_sample=True (temperature, top_k, top_p), or by beam search with num_beams=k (length_penalty,
        early_stopping); max_new_tokens (20 by default) or max_length (prompt included), min_new_tokens,
        repetition_penalty, bad_words_ids, num_return_sequences (the copies of a prompt come one after
        the other), eos_token_id / pad_token_id, return_dict_in_generate with output_scores and the
        other output_* switches, and a GenerationConfig (default: self.generation_config). The prompt
        is input_ids, or inputs_embeds (then the output holds only the new tokens). Prompts of different
        lengths go in padded on the left with their attention_mask; positions count from each prompt's
        first real token. generator= (a torch.Generator) makes sampling repeatable without touching
        torch's global seed. The decoding itself is generate() above."""
        return generate(self, inputs, generation_config, **kwargs)
