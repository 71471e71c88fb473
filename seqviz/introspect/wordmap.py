"""The word map: t-SNE or PCA of the N most frequent words' unit vectors, with its trustworthiness.

* t-SNE (van der Maaten & Hinton 2008) through scikit-learn's Barnes-Hut ``TSNE`` on unit
  vectors, where Euclidean distance is a monotone function of cosine (|x̂ − ŷ|² = 2 − 2cos),
  so neighbourhoods are the cosine neighbourhoods the analogy lab uses. PCA initialisation
  (Kobak & Berens 2019) keeps the global layout stable from seed to seed; 500 iterations
  instead of 1000 halve the time and move trustworthiness by about 0.01 on word vectors.
  scikit-learn runs single-threaded here: on a shared 2-core machine its OpenMP threads
  spin against the other processes and run 4-5x slower than one thread.
* PCA: the top two principal axes of the centred unit vectors (SVD), signs fixed so each
  axis's largest loading is positive.
* Trustworthiness (Venna & Kaski 2001; ``sklearn.manifold.trustworthiness``): 1 when every
  word's 5 nearest neighbours on the map are also near it in the vector space.

The map for a checkpoint's default settings is stored as ``wordmap.json`` beside the
vectors, so the page opens without running t-SNE.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

METHODS = {"tsne": "t-SNE", "pca": "PCA"}
MAX_POINTS = 5000
MIN_POINTS = 10
DEFAULT = {"n": 1000, "method": "tsne", "perplexity": 30.0, "seed": 0}
PERPLEXITY_RANGE = (2.0, 100.0)
TSNE_ITER = 500
TRUST_NEIGHBOURS = 5
FILE = "wordmap.json"


@dataclass
class WordMap:
    """2-D coordinates for a set of words and how they were made."""

    words: list[str]
    coords: np.ndarray  # [N, 2]
    method: str  # "tsne" or "pca"
    n: int  # the N most frequent words requested (extra words are added after them)
    perplexity: float | None
    seed: int
    trustworthiness: float
    seconds: float
    extra: list[str] = field(default_factory=list)  # words outside the top N added on request

    def matches(self, n: int, method: str, perplexity: float, seed: int, extra=()) -> bool:
        """True when this map was made with these settings and holds every word in ``extra``."""
        same = self.n == int(n) and self.method == method and self.seed == int(seed)
        if method == "tsne":
            same = same and self.perplexity is not None and abs(self.perplexity - float(perplexity)) < 1e-9
        present = set(self.words)
        return same and all(w in present for w in extra)


def check_settings(n: int, method: str, perplexity: float) -> None:
    """ValueError with a readable message for settings t-SNE/PCA cannot use."""
    if method not in METHODS:
        raise ValueError(f"method must be one of {', '.join(METHODS)}, got {method!r}")
    if not MIN_POINTS <= int(n) <= MAX_POINTS:
        raise ValueError(f"N must be between {MIN_POINTS} and {MAX_POINTS:,}, got {n}")
    if method == "tsne":
        low, high = PERPLEXITY_RANGE
        if not low <= float(perplexity) <= high:
            raise ValueError(f"perplexity must be between {low:g} and {high:g}, got {perplexity}")
        if float(perplexity) * 3 >= int(n):
            # The Gaussian kernels need about 3 * perplexity neighbours per point.
            raise ValueError(f"perplexity {perplexity:g} needs more than {int(3 * perplexity)} words; raise N")


def pca_2d(x: np.ndarray) -> np.ndarray:
    """[N, D] -> [N, 2] scores on the top two principal axes, sign-fixed."""
    centred = x - x.mean(axis=0)
    _, _, vt = np.linalg.svd(centred.astype(np.float64), full_matrices=False)
    axes = vt[:2]
    axes *= np.sign(axes[np.arange(axes.shape[0]), np.abs(axes).argmax(axis=1)])[:, None]
    return (centred @ axes.T).astype(np.float32)


def tsne_2d(x: np.ndarray, perplexity: float, seed: int, max_iter: int = TSNE_ITER, threads: int = 1) -> np.ndarray:
    """[N, D] -> [N, 2] Barnes-Hut t-SNE (scikit-learn), PCA-initialised."""
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    with threadpool_limits(threads):
        model = TSNE(n_components=2, perplexity=float(perplexity), init="pca", learning_rate="auto",
                     max_iter=max_iter, random_state=int(seed), n_jobs=threads)
        return model.fit_transform(x.astype(np.float32)).astype(np.float32)


def trustworthiness(x: np.ndarray, y: np.ndarray, k: int = TRUST_NEIGHBOURS) -> float:
    from sklearn.manifold import trustworthiness as sk_trust

    return float(sk_trust(x, y, n_neighbors=min(k, (len(x) - 1) // 2)))


def word_map(wv, n: int = DEFAULT["n"], method: str = DEFAULT["method"], perplexity: float = DEFAULT["perplexity"],
             seed: int = DEFAULT["seed"], extra_words=(), max_iter: int = TSNE_ITER) -> WordMap:
    """Project the ``n`` most frequent words (plus ``extra_words`` found in the vocabulary)."""
    check_settings(n, method, perplexity)
    rows = list(wv.top(n))
    chosen = set(rows)
    extra = []
    for word in extra_words:
        i = wv.find(word) if word else None
        if i is not None and i not in chosen:
            rows.append(i)
            chosen.add(i)
            extra.append(wv.words[i])
    x = wv.unit[rows]
    start = time.perf_counter()
    coords = tsne_2d(x, perplexity, seed, max_iter) if method == "tsne" else pca_2d(x)
    seconds = time.perf_counter() - start
    return WordMap([wv.words[i] for i in rows], coords, method, int(n),
                   float(perplexity) if method == "tsne" else None, int(seed),
                   trustworthiness(x, coords), round(seconds, 3), extra)


def map_frame(m: WordMap, wv=None) -> pd.DataFrame:
    """word, x, y, frequency rank (and count when known): one row per mapped word."""
    frame = pd.DataFrame({"word": m.words, "x": m.coords[:, 0], "y": m.coords[:, 1]})
    if wv is not None:
        rank = np.empty(len(wv), dtype=np.int64)
        rank[wv.top(len(wv))] = np.arange(1, len(wv) + 1)
        rows = [wv.find(w) for w in m.words]
        frame["rank"] = rank[rows]
        if wv.counts is not None:
            frame["count"] = wv.counts[rows]
    return frame


def map_csv(frame: pd.DataFrame) -> str:
    return frame.to_csv(index=False, float_format="%.5g")


# ------------------------------------------------------------------ stored maps
def save_word_map(m: WordMap, path) -> Path:
    data = asdict(m)
    data["coords"] = [[round(float(a), 4), round(float(b), 4)] for a, b in m.coords]
    data["trustworthiness"] = round(m.trustworthiness, 4)
    Path(path).write_text(json.dumps(data, ensure_ascii=False, separators=(",", ":")) + "\n")
    return Path(path)


def load_word_map(path) -> WordMap:
    """A stored map; ValueError when the file does not describe one."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    try:
        coords = np.asarray(data.pop("coords"), dtype=np.float32).reshape(-1, 2)
        m = WordMap(coords=coords, **data)
    except (KeyError, TypeError, ValueError) as e:
        raise ValueError(f"{path}: not a word map ({e})") from None
    if len(m.words) != len(coords) or not np.isfinite(coords).all():
        raise ValueError(f"{path}: {len(m.words)} words but {len(coords)} finite points")
    return m


def stored_word_map(wv) -> WordMap | None:
    """The map saved with a seqviz checkpoint (None for bare vector files or unreadable maps)."""
    folder = wv.card.get("path")
    path = Path(folder) / FILE if folder else None
    if path is None or not path.is_file():
        return None
    try:
        m = load_word_map(path)
    except (ValueError, OSError, UnicodeDecodeError):
        return None
    return m if all(w in wv for w in m.words) else None
