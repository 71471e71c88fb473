"""The word2vec pages through AppTest on the shipped vectors (the analogy lab, the word map, the evaluation):
numbers against gensim, bad words, URL state, links made when the map and the evaluation were tabs."""

from __future__ import annotations


import numpy as np
import pytest
from gensim.models import KeyedVectors
from streamlit.testing.v1 import AppTest

from appkit.registry import PAGES
from tests.app.tabs import choose_tab
from tests.conftest import ROOT
from seqviz.text import gettext_in
from seqviz.introspect.wordmap import analogy_map, map_frame
from tests.word2vec.conftest import SHIPPED

PAGE = next(p for p in PAGES if p.path == "word2vec.py")
MAP, EVALUATION = "word_map.py", "word2vec_evaluation.py"


@pytest.fixture
def app(monkeypatch):
    if not (SHIPPED / "word2vec-shakespeare").is_dir():
        pytest.skip("no shipped word2vec checkpoint")
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(SHIPPED))

    def open_page(query=None, path=PAGE.path):
        at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=240)
        at.run()
        if query:
            at.query_params.update(query)
        at.switch_page(f"pages/{path}")
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
    assert len(at.get("vega_lite_chart")) == 1  # lazy tabs: only the lab ran
    at = switch(at, EVALUATION)
    card = wv.card["evaluation"]
    assert metric(at, "Google analogies").value == f"{card['analogies']['accuracy']:.1%}"
    assert metric(at, "WordSim-353").value == f"{card['wordsim353']['spearman']:.3f}"
    assert f"{card['simlex999']['oov']} of 999 pairs OOV" in metric(at, "SimLex-999").delta
    assert any("Linzen (2016)" in i.value for i in at.info)
    next(b for b in at.button if b.label == "Recompute on these vectors").click().run()
    assert any(c.value == "Recomputed just now." for c in at.caption)
    assert metric(at, "Google analogies").value == f"{card['analogies']['accuracy']:.1%}"
    assert metric(at, "SimLex-999").value == f"{card['simlex999']['spearman']:.3f}"
    # the analogy map opens the word map; the stored t-SNE map is one click away, and no t-SNE runs for it
    at = switch(at, MAP)
    assert at.radio(key="w2v_proj").value == "analogy"
    at = at.radio(key="w2v_proj").set_value("tsne").run()
    assert metric(at, "Projection time").delta == "stored with the checkpoint"
    trust = wv.card["word_map"]["trustworthiness"]
    assert metric(at, "Trustworthiness").value == f"{trust:.3f}"


def switch(at: AppTest, path: str) -> AppTest:
    """What a click on another page in the navigation does (the session, its kept values, go along)."""
    at.switch_page(f"pages/{path}")
    at.run()
    assert not at.exception, at.exception
    return at


def open_tab(at: AppTest, name: str) -> AppTest:
    """A click on the tab (``tests.app.tabs.choose_tab``), then the run it starts."""
    choose_tab(at, "w2v_tab", name)
    at.run()
    assert not at.exception, at.exception
    return at


def test_unknown_words_warn_and_the_page_stays_up(app):
    at = app()
    next(t for t in at.text_input if t.label.startswith("c (")).input("kingg").run()
    assert not at.exception and not at.error
    assert any("'kingg' is not in the vocabulary" in w.value and "king" in w.value for w in at.warning)
    at = switch(at, MAP)  # the map still draws, without the analogy view, and says why
    assert any("'kingg' is not in the vocabulary" in w.value for w in at.warning)
    assert at.radio(key="w2v_proj").options == ["t-SNE", "PCA"] and at.get("vega_lite_chart")


def test_the_word_map_draws_the_labs_analogy_and_the_lab_keeps_its_settings(app, shipped_vectors):
    """The lab's query, typed on its page, is the one the Word map page draws; its unbound controls (Top k,
    the exclusion) survive a visit to another page and another tab."""
    wv = shipped_vectors
    at = app()
    at.text_input(key="w2v_c").input("lord").run()
    at.text_input(key="w2v_expected").input("").run()
    at.slider(key="w2v_k").set_value(3).run()
    kv = KeyedVectors(wv.dim)
    kv.add_vectors(wv.words, wv.vectors)
    top = kv.most_similar(positive=["woman", "lord"], negative=["man"], topn=1)[0][0]
    assert metric(at, "Top answer").value == top
    at = switch(at, MAP)
    assert at.radio(key="w2v_proj").value == "analogy" and at.text_input(key="w2v_c").value == "lord"
    frame = map_frame(analogy_map(wv, {"a": "man", "b": "woman", "c": "lord", "d": top}), wv)
    xy = frame.set_index("word")[["x", "y"]].astype(float)
    u, v = (xy.loc["woman"] - xy.loc["man"]).to_numpy(), (xy.loc[top] - xy.loc["lord"]).to_numpy()
    assert metric(at, "Cosine of the two offsets").value == f"{u @ v / np.linalg.norm(u) / np.linalg.norm(v):.2f}"
    at = switch(at, PAGE.path)
    assert at.slider(key="w2v_k").value == 3 and at.text_input(key="w2v_c").value == "lord"
    at.toggle(key="w2v_exclude").set_value(False).run()
    assert metric(at, "Top answer").value == "lord"  # without the exclusion c itself wins, as the lab says
    at = open_tab(open_tab(at, "Neighbours"), "Analogy lab")
    assert at.toggle(key="w2v_exclude").value is False and metric(at, "Top answer").value == "lord"


@pytest.mark.parametrize("old", [False, True], ids=["map link", "old tab link"])
def test_url_restores_the_query_and_pca_map_is_computed(app, shipped_vectors, old):
    query = {"w2v_a": "he", "w2v_b": "she", "w2v_c": "lord", "w2v_expected": "lady", "w2v_proj": "PCA", "w2v_n": "300"}
    # a link to the map page, or one made when the map was the word2vec page's tab: it lands on the map page
    at = app({**query, "w2v_tab": "Word map"}) if old else app(query, MAP)
    assert "w2v_tab" not in at.query_params and at.slider(key="w2v_n").value == 300
    from seqviz.introspect.wordmap import pca_2d, trustworthiness

    wv = shipped_vectors
    rows = list(wv.top(300)) + [wv.index[w] for w in ("he", "she", "lord", "lady") if wv.index[w] not in wv.top(300)]
    x = wv.unit[rows]
    assert metric(at, "Trustworthiness").value == f"{trustworthiness(x, pca_2d(x)):.3f}"
    assert metric(at, "Projection time").delta == "computed"
    assert np.isfinite(float(metric(at, "Trustworthiness").value))
    at = switch(at, PAGE.path)
    assert [t.value for t in at.text_input[:4]] == ["he", "she", "lord", "lady"]


def write_vec(path, n_words: int = 1500, dim: int = 16):
    """A word2vec text file where queen = king - man + woman exactly; the analogy words come first."""
    rng = np.random.default_rng(0)
    words = ["man", "woman", "king", "queen"] + [f"w{i}" for i in range(n_words - 4)]
    vectors = rng.standard_normal((n_words, dim)).astype(np.float32)
    vectors[3] = vectors[2] - vectors[0] + vectors[1]
    rows = [f"{w} " + " ".join(f"{x:.6f}" for x in v) for w, v in zip(words, vectors)]
    path.write_text(f"{n_words} {dim}\n" + "\n".join(rows) + "\n")
    return path


def test_a_typed_path_to_a_vector_file_opens_with_a_word_limit(app, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path))
    vec = write_vec(tmp_path / "my-vectors.vec")
    at = app()
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(vec)).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "Using **my-vectors.vec** (local folder)" in captions and "Found word vectors" in captions
    assert "1,500 words × 16" in captions
    assert metric(at, "Top answer").value == "queen"
    next(n for n in at.sidebar.number_input if n.label.startswith("Words to read")).set_value(1000).run()
    assert not at.exception and not at.error, [e.value for e in at.error]
    captions = " ".join(c.value for c in at.sidebar.caption)
    assert "1,000 words × 16 (the first 1,000 of the file)" in captions
    assert metric(at, "Top answer").value == "queen"


def test_a_vector_file_outside_the_allowed_folders_is_refused(app, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path / "allowed"))
    (tmp_path / "allowed").mkdir()
    vec = write_vec(tmp_path / "elsewhere.vec")
    at = app()
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(vec)).run()
    assert not at.exception
    assert any("outside the folders this app may open" in e.value for e in at.error)
    assert any("instead" in i.value for i in at.info) and metric(at, "Top answer")


def test_a_typed_text_file_that_is_not_vectors_is_refused_without_quoting_it(app, tmp_path, monkeypatch):
    monkeypatch.setenv("SEQVIZ_ALLOWED_DIRS", str(tmp_path))
    secret = "hunter2SECRET"
    (tmp_path / "notes.txt").write_text(f"alice {secret} 0.5\nbob {secret} 0.7\n")
    at = app()
    at.sidebar.radio[0].set_value("Local folder").run()
    at.sidebar.text_input[0].input(str(tmp_path / "notes.txt")).run()
    assert not at.exception and any("notes.txt" in e.value for e in at.error)
    shown = [str(getattr(e, "value", "")) for e in [*at.main, *at.sidebar]]
    assert not any(secret in s for s in shown)
    assert metric(at, "Top answer")  # back on the shipped vectors


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_a_link_names_its_tab_in_any_language(app, lang):
    """A shared link names the open tab in its maker's language; it opens that tab in the visitor's too, and
    the tab stays open on the next rerun (Streamlit alone would open the first tab)."""
    other = {"en": "zh", "zh": "en"}[lang]
    at = app({"lang": lang, "w2v_tab": gettext_in(other, "Neighbours")})
    assert at.slider(key="w2v_n_near").value == 15
    assert at.session_state["w2v_tab"] == gettext_in(lang, "Neighbours")
    if lang == "en":  # AppTest cannot rerun this page in Chinese (it sends the picker's source radio in English)
        at = at.slider(key="w2v_n_near").set_value(20).run()
        assert not at.exception and at.slider(key="w2v_n_near").value == 20


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("tab, lands", [("Word map", ("radio", "w2v_proj")),
                                        ("Evaluation", ("button", "Recompute on these vectors"))])
def test_an_old_link_to_a_tab_that_became_a_page_opens_that_page(app, lang, tab, lands):
    """The word map and the evaluation were tabs of the word2vec page: a link to them (its tab named in its
    maker's language) opens their page now, in the visitor's language, with the link's other parameters."""
    other = {"en": "zh", "zh": "en"}[lang]
    at = app({"lang": lang, "w2v_tab": gettext_in(other, tab), "word2vec": "word2vec-shakespeare"})
    kind, name = lands
    found = at.radio(key=name) if kind == "radio" else [b for b in at.button if b.label == gettext_in(lang, name)]
    assert found and at.title[0].value == gettext_in(lang, "Word map" if tab == "Word map" else "Word-vector evaluation")
    assert at.query_params.get("word2vec") == "word2vec-shakespeare" and at.query_params.get("lang") == lang


def _sidebar_order(at) -> list[tuple[str, str]]:
    """(type, label or text) of the sidebar's elements, in the order drawn."""
    out = []

    def walk(node):
        for child in getattr(node, "children", {}).values():
            if getattr(child, "type", None) in ("subheader", "number_input", "file_uploader", "radio"):
                out.append((child.type, getattr(child, "label", None) or getattr(child, "value", "")))
            walk(child)
    walk(at.sidebar)
    return out


def test_one_way_to_open_vectors_and_the_word_limit_under_the_checkpoint_heading(app):
    """Issue 51: a Source "Upload" option and a second "Or open a … vector file" uploader; the word limit drawn
    above the Checkpoint heading."""
    at = app()
    order = _sidebar_order(at)
    kinds = [k for k, _label in order]
    assert kinds.count("file_uploader") == 1, order
    source = next(label for k, label in order if k == "radio" and label == "Source")
    assert source and "Upload" not in next(r for r in at.sidebar.radio if r.label == "Source").options
    labels = [label for _k, label in order]
    assert labels.index("Checkpoint") < labels.index("Words to read from a vector file")


def test_the_other_vectors_table_reads_every_score_to_three_decimals(app, shipped_vectors):

    at = app()
    tables = [d.value for d in at.dataframe if "score" in d.value.columns]
    if not tables:
        pytest.skip("one shipped word2vec checkpoint: no other vectors to compare")
    table = tables[0]
    assert all(len(s.split(".")[1]) == 3 for s in table["score"]), list(table["score"])
    assert list(table["rank"]) == [str(i) for i in range(1, len(table) + 1)]
