"""Linear probes: pooling ignores padding, the probe finds a line when there is one, and it is deterministic."""

import torch

import minibert
from minibert.training.probe import bag_of_words, mean_pool, sentence_features, train_probe


def test_mean_pool_ignores_padding():
    hidden = torch.randn(2, 4, 3)
    mask = torch.tensor([[1, 1, 1, 1], [1, 1, 0, 0]])
    pooled = mean_pool(hidden, mask)
    assert torch.allclose(pooled[0], hidden[0].mean(0))
    assert torch.allclose(pooled[1], hidden[1, :2].mean(0))


def test_probe_separates_separable_classes_and_is_deterministic():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(300, 10, generator=g)
    y = (x @ torch.randn(10, 3, generator=g)).argmax(-1)  # 3 classes with linear boundaries
    probe = train_probe(x[:200], y[:200])
    assert probe.accuracy(x[:200], y[:200]) > 0.95
    assert probe.accuracy(x[200:], y[200:]) > 0.9
    again = train_probe(x[:200], y[:200])
    assert torch.equal(probe.predict(x[200:]), again.predict(x[200:]))


def test_probe_on_noise_is_near_chance():
    g = torch.Generator().manual_seed(1)
    x, y = torch.randn(400, 20, generator=g), torch.randint(0, 2, (400,), generator=g)
    assert 0.35 < train_probe(x[:200], y[:200]).accuracy(x[200:], y[200:]) < 0.65


def test_sentence_features_do_not_depend_on_the_batch(tokenizer):
    torch.manual_seed(0)
    model = minibert.BertForMaskedLM(minibert.BertConfig.tiny(vocab_size=len(tokenizer)))
    short, long = "The river bank.", "The bank raised its interest rates again this year, to everyone's surprise."
    together = sentence_features(model, tokenizer, [short, long])
    alone = sentence_features(model, tokenizer, [short])
    assert together.shape == (2, 128)
    assert torch.allclose(together[0], alone[0], atol=1e-5)  # the padding of the short one is not averaged in
    cls = sentence_features(model, tokenizer, [short, long], pooling="cls", layer=0)
    assert cls.shape == (2, 128) and not torch.allclose(cls, together)
    pairs = sentence_features(model, tokenizer, [(short, long), (long, short)])
    assert pairs.shape == (2, 128) and not torch.allclose(pairs[0], pairs[1])  # segment ids and order count


def test_bag_of_words_counts_tokens(tokenizer):
    counts = bag_of_words(tokenizer, ["the river the bank", "bank"])
    the, bank = tokenizer.convert_tokens_to_ids(["the", "bank"])
    assert counts.shape == (2, len(tokenizer))
    assert counts[0, the] == 2 and counts[0, bank] == 1 and counts[1].sum() == 1
