"""Text to learn from: documents as lists of sentences, offline by default.

The default corpus is real English that ships inside gensim's wheel: 106 Wikipedia articles (what
BERT was trained on) and the 300 news stories of the Lee corpus. Wiki markup is removed, sentences
are split, document boundaries are kept (next sentence prediction needs them), and the cleaned text
is cached so the second load takes milliseconds.
"""

import bz2
import gzip
import hashlib
import json
import os
import re

CLEANING_VERSION = 3  # bump when the cleaning changes, so old caches are not reused
WIKI_FILE = "enwiki-latest-pages-articles1.xml-p000000010p000030302-shortened.bz2"
LEE_FILE = "lee_background.cor"
SOURCES = ("wiki", "lee")


class Corpus(list):
    """A list of documents, each a list of sentences, that also knows each document's title."""

    def __init__(self, documents, titles=None, name=""):
        super().__init__(documents)
        self.titles = list(titles) if titles is not None else [f"document {i}" for i in range(len(documents))]
        self.name = name

    def stats(self):
        sentences = [s for doc in self for s in doc]
        return {"documents": len(self), "sentences": len(sentences), "words": sum(len(s.split()) for s in sentences)}

    def __repr__(self):
        s = self.stats()
        return f"Corpus({self.name!r}: {s['documents']:,} documents, {s['sentences']:,} sentences, {s['words']:,} words)"


def cache_dir():
    """MINIBERT_CACHE (a "~" in it means the home folder, as in a shell), else ~/.cache/minibert; an
    absolute path, so that a notebook and a command in another folder find the same cache."""
    path = os.path.abspath(os.path.expanduser(os.environ.get("MINIBERT_CACHE") or
                                              os.path.join("~", ".cache", "minibert")))
    os.makedirs(path, exist_ok=True)
    return path


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


def read_text_file(path):
    """Google's pretraining format: one sentence per line, a blank line between documents."""
    documents, current = [], []
    with open(path, encoding="utf-8") as f:
        try:
            for line in f:
                line = line.strip()
                if line:
                    current.append(line)
                elif current:
                    documents.append(current)
                    current = []
        except UnicodeDecodeError as e:
            raise ValueError(f"{path!r} is not UTF-8 text (byte {e.start} of a line: {e.object[e.start:e.start + 1]!r}); "
                             "convert it first, e.g. iconv -f latin1 -t utf-8 IN > OUT") from None
    if current:
        documents.append(current)
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
      a text file         one sentence per line, blank lines between documents (or a folder of them)
      a saved dataset     a folder written by datasets' save_to_disk, or a datasets.Dataset object
      anything else       a Hugging Face datasets name (needs the network once)
    """
    if name_or_path is None or name_or_path == "default":
        return load_builtin(SOURCES, cache)
    if name_or_path in SOURCES:
        return load_builtin((name_or_path,), cache)
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
    path = os.path.join(cache_dir(), f"corpus-{name}-v{CLEANING_VERSION}.json.gz")
    if cache and os.path.exists(path):
        with gzip.open(path, "rt", encoding="utf-8") as f:
            data = json.load(f)
        return Corpus(data["documents"], data["titles"], name)
    documents, titles = [], []
    for source in sources:
        d, t = read_wiki() if source == "wiki" else read_lee()
        documents += d
        titles += t
    if cache:
        tmp = f"{path}.{os.getpid()}.tmp"
        with gzip.open(tmp, "wt", encoding="utf-8") as f:
            json.dump({"documents": documents, "titles": titles}, f)
        os.replace(tmp, path)  # a reader never sees half a file
    return Corpus(documents, titles, name)


def split_corpus(corpus, heldout=0.1, seed=0):
    """A deterministic (train, held-out) split by document: no sentence of a held-out document is
    seen in training, so held-out scores measure generalisation, not memory."""
    if not 0 < heldout < 1:
        raise ValueError(f"heldout must be a fraction between 0 and 1, got {heldout}")
    if len(corpus) < 2:
        raise ValueError("a train/held-out split needs at least two documents")
    order = sorted(range(len(corpus)), key=lambda i: hashlib.md5(f"{seed}:{corpus[i][0]}".encode()).hexdigest())
    n_held = max(1, round(heldout * len(corpus)))
    held = set(order[:n_held])
    titles = getattr(corpus, "titles", None) or [None] * len(corpus)
    name = getattr(corpus, "name", "")
    pick = lambda keep: Corpus([corpus[i] for i in range(len(corpus)) if (i in held) == keep],  # noqa: E731
                               [titles[i] for i in range(len(corpus)) if (i in held) == keep], name)
    return pick(False), pick(True)
