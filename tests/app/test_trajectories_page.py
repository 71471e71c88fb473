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


def test_every_text_is_drawn_by_default_and_one_on_request(tiny_only, small_corpus):
    """Issue 51: the page opened on "text 1" of 3, which read as if the other two were lost."""
    at = open_page({"traj_text": TEXTS})
    assert at.selectbox(key="traj_show").value == "all"
    assert drawn_texts(at) == {"text 1", "text 2", "text 3"}
    at.selectbox(key="traj_show").select("text 3").run()
    assert not at.exception and drawn_texts(at) == {"text 3"}
    at.selectbox(key="traj_show").select("all").run()
    assert drawn_texts(at) == {"text 1", "text 2", "text 3"}
    at.radio(key="traj_view").set_value("3-D").run()  # one turnable view, not two 2-D panels
    assert not at.exception and drawn_texts(at) == {"text 1", "text 2", "text 3"}
    spec = json.loads(at.get("vega_lite_chart")[0].proto.spec)
    assert "hconcat" not in spec and {p["name"] for p in spec["params"]} >= {"turn", "tilt"}


def test_the_fit_says_the_shipped_passage_is_not_held_out_text(tiny_only, small_corpus):
    at = open_page({"traj_text": TEXTS})
    fit = next(c.value for c in at.caption if c.value.startswith("Grey: the reference sample"))
    assert "not held-out text" in fit and "may have trained on" in fit


def test_a_kept_text_choice_falls_back_when_the_texts_get_fewer(tiny_only, small_corpus):
    at = open_page({"traj_text": TEXTS})
    at.selectbox(key="traj_show").select("text 3").run()
    at.text_area(key="traj_text").input("To be\n---\nor not").run()  # two texts now: 'text 3' is gone
    assert not at.exception, at.exception
    assert at.selectbox(key="traj_show").value == "all" and drawn_texts(at) == {"text 1", "text 2"}


def test_comparison_section_draws_one_chart_per_chosen_model(tiny_only, small_corpus):
    at = open_page({"traj_text": TEXTS})
    charts = len(at.get("vega_lite_chart"))
    at.multiselect(key="traj_compare").unselect("tiny-rnn").run()
    assert not at.exception and len(at.get("vega_lite_chart")) == charts - 1


def test_the_comparison_draws_the_models_in_the_order_chosen(tiny_only, small_corpus):
    """The default is RNN, GRU, LSTM, as its title says (the catalogue lists them by name: gru, lstm, rnn)."""
    def drawn():
        titles = [json.dumps(json.loads(c.proto.spec).get("title"), ensure_ascii=False) for c in at.get("vega_lite_chart")]
        return [n for t in titles[1:] for n in ("tiny-rnn", "tiny-gru", "tiny-lstm") if n in t]

    at = open_page({"traj_text": TEXTS})
    assert at.multiselect(key="traj_compare").value == ["tiny-rnn", "tiny-gru", "tiny-lstm"]
    assert drawn() == ["tiny-rnn", "tiny-gru", "tiny-lstm"]
    at.multiselect(key="traj_compare").set_value(["tiny-lstm", "tiny-rnn"]).run()
    assert not at.exception and drawn() == ["tiny-lstm", "tiny-rnn"]


def test_the_trajectory_charts_are_drawn_on_a_canvas(tiny_only, small_corpus):
    """Each chart carries a reference cloud of up to 1,500 points: as SVG, ~1,950 nodes per chart."""
    at = open_page({"traj_text": TEXTS})
    specs = [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]
    assert len(specs) == 4  # the main chart and the comparison's three
    assert all(s["usermeta"]["embedOptions"]["renderer"] == "canvas" for s in specs)
