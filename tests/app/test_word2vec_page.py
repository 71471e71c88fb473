"""pages/word_map.py through AppTest: the analogy view keeps the offsets, t-SNE does not; a smaller upload
after a larger one keeps the word-count slider in range; an uploaded file serves every word2vec page."""

from __future__ import annotations

import numpy as np
import pytest
from streamlit.testing.v1 import AppTest

from appkit.registry import PAGES
from tests.app import test_pages as pages
from seqviz.introspect.wordmap import analogy_map, map_frame, offset_cosine, stored_word_map
from tests.word2vec.conftest import SHIPPED, shipped_vectors  # noqa: F401 (a fixture)

PAGE = next(p for p in PAGES if p.path == "word_map.py")
QUAD = {"a": "man", "b": "woman", "c": "king", "d": "queen"}


def open_page(query=None) -> AppTest:
    at = pages.open_page(PAGE, query)
    assert not at.exception, at.exception
    return at


def metric(at, label):
    return next(m for m in at.metric if m.label.startswith(label))


def cos2d(frame, a, b, c, d) -> float:
    """cos(b − a, d − c) by hand from the map's coordinates."""
    xy = frame.set_index("word")[["x", "y"]].astype(float)
    u, v = (xy.loc[b] - xy.loc[a]).to_numpy(), (xy.loc[d] - xy.loc[c]).to_numpy()
    return float(u @ v / np.linalg.norm(u) / np.linalg.norm(v))


def test_the_analogy_view_is_the_default_and_keeps_the_offsets_parallel(monkeypatch, shipped_vectors):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(SHIPPED))
    wv = shipped_vectors
    at = open_page({"word2vec": "word2vec-shakespeare"})
    assert at.radio(key="w2v_proj").value == "analogy"
    analogy = map_frame(analogy_map(wv, QUAD), wv)
    on_map = cos2d(analogy, *QUAD.values())
    assert on_map > 0.9  # measured 0.96 on the shipped skip-gram vectors
    assert metric(at, "Cosine of the two offsets").value == f"{on_map:.2f}"
    full = wv.unit[[wv.index[w] for w in QUAD.values()]].astype(np.float64)
    by_hand = (full[1] - full[0]) @ (full[3] - full[2]) / np.linalg.norm(full[1] - full[0]) / np.linalg.norm(
        full[3] - full[2])
    assert metric(at, "Cosine of the two offsets").delta == f"{by_hand:.2f} in all {wv.dim} dimensions"
    # the stored t-SNE map bends them (measured -0.50): not parallel
    tsne = map_frame(stored_word_map(wv), wv)
    assert cos2d(tsne, *QUAD.values()) < 0.5
    assert offset_cosine(tsne, QUAD) == pytest.approx(cos2d(tsne, *QUAD.values()))
    at = at.radio(key="w2v_proj").set_value("tsne").run()
    assert metric(at, "Cosine of the two offsets").value == f"{cos2d(tsne, *QUAD.values()):.2f}"
    assert any("t-SNE keeps each word's neighbours, not directions" in c.value for c in at.caption)


def vec_bytes(n_words: int, dim: int = 8, seed: int = 0) -> bytes:
    rng = np.random.default_rng(seed)
    words = ["man", "woman", "king", "queen"] + [f"w{i}" for i in range(n_words - 4)]
    rows = [f"{w} " + " ".join(f"{x:.5f}" for x in rng.standard_normal(dim)) for w in words]
    return (f"{n_words} {dim}\n" + "\n".join(rows) + "\n").encode()


def test_a_smaller_upload_after_a_larger_one_clamps_the_word_count(monkeypatch):
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(SHIPPED))
    at = open_page()
    at = at.radio(key="w2v_proj").set_value("pca").run()
    at.file_uploader(key="w2v_file").set_value(("big.vec", vec_bytes(1200), "application/octet-stream")).run()
    assert not at.exception, at.exception
    assert at.slider(key="w2v_n").max == 1200
    at = at.slider(key="w2v_n").set_value(1000).run()
    assert not at.exception and at.slider(key="w2v_n").value == 1000
    at.file_uploader(key="w2v_file").set_value(("small.vec", vec_bytes(291, seed=1), "application/octet-stream")).run()
    assert not at.exception, at.exception  # was StreamlitValueAboveMaxError
    slider = at.slider(key="w2v_n")
    assert (slider.max, slider.value) == (291, 291)
    assert metric(at, "Trustworthiness")


def test_a_slow_vector_file_shows_a_progress_bar_that_goes_when_done(monkeypatch):
    import contextlib

    from appkit import cache as models

    seen, real = [], models._progress_bar

    @contextlib.contextmanager
    def at_once(after: float = 1.0):  # as if every load took over a second
        with real(after=0.0) as progress:
            yield lambda done: seen.append(done) or progress(done)

    monkeypatch.setattr(models, "_progress_bar", at_once)
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(SHIPPED))
    at = open_page()
    at.file_uploader(key="w2v_file").set_value(("slow.vec", vec_bytes(300, seed=7), "application/octet-stream")).run()
    assert not at.exception, at.exception
    assert seen and seen[-1] == 1.0 and not at.get("progress")  # the bar was drawn, and removed at the end
    assert any("slow.vec" in c.value for c in at.sidebar.caption)
    at.run()  # a cache hit replays the bar made inside the cached function: no CacheReplayClosureError
    assert not at.exception, at.exception


def test_an_upload_serves_every_word2vec_page_until_dropped(monkeypatch):
    """The vector file uploaded on one word2vec page is the one the others draw (their own box is empty); "Back
    to the checkpoint" there returns to the shipped vectors."""
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(SHIPPED))
    at = open_page()
    at.file_uploader(key="w2v_file").set_value(("mine.vec", vec_bytes(400, seed=3), "application/octet-stream")).run()
    assert not at.exception and any("Using **mine.vec**" in c.value for c in at.sidebar.caption)
    assert not [b for b in at.sidebar.button if b.key == "w2v_drop"]  # its own box holds it: cleared there
    for path in ("word2vec.py", "word2vec_evaluation.py"):
        at.switch_page(f"pages/{path}").run()
        assert not at.exception, at.exception
        assert any("Using **mine.vec** (400 words × 8)" in c.value for c in at.sidebar.caption), path
    at.button(key="w2v_drop").click().run()
    assert not at.exception and not any("mine.vec" in c.value for c in at.sidebar.caption)
    assert any("word2vec-shakespeare" in c.value for c in at.sidebar.caption)
