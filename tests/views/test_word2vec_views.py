"""seqviz.views.word2vec against gensim and numpy: analogies, neighbours, the word map, the bias axis."""

from __future__ import annotations

import numpy as np
import pytest
from gensim.models import KeyedVectors

from seqviz import figures
from seqviz.introspect import wordmap as wm
from seqviz.lessons import run_view
from seqviz.views import word2vec as views
from seqviz.word2vec.vectors import VocabularyError, WordVectors

WORDS = ["man", "woman", "king", "queen", "he", "she", "lord", "lady"] + [f"w{i}" for i in range(292)]


@pytest.fixture(scope="module")
def vectors():
    """300 random 16-d vectors (most frequent first), queen planted near king − man + woman; and gensim's copy."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((len(WORDS), 16)).astype(np.float32)
    x[3] = x[2] - x[0] + x[1] + 0.3 * rng.standard_normal(16).astype(np.float32)
    wv = WordVectors(WORDS, x, counts=np.arange(len(WORDS), 0, -1) * 10)
    kv = KeyedVectors(16)
    kv.add_vectors(WORDS, x)
    return wv, kv


def unit(v):
    v = np.asarray(v, np.float64)
    return v / np.linalg.norm(v)


@pytest.mark.parametrize("a, b, c", [("man", "woman", "king"), ("he", "she", "lord"), ("king", "queen", "w7")])
def test_analogy_top_k_is_gensims_most_similar(vectors, a, b, c):
    wv, kv = vectors
    view = views.analogy(wv, a, b, c, k=12, expected="lady")
    ranked = kv.most_similar(positive=[b, c], negative=[a], topn=len(kv))
    assert list(view.data["word"]) == [w for w, _ in ranked[:12]]
    assert view.data["score"].to_numpy() == pytest.approx([s for _, s in ranked[:12]], abs=1e-5)
    f = view.facts
    assert (f["top"], f["score"]) == (ranked[0][0], pytest.approx(ranked[0][1], abs=1e-5))
    assert f["expected_rank"] == [w for w, _ in ranked].index("lady") + 1
    assert f["vocabulary"] == len(WORDS) and f["d"] == "lady" and view.chart is not None


def test_analogy_ranks_without_exclusion_and_3cosmul_by_numpy(vectors):
    wv, _ = vectors
    u = np.stack([unit(v) for v in wv.vectors])
    ia, ib, ic = (WORDS.index(w) for w in ("man", "woman", "king"))
    add = u @ unit(u[ib] - u[ia] + u[ic])
    everything = [WORDS[i] for i in np.argsort(-add, kind="stable")]
    view = views.analogy(wv, "man", "woman", "king", k=5, exclude=False, expected="queen")
    assert list(view.data["word"]) == everything[:5]
    assert view.facts["top_rank_without_exclusion"] == 1
    assert view.facts["expected_rank"] == view.facts["expected_rank_without_exclusion"] == everything.index("queen") + 1
    shifted = (u @ u[[ia, ib, ic]].T + 1) / 2
    mul = shifted[:, 1] * shifted[:, 2] / (shifted[:, 0] + 1e-6)  # Levy & Goldberg 2014, eq. 4, with gensim's ε = 1e-6
    mul[[ia, ib, ic]] = -np.inf
    view = views.analogy(wv, "man", "woman", "king", method="3CosMul", k=5)
    assert list(view.data["word"]) == [WORDS[i] for i in np.argsort(-mul, kind="stable")[:5]]
    assert view.data["score"].to_numpy() == pytest.approx(np.sort(mul)[::-1][:5], rel=1e-5)
    assert view.facts["method"] == "3CosMul"


def test_nearest_is_gensims_and_unknown_words_raise(vectors):
    wv, kv = vectors
    view = views.nearest(wv, " king ", k=9)
    ranked = kv.most_similar("king", topn=9)
    assert list(view.data["word"]) == [w for w, _ in ranked]
    assert view.data["cosine"].to_numpy() == pytest.approx([s for _, s in ranked], abs=1e-5)
    assert view.facts == {"word": "king", "neighbours": 9, "top": ranked[0][0]}
    with pytest.raises(VocabularyError, match="kingg"):
        views.nearest(wv, "kingg")
    with pytest.raises(VocabularyError, match="kingg"):
        views.analogy(wv, "man", "woman", "kingg")


def test_bias_axis_is_the_cosine_with_he_minus_she(vectors):
    wv, _ = vectors
    view = views.bias_axis(wv, ("king", "queen", "nobody", "lady"))
    axis = unit(unit(wv.vectors[4]) - unit(wv.vectors[5]))
    by_hand = {w: float(unit(wv.vectors[WORDS.index(w)]) @ axis) for w in ("king", "queen", "lady")}
    assert dict(zip(view.data["word"], view.data["projection"])) == pytest.approx(by_hand, abs=1e-6)
    assert list(view.data["word"]) == sorted(by_hand, key=by_hand.get, reverse=True)
    assert view.facts["missing"] == ("nobody",) and view.facts["found"] == 3
    assert views.bias_axis(wv, ("nobody",)).chart is None


def test_the_word_map_is_computed_once_for_its_points_the_analogy_and_the_projector(vectors, monkeypatch):
    wv, _ = vectors
    fresh = WordVectors(wv.words, wv.vectors, wv.counts)  # memo keeps results per model: a model of its own
    made = []
    real = wm.word_map
    monkeypatch.setattr(wm, "word_map", lambda *args, **kw: made.append(args) or real(*args, **kw))
    quad = ("man", "woman", "king", "w250")  # w250 is outside the 200 most frequent: added to the map
    points = views.word_map(fresh, "pca", 200, 30.0, 0, quad)
    layers = views.analogy_layers(fresh, quad, "pca", 200, 30.0, 0)
    files = views.projector(fresh, "pca", 200, 30.0, 0, quad)
    assert len(made) == 1
    frame = points.data
    assert list(frame["word"]) == WORDS[:200] + ["w250"] and points.facts["stored"] is False
    x = np.stack([unit(wv.vectors[WORDS.index(w)]) for w in frame["word"]])
    centred = x - x.mean(0)
    _, _, vt = np.linalg.svd(centred, full_matrices=False)
    pcs = centred @ vt[:2].T  # PCA by numpy: the same plane, up to each axis' sign
    for column, pc in zip(("x", "y"), pcs.T):
        assert abs(np.corrcoef(frame[column], pc)[0, 1]) == pytest.approx(1.0, abs=1e-5)
    xy = frame.set_index("word")[["x", "y"]].to_numpy(np.float64)
    at = {w: xy[list(frame["word"]).index(w)] for w in quad}
    on_map = unit(at["woman"] - at["man"]) @ unit(at["w250"] - at["king"])
    full = unit(x[1] - x[0]) @ unit(x[200] - x[2])
    assert layers.facts["on_map"] == pytest.approx(on_map, abs=1e-6)
    assert layers.facts["full"] == pytest.approx(full, abs=1e-5) and layers.facts["dim"] == 16
    rows = np.array([[float(v) for v in line.split("\t")] for line in files.facts["vectors"].splitlines()])
    assert rows == pytest.approx(wv.vectors[list(range(200)) + [WORDS.index("w250")]], abs=1e-5)
    assert files.facts["labels"].splitlines() == list(frame["word"])
    # c's nearest words are labelled at first; the labels chosen go on the chart, the map is not made again
    near = [w for w in views.nearest(wv, "king", k=views.MAP_LABELS).data["word"] if w in WORDS[:200]]
    assert points.facts["labels"] == tuple(near) and points.facts["top_words"] == tuple(WORDS[:200])
    chosen = views.word_map(fresh, "pca", 200, 30.0, 0, quad, labels=("lord",))
    assert len(made) == 1 and chosen.facts["labels"] == ("lord",)
    texts = [layer for layer in chosen.chart.to_dict()["layer"] if layer["mark"]["type"] == "text"]
    assert len(texts) == 1


def test_the_analogy_map_and_the_stored_map(vectors, tmp_path):
    wv, _ = vectors
    view = views.word_map(wv, "analogy", quad=("man", "woman", "king", "queen"))
    assert view.facts["labels"] == tuple(view.data["word"]) and view.facts["words"] == len(view.data)
    assert {"man", "woman", "king", "queen"} <= set(view.data["word"])
    stored = wm.word_map(wv, 100, "pca", 30.0, 0)
    wm.save_word_map(stored, tmp_path / wm.FILE)
    shipped = WordVectors(wv.words, wv.vectors, wv.counts, card={"path": str(tmp_path)})
    same = views.word_map(shipped, "pca", 100, 30.0, 0)
    assert same.facts["stored"] is True and same.facts["trustworthiness"] == pytest.approx(stored.trustworthiness,
                                                                                          abs=1e-4)
    assert views.word_map(shipped, "pca", 120, 30.0, 0).facts["stored"] is False


def test_evaluation_reads_the_card_and_says_why_it_is_low(vectors):
    wv, _ = vectors
    assert views.evaluation(wv).facts["report"] is False and views.evaluation(wv).chart is None
    sections = [{"section": "family", "questions": 10, "covered": 4, "correct": 1, "accuracy": 0.25,
                 "coverage": 0.4, "nearest_c_accuracy": 0.0}]
    card = {"evaluation": {"analogies": {"accuracy": 0.25, "covered": 4, "questions": 10, "nearest_c_accuracy": 0.0,
                                         "sections": sections},
                           "wordsim353": {"spearman": 0.31, "oov": 3, "pairs": 353}},
            "corpus_info": {"words": 12345, "corpus": "Hamlet"}, "vocabulary": 300}
    view = views.evaluation(WordVectors(wv.words, wv.vectors, card=card))
    f = view.facts
    assert (f["accuracy"], f["covered"], f["questions"], f["wordsim353_spearman"], f["wordsim353_oov"]) == (
        0.25, 4, 10, 0.31, 3)
    assert f["simlex999_spearman"] is None and "12,345 words of Hamlet and a vocabulary of 300" in f["note"]
    assert list(view.data["section"]) == ["family"] and view.chart is not None


def test_the_lesson_step_and_the_figure_draw_the_same_views(vectors):
    wv, kv = vectors
    step = run_view("analogy", {"vectors": wv}, {}, "king", {"a": "man", "b": "woman", "expected": {"king": "queen"}})
    ranked = kv.most_similar(positive=["woman", "king"], negative=["man"], topn=len(kv))
    assert step.numbers["top"] == ranked[0][0] and step.numbers["score"] == pytest.approx(ranked[0][1], abs=1e-5)
    assert step.numbers["rank"] == [w for w, _ in ranked].index("queen") + 1
    assert step.numbers["hit"] is (step.numbers["rank"] == 1)
    chart, frame, footnote = figures.render("word2vec", wv, "king queen", method="pca", n=150)
    assert list(frame["word"]) == WORDS[:150] and "method: pca" in footnote
    with pytest.raises(ValueError, match="needs at least three words"):  # the analogy map of two words: said, not drawn
        figures.render("word2vec", wv, "king queen", method="analogy")


@pytest.mark.parametrize(("on_map", "full", "says"), [(0.96, 0.18, "more parallel"), (0.20, 0.90, "less parallel"),
                                                      (0.80, 0.70, "about as parallel"), (0.50, 0.64, "about as parallel"),
                                                      (0.50, 0.66, "less parallel")])
def test_the_word_maps_note_says_what_its_two_cosines_say(on_map, full, says):
    """The caption under the map (issue 51: it claimed 'keeps parallel offsets parallel' beside 0.96 vs 0.18) is
    computed from the two cosines, and quotes them."""
    note = views.parallel_note(on_map, full, 100)
    assert says in note and f"{on_map:.2f}" in note and f"{full:.2f}" in note and "100" in note


def test_the_analogy_map_writes_each_word_once_and_its_zh_title_reads(vectors):
    """Issue 51: the analogy's words were written twice, in bold (``analogy_layers``) over the map's grey labels;
    and the zh title read "24 个词的 类比词的 PCA"."""
    from seqviz.charts.word2vec import with_layers
    from seqviz.text import in_language
    from seqviz.views.spec import to_spec

    wv, _ = vectors
    quad = ("man", "woman", "king", "queen")
    for setting in ({"method": "analogy"}, {"method": "pca", "n": 200, "labels": ("king", "lord", "man")}):
        points = views.word_map(wv, quad=quad, **setting)
        spec = with_layers(to_spec(points.chart), to_spec(views.analogy_layers(wv, quad, setting["method"], 200).chart))
        written = [row["word"] for layer in spec["layer"] if layer["mark"]["type"] == "text"
                   for row in spec["datasets"][layer["data"]["name"]]]
        labelled = set(points.data["word"]) if setting["method"] == "analogy" else {"king", "lord", "man", *quad}
        assert sorted(written) == sorted(labelled), setting  # every word labelled, each once
    with in_language("zh"):
        title = views.word_map(wv, "analogy", quad=quad).chart.title
    n = len(views.word_map(wv, "analogy", quad=quad).data)
    assert title == f"{n} 个类比词的 PCA"
