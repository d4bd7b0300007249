"""Generation: the KV cache changes speed, never tokens; greedy, sampled and beam-search decoding, their
settings and their outputs equal transformers' generate on the same weights."""

import warnings

import pytest
import torch
import transformers

import minibert
from helpers import CONFIGS, left_padded_batch, randomize, word_tokenizer


def prompts(n=3, length=5, vocab=120, seed=0):
    return torch.randint(5, vocab, (n, length), generator=torch.Generator().manual_seed(seed))


def test_cached_generation_equals_full_recomputation(causal_pair):
    ours, _ = causal_pair
    ids = prompts()
    cached = ours.generate(ids, max_new_tokens=25)
    uncached = ours.generate(ids, max_new_tokens=25, use_cache=False)
    assert cached.shape == (3, 30)
    assert torch.equal(cached, uncached)
    assert torch.equal(cached[:, :5], ids)


def test_cached_logits_equal_full_forward(causal_pair):
    ours, _ = causal_pair
    ids = prompts(length=9)
    with torch.no_grad():
        full = ours(ids).logits
        first = ours(ids[:, :4], use_cache=True)
        rest = ours(ids[:, 4:], past_key_values=first.past_key_values, use_cache=True)
    assert (torch.cat([first.logits, rest.logits], 1) - full).abs().max() < 1e-5
    assert rest.past_key_values[0][0].shape == (3, 3, 9, 16)  # (B, nh, T, hs)


def test_greedy_generation_equals_transformers(causal_pair):
    ours, theirs = causal_pair
    ids = prompts(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = theirs.generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(ids, max_new_tokens=20), expected)


def test_greedy_generation_with_eos_pads_finished_rows_like_transformers(causal_pair):
    ours, theirs = causal_pair
    ids = prompts(seed=2)
    free = ours.generate(ids, max_new_tokens=12)
    eos = int(free[0, 7])  # a token the first row produces: make it the end marker
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = theirs.generate(ids, max_new_tokens=12, do_sample=False, pad_token_id=0, eos_token_id=eos)
    got = ours.generate(ids, max_new_tokens=12, eos_token_id=eos)
    assert torch.equal(got, expected)
    first_eos = (got[0, 5:] == eos).nonzero()[0].item() + 5
    assert (got[0, first_eos + 1:] == 0).all()


def test_cross_attention_decoder_generation_cached_equals_uncached_and_transformers(tmp_path):
    config = transformers.BertConfig(**CONFIGS["gelu"], is_decoder=True, add_cross_attention=True)
    theirs = randomize(transformers.BertLMHeadModel(config), seed=8).eval()
    theirs.save_pretrained(tmp_path)
    ours = minibert.BertForCausalLM.from_pretrained(tmp_path)
    ids = prompts(2, 4, 99)
    encoder_states = torch.randn(2, 6, 32, generator=torch.Generator().manual_seed(0))
    encoder_mask = torch.tensor([[1] * 6, [1] * 4 + [0] * 2])
    kwargs = dict(encoder_hidden_states=encoder_states, encoder_attention_mask=encoder_mask, max_new_tokens=10)
    cached = ours.generate(ids, **kwargs)
    assert torch.equal(cached, ours.generate(ids, use_cache=False, **kwargs))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # transformers' own cache fails with cross-attention: compare uncached
        expected = theirs.generate(ids, do_sample=False, pad_token_id=0, use_cache=False, **kwargs)
    assert torch.equal(cached, expected)


def same_generation(ours, theirs, inputs=None, seed=None, **kwargs):
    """generate of both models with the same settings (and the same global seed when sampling)."""
    outputs = []
    for model in (theirs, ours):
        if seed is not None:
            torch.manual_seed(seed)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            outputs.append(model.generate(inputs, **kwargs))
    return outputs


def an_end_marker(ours, ids):
    """A token that greedy decoding produces in the first row: as eos_token_id, beams end early."""
    return int(ours.generate(ids, max_new_tokens=8)[0, ids.shape[1] + 2])


@pytest.mark.parametrize("settings", [
    dict(num_beams=4),
    dict(num_beams=4, ends=True),
    dict(num_beams=4, ends=True, num_return_sequences=3, length_penalty=2.0),
    dict(num_beams=4, ends=True, early_stopping=True),
    dict(num_beams=3, ends=True, early_stopping="never", length_penalty=0.5),
    dict(num_beams=3, use_cache=False),
    dict(num_beams=3, left_padded=True),
])
def test_beam_search_finds_the_same_sequences_as_transformers(causal_pair, settings):
    ours, theirs = causal_pair
    settings, ids = dict(settings), prompts(seed=3)
    if settings.pop("ends", False):
        settings["eos_token_id"] = an_end_marker(ours, ids)
    if settings.pop("left_padded", False):
        settings["attention_mask"] = torch.tensor([[0, 0, 1, 1, 1], [1] * 5, [0, 1, 1, 1, 1]])
    expected, got = same_generation(ours, theirs, ids, max_new_tokens=12, **settings)
    assert torch.equal(got, expected)
    greedy = ours.generate(ids, max_new_tokens=12, **{k: v for k, v in settings.items() if k == "attention_mask"})
    assert not torch.equal(got[:, :greedy.shape[1]], greedy)  # beams choose other tokens than the greedy path


def test_beam_search_scores_and_beam_indices_equal_transformers(causal_pair):
    ours, theirs = causal_pair
    ids = prompts(seed=4)
    expected, got = same_generation(ours, theirs, ids, max_new_tokens=6, num_beams=3, num_return_sequences=2,
                                    eos_token_id=an_end_marker(ours, ids), return_dict_in_generate=True,
                                    output_scores=True, output_logits=True)
    assert list(got.keys()) == list(expected.keys())
    assert torch.equal(got.sequences, expected.sequences)
    assert torch.allclose(got.sequences_scores, expected.sequences_scores, atol=1e-5)
    assert torch.equal(got.beam_indices, expected.beam_indices.long())
    assert len(got.scores) == len(expected.scores)
    for name in ("scores", "logits"):
        assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(got[name], expected[name]))


def test_greedy_outputs_with_return_dict_in_generate_equal_transformers(causal_pair):
    ours, theirs = causal_pair
    ids = prompts(seed=5)
    expected, got = same_generation(ours, theirs, ids, max_new_tokens=5, return_dict_in_generate=True,
                                    output_scores=True, output_logits=True, output_attentions=True,
                                    output_hidden_states=True)
    assert list(got.keys()) == list(expected.keys())
    assert torch.equal(got.sequences, expected.sequences)
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(got.scores, expected.scores))
    assert len(got.attentions) == len(expected.attentions) == 5  # one tuple of layers per step
    assert all(torch.allclose(a, b, atol=1e-5) for step_a, step_b in zip(got.attentions, expected.attentions)
               for a, b in zip(step_a, step_b))
    assert all(torch.allclose(a, b, atol=1e-4) for step_a, step_b in zip(got.hidden_states, expected.hidden_states)
               for a, b in zip(step_a, step_b))


@pytest.mark.parametrize("settings", [
    dict(repetition_penalty=1.5),
    dict(repetition_penalty=1.3, num_beams=3),
    dict(min_new_tokens=6, ends=True),
    dict(min_new_tokens=6, ends=True, num_beams=2),
    dict(bad_words=True, remove_invalid_values=True),
])
def test_score_processors_change_the_same_tokens_as_transformers(causal_pair, settings):
    ours, theirs = causal_pair
    settings, ids = dict(settings), prompts(seed=6)
    free = ours.generate(ids, max_new_tokens=10, num_beams=settings.get("num_beams", 1))
    if settings.pop("ends", False):
        settings["eos_token_id"] = int(free[0, ids.shape[1] + 1])  # the second new token: min_new_tokens delays it
    if settings.pop("bad_words", False):  # a token of row 0 and a two-token word of row 1, and one never made
        settings["bad_words_ids"] = [[int(free[0, 6])], free[1, 5:7].tolist(), [7, 8, 9]]
    expected, got = same_generation(ours, theirs, ids, max_new_tokens=10, **settings)
    assert torch.equal(got, expected)
    assert not torch.equal(got[:, :free.shape[1]], free)  # the setting changed something


@pytest.mark.parametrize("settings", [
    dict(),  # transformers' default: the 50 likeliest tokens
    dict(top_k=0, temperature=1.5),
    dict(top_k=10, top_p=0.7, temperature=0.7),
    dict(num_return_sequences=3, top_p=0.9),
    dict(num_beams=3, ends=True),  # beam sampling
])
def test_sampling_draws_the_same_tokens_as_transformers_from_the_same_seed(causal_pair, settings):
    ours, theirs = causal_pair
    settings, ids = dict(settings), prompts(seed=7)
    if settings.pop("ends", False):
        settings["eos_token_id"] = an_end_marker(ours, ids)
    expected, got = same_generation(ours, theirs, ids, seed=11, max_new_tokens=10, do_sample=True, **settings)
    assert torch.equal(got, expected)
    again = same_generation(ours, theirs, ids, seed=12, max_new_tokens=10, do_sample=True, **settings)[1]
    assert not torch.equal(got, again)  # another seed, other draws


@pytest.mark.parametrize("num_beams", [1, 2])
def test_generation_from_inputs_embeds_equals_transformers(causal_pair, num_beams):
    ours, theirs = causal_pair
    ids = prompts(seed=8)
    with torch.no_grad():
        vectors = ours.get_input_embeddings()(ids)
    expected, got = same_generation(ours, theirs, inputs_embeds=vectors, max_new_tokens=6, num_beams=num_beams)
    assert got.shape == (3, 6)  # the new tokens only, as in transformers
    assert torch.equal(got, expected)
    assert torch.equal(got, ours.generate(ids, max_new_tokens=6, num_beams=num_beams)[:, 5:])


def test_generation_config_is_saved_beside_the_weights_and_used_by_both_libraries(causal_pair, tmp_path):
    ours, _ = causal_pair
    ids = prompts(seed=9)
    ours.generation_config.num_beams, ours.generation_config.max_new_tokens = 3, 7
    try:
        ours.save_pretrained(tmp_path)
    finally:
        ours.generation_config.num_beams, ours.generation_config.max_new_tokens = None, None
    assert (tmp_path / "generation_config.json").is_file()
    reloaded = minibert.BertForCausalLM.from_pretrained(tmp_path)
    assert reloaded.generation_config.num_beams == 3
    theirs = transformers.BertLMHeadModel.from_pretrained(tmp_path)
    expected, got = same_generation(reloaded, theirs, ids)  # the saved settings: 3 beams, 7 new tokens
    assert got.shape == (3, 12) and torch.equal(got, expected)
    assert torch.equal(got, ours.generate(ids, num_beams=3, max_new_tokens=7))
    (tmp_path / "generation_config.json").write_text("{ cut short")
    with pytest.raises(ValueError, match="generation_config.json' cannot be read"):
        minibert.BertForCausalLM.from_pretrained(tmp_path)


def test_sampling_is_reproducible_and_respects_top_k(causal_pair):
    ours, _ = causal_pair
    ids = prompts()
    a = ours.generate(ids, max_new_tokens=15, do_sample=True, top_k=5, generator=torch.Generator().manual_seed(0))
    b = ours.generate(ids, max_new_tokens=15, do_sample=True, top_k=5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(a, b)
    logits = torch.tensor([[3.0, 2.0, 1.0, 0.0, -1.0]]).repeat(2000, 1)
    g = torch.Generator().manual_seed(0)
    assert set(minibert.sample_next_token(logits, top_k=2, generator=g).tolist()) == {0, 1}
    # top_p=0.8 keeps the smallest set reaching 80%: softmax = .64 .23 .09 ... -> tokens 0 and 1
    assert set(minibert.sample_next_token(logits, top_p=0.8, generator=g).tolist()) == {0, 1}
    cold = minibert.sample_next_token(logits, temperature=0.05, generator=g)
    assert (cold == 0).float().mean() > 0.99
    hot = minibert.sample_next_token(logits, temperature=100.0, generator=g)
    assert len(set(hot.tolist())) == 5


def test_generate_refuses_to_run_past_the_position_table(causal_pair):
    ours, _ = causal_pair
    with pytest.raises(ValueError, match="max_position_embeddings"):
        ours.generate(prompts(length=30), max_new_tokens=20)  # table has 40 positions


def test_next_token_helpers_skip_the_final_sep(tmp_path):
    """A [SEP] appended by the tokenizer must not be the position the next token is predicted from."""
    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    model = minibert.BertForCausalLM(minibert.BertConfig.tiny(vocab_size=10)).eval()
    expected = model.predict_next_token_id(input_ids=torch.tensor([[2, 5, 6, 7]]))  # [CLS] deep learning is
    assert torch.equal(model.predict_next_token_id_from_text(tokenizer, "deep learning is"), expected)
    batch = model.predict_next_token_id_from_text(tokenizer, ["deep learning is", "deep"])
    assert batch[0] == expected[0]
    assert batch[1] == model.predict_next_token_id(input_ids=torch.tensor([[2, 5]]))[0]
    loss = model.get_loss_from_text(tokenizer, "deep learning is fun")
    manual = model.get_loss(torch.tensor([[2, 5, 6, 7, 8, 3]]), input_ids=torch.tensor([[2, 5, 6, 7, 8, 3]]))
    assert abs(loss.item() - manual.item()) < 1e-6


class StopAfterToken(transformers.StoppingCriteria):
    """A user's stopping rule: a row is done once it produces `token`."""

    def __init__(self, token):
        self.token = token

    def __call__(self, input_ids, scores, **kwargs):
        return input_ids[:, -1] == self.token


@pytest.mark.parametrize("num_beams", [1, 3])
def test_a_users_own_logits_processor_and_stopping_criteria_act_as_in_transformers(causal_pair, num_beams):
    ours, theirs = causal_pair
    ids = prompts(seed=10)
    free = ours.generate(ids, max_new_tokens=10, num_beams=num_beams)
    settings = dict(max_new_tokens=10, num_beams=num_beams,
                    logits_processor=transformers.LogitsProcessorList([transformers.NoRepeatNGramLogitsProcessor(2)]),
                    stopping_criteria=transformers.StoppingCriteriaList([StopAfterToken(int(free[1, 7]))]))
    expected, got = same_generation(ours, theirs, ids, **settings)
    assert torch.equal(got, expected)
    assert not torch.equal(got[:, :free.shape[1]], free)


@pytest.mark.parametrize("num_beams", [1, 2])
def test_segment_ids_of_the_prompt_carry_on_to_the_new_tokens_as_in_transformers(causal_pair, num_beams):
    ours, theirs = causal_pair
    ids = prompts(seed=11)
    segments = torch.tensor([[0, 0, 1, 1, 1], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]])
    expected, got = same_generation(ours, theirs, ids, token_type_ids=segments, max_new_tokens=8, num_beams=num_beams)
    assert torch.equal(got, expected)
    assert not torch.equal(got, ours.generate(ids, max_new_tokens=8, num_beams=num_beams))


def test_right_padded_prompts_get_a_warning_and_the_tokens_transformers_gives(causal_pair):
    ours, theirs = causal_pair
    ids = prompts(seed=12)
    mask = torch.tensor([[1, 1, 1, 0, 0], [1] * 5, [1, 1, 1, 1, 0]])
    with pytest.warns(UserWarning, match="Pad the prompts on the left"):
        got = ours.generate(ids, attention_mask=mask, max_new_tokens=6)
    expected = same_generation(ours, theirs, ids, attention_mask=mask, max_new_tokens=6)[0]
    assert torch.equal(got, expected)


def test_a_prompt_given_as_ids_and_vectors_is_decoded_from_the_vectors_and_returned_with_its_ids(causal_pair):
    ours, theirs = causal_pair
    ids = prompts(seed=13)
    with torch.no_grad():
        vectors = ours.get_input_embeddings()(ids) * 1.5  # other vectors than the ids': the output must follow them
    expected, got = same_generation(ours, theirs, ids, inputs_embeds=vectors, max_new_tokens=6, num_beams=2)
    assert torch.equal(got, expected)
    assert torch.equal(got[:, :5], ids) and not torch.equal(got, ours.generate(ids, max_new_tokens=6, num_beams=2))


# ---- left padding, several sequences per prompt, max_length ----

@pytest.mark.parametrize("use_cache", [True, False])
def test_left_padded_greedy_generation_equals_transformers_and_each_prompt_alone(causal_pair, use_cache):
    ours, theirs = causal_pair
    prompts, ids, mask = left_padded_batch()
    got = ours.generate(ids, attention_mask=mask, max_new_tokens=10, use_cache=use_cache)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = theirs.generate(ids, attention_mask=mask, max_new_tokens=10, do_sample=False, pad_token_id=0)
    assert torch.equal(got, expected)
    for row, p in enumerate(prompts):  # padding changes nothing: the same tokens as the prompt alone
        alone = ours.generate(p[None], max_new_tokens=10)
        assert torch.equal(got[row, 6:], alone[0, len(p):])


def test_next_token_helpers_read_the_last_real_token_under_left_padding(causal_pair):
    ours, _ = causal_pair
    prompts, ids, mask = left_padded_batch()
    logits = ours.get_next_token_logits(input_ids=ids, attention_mask=mask)
    right = torch.zeros_like(ids)
    right_mask = torch.zeros_like(mask)
    for row, p in enumerate(prompts):
        right[row, :len(p)], right_mask[row, :len(p)] = p, 1
        with torch.no_grad():
            alone = ours(p[None]).logits[0, -1]
        assert (logits[row] - alone).abs().max() < 1e-4
    assert (ours.get_next_token_logits(input_ids=right, attention_mask=right_mask) - logits).abs().max() < 1e-4
    assert torch.equal(ours.predict_next_token_id(input_ids=ids, attention_mask=mask), logits.argmax(-1))


def test_generate_takes_max_length_pad_token_id_and_num_return_sequences(causal_pair):
    ours, _ = causal_pair
    _, ids, mask = left_padded_batch()
    assert torch.equal(ours.generate(ids, max_length=9), ours.generate(ids, max_new_tokens=3))
    assert ours.generate(ids, max_new_tokens=2, max_length=9).shape[1] == 8  # max_new_tokens wins, as in transformers
    free = ours.generate(ids[:1], max_new_tokens=8)
    eos = int(free[0, 8])  # the third new token: the row ends there and is then padded
    ended = ours.generate(ids[:1], max_new_tokens=8, eos_token_id=eos, pad_token_id=1)
    assert ended[0, 9:].tolist() == [1] * (len(ended[0]) - 9)
    g = torch.Generator().manual_seed(0)
    drawn = ours.generate(ids, attention_mask=mask, max_new_tokens=6, do_sample=True, num_return_sequences=4,
                          generator=g)
    assert drawn.shape == (12, 12)
    assert torch.equal(drawn[:4, :6], ids[:1].expand(4, -1))  # the copies of a prompt come together
    assert len({tuple(row) for row in drawn[:4, 6:].tolist()}) > 1  # and are drawn independently


@pytest.mark.parametrize("kwargs, message", [
    (dict(max_new_tokens=-1), "max_new_tokens"),
    (dict(max_length=4), "max_length=4 is shorter than the prompt"),
    (dict(do_sample=True, top_k=-2), "top_k must be a whole number >= 0, got -2"),
    (dict(do_sample=True, temperature=0), "temperature must be a finite number > 0"),
    (dict(num_return_sequences=2), "num_return_sequences"),
    (dict(do_sample=True, num_return_sequences=0), "num_return_sequences must be an integer >= 1"),
    (dict(num_beams=2, num_return_sequences=3), "num_return_sequences"),
    (dict(penalty_alpha=0.6, top_k=4), "does not do penalty_alpha=0.6"),
    (dict(no_repeat_ngram_size=2), "does not do no_repeat_ngram_size=2"),
    (dict(assistant_model="a model"), r"does not do assisted decoding \(assistant_model=\)"),
    (dict(max_new_token=3), "generate got 'max_new_token', which is neither a generation setting nor an input"),
    (dict(eos_token_id=10_000), "eos_token_id=10000 is outside the vocabulary"),
])
def test_generate_refuses_settings_it_cannot_honour(causal_pair, kwargs, message):
    ours, _ = causal_pair
    _, ids, _ = left_padded_batch()
    with pytest.raises(ValueError, match=message):
        ours.generate(ids, **kwargs)
    with pytest.raises(ValueError, match="top_k must be a whole number >= 0"):
        minibert.sample_next_token(torch.zeros(1, 5), top_k=-1)
    with pytest.raises(ValueError, match="at least one token"):
        ours.generate(torch.zeros(2, 0, dtype=torch.long))


def test_text_prompts_are_left_padded_without_their_final_sep_and_generate_continues_them():
    from minibert.model.helpers import encode_text
    tokenizer = word_tokenizer()
    torch.manual_seed(0)
    model = minibert.BertForCausalLM(minibert.BertConfig.tiny(vocab_size=10)).eval()
    enc = encode_text(tokenizer, ["deep learning is", "deep"], drop_final_sep=True)
    assert enc["input_ids"].tolist() == [[2, 5, 6, 7], [0, 0, 2, 5]]  # [CLS] deep learning is / [CLS] deep
    assert enc["attention_mask"].tolist() == [[1, 1, 1, 1], [0, 0, 1, 1]]
    batch = model.generate(enc["input_ids"], attention_mask=enc["attention_mask"], max_new_tokens=5)
    assert torch.equal(batch[0], model.generate([[2, 5, 6, 7]], max_new_tokens=5)[0])
    assert torch.equal(batch[1, 2:], model.generate([[2, 5]], max_new_tokens=5)[0])


def test_the_repetition_penalty_leaves_left_padding_out_as_transformers_does(causal_pair):
    ours, theirs = causal_pair
    _, ids, mask = left_padded_batch()
    settings = dict(attention_mask=mask, max_new_tokens=6, repetition_penalty=2.0, return_dict_in_generate=True,
                    output_scores=True)
    expected, got = same_generation(ours, theirs, ids, **settings)
    assert torch.equal(got.sequences, expected.sequences)
    assert all(torch.allclose(a, b, atol=1e-4) for a, b in zip(got.scores, expected.scores))
    pad = ids[mask == 0][0]  # the padding id is never penalized: its score is the raw one
    assert torch.allclose(got.scores[0][-1, pad], expected.scores[0][-1, pad], atol=1e-5)


def test_min_new_tokens_with_a_prompt_of_vectors_counts_new_tokens_only(causal_pair):
    ours, theirs = causal_pair
    ids = prompts(seed=14)
    with torch.no_grad():
        vectors = ours.get_input_embeddings()(ids)
    eos = int(ours.generate(inputs_embeds=vectors, max_new_tokens=6)[0, 1])  # the second new token of row 0
    expected, got = same_generation(ours, theirs, inputs_embeds=vectors, max_new_tokens=6, min_new_tokens=4,
                                    eos_token_id=eos)
    assert torch.equal(got, expected)
    assert (got[:, :4] != eos).all()
