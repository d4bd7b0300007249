"""minibert.compare: the one way the lessons compare two models. What a student reads off it: which
settings the arms differ in, the paired difference with an interval that redraws whole documents, and a
verdict that the interval allows."""

import json
import random

import pytest

import minibert
from minibert.training.compare import AHEAD, BEHIND, CANNOT_TELL, settings_of


def coins(p, n, seed):
    rng = random.Random(seed)
    return [float(rng.random() < p) for _ in range(n)]


def test_a_clear_difference_gets_a_verdict_and_a_small_one_on_few_items_does_not():
    a, b = coins(0.7, 3000, 1), coins(0.5, 3000, 2)
    c = minibert.compare({"steps": 600}, {"steps": 200}, a, b, groups=None, names=("long", "short"))
    assert c.verdict == AHEAD and c.difference.low > 0.1
    assert minibert.compare({}, {}, b, a, groups=None).verdict == BEHIND
    few = minibert.compare({}, {}, coins(0.52, 40, 3), coins(0.5, 40, 4), groups=None)
    assert few.verdict == CANNOT_TELL and "cannot tell first and second apart" in str(few)


def test_a_loss_is_ahead_when_it_is_lower_and_a_ratio_is_read_against_one():
    low, high = [2.0 + 0.1 * (i % 3) for i in range(300)], [2.5 + 0.1 * (i % 5) for i in range(300)]
    c = minibert.compare({}, {}, low, high, groups=None, lower_is_better=True, ratio=True, what="perplexity")
    assert c.verdict == AHEAD
    assert c.difference.high < 1 and c.difference.estimate == pytest.approx(2.718281828 ** (-0.5 + 0.1 - 0.2), rel=0.05)
    assert "perplexity, first / second: 0.55 [" in str(c)


def test_items_that_share_a_document_widen_the_interval():
    # 20 documents of 100 items: within a document the items agree, so only 20 draws are independent
    doc_effect = coins(0.5, 20, 5)
    a = [doc_effect[i // 100] for i in range(2000)]
    b = [0.5] * 2000
    alone = minibert.compare({}, {}, a, b, groups=None)
    whole = minibert.compare({}, {}, a, b, groups=[f"doc {i // 100}" for i in range(2000)],
                             group_name="articles")
    assert whole.difference.high - whole.difference.low > 5 * (alone.difference.high - alone.difference.low)
    assert whole.groups == 20 and "2,000 items in 20 articles, redrawn whole" in str(whole)


def test_every_setting_that_differs_is_named_and_a_verdict_with_several_belongs_to_none(tmp_path):
    folder = tmp_path / "shipped"
    folder.mkdir()
    args = dict(objective="mlm", preset="tiny", steps=50000, batch_size=64, max_length=64, lr=0.001, seed=0)
    (folder / "training_args.json").write_text(json.dumps({"args": args, "steps": 4000}))
    live = dict(args, steps=600, lr=0.002, eval_every=60)
    c = minibert.compare(live, folder, coins(0.3, 500, 6), coins(0.5, 500, 7), groups=None, names=("live", "shipped"))
    assert c.differs == {"steps": (600, 4000), "lr": (0.002, 0.001), "tokens seen": (600 * 64 * 64, 4000 * 64 * 64)}
    assert c.one_thing is None and "differ in 3 settings: the difference belongs to none of them alone" in str(c)
    one = minibert.compare(dict(args, objective="clm"), args, [1.0] * 9, [0.0] * 9, groups=None)
    assert one.one_thing == "objective" and "belongs to none" not in str(one)


def test_a_run_is_an_arm_with_the_learning_rate_it_took(small):
    corpus, tokenizer = small
    run = minibert.pretrain("mlm", corpus=corpus, tokenizer=tokenizer, steps=2, batch_size=4, max_length=32,
                            eval_every=2, eval_examples=8, progress=False, verbose=False)
    c = minibert.compare(run, dict(settings_of(run), seed=1), [1.0], [1.0], groups=None)
    assert c.differs == {"seed": (0, 1)}
    assert settings_of(run)["lr"] == pytest.approx(1e-3)


def test_bad_arms_and_unpaired_scores_are_refused_with_a_sentence(tmp_path):
    with pytest.raises(ValueError, match="2 scores for first and 3 for second: score both arms on the same items"):
        minibert.compare({}, {}, [1, 0], [1, 0, 1], groups=None)
    with pytest.raises(ValueError, match="NaN or infinite"):
        minibert.compare({}, {}, [1, float("nan")], [1, 0], groups=None)
    with pytest.raises(ValueError, match="neither training_args.json nor trainer_state.json"):
        minibert.compare(tmp_path, {}, [1], [1], groups=None)
    (tmp_path / "training_args.json").write_text("{not json")
    with pytest.raises(ValueError, match="training_args.json' is damaged"):
        minibert.compare(tmp_path, {}, [1], [1], groups=None)
    with pytest.raises(TypeError, match="cannot tell what a list was trained with"):
        minibert.compare([1], {}, [1], [1], groups=None)
    with pytest.raises(TypeError, match="groups"):
        minibert.compare({}, {}, [1], [1])  # every comparison says whether its items share documents


def test_block_documents_names_the_document_of_every_block(small):
    corpus, tokenizer = small
    docs = corpus[:6]
    blocks = minibert.make_lm_examples(docs, tokenizer, 32)
    owner = minibert.block_documents(docs, tokenizer, 32)
    assert len(owner) == len(blocks) and owner == sorted(owner) and set(owner) == set(range(6))
    for d in range(6):  # the blocks of document d are the blocks of that document alone
        mine = [b["input_ids"] for b, o in zip(blocks, owner) if o == d]
        assert mine == [b["input_ids"] for b in minibert.make_lm_examples(docs[d:d + 1], tokenizer, 32)]
