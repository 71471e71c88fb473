"""The word map: t-SNE or PCA of the N most frequent words' unit vectors, with its trustworthiness.

* t-SNE (van der Maaten & Hinton 2008) on unit vectors, where Euclidean distance is a
  monotone function of cosine (|x̂ − ŷ|² = 2 − 2cos), so neighbourhoods are the cosine
  neighbourhoods the analogy lab uses. Up to ``EXACT_MAX`` points it runs here, in numpy:
  perplexity-calibrated affinities on the 3·perplexity nearest neighbours (scikit-learn's
  ``_joint_probabilities_nn``), PCA initialisation scaled to std 1e-4 (Kobak & Berens 2019;
  the seed adds a small jitter to it), and the *exact* gradient as a few dense [N, N] float32
  passes, one BLAS thread. For N = 1,000 one iteration costs about what scikit-learn's
  Barnes-Hut gradient costs, so the gain is elsewhere: no scikit-learn import (2-3 s cold:
  it pulls in scipy.stats; it was inside the timed call and was most of "the other 2.4 s"),
  and, from 600 points on, 300 iterations (100 with early exaggeration 12; learning rate
  max(N/12, 50), where scikit-learn's "auto" is max(N/48, 50)) instead of 500, at the same
  trustworthiness (measured on both shipped vector sets at 300-2,000 words, seeds 0-2; see
  benchmarks/word2vec.py); smaller maps keep scikit-learn's 250 + 250. Gains and momentum
  restart with the second phase, as in scikit-learn (without that restart, maps of 100 words
  lost 0.1 of trustworthiness). Maps over ``EXACT_MAX`` points use scikit-learn's Barnes-Hut
  ``TSNE`` (500 iterations; the dense passes grow as N²).
  Always single-threaded: on a shared 2-core machine BLAS/OpenMP threads spin against the
  other processes and run 4-5x slower than one thread.
* PCA: the top two principal axes of the centred unit vectors (SVD), signs fixed so each
  axis's largest loading is positive.
* Trustworthiness (Venna & Kaski 2001; the same number as ``sklearn.manifold.trustworthiness``,
  computed here in numpy): 1 when every word's 5 nearest neighbours on the map are also near
  it in the vector space.

The map for a checkpoint's default settings is stored as ``wordmap.json`` beside the
vectors, so the page opens without running t-SNE.

* The analogy map (``analogy_map``): PCA fitted on the analogy's four words and their nearest
  neighbours only, as in Mikolov et al. (2013)'s country-capital figure. A linear map keeps
  parallel offsets parallel; t-SNE keeps neighbourhoods, not directions, and bends them (on the
  shipped skip-gram vectors the 2-D offsets woman − man and queen − king have cosine 0.96 in
  the analogy map and −0.50 in the stored t-SNE map; see tests/word2vec/test_wordmap.py).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

METHODS = {"tsne": "t-SNE", "pca": "PCA"}
PROJECTIONS = ("analogy", "tsne", "pca")  # the page's choices; "analogy" = analogy_map, the default
ANALOGY_NEIGHBOURS = 5  # nearest words of each analogy word that the analogy map also fits and shows
COUNT_STEP = 100  # the page's word-count slider: most frequent N words, in steps of this
MAX_POINTS = 5000
MIN_POINTS = 10
DEFAULT = {"n": 1000, "method": "tsne", "perplexity": 30.0, "seed": 0}
PERPLEXITY_RANGE = (2.0, 100.0)
TSNE_ITER = 300  # iterations in all from SHORT_FROM points on (scikit-learn: 1000; 500 before, same trustworthiness)
TSNE_EARLY = 100  # of which the first ones with early exaggeration (scikit-learn: 250)
SHORT_FROM = 600  # smaller maps take 500 (250 exaggerated): they need them, and cost < 0.3 s
EARLY_EXAGGERATION = 12.0
EXACT_MAX = 1500  # up to this many points the exact gradient (dense [N, N] float32: 9 MB at 1,500)
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


_BLAS = None


def one_thread():
    """A context manager limiting BLAS to one thread (the library scan is done once per process)."""
    global _BLAS
    if _BLAS is None:
        from threadpoolctl import ThreadpoolController

        _BLAS = ThreadpoolController()
    return _BLAS.limit(limits=1, user_api="blas")


def affinities(x: np.ndarray, perplexity: float) -> np.ndarray:
    """[N, D] -> symmetric joint probabilities P [N, N] (float32, sum 1) on the kNN graph.

    For each point, a Gaussian over its k = 3·perplexity nearest neighbours (squared Euclidean
    distances) whose precision is found by bisection so that its entropy is log(perplexity),
    all rows at once; then P = (P + Pᵀ) / sum, as scikit-learn's ``_joint_probabilities_nn``.
    """
    n = len(x)
    k = min(n - 1, int(3 * perplexity + 1))
    x = np.asarray(x, dtype=np.float32)
    sq = (x * x).sum(1)
    d = x @ (-2 * x.T)
    d += sq[:, None]
    d += sq[None, :]
    np.fill_diagonal(d, np.inf)
    idx = np.argpartition(d, k - 1, axis=1)[:, :k]
    dist = np.maximum(np.take_along_axis(d, idx, 1), 0).astype(np.float64)
    dist -= dist.min(axis=1, keepdims=True)  # the entropy does not change; exp() no longer underflows
    target = np.log(perplexity)
    beta, lo, hi = np.ones(n), np.full(n, -np.inf), np.full(n, np.inf)
    for _ in range(100):
        p = np.exp(-dist * beta[:, None])
        s = p.sum(1)
        diff = np.log(s) + beta * (dist * p).sum(1) / s - target
        if np.all(np.abs(diff) <= 1e-5):
            break
        up = diff > 0  # too flat: sharpen
        lo, hi = np.where(up, beta, lo), np.where(up, hi, beta)
        beta = np.where(up, np.where(np.isinf(hi), beta * 2, (beta + hi) / 2),
                        np.where(np.isinf(lo), beta / 2, (beta + lo) / 2))
    P = np.zeros((n, n))
    np.put_along_axis(P, idx, p / s[:, None], 1)
    P += P.T
    P /= max(P.sum(), 1e-12)
    return P.astype(np.float32)


def _pca_start(x: np.ndarray, dims: int, seed: int) -> np.ndarray:
    """PCA scores scaled to std 1e-4 on the first axis, plus a seeded jitter of 1% of that."""
    xc = (x - x.mean(axis=0)).astype(np.float64)
    _, _, vt = np.linalg.svd(xc, full_matrices=False)
    y = xc @ vt[:dims].T
    if y.shape[1] < dims:  # fewer input dimensions than map dimensions
        y = np.pad(y, ((0, 0), (0, dims - y.shape[1])))
    scale = np.std(y[:, 0])
    y = y / scale * 1e-4 if scale > 0 else np.zeros_like(y)
    y += np.random.default_rng(seed).normal(scale=1e-6, size=y.shape)
    return y.astype(np.float32)


def _descend(P: np.ndarray, y: np.ndarray, max_iter: int, early: int, learning_rate: float) -> np.ndarray:
    """Gradient descent with momentum and gains (as scikit-learn's ``_gradient_descent``), exact gradient.

    dC/dy_i = 4 Σ_j (a·p_ij − w_ij / Z) w_ij (y_i − y_j), w_ij = 1 / (1 + |y_i − y_j|²), Z = Σ_{i≠j} w_ij,
    a = the exaggeration. Per iteration: one BLAS call builds 1 + |y_i − y_j|² from [y, |y|², 1]
    and [−2y, 1, |y|² + 1]; two more give Σ_j m_ij y_j and Σ_j m_ij at once from [y, 1].
    """
    n, dims = y.shape
    y = y.copy()
    left, right = np.ones((n, dims + 2), np.float32), np.ones((n, dims + 2), np.float32)
    ya = np.ones((n, dims + 1), np.float32)
    W, PW = np.empty((n, n), np.float32), np.empty((n, n), np.float32)
    update, gains = np.zeros_like(y), np.ones_like(y)
    for it in range(max_iter):
        exaggeration, momentum = (EARLY_EXAGGERATION, 0.5) if it < early else (1.0, 0.8)
        if it == early:  # a fresh start for the second phase, as scikit-learn
            update[:], gains[:] = 0, 1
        sq = (y * y).sum(1)
        left[:, :dims], left[:, dims] = y, sq
        right[:, :dims], right[:, dims + 1] = -2 * y, sq + 1
        np.matmul(left, right.T, out=W)  # 1 + |y_i - y_j|^2 (1 on the diagonal)
        np.reciprocal(W, out=W)
        z = W.sum(dtype=np.float64) - n
        np.multiply(P, W, out=PW)
        ya[:, :dims] = y
        attract = PW @ ya  # [Σ_j p_ij w_ij y_j, Σ_j p_ij w_ij]
        np.square(W, out=W)
        repel = W @ ya  # the diagonal's w_ii = 1 cancels in (Σ_j m_ij) y_i − Σ_j m_ij y_j
        grad = 4 * (exaggeration * (attract[:, dims:] * y - attract[:, :dims])
                    - (repel[:, dims:] * y - repel[:, :dims]) / np.float32(z))
        inc = update * grad < 0
        gains[inc] += 0.2
        gains[~inc] *= 0.8
        np.maximum(gains, 0.01, out=gains)
        update = momentum * update - learning_rate * gains * grad
        y += update
    return y


def schedule(n: int) -> tuple[int, int]:
    """(iterations in all, of which exaggerated) for an N-point map."""
    return (TSNE_ITER, TSNE_EARLY) if n >= SHORT_FROM else (500, 250)


def tsne(x: np.ndarray, perplexity: float, seed: int = 0, dims: int = 2, max_iter: int | None = None,
         early: int | None = None) -> np.ndarray:
    """[N, D] -> [N, dims] t-SNE, PCA-initialised; exact gradient in numpy up to EXACT_MAX points.

    ``max_iter``/``early``: None = ``schedule(N)``.
    """
    x = np.asarray(x, dtype=np.float32)
    max_iter = max_iter or schedule(len(x))[0]
    early = schedule(len(x))[1] if early is None else early
    if len(x) > EXACT_MAX:
        return _sklearn_tsne(x, perplexity, seed, dims, max(max_iter, 500))
    with one_thread():
        P = affinities(x, perplexity)
        y = _descend(P, _pca_start(x, dims, seed), max_iter, min(early, max_iter),
                     max(len(x) / EARLY_EXAGGERATION, 50.0))
    return y


def _sklearn_tsne(x: np.ndarray, perplexity: float, seed: int, dims: int, max_iter: int) -> np.ndarray:
    """scikit-learn's Barnes-Hut t-SNE, one thread (maps larger than EXACT_MAX)."""
    from sklearn.manifold import TSNE
    from threadpoolctl import threadpool_limits

    with threadpool_limits(1):
        model = TSNE(n_components=dims, perplexity=float(perplexity), init="pca", learning_rate="auto",
                     max_iter=max_iter, random_state=int(seed), n_jobs=1)
        return model.fit_transform(x).astype(np.float32)


def tsne_2d(x: np.ndarray, perplexity: float, seed: int, max_iter: int | None = None) -> np.ndarray:
    """[N, D] -> [N, 2] t-SNE (see ``tsne``)."""
    return tsne(x, perplexity, seed, 2, max_iter)


def trustworthiness(x: np.ndarray, y: np.ndarray, k: int = TRUST_NEIGHBOURS) -> float:
    """``sklearn.manifold.trustworthiness(x, y, n_neighbors=k)`` (Euclidean), without importing scikit-learn.

    1 − 2 / (n k (2n − 3k − 1)) · Σ_i Σ_{j in the map's k nearest of i} max(0, r(i, j) − k), where
    r(i, j) is j's rank among i's neighbours in the original space (1 = nearest).
    """
    x, y = np.asarray(x, dtype=np.float64), np.asarray(y, dtype=np.float64)
    n = len(x)
    k = min(k, (n - 1) // 2)
    if k < 1:
        return 1.0

    def sq_dist(a):
        s = (a * a).sum(1)
        d = s[:, None] + s[None, :] - 2 * (a @ a.T)
        np.fill_diagonal(d, np.inf)
        return d

    dx, dy = sq_dist(x), sq_dist(y)
    near = np.argpartition(dy, k - 1, axis=1)[:, :k]  # the map's k nearest of each point
    rows = np.arange(n)
    penalty = 0
    for c in range(k):
        rank = (dx < dx[rows, near[:, c]][:, None]).sum(1) + 1
        penalty += np.clip(rank - k, 0, None).sum()
    return float(1.0 - penalty * (2.0 / (n * k * (2.0 * n - 3.0 * k - 1.0))))


def word_map(wv, n: int = DEFAULT["n"], method: str = DEFAULT["method"], perplexity: float = DEFAULT["perplexity"],
             seed: int = DEFAULT["seed"], extra_words=(), max_iter: int | None = None) -> WordMap:
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


# ------------------------------------------------------------------ the analogy map
def analogy_map(wv, quad: dict, neighbours: int = ANALOGY_NEIGHBOURS) -> WordMap:
    """PCA fitted on the analogy words (``quad``: a, b, c, d -> word; unknown or empty ones skipped) and
    each one's ``neighbours`` nearest words (cosine), showing only those words."""
    rows: list[int] = []
    for word in quad.values():
        i = wv.find(word) if word else None
        if i is None:
            continue
        scores = wv.unit @ wv.unit[i]
        scores[i] = -np.inf
        near = np.argpartition(-scores, neighbours)[:neighbours] if neighbours else []
        rows += [i] + [int(j) for j in near[np.argsort(-scores[near])]]
    rows = list(dict.fromkeys(rows))
    if len(rows) < 3:
        raise ValueError("the analogy map needs at least three words in the vocabulary")
    x = wv.unit[rows]
    start = time.perf_counter()
    coords = pca_2d(x)
    return WordMap([wv.words[i] for i in rows], coords, "analogy", len(rows), None, 0,
                   trustworthiness(x, coords), round(time.perf_counter() - start, 3))


def offset_cosine(points, quad: dict) -> float | None:
    """cos(b − a, d − c) between the two analogy offsets, from ``points`` (a DataFrame with word, x, y, or
    an [V, D] lookup: any mapping word -> vector); None when a word is missing or an offset is zero."""
    if isinstance(points, pd.DataFrame):
        where = points.drop_duplicates("word").set_index("word")[["x", "y"]]
        vec = {w: where.loc[w].to_numpy(np.float64) for w in quad.values() if w in where.index}
    else:
        vec = {w: np.asarray(points[w], np.float64) for w in quad.values() if w and w in points}
    if not all(quad.get(r) in vec for r in "abcd"):
        return None
    u, v = vec[quad["b"]] - vec[quad["a"]], vec[quad["d"]] - vec[quad["c"]]
    norm = float(np.linalg.norm(u) * np.linalg.norm(v))
    return float(u @ v / norm) if norm > 0 else None


def offsets(frame: pd.DataFrame, wv, quad: dict | None) -> tuple[float | None, float | None]:
    """``offset_cosine`` of the analogy on the map ``frame`` and in the full space of ``wv``'s unit vectors."""
    if not quad:
        return None, None
    return offset_cosine(frame, quad), offset_cosine({w: wv.unit[wv.index[w]] for w in quad.values() if w in wv.index},
                                                     quad)


def count_range(vocabulary: int) -> tuple[int, int, int, int]:
    """(lowest, highest, default, step) for the page's "most frequent N words" slider on this vocabulary.

    lowest < highest always (Streamlit refuses an empty range) and highest <= the vocabulary when it
    holds more than MIN_POINTS words; steps of COUNT_STEP, of MIN_POINTS below 2 · COUNT_STEP words.
    A kept value outside the range is the page's to clamp (appkit.state.clamp).
    """
    hi = max(min(MAX_POINTS, int(vocabulary)), MIN_POINTS + 1)
    small = hi < 2 * COUNT_STEP
    return (MIN_POINTS if small else COUNT_STEP), hi, min(DEFAULT["n"], hi), (MIN_POINTS if small else COUNT_STEP)


def perplexity_max(n: int) -> int:
    """The largest perplexity ``check_settings`` accepts for ``n`` words (3 · perplexity < n), at least 2."""
    return int(max(PERPLEXITY_RANGE[0], min(PERPLEXITY_RANGE[1], (int(n) - 1) // 3)))
