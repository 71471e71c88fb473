"""The word map: PCA against scikit-learn, t-SNE determinism and settings checks, stored maps."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.decomposition import PCA
from sklearn.manifold import trustworthiness as sk_trust

from seqviz.introspect.wordmap import (FILE, load_word_map, map_csv, map_frame, save_word_map, stored_word_map,
                                       word_map)
from seqviz.word2vec.formats import load_checkpoint, save_checkpoint
from seqviz.word2vec.vectors import WordVectors


@pytest.fixture(scope="module")
def clustered() -> WordVectors:
    """Three well separated clusters of 40 words; counts make 'w0' the most frequent."""
    rng = np.random.default_rng(0)
    centres = rng.normal(size=(3, 16)) * 4
    vecs = np.concatenate([c + rng.normal(size=(40, 16)) for c in centres])
    words = [f"w{i}" for i in range(len(vecs))]
    counts = np.arange(len(vecs), 0, -1) * 3
    return WordVectors(words, vecs, counts)


def test_pca_matches_scikit_learn_up_to_sign(clustered):
    m = word_map(clustered, n=100, method="pca")
    ref = PCA(n_components=2).fit_transform(clustered.unit[:100].astype(np.float64))
    for axis in range(2):
        sign = np.sign(ref[:, axis] @ m.coords[:, axis])
        np.testing.assert_allclose(m.coords[:, axis], sign * ref[:, axis], atol=1e-4)
    assert m.words == clustered.words[:100] and m.perplexity is None


def test_tsne_is_deterministic_separates_clusters_and_reports_trustworthiness(clustered):
    m1 = word_map(clustered, n=120, perplexity=10, seed=3)
    m2 = word_map(clustered, n=120, perplexity=10, seed=3)
    np.testing.assert_array_equal(m1.coords, m2.coords)
    assert m1.trustworthiness == pytest.approx(sk_trust(clustered.unit[:120], m1.coords, n_neighbors=5))
    assert m1.trustworthiness > 0.9
    # each cluster's points are closer to their own centroid on the map than to the others'
    labels = np.repeat(np.arange(3), 40)
    cents = np.stack([m1.coords[labels == k].mean(axis=0) for k in range(3)])
    nearest = np.argmin(((m1.coords[:, None, :] - cents[None]) ** 2).sum(-1), axis=1)
    assert (nearest == labels).mean() > 0.95


def test_top_n_follows_counts_and_extra_words_are_added():
    rng = np.random.default_rng(1)
    wv = WordVectors(["rare", "common", "mid"] + [f"x{i}" for i in range(37)], rng.normal(size=(40, 8)),
                     np.array([1, 100, 50] + [10] * 37))
    m = word_map(wv, n=12, method="pca", extra_words=["rare", "common", "missing", ""])
    assert m.words[:2] == ["common", "mid"] and m.words[-1] == "rare" and m.extra == ["rare"]
    assert len(m.words) == 13
    assert m.matches(12, "pca", 30, 0, ["rare"]) and not m.matches(12, "pca", 30, 0, ["x36"])
    assert not m.matches(12, "tsne", 30, 0) and not m.matches(13, "pca", 30, 0)
    frame = map_frame(m, wv)
    assert list(frame["rank"][:3]) == [1, 2, 3] and frame["rank"].iloc[-1] == 40
    assert list(frame["count"][:2]) == [100, 50] and frame["count"].iloc[-1] == 1
    assert map_csv(frame).splitlines()[0] == "word,x,y,rank,count"


@pytest.mark.parametrize("kwargs, message", [
    ({"n": 5}, "N must be between 10"),
    ({"n": 6000}, "N must be between"),
    ({"perplexity": 1}, "perplexity must be between 2 and 100"),
    ({"perplexity": 101}, "perplexity must be between"),
    ({"n": 60, "perplexity": 25}, "needs more than 75 words"),
    ({"method": "umap"}, "method must be one of tsne, pca"),
])
def test_bad_settings_get_a_message(clustered, kwargs, message):
    with pytest.raises(ValueError, match=message):
        word_map(clustered, **{"n": 100, **kwargs})


def test_stored_map_round_trip(clustered, tmp_path):
    folder = save_checkpoint(clustered, tmp_path / "ck", {}, dtype="float32")
    assert stored_word_map(load_checkpoint(folder)) is None
    m = word_map(clustered, n=50, method="pca")
    save_word_map(m, folder / FILE)
    back = stored_word_map(load_checkpoint(folder))
    assert back.words == m.words and back.method == "pca"
    np.testing.assert_allclose(back.coords, m.coords, atol=1e-4)
    assert back.trustworthiness == pytest.approx(m.trustworthiness, abs=1e-4)
    (folder / FILE).write_text('{"words": ["a"], "coords": [[1, 2], [3, 4]]}')
    with pytest.raises(ValueError, match="not a word map|1 words but 2"):
        load_word_map(folder / FILE)
    assert stored_word_map(load_checkpoint(folder)) is None  # a broken map is ignored, not fatal


def test_count_range_and_perplexity_max_keep_the_sliders_valid():
    from seqviz.introspect.wordmap import check_settings, count_range, perplexity_max

    assert count_range(9189) == (100, 5000, 1000, 100)
    assert count_range(291) == (100, 291, 291, 100)
    assert count_range(50) == (10, 50, 50, 10)
    for n in (11, 100, 291, 1000):
        check_settings(n, "tsne", perplexity_max(n))  # the largest perplexity offered is accepted
        with pytest.raises(ValueError):
            check_settings(n, "tsne", perplexity_max(n) + 1) if perplexity_max(n) < 100 else check_settings(
                n, "tsne", 101)


def test_analogy_map_is_a_pca_of_the_words_and_their_neighbours():
    from seqviz.introspect.wordmap import analogy_map, offset_cosine, pca_2d

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(60)]
    vectors = rng.standard_normal((60, 12)).astype(np.float32)
    from seqviz.word2vec.vectors import WordVectors

    wv = WordVectors(words, vectors)
    quad = {"a": "w0", "b": "w1", "c": "w2", "d": "w3"}
    m = analogy_map(wv, quad, neighbours=2)
    unit = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    expected = []
    for w in quad.values():
        cos = unit @ unit[words.index(w)]
        cos[words.index(w)] = -np.inf
        expected += [w] + [words[j] for j in np.argsort(-cos)[:2]]
    assert m.words == list(dict.fromkeys(expected))
    assert np.allclose(m.coords, pca_2d(wv.unit[[words.index(w) for w in m.words]]), atol=1e-5)
    xy = dict(zip(m.words, m.coords.astype(np.float64)))
    u, v = xy["w1"] - xy["w0"], xy["w3"] - xy["w2"]
    frame = __import__("pandas").DataFrame({"word": m.words, "x": m.coords[:, 0], "y": m.coords[:, 1]})
    assert offset_cosine(frame, quad) == pytest.approx(u @ v / np.linalg.norm(u) / np.linalg.norm(v), abs=1e-6)
    assert offset_cosine(frame, {**quad, "d": "missing"}) is None
