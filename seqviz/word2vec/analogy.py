"""Analogies (3CosAdd, 3CosMul), nearest neighbours and the bias axis, over the whole vocabulary.

Notation: a : b :: c : ?  (man : woman :: king : ?), answer d. With unit vectors â, b̂, ĉ
and cos(x, y) = x̂·ŷ (Levy & Goldberg 2014, "Linguistic Regularities in Sparse and
Explicit Word Representations"):

* 3CosAdd (their eq. 3, Mikolov et al. 2013): argmax_d cos(d, b) − cos(d, a) + cos(d, c)
  = argmax_d d̂·(b̂ − â + ĉ). The score shown is cos(d, b̂ − â + ĉ), the same ranking
  divided by |b̂ − â + ĉ| (this is what gensim's ``most_similar`` reports).
* 3CosMul (their eq. 4): argmax_d cos'(d, b)·cos'(d, c) / (cos'(d, a) + ε), with cosines
  shifted to [0, 1] by cos' = (cos + 1) / 2 (their footnote 7) and ε = 1e-6 as gensim's
  ``most_similar_cosmul`` (the paper's 0.001 only keeps the division finite; with gensim's ε the
  answers are gensim's; pass ``eps`` for another).

By convention the three query words are excluded from the answers (Mikolov's tool and
gensim do this). Without the exclusion b or c is very often the "answer"; Linzen (2016)
shows how much of analogy accuracy that convention and plain neighbourhood explain, so
every result also carries the rank it would have without the exclusion.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from seqviz.word2vec.vectors import VocabularyError, WordVectors, one_blas_thread

METHODS = {"3cosadd": "3CosAdd", "3cosmul": "3CosMul"}
EPS = 1e-6  # gensim's KeyedVectors.most_similar_cosmul (Levy & Goldberg 2014, section 6, use 0.001)
MAX_K = 100
# Bolukbasi et al. 2016 use occupations; these are the ones a Shakespeare vocabulary holds.
DEFAULT_BIAS_WORDS = ("king", "queen", "lord", "lady", "soldier", "nurse", "servant", "maid", "knight",
                      "duke", "duchess", "captain", "priest", "physician", "merchant", "master",
                      "mistress", "shepherd", "doctor", "prince", "princess", "husband", "wife")


@dataclass
class AnalogyResult:
    """Top-k answers to a : b :: c : ? and where an expected answer ranks."""

    a: str
    b: str
    c: str
    method: str
    exclude: bool
    table: pd.DataFrame  # rank, word, score, rank_without_exclusion (1-based), count
    expected: str | None = None
    expected_rank: int | None = None  # 1-based, under the chosen exclusion setting
    expected_rank_without_exclusion: int | None = None
    expected_score: float | None = None
    vocabulary: int = 0  # words ranked (the whole vocabulary)

    @property
    def quad(self) -> dict:
        """{"a", "b", "c", "d"} -> word, d being the expected answer if given, else the top answer."""
        return {"a": self.a, "b": self.b, "c": self.c, "d": self.expected or str(self.table["word"].iloc[0])}


def _method(method: str) -> str:
    key = str(method).lower().replace(" ", "")
    if key not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS.values())}, got {method!r}")
    return key


def analogy_scores(wv: WordVectors, a: int, b: int, c: int, method: str = "3cosadd",
                   eps: float = EPS) -> np.ndarray:
    """[V] score of every word as the answer to a : b :: c : ? (rows a, b, c; nothing excluded)."""
    u = wv.unit
    if _method(method) == "3cosadd":
        target = u[b] - u[a] + u[c]
        norm = np.linalg.norm(target)
        with one_blas_thread():
            return u @ (target / norm if norm > 0 else target)
    with one_blas_thread():
        cos = u @ np.stack([u[a], u[b], u[c]]).T  # [V, 3]
    shifted = (cos + 1.0) / 2.0
    return shifted[:, 1] * shifted[:, 2] / (shifted[:, 0] + eps)


def ranks_of(scores: np.ndarray, rows: np.ndarray, excluded=()) -> np.ndarray:
    """1-based rank of each row among ``scores`` with ``excluded`` rows removed (ties count in favour)."""
    kept = np.ones(scores.shape[0], dtype=bool)
    kept[list(excluded)] = False
    pool = np.sort(scores[kept])
    return pool.size - np.searchsorted(pool, scores[rows], side="right") + 1


def top_k(scores: np.ndarray, k: int, excluded=()) -> np.ndarray:
    """Rows of the k best scores, best first, skipping ``excluded``."""
    scores = scores.copy()
    scores[list(excluded)] = -np.inf
    k = max(1, min(int(k), scores.size - len(set(excluded))))
    best = np.argpartition(-scores, k - 1)[:k]
    return best[np.argsort(-scores[best], kind="stable")]


def analogy(wv: WordVectors, a: str, b: str, c: str, method: str = "3cosadd", k: int = 10,
            exclude: bool = True, expected: str | None = None, eps: float = EPS) -> AnalogyResult:
    """a : b :: c : ? over the whole vocabulary. Unknown words raise VocabularyError."""
    ia, ib, ic = (wv.lookup(w) for w in (a, b, c))
    k = max(1, min(int(k), MAX_K))
    scores = analogy_scores(wv, ia, ib, ic, method, eps)
    query = sorted({ia, ib, ic})
    excluded = query if exclude else []
    rows = top_k(scores, k, excluded)
    table = pd.DataFrame({
        "rank": np.arange(1, len(rows) + 1), "word": [wv.words[i] for i in rows],
        "score": scores[rows].astype(float), "rank_without_exclusion": ranks_of(scores, rows),
        "query_word": [i in query for i in rows]})
    if wv.counts is not None:
        table["count"] = wv.counts[rows]
    result = AnalogyResult(wv.words[ia], wv.words[ib], wv.words[ic], METHODS[_method(method)], exclude,
                           table, vocabulary=len(wv))
    if expected and expected.strip():
        ie = wv.lookup(expected)
        result.expected = wv.words[ie]
        result.expected_score = float(scores[ie])
        result.expected_rank_without_exclusion = int(ranks_of(scores, np.array([ie]))[0])
        if exclude and ie in query:
            result.expected_rank = None  # a query word cannot be the answer when they are excluded
        else:
            result.expected_rank = int(ranks_of(scores, np.array([ie]), excluded)[0])
    return result


def compare_analogy(vectors: dict, *query, **options) -> dict:
    """The same ``analogy(wv, *query, **options)`` on several vector sets: name -> AnalogyResult, or the
    error (VocabularyError, ValueError, OSError) that set raised, so one missing word does not stop the rest.
    ``vectors``: name -> WordVectors, or a callable returning them (loaded only here)."""
    out = {}
    for name, wv in vectors.items():
        try:
            out[name] = analogy(wv() if callable(wv) else wv, *query, **options)
        except (VocabularyError, ValueError, OSError) as e:
            out[name] = e
    return out


def nearest(wv: WordVectors, word: str, k: int = 10) -> pd.DataFrame:
    """The k words with the highest cosine to ``word`` (the word itself left out)."""
    i = wv.lookup(word)
    with one_blas_thread():
        scores = wv.unit @ wv.unit[i]
    rows = top_k(scores, min(int(k), MAX_K), [i])
    table = pd.DataFrame({"rank": np.arange(1, len(rows) + 1), "word": [wv.words[j] for j in rows],
                          "cosine": scores[rows].astype(float)})
    if wv.counts is not None:
        table["count"] = wv.counts[rows]
    return table


def bias_projection(wv: WordVectors, words=DEFAULT_BIAS_WORDS, pole_a: str = "he",
                    pole_b: str = "she") -> tuple[pd.DataFrame, list[str]]:
    """Projection of each word's unit vector on unit(he − she) (Bolukbasi et al. 2016, sec. 4).

    Bolukbasi et al. take the top principal component of several definitional pairs; one
    pair is the simplest estimate of that direction. Positive = closer to ``pole_a``.
    Returns the table and the words that were not in the vocabulary.
    """
    ia, ib = wv.lookup(pole_a), wv.lookup(pole_b)
    axis = wv.unit[ia] - wv.unit[ib]
    norm = np.linalg.norm(axis)
    if norm == 0:
        raise VocabularyError(f"{pole_a!r} and {pole_b!r} have the same direction: no axis")
    axis /= norm
    found, missing = [], []
    for w in dict.fromkeys(x.strip() for x in words if x and x.strip()):
        (missing if wv.find(w) is None else found).append(w)
    rows = [wv.find(w) for w in found]
    with one_blas_thread():
        projection = (wv.unit[rows] @ axis).astype(float) if rows else []
    table = pd.DataFrame({"word": [wv.words[i] for i in rows], "projection": projection})
    return table.sort_values("projection", ascending=False, ignore_index=True), missing
