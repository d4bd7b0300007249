"""The offline corpus, the user's own text, datasets, sentence splitting and the held-out split."""


import pytest

import minibert
from minibert.corpus import load_corpus, split_corpus, split_sentences


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
    import minibert.corpus
    monkeypatch.setattr(minibert.corpus, "read_lee", lambda: pytest.fail("read the source again"))
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
