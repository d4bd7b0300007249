"""Generation: the KV cache changes speed, never tokens; greedy decoding equals transformers'."""

import warnings

import pytest
import torch
import transformers

import minibert
from conftest import CONFIGS, randomize, word_tokenizer


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    path = tmp_path_factory.mktemp("causal")
    theirs = randomize(transformers.BertLMHeadModel(transformers.BertConfig(**CONFIGS["gelu_new"], is_decoder=True)),
                       seed=7).eval()
    theirs.save_pretrained(path)
    return minibert.BertForCausalLM.from_pretrained(path), theirs


def prompts(n=3, length=5, vocab=120, seed=0):
    return torch.randint(5, vocab, (n, length), generator=torch.Generator().manual_seed(seed))


def test_cached_generation_equals_full_recomputation(pair):
    ours, _ = pair
    ids = prompts()
    cached = ours.generate(ids, max_new_tokens=25)
    uncached = ours.generate(ids, max_new_tokens=25, use_cache=False)
    assert cached.shape == (3, 30)
    assert torch.equal(cached, uncached)
    assert torch.equal(cached[:, :5], ids)


def test_cached_logits_equal_full_forward(pair):
    ours, _ = pair
    ids = prompts(length=9)
    with torch.no_grad():
        full = ours(ids).logits
        first = ours(ids[:, :4], use_cache=True)
        rest = ours(ids[:, 4:], past_key_values=first.past_key_values, use_cache=True)
    assert (torch.cat([first.logits, rest.logits], 1) - full).abs().max() < 1e-5
    assert rest.past_key_values[0][0].shape == (3, 3, 9, 16)  # (B, nh, T, hs)


def test_greedy_generation_equals_transformers(pair):
    ours, theirs = pair
    ids = prompts(seed=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = theirs.generate(ids, max_new_tokens=20, do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(ids, max_new_tokens=20), expected)


def test_greedy_generation_with_eos_pads_finished_rows_like_transformers(pair):
    ours, theirs = pair
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


def test_sampling_is_reproducible_and_respects_top_k(pair):
    ours, _ = pair
    ids = prompts()
    a = ours.generate(ids, 15, do_sample=True, top_k=5, generator=torch.Generator().manual_seed(0))
    b = ours.generate(ids, 15, do_sample=True, top_k=5, generator=torch.Generator().manual_seed(0))
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


def test_generate_refuses_to_run_past_the_position_table(pair):
    ours, _ = pair
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
