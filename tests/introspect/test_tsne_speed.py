"""seqviz's own t-SNE (seqviz.introspect.wordmap.tsne): the same affinities and gradient as
scikit-learn, the same trustworthiness with fewer iterations, and no scikit-learn import.

No timings here (benchmarks/word2vec.py measures them); the speed comes from running fewer
iterations and from not importing scikit-learn, both of which are checked.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from sklearn.manifold import TSNE
from sklearn.manifold import trustworthiness as sk_trust

from seqviz.introspect import wordmap as W
from tests.conftest import ROOT


def unit_clusters(n: int, dims: int = 24, k: int = 8, seed: int = 0) -> np.ndarray:
    """``n`` unit vectors around ``k`` random directions: word-vector-like neighbourhoods."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dims))
    x = centres[rng.integers(0, k, n)] + rng.normal(scale=0.7, size=(n, dims))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.mark.parametrize("n", [150, 700])  # both schedules: 250 + 250 below SHORT_FROM, 100 + 200 from it
def test_trustworthiness_is_at_least_scikit_learns_minus_0_02(n):
    assert (n >= W.SHORT_FROM) == (n == 700)
    x = unit_clusters(n)
    # the floor: scikit-learn's Barnes-Hut t-SNE as seqviz ran it before (500 iterations, PCA init)
    before = TSNE(2, perplexity=30, init="pca", learning_rate="auto", max_iter=500, random_state=0,
                  n_jobs=1).fit_transform(x)
    floor = sk_trust(x, before, n_neighbors=W.TRUST_NEIGHBOURS) - 0.02
    pca = W.trustworthiness(x, W.pca_2d(x))
    for seed in (0, 1):
        y = W.tsne(x, 30, seed)
        assert y.shape == (n, 2) and np.isfinite(y).all()
        t = W.trustworthiness(x, y)
        assert t >= floor, (seed, t, floor)
        assert t > pca, (seed, t, pca)


def test_trustworthiness_equals_scikit_learns():
    rng = np.random.default_rng(3)
    x, y = rng.normal(size=(120, 10)), rng.normal(size=(120, 2))
    for k in (1, 5, 12):
        assert W.trustworthiness(x, y, k) == pytest.approx(sk_trust(x, y, n_neighbors=k), abs=1e-12)
    y = x[:, :2] + 0.01 * rng.normal(size=(120, 2))
    assert W.trustworthiness(x, y) == pytest.approx(sk_trust(x, y, n_neighbors=5), abs=1e-12)


def test_affinities_equal_scikit_learns():
    from sklearn.manifold._t_sne import _joint_probabilities_nn
    from sklearn.neighbors import NearestNeighbors

    x = unit_clusters(200, seed=4)
    perplexity = 20.0
    k = int(3 * perplexity + 1)
    graph = NearestNeighbors(n_neighbors=k).fit(x).kneighbors_graph(mode="distance")
    graph.data **= 2
    expected = _joint_probabilities_nn(graph, perplexity, 0).toarray()
    P = W.affinities(x, perplexity)
    assert P.sum() == pytest.approx(1.0, abs=1e-5)
    np.testing.assert_allclose(P, P.T)
    np.testing.assert_allclose(P, expected, atol=2e-6)


def test_one_step_follows_scikit_learns_exact_gradient():
    from scipy.spatial.distance import squareform
    from sklearn.manifold._t_sne import _kl_divergence

    x = unit_clusters(90, seed=5)
    P = W.affinities(x, 10.0)
    y0 = np.random.default_rng(6).normal(size=(90, 2)).astype(np.float32)
    lr = 10.0
    # one iteration without exaggeration: update = -lr * 0.8 (the gains' first step) * gradient
    y1 = W._descend(P, y0, max_iter=1, early=0, learning_rate=lr)
    grad = (y0 - y1) / (lr * 0.8)
    condensed = squareform(P.astype(np.float64), checks=False)
    _, expected = _kl_divergence(y0.astype(np.float64).ravel(), condensed, 1, 90, 2)
    np.testing.assert_allclose(grad.ravel(), expected, rtol=2e-3, atol=1e-6)


def test_seeds_differ_a_seed_repeats_and_three_dimensions_work():
    x = unit_clusters(100, seed=7)
    a, b, c = W.tsne(x, 10, 0), W.tsne(x, 10, 0), W.tsne(x, 10, 1)
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)
    y3 = W.tsne(x, 10, 0, dims=3)
    assert y3.shape == (100, 3) and W.trustworthiness(x, y3) > W.trustworthiness(x, W.pca_2d(x))


def test_fewer_iterations_than_before_from_600_points():
    assert W.schedule(1000) == (W.TSNE_ITER, W.TSNE_EARLY) == (300, 100)
    assert W.schedule(W.SHORT_FROM - 1) == (500, 250)


def test_a_word_map_does_not_import_scikit_learn():
    """Importing scikit-learn costs 2-3 s cold (it was inside the timed t-SNE call before)."""
    code = ("import sys, numpy as np\n"
            "from seqviz.introspect.wordmap import word_map\n"
            "from seqviz.word2vec.vectors import WordVectors\n"
            "rng = np.random.default_rng(0)\n"
            "wv = WordVectors([f'w{i}' for i in range(200)], rng.normal(size=(200, 16)).astype(np.float32))\n"
            "m = word_map(wv, n=200, perplexity=20)\n"
            "assert 0 < m.trustworthiness <= 1, m.trustworthiness\n"
            "print(sorted(k for k in sys.modules if k.split('.')[0] in ('sklearn', 'scipy')))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip().splitlines()[-1] == "[]"
