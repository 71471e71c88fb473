"""pages/word2vec.py through AppTest on the shipped vectors: numbers against gensim, bad words, URL state."""

from __future__ import annotations


import numpy as np
import pytest
from gensim.models import KeyedVectors
from streamlit.testing.v1 import AppTest

from appkit.registry import PAGES
from tests.conftest import ROOT
from tests.word2vec.conftest import SHIPPED

PAGE = next(p for p in PAGES if p.path == "word2vec.py")


@pytest.fixture
def app(monkeypatch):
    if not (SHIPPED / "word2vec-shakespeare").is_dir():
        pytest.skip("no shipped word2vec checkpoint")
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(SHIPPED))

    def open_page(query=None):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
        at.run()
        if query:
            at.query_params.update(query)
        at.switch_page(f"pages/{PAGE.path}")
        at.run()
        assert not at.exception, at.exception
        return at

    return open_page


def metric(at, label):
    return next(m for m in at.metric if m.label.startswith(label))


def test_analogy_lab_shows_gensims_answer_and_the_cards_evaluation(app, shipped_vectors):
    at = app({"word2vec": "word2vec-shakespeare"})
    wv = shipped_vectors
    kv = KeyedVectors(wv.dim)
    kv.add_vectors(wv.words, wv.vectors)
    ranked = kv.most_similar(positive=["woman", "king"], negative=["man"], topn=len(kv))
    top_word, top_score = ranked[0]
    assert metric(at, "Top answer").value == top_word
    assert f"{top_score:.3f}" in metric(at, "Top answer").delta
    assert metric(at, "Rank of 'queen'").value == str([w for w, _ in ranked].index("queen") + 1)
    card = wv.card["evaluation"]
    assert metric(at, "Google analogies").value == f"{card['analogies']['accuracy']:.1%}"
    assert metric(at, "WordSim-353").value == f"{card['wordsim353']['spearman']:.3f}"
    assert f"{card['simlex999']['oov']} of 999 pairs OOV" in metric(at, "SimLex-999").delta
    assert any("Linzen (2016)" in i.value for i in at.info)
    # the stored map opened the page: no t-SNE ran
    assert metric(at, "Projection time").delta == "stored with the checkpoint"
    trust = wv.card["word_map"]["trustworthiness"]
    assert metric(at, "Trustworthiness").value == f"{trust:.3f}"
    assert len(at.get("vega_lite_chart")) >= 4
    next(b for b in at.button if b.label == "Recompute on these vectors").click().run()
    assert any(c.value == "Recomputed just now." for c in at.caption)
    assert metric(at, "Google analogies").value == f"{card['analogies']['accuracy']:.1%}"
    assert metric(at, "SimLex-999").value == f"{card['simlex999']['spearman']:.3f}"


def test_unknown_words_warn_and_the_page_stays_up(app):
    at = app()
    next(t for t in at.text_input if t.label.startswith("c (")).input("kingg").run()
    assert not at.exception and not at.error
    assert any("'kingg' is not in the vocabulary" in w.value and "king" in w.value for w in at.warning)
    assert at.get("vega_lite_chart")  # the map and the other tabs still draw


def test_url_restores_the_query_and_pca_map_is_computed(app, shipped_vectors):
    at = app({"a": "he", "b": "she", "c": "lord", "expected": "lady", "proj": "PCA", "N": "300"})
    assert [t.value for t in at.text_input[:4]] == ["he", "she", "lord", "lady"]
    from seqviz.introspect.wordmap import pca_2d, trustworthiness

    wv = shipped_vectors
    rows = list(wv.top(300)) + [wv.index[w] for w in ("he", "she", "lord", "lady") if wv.index[w] not in wv.top(300)]
    x = wv.unit[rows]
    assert metric(at, "Trustworthiness").value == f"{trustworthiness(x, pca_2d(x)):.3f}"
    assert metric(at, "Projection time").delta == "computed"
    assert np.isfinite(float(metric(at, "Trustworthiness").value))
