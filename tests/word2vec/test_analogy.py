"""3CosAdd/3CosMul, exclusion ranks, neighbours and the bias axis against gensim and hand formulas."""

from __future__ import annotations

import math

import numpy as np
import pytest
from gensim.models import Word2Vec

from seqviz.word2vec.analogy import analogy, bias_projection, nearest
from seqviz.word2vec.vectors import VocabularyError, WordVectors

QUERIES = [("man", "woman", "king"), ("he", "she", "prince"), ("king", "queen", "man"), ("boy", "girl", "he")]


def synthetic_corpus(seed: int = 0, n: int = 3000) -> list[list[str]]:
    """Sentences where gendered words share contexts, so a tiny model learns some structure."""
    rng = np.random.default_rng(seed)
    pairs = [("man", "woman"), ("king", "queen"), ("he", "she"), ("boy", "girl"), ("prince", "princess")]
    verbs = ["rules", "walks", "speaks", "sleeps", "fights", "sings", "reads", "rides"]
    places = ["castle", "field", "town", "court", "garden", "forest"]
    out = []
    for _ in range(n):
        pair = pairs[rng.integers(len(pairs))]
        g = rng.integers(2)
        out.append([pair[g], rng.choice(verbs), "in", "the", rng.choice(places),
                    "with", "his" if g == 0 else "her", rng.choice(["sword", "book", "horse", "crown"])])
    return out


@pytest.fixture(scope="module")
def trained():
    model = Word2Vec(synthetic_corpus(), vector_size=16, window=3, min_count=1, negative=5, sg=1,
                     epochs=5, workers=1, seed=0)
    kv = model.wv
    return kv, WordVectors(list(kv.index_to_key), np.array(kv.vectors))


@pytest.mark.parametrize("a, b, c", QUERIES)
def test_3cosadd_matches_gensim_most_similar(trained, a, b, c):
    kv, wv = trained
    ref = kv.most_similar(positive=[b, c], negative=[a], topn=10)
    got = analogy(wv, a, b, c, "3CosAdd", k=10).table
    assert list(got["word"]) == [w for w, _ in ref]
    np.testing.assert_allclose(got["score"], [s for _, s in ref], atol=1e-5)


@pytest.mark.filterwarnings("ignore:Call to deprecated `init_sims`:DeprecationWarning")  # inside gensim
@pytest.mark.parametrize("a, b, c", QUERIES)
def test_3cosmul_matches_gensim_most_similar_cosmul(trained, a, b, c):
    kv, wv = trained
    ref = kv.most_similar_cosmul(positive=[b, c], negative=[a], topn=10)
    got = analogy(wv, a, b, c, "3CosMul", k=10).table  # the default epsilon is gensim's, 1e-6
    assert list(got["word"]) == [w for w, _ in ref]
    np.testing.assert_allclose(got["score"], [s for _, s in ref], rtol=1e-4)
    paper = analogy(wv, a, b, c, "3CosMul", k=10, eps=1e-3).table  # Levy & Goldberg's own, when asked
    assert not np.allclose(paper["score"], got["score"], rtol=1e-4)


def test_ranks_with_and_without_exclusion_match_a_full_sort(trained):
    kv, wv = trained
    a, b, c = "man", "woman", "king"
    dists = kv.most_similar(positive=[b, c], negative=[a], topn=None)  # every word's score, gensim's
    order = [kv.index_to_key[i] for i in np.argsort(-dists, kind="stable")]
    without = [w for w in order if w not in (a, b, c)]
    res = analogy(wv, a, b, c, k=5, expected="princess")
    assert res.expected_rank == without.index("princess") + 1
    assert res.expected_rank_without_exclusion == order.index("princess") + 1
    assert list(res.table["rank_without_exclusion"]) == [order.index(w) + 1 for w in res.table["word"]]
    raw = analogy(wv, a, b, c, k=len(wv), exclude=False).table
    assert list(raw["word"]) == order and set(raw.loc[raw["query_word"], "word"]) == {a, b, c}
    assert analogy(wv, a, b, c, expected="king").expected_rank is None  # a query word cannot be the answer


def test_handmade_vectors_follow_levy_goldberg_by_hand():
    s = 1 / math.sqrt(2)
    vecs = {"man": [1, 0, 0], "woman": [0, 1, 0], "king": [s, 0, s], "queen": [0, s, s],
            "prince": [0.9, 0.1, 0.3], "crown": [0.2, 0.2, 0.9]}
    wv = WordVectors(list(vecs), np.array(list(vecs.values())) * 3.0)  # scaled: only directions matter
    unit = {w: np.array(v) / np.linalg.norm(v) for w, v in vecs.items()}

    def cos(x, y):
        return float(unit[x] @ unit[y])

    target = unit["woman"] - unit["man"] + unit["king"]
    add = {w: (cos(w, "woman") - cos(w, "man") + cos(w, "king")) / np.linalg.norm(target)
           for w in ("queen", "prince", "crown")}
    mul = {w: ((cos(w, "woman") + 1) / 2) * ((cos(w, "king") + 1) / 2) / ((cos(w, "man") + 1) / 2 + 1e-6)
           for w in ("queen", "prince", "crown")}
    for method, ref in (("3cosadd", add), ("3cosmul", mul)):
        table = analogy(wv, "man", "woman", "king", method, k=3).table
        assert list(table["word"]) == sorted(ref, key=ref.get, reverse=True)
        assert table["word"][0] == "queen"
        np.testing.assert_allclose(table["score"], sorted(ref.values(), reverse=True), rtol=1e-6)


def test_nearest_matches_gensim(trained):
    kv, wv = trained
    for word in ("king", "sword", "the"):
        ref = kv.most_similar(word, topn=8)
        got = nearest(wv, word, 8)
        assert list(got["word"]) == [w for w, _ in ref]
        np.testing.assert_allclose(got["cosine"], [s for _, s in ref], atol=1e-5)


def test_unknown_words_get_a_message_with_suggestions(trained):
    _, wv = trained
    with pytest.raises(VocabularyError, match="'kingg' is not in the vocabulary.*did you mean king"):
        analogy(wv, "man", "woman", "kingg")
    with pytest.raises(VocabularyError, match="enter a word"):
        nearest(wv, "  ")
    assert analogy(wv, "Man", "WOMAN", " king ").a == "man"  # case and spaces forgiven
    with pytest.raises(ValueError, match="3CosAdd, 3CosMul"):
        analogy(wv, "man", "woman", "king", method="cosine")


def test_bias_projection_by_hand():
    vecs = {"he": [1.0, 0.2, 0.0], "she": [-1.0, 0.2, 0.0], "nurse": [-0.5, 1.0, 0.0],
            "soldier": [0.7, 0.1, 0.7], "cook": [0.0, 0.0, 1.0]}
    wv = WordVectors(list(vecs), np.array(list(vecs.values())))
    table, missing = bias_projection(wv, ["nurse", "soldier", "cook", "pilot"])
    assert missing == ["pilot"]
    u = {w: np.array(v) / np.linalg.norm(v) for w, v in vecs.items()}
    axis = (u["he"] - u["she"]) / np.linalg.norm(u["he"] - u["she"])
    ref = {w: float(u[w] @ axis) for w in ("nurse", "soldier", "cook")}
    assert list(table["word"]) == ["soldier", "cook", "nurse"]
    np.testing.assert_allclose(table["projection"], [ref["soldier"], ref["cook"], ref["nurse"]], atol=1e-7)
    assert ref["nurse"] < 0 < ref["soldier"] and abs(ref["cook"]) < 1e-12


def test_zero_vector_does_not_poison_the_ranking():
    wv = WordVectors(["a", "b", "c", "z", "d"], np.array([[1, 0], [0, 1], [1, 1], [0, 0], [0.1, 1]]))
    table = analogy(wv, "a", "b", "c", k=2).table
    assert np.isfinite(table["score"]).all() and table["word"][0] == "d"


def test_unit_rows_are_normalised_as_read_and_no_second_matrix_is_held():
    rng = np.random.default_rng(0)
    raw = rng.normal(size=(500, 7)).astype(np.float32)
    raw[3] = 0.0
    wv = WordVectors([f"w{i}" for i in range(500)], raw)
    copy = raw / np.where(wv.norms > 0, wv.norms, 1.0)[:, None]  # the normalised copy seqviz held before
    for rows in (4, [5, 3, 9], np.array([[1, 2], [3, 4]]), slice(10, 20)):
        np.testing.assert_array_equal(wv.unit[rows], copy[rows])
    x = rng.normal(size=(7, 3)).astype(np.float32)
    np.testing.assert_allclose(wv.unit @ x, copy @ x, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wv.unit @ x[:, 0], copy @ x[:, 0], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(wv.unit.head(50) @ x, copy[:50] @ x, rtol=1e-5, atol=1e-6)
    big = [name for name, value in vars(wv).items() if isinstance(value, np.ndarray) and value.size >= raw.size]
    assert big == ["vectors"]
    assert np.shares_memory(vars(wv.unit)["_vectors"], wv.vectors)
