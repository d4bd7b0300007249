"""Example builders: masking statistics on real text, NSP/SOP provenance, the causal collator."""

import re

import pytest
import torch

import minibert
from minibert.data import KEPT, MASKED, NOT_SELECTED, RANDOM, collate


@pytest.fixture(scope="module")
def blocks(corpus, tokenizer):
    return minibert.make_lm_examples(corpus[:60], tokenizer, max_length=128)


@pytest.fixture(scope="module")
def masked(blocks, tokenizer):
    """About 60k real tokens, masked once."""
    ids = collate(blocks[:600], tokenizer.pad_token_id)["input_ids"]
    collator = minibert.MLMCollator(tokenizer, seed=0)
    return ids, *collator.mask_tokens(ids), collator


def test_selection_rate_and_80_10_10_split(masked):
    ids, new_ids, labels, decisions, collator = masked
    ordinary = ~collator.special[ids]
    selected = labels != -100
    assert ordinary.sum() > 50_000
    assert abs(selected.sum() / ordinary.sum() - 0.15) < 0.005
    shares = {d: ((decisions == d).sum() / selected.sum()).item() for d in (MASKED, RANDOM, KEPT)}
    assert abs(shares[MASKED] - 0.8) < 0.01 and abs(shares[RANDOM] - 0.1) < 0.01 and abs(shares[KEPT] - 0.1) < 0.01
    assert torch.equal(decisions != NOT_SELECTED, selected)


def test_specials_and_padding_are_never_selected(masked, tokenizer):
    ids, new_ids, labels, decisions, collator = masked
    assert (ids == tokenizer.pad_token_id).any()  # the batch has padding to avoid
    assert not (labels[collator.special[ids]] != -100).any()
    assert torch.equal(new_ids[collator.special[ids]], ids[collator.special[ids]])


def test_labels_and_inputs_follow_the_decisions(masked, tokenizer):
    ids, new_ids, labels, decisions, collator = masked
    selected = labels != -100
    assert torch.equal(labels[selected], ids[selected])  # the original token is the target
    assert torch.equal(new_ids[~selected], ids[~selected])  # everything else untouched
    assert (new_ids[decisions == MASKED] == tokenizer.mask_token_id).all()
    assert torch.equal(new_ids[decisions == KEPT], ids[decisions == KEPT])
    randoms = new_ids[decisions == RANDOM]
    assert not collator.special[randoms].any()  # a random replacement is an ordinary token
    assert (randoms != ids[decisions == RANDOM]).float().mean() > 0.99


def test_masking_is_dynamic_and_reproducible(blocks, tokenizer):
    a, b = minibert.MLMCollator(tokenizer, seed=7), minibert.MLMCollator(tokenizer, seed=7)
    first_a, first_b = a(blocks[:16]), b(blocks[:16])
    assert all(torch.equal(first_a[k], first_b[k]) for k in first_a)  # same seed, same masks
    second_a = a(blocks[:16])
    assert not torch.equal(first_a["labels"], second_a["labels"])  # a fresh mask for the same text
    assert set(first_a) == {"input_ids", "attention_mask", "labels"}


def test_whole_word_masking_masks_every_piece_of_a_word(blocks, tokenizer):
    collator = minibert.MLMCollator(tokenizer, whole_word_mask=True, seed=0)
    ids = collate(blocks[:200], 0)["input_ids"]
    _, labels, _ = collator.mask_tokens(ids)
    selected = labels != -100
    pieces = collator.continues_word[ids] & ~collator.special[ids]
    assert pieces.sum() > 1000
    # a ##piece is selected exactly when the token before it (same word) is
    assert torch.equal(selected[:, 1:][pieces[:, 1:]], selected[:, :-1][pieces[:, 1:]])
    rate = selected.sum() / (~collator.special[ids]).sum()
    assert 0.13 < rate < 0.16


def test_custom_shares_and_invalid_shares(blocks, tokenizer):
    ids = collate(blocks[:300], 0)["input_ids"]
    _, labels, decisions = minibert.MLMCollator(tokenizer, 0.3, 1.0, 0.0, seed=1).mask_tokens(ids)
    assert (decisions == KEPT).sum() == 0 and (decisions == RANDOM).sum() == 0
    assert abs((labels != -100).sum() / (ids > 4).sum() - 0.3) < 0.01
    with pytest.raises(ValueError, match="sum to at most 1"):
        minibert.MLMCollator(tokenizer, mask_replace_prob=0.8, random_replace_prob=0.3)
    with pytest.raises(ValueError, match="mlm_probability"):
        minibert.MLMCollator(tokenizer, mlm_probability=0)


def test_causal_collator_pads_with_minus_100_and_does_not_shift(blocks, tokenizer):
    batch = minibert.CausalLMCollator(tokenizer)([blocks[0]["input_ids"][:10], blocks[1]["input_ids"][:6]])
    assert batch["input_ids"].shape == (2, 10)
    assert batch["labels"][0].tolist() == batch["input_ids"][0].tolist()  # not shifted: the model shifts
    assert batch["labels"][1].tolist() == blocks[1]["input_ids"][:6] + [-100] * 4
    assert minibert.check_causal_labels(batch["input_ids"], batch["labels"]).shifted is False
    prompt = {"input_ids": [2, 50, 51, 52, 3], "labels": [-100, -100, 51, 52, 3]}  # do not learn the prompt
    assert minibert.CausalLMCollator(tokenizer)([prompt])["labels"].tolist() == [[-100, -100, 51, 52, 3]]
    mixed = minibert.CausalLMCollator(tokenizer)([prompt, {"input_ids": [2, 51, 3]}])  # own labels or none
    assert mixed["labels"].tolist() == [[-100, -100, 51, 52, 3], [2, 51, 3, -100, -100]]
    with pytest.raises(ValueError, match="as long as its input_ids"):
        minibert.CausalLMCollator(tokenizer)([{"input_ids": [2, 51, 3], "labels": [51, 3]}])


def test_double_shift_detector(blocks, tokenizer):
    batch = minibert.CausalLMCollator(tokenizer)([b["input_ids"] for b in blocks[:8]])
    ids, labels = batch["input_ids"], batch["labels"]
    good = minibert.check_causal_labels(ids, labels)
    assert not good.shifted and good.agreement_same == 1.0
    pre_shifted = minibert.shift_labels(labels)  # what a user does when unaware that the model shifts
    bad = minibert.check_causal_labels(ids, pre_shifted)
    assert bad.shifted and bad.agreement_next > 0.99
    assert "shifted twice" in bad.message and "labels=input_ids" in bad.message
    trimmed = minibert.check_causal_labels(ids[:, :-1], ids[:, 1:])  # the tutorial's version of the mistake
    assert trimmed.shifted
    unrelated = minibert.check_causal_labels(ids, ids.roll(1, dims=0))
    assert not unrelated.shifted and "another batch" in unrelated.message


# ---- sentence pairs ----

def marked_corpus(n_docs=40, n_sents=10):
    """Every word of sentence s in document d is 'dXsY': any token left after truncation tells where it came from."""
    names = "abcdefghijklmnopqrstuvwxyz"
    def word(d, s):
        return f"d{names[d // 26]}{names[d % 26]}s{names[s]}"
    return [[" ".join([word(d, s)] * 4) + "." for s in range(n_sents)] for d in range(n_docs)]


@pytest.fixture(scope="module")
def marked():
    docs = marked_corpus()
    return docs, minibert.train_tokenizer(docs, vocab_size=600, min_frequency=1)


def spans(example, tokenizer):
    """(documents, sentence positions) of the tokens of segment A and of segment B, read from the text."""
    def where(text):
        found = re.findall(r"d([a-z])([a-z])s([a-z])", text.replace(" ", ""))
        return [(ord(x) - 97) * 26 + ord(y) - 97 for x, y, _ in found], [ord(z) - 97 for _, _, z in found]
    segments = tokenizer.decode(example["input_ids"]).split("[SEP]")
    return where(segments[0]), where(segments[1])


@pytest.mark.parametrize("negatives", ["random", "hard"])
def test_nsp_labels_agree_with_where_b_came_from(marked, negatives):
    docs, tok = marked
    examples = minibert.make_nsp_examples(docs, tok, max_length=48, negatives=negatives, seed=0)
    assert len(examples) > 60
    for e in examples:
        (a_docs, a_pos), (b_docs, b_pos) = spans(e, tok)
        assert a_docs and b_docs, "each segment keeps at least one token"
        assert len(set(a_docs)) == 1
        if e["next_sentence_label"] == 0:  # IsNext: B is the same document, right after A
            assert set(b_docs) == set(a_docs) and min(b_pos) > max(a_pos)
            assert e["source"]["b_from"] == "next" and e["source"]["b"][0] == e["source"]["a"][1]
        elif negatives == "random":  # NotNext: never the same document
            assert not set(b_docs) & set(a_docs) and e["source"]["b_from"] == "random document"
        else:  # hard: the same document, but not next to A
            assert set(b_docs) == set(a_docs) and e["source"]["b_from"] == "same document"
            assert min(b_pos) > max(a_pos) + 1 or max(b_pos) < min(a_pos) - 1


def test_nsp_balance_lengths_and_segment_ids(corpus, tokenizer):
    examples = minibert.make_nsp_examples(corpus, tokenizer, max_length=128, seed=0)
    balance = minibert.class_balance(examples)
    assert len(examples) > 5000 and abs(balance[0] - 0.5) < 0.05
    for e in examples[::50]:
        ids, types = e["input_ids"], e["token_type_ids"]
        assert len(ids) <= 128 and len(types) == len(ids)
        seps = [i for i, t in enumerate(ids) if t == tokenizer.sep_token_id]
        assert ids[0] == tokenizer.cls_token_id and len(seps) == 2 and seps[1] == len(ids) - 1
        assert types == [0] * (seps[0] + 1) + [1] * (len(ids) - seps[0] - 1)
    batch = minibert.MLMCollator(tokenizer, seed=0)(examples[:8])
    assert batch["token_type_ids"].shape == batch["input_ids"].shape
    assert batch["next_sentence_label"].tolist() == [e["next_sentence_label"] for e in examples[:8]]


def test_sop_swaps_segments_of_the_same_document(marked):
    docs, tok = marked
    examples = minibert.make_sop_examples(docs, tok, max_length=48, seed=0)
    assert abs(minibert.class_balance(examples)[1] - 0.5) < 0.15
    for e in examples:
        (a_docs, a_pos), (b_docs, b_pos) = spans(e, tok)
        assert set(a_docs) == set(b_docs)  # always one document: topic gives nothing away
        in_order = max(a_pos) < min(b_pos)
        assert in_order == (e["next_sentence_label"] == 0)


def test_pair_builders_refuse_bad_input(tokenizer):
    with pytest.raises(ValueError, match="at least two documents"):
        minibert.make_nsp_examples([["Only one document.", "With two sentences."]], tokenizer)
    with pytest.raises(ValueError, match="corpus is empty"):
        minibert.make_nsp_examples([], tokenizer)
    with pytest.raises(ValueError, match="max_length=4 cannot hold"):
        minibert.make_nsp_examples([["a b."], ["c d."]], tokenizer, max_length=4)
    with pytest.raises(ValueError, match="negatives must be"):
        minibert.make_nsp_examples([["a b."], ["c d."]], tokenizer, negatives="easy")
