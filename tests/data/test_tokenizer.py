"""The WordPiece tokenizer: special ids, the pair template, pieces, and a save/load round trip."""

import transformers

SPECIALS = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "[MASK]": 4}


def test_special_ids_are_right_without_a_reload(tokenizer):
    assert isinstance(tokenizer, transformers.PreTrainedTokenizerBase) and tokenizer.is_fast
    assert (tokenizer.pad_token_id, tokenizer.unk_token_id, tokenizer.cls_token_id, tokenizer.sep_token_id,
            tokenizer.mask_token_id) == (0, 1, 2, 3, 4)
    assert len(tokenizer) == 8000


def test_pair_template_and_segment_ids(tokenizer):
    enc = tokenizer("The cat sat.", "It purred.")
    tokens = tokenizer.convert_ids_to_tokens(enc["input_ids"])
    a, b = tokenizer.tokenize("The cat sat."), tokenizer.tokenize("It purred.")
    assert tokens == ["[CLS]", *a, "[SEP]", *b, "[SEP]"]
    first_sep = tokens.index("[SEP]")
    assert enc["token_type_ids"] == [0] * (first_sep + 1) + [1] * (len(tokens) - first_sep - 1)
    assert tokenizer.decode(enc["input_ids"], skip_special_tokens=True) == "the cat sat. it purred."


def test_rare_words_become_pieces_and_unknown_characters_unk(tokenizer):
    tokens = tokenizer.tokenize("Anarchism is antidisestablishmentarianism")
    assert tokens[0] == "anarchism"  # frequent in the corpus: one piece
    assert any(t.startswith("##") for t in tokens[2:])  # a rare word is split into pieces
    assert tokenizer.tokenize("\u4e2d\u6587") == ["[UNK]", "[UNK]"]  # characters never seen in training


def test_padding_right_with_attention_mask(tokenizer):
    batch = tokenizer(["one two three four", "one"], padding=True, return_tensors="pt")
    assert batch["input_ids"][1, -1] == 0 and batch["attention_mask"][1].tolist()[-1] == 0
    assert batch["attention_mask"][0].all()


def test_save_and_load_round_trip(tokenizer, tmp_path):
    tokenizer.save_pretrained(tmp_path)
    loaded = transformers.AutoTokenizer.from_pretrained(tmp_path)
    text = ("Albedo is the fraction of sunlight that is diffusely reflected.", "Fresh snow reflects 0.9 of it.")
    assert loaded(*text)["input_ids"] == tokenizer(*text)["input_ids"]
    assert loaded(*text)["token_type_ids"] == tokenizer(*text)["token_type_ids"]
    assert {t: loaded.convert_tokens_to_ids(t) for t in SPECIALS} == SPECIALS
    assert loaded.mask_token_id == 4 and loaded.pad_token_id == 0


def test_training_gives_the_same_vocabulary_in_every_process():
    """tokenizers numbers ##pieces in hash-map order, which broke ties differently in each process;
    train_tokenizer registers them sorted first, so the vocabulary (and every cached run) is stable."""
    import subprocess
    import sys
    code = ("import hashlib, json, minibert; c = minibert.load_corpus(); "
            "tok = minibert.train_tokenizer(c[:80], vocab_size=3000, cache=False); "
            "print(hashlib.md5(json.dumps(sorted(tok.get_vocab().items())).encode()).hexdigest())")
    hashes = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()[-1]
              for _ in range(3)}
    assert len(hashes) == 1


def test_a_cached_tokenizer_is_the_trained_one_and_a_damaged_cache_is_retrained(tmp_path, monkeypatch, capsys):
    import minibert
    from minibert.data.tokenizer import cache_path
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    docs = minibert.load_corpus()[:60]
    fresh = minibert.train_tokenizer(docs, vocab_size=2000, cache=False)
    path = cache_path([s for d in docs for s in d], 2000, 2)
    first = minibert.train_tokenizer(docs, vocab_size=2000, verbose=True)
    assert "trained a 2,000-token" in capsys.readouterr().out
    again = minibert.train_tokenizer(docs, vocab_size=2000, verbose=True)
    assert "read from the cache" in capsys.readouterr().out
    for tok in (first, again):  # the same object as a freshly trained one, down to the normalizer
        assert tok.backend_tokenizer.to_str() == fresh.backend_tokenizer.to_str()
        assert tok("Aristotle's café.", "Second one.") == fresh("Aristotle's café.", "Second one.")
    other = minibert.train_tokenizer(docs, vocab_size=1500)  # other settings: another entry
    assert len(other) == 1500 and cache_path([s for d in docs for s in d], 1500, 2) != path
    with open(path, "w") as f:
        f.write('{"version": ')  # cut short, as by a full disk
    repaired = minibert.train_tokenizer(docs, vocab_size=2000)
    assert "could not be read" in capsys.readouterr().out
    assert repaired.backend_tokenizer.to_str() == fresh.backend_tokenizer.to_str()
    assert minibert.train_tokenizer(docs, vocab_size=2000).get_vocab() == fresh.get_vocab()


def test_a_cache_that_cannot_be_written_still_gives_the_tokenizer(tmp_path, monkeypatch, capsys):
    import minibert
    docs = minibert.load_corpus()[:20]
    (tmp_path / "a-file").write_text("not a folder")
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "a-file" / "cache"))  # no folder can be made there
    tok = minibert.train_tokenizer(docs, vocab_size=1000)
    assert "the tokenizer is not cached" in capsys.readouterr().out
    assert tok.get_vocab() == minibert.train_tokenizer(docs, vocab_size=1000, cache=False).get_vocab()


def test_a_tokenizer_cache_write_that_fails_in_the_tokenizers_library_still_gives_the_tokenizer(tmp_path, monkeypatch,
                                                                                                 capsys):
    """The tokenizers library reports a failed write (a full disk, a missing folder) as a plain Exception."""
    import contextlib
    import minibert
    import minibert.data.tokenizer as t
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    monkeypatch.setattr(t, "atomic_file", lambda path: contextlib.nullcontext(str(tmp_path / "gone" / "x.json")))
    docs = minibert.load_corpus()[:20]
    tok = minibert.train_tokenizer(docs, vocab_size=1000)
    assert "note: the tokenizer is not cached (it could not be written to" in capsys.readouterr().out
    assert tok.get_vocab() == minibert.train_tokenizer(docs, vocab_size=1000, cache=False).get_vocab()
