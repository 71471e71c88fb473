"""The trajectories page through AppTest: one text drawn at a time by default, a kept choice that
outlives its text falls back, and every section runs without an exception."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

TEXTS = "To be, or not to be\n---\nThe rest is silence.\n---\nHAMLET."


@pytest.fixture
def small_corpus(monkeypatch):
    """No corpus folder: the reference sample is the shipped passage (fast)."""
    from seqviz.introspect import projection

    monkeypatch.setattr(projection, "SHAKESPEARE", ROOT / "no-such-folder")


def open_page(query: dict) -> AppTest:
    at = AppTest.from_file(str(ROOT / "pages" / "trajectories.py"), default_timeout=180)
    at.query_params.update({"recurrent_lm": "tiny-lstm", **query})
    at.run()
    assert not at.exception, at.exception
    return at


def drawn_texts(at: AppTest) -> set[str]:
    """The texts whose points the main trajectory chart carries."""
    import pyarrow as pa

    chart = at.get("vega_lite_chart")[0].proto
    frames = [pd.DataFrame(v) for v in json.loads(chart.spec).get("datasets", {}).values()]
    frames += [pa.ipc.open_stream(d.data.data).read_pandas() for d in chart.datasets]  # Streamlit moves them here
    return set(pd.concat([f for f in frames if "step" in f and "text" in f])["text"])


def test_one_text_is_drawn_by_default_and_all_on_request(tiny_only, small_corpus):
    at = open_page({"traj_text": TEXTS})
    assert at.selectbox(key="traj_show").value == "text 1"
    assert drawn_texts(at) == {"text 1"}
    at.selectbox(key="traj_show").select("text 3").run()
    assert not at.exception and drawn_texts(at) == {"text 3"}
    at.selectbox(key="traj_show").select("all").run()
    assert drawn_texts(at) == {"text 1", "text 2", "text 3"}
    at.radio(key="traj_view").set_value("3-D").run()  # the pair view draws the same choice
    assert not at.exception and drawn_texts(at) == {"text 1", "text 2", "text 3"}


def test_a_kept_text_choice_falls_back_when_the_texts_get_fewer(tiny_only, small_corpus):
    at = open_page({"traj_text": TEXTS})
    at.selectbox(key="traj_show").select("text 3").run()
    at.text_area(key="traj_text").input("To be\n---\nor not").run()  # two texts now: 'text 3' is gone
    assert not at.exception, at.exception
    assert at.selectbox(key="traj_show").value == "text 1" and drawn_texts(at) == {"text 1"}


def test_comparison_section_draws_one_chart_per_chosen_model(tiny_only, small_corpus):
    at = open_page({"traj_text": TEXTS})
    charts = len(at.get("vega_lite_chart"))
    at.multiselect(key="traj_compare").unselect("tiny-rnn").run()
    assert not at.exception and len(at.get("vega_lite_chart")) == charts - 1


def test_the_prefetched_views_make_a_change_build_no_chart(tiny_only, small_corpus, monkeypatch):
    """sections.trajectories.prefetch_nearby queues the next views' specs; once they ran, a change of
    layer, projection or texts drawn (main chart and the comparison's charts) is served from the
    caches: no chart is built."""
    from appkit import models as cm
    from seqviz.charts import trajectory

    tasks = []
    for name in ("prefetch", "prefetch_idle"):
        monkeypatch.setattr(cm, name, lambda func, *args, name=name: tasks.append((func, args, name)))
    at = open_page({"traj_text": TEXTS})
    layers = at.selectbox(key="traj_layer").options
    assert len(layers) == 2 and at.selectbox(key="traj_layer").value == 1
    views = [(args[0], args[1:], kind) for f, args, kind in tasks if f is cm.view_spec]
    assert any(name == "trajectories.trajectory_spec" and a[2] == 0 and kind == "prefetch" for name, a, kind in views)
    assert any(name == "trajectories.trajectory_spec" and a[2:4] == (1, "tsne") and kind == "prefetch_idle"
               for name, a, kind in views)  # a t-SNE fit: only once the visitor pauses
    assert any(name == "trajectories.comparison_spec" and a[1] == 0 for name, a, _kind in views)
    for func, args, *_ in tasks:  # what the background worker would do between the runs
        func(*args)
    built = []
    for name in ("trajectory_chart", "pair_views"):
        real = getattr(trajectory, name)
        monkeypatch.setattr(trajectory, name, lambda *a, real=real, name=name, **k: built.append(name) or real(*a, **k))
    at.selectbox(key="traj_layer").select(0).run()
    assert not at.exception and at.selectbox(key="traj_layer").value == 0
    assert built == []
    at.selectbox(key="traj_layer").select(1).run()
    at.segmented_control(key="traj_method").set_value("tsne").run()  # the other projection, prefetched
    assert not at.exception and built == []
    at.segmented_control(key="traj_method").set_value("pca").run()
    at.selectbox(key="traj_show").select("all").run()  # another choice of texts drawn, prefetched
    assert not at.exception and built == [] and drawn_texts(at) == {"text 1", "text 2", "text 3"}
    at.radio(key="traj_view").set_value("3-D").run()  # a view nobody prefetched for t-SNE: built now
    assert not at.exception and built[0] == "pair_views"


def test_the_trajectory_charts_are_drawn_on_a_canvas(tiny_only, small_corpus):
    """Each chart carries a reference cloud of up to 1,500 points: as SVG, ~1,950 nodes per chart."""
    at = open_page({"traj_text": TEXTS})
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert len(specs) == 4  # the main chart and the comparison's three
    assert all(s["usermeta"]["embedOptions"]["renderer"] == "canvas" for s in specs)
