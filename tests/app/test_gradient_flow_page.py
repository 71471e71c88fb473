"""The gradient pages through AppTest (Gradient flow; Exploding and vanishing): the ρ bench on both sides of 1,
log charts that never hold a 0, the worked example's help and book comparison, clipping bounds, keys with the
pages' prefix, links made when the benches were tabs of the Gradient flow page."""

from __future__ import annotations

import json
import math

import pyarrow as pa
import pytest

from appkit.registry import PAGES
from seqviz.charts.presenter import title_text
from tests.app.test_pages import open_page

GF = next(p for p in PAGES if p.path == "gradient_flow.py")
EV = next(p for p in PAGES if p.path == "exploding_vanishing.py")
EV_TABS = ("Exploding or vanishing", "What if…", "Clipping", "Worked examples")  # the rest are GF's


def page(query=None, tab=None):
    """The page with ``tab`` open (the tabs are lazy: only the open one runs; its label is in the URL)."""
    spec, key = (EV, "gf_ev_tab") if tab in EV_TABS else (GF, "gf_tab")
    at = open_page(spec, {**(query or {}), **({key: tab} if tab else {})})
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]
    return at


def charts(at) -> dict[str, tuple[dict, list]]:
    """title -> (spec, [data frames]) of every Vega-Lite chart on the page."""
    out = {}
    for ch in at.get("vega_lite_chart"):
        spec = json.loads(ch.proto.spec)
        title = title_text(spec.get("title"))  # as built: a long title reaches the page in lines (fit_titles)
        frames = [pa.ipc.open_stream(d.data.data).read_pandas() for d in ch.proto.datasets]
        out[title] = (spec, frames)
    return out


def log_fields(node):
    """Every field a log-scaled encoding reads, anywhere in a spec."""
    if isinstance(node, dict):
        if isinstance(node.get("scale"), dict) and node["scale"].get("type") == "log" and "field" in node:
            yield node["field"]
        for v in node.values():
            yield from log_fields(v)
    elif isinstance(node, list):
        for v in node:
            yield from log_fields(v)


def curve(at, title, model_starts):
    frame = pd_concat(charts(at)[title][1])
    rows = frame[frame["model"].str.startswith(model_starts)].set_index("distance")
    return rows["mean"]


def pd_concat(frames):
    import pandas as pd

    return pd.concat(frames, ignore_index=True)


@pytest.mark.parametrize("rho, grows", [(1.5, True), (0.6, False)])
def test_linear_bench_grows_above_one_and_shrinks_below(tiny_only, rho, grows):
    at = page({"recurrent_lm": "tiny-rnn"}, "Exploding or vanishing")
    at.select_slider(key="gf_rho").set_value(rho).run()
    assert not at.exception
    lin = curve(at, "Same ρ, two regimes", "linear regime")
    tanh = curve(at, "Same ρ, two regimes", "trained RNN")
    assert (lin[20] > lin[0]) if grows else (lin[20] < lin[0])
    assert tanh[20] < lin[20]  # measured on this model: the tanh factors (1 - h²) <= 1 pull its chain below
    caption = " ".join(c.value for c in at.caption)
    assert f"rescaled to ρ = {rho}" in caption and "mean tanh′" in caption


@pytest.mark.parametrize("tab", ["Distance curve", "Layers", "Exploding or vanishing", "Clipping"])
def test_no_log_chart_holds_a_zero_or_inf(tiny_only, tab):
    at = page({"recurrent_lm": "tiny-rnn", "gf_tokens": "400"}, tab)
    if tab == "Exploding or vanishing":
        at.select_slider(key="gf_rho").set_value(0.5).run()
    found = 0
    for title, (spec, frames) in charts(at).items():
        for field in set(log_fields(spec)):
            for f in frames:
                if field in f:
                    vals = f[field].dropna().astype(float)
                    found += len(vals)
                    assert (vals > 0).all() and vals.map(math.isfinite).all(), (title, field)
    assert found > 50


def test_only_the_open_tab_runs(tiny_only):
    at = page({"recurrent_lm": "tiny-rnn"})  # the first tab: no connectivity
    assert not any(w.key == "gf_target" for w in at.main.slider)
    at = open_page(EV, {"recurrent_lm": "tiny-rnn"})  # the ρ bench: no training run, no worked example
    assert not any(w.key in ("gf_clip_c", "gf_whh") for w in at.main.select_slider) and at.select_slider(key="gf_rho")
    assert page({"recurrent_lm": "tiny-rnn"}, "Worked examples").select_slider(key="gf_whh").value == 0.5


def test_worked_example_help_says_vanishes_and_shows_the_book_beside_the_truth(tiny_only):
    at = page(tab="Worked examples")
    slider = at.select_slider(key="gf_whh")
    assert "explode" not in slider.help and "vanishes" in slider.help and "saturates" in slider.help
    slider.set_value(2.0).run()
    compare = next(d.value for d in at.dataframe if "∂h_3/∂h_1 (book, printed)" in d.value.columns).set_index("W_hh")
    assert compare.loc[2.0, "∂h_3/∂h_1 (book, printed)"] == 1.9581
    assert compare.loc[2.0, "∂h_3/∂h_1"] < compare.loc[0.5, "∂h_3/∂h_1"]
    assert any("reused the W = 0.5 states" in c.value for c in at.caption)


def test_clipping_bounds_the_applied_norm_and_the_free_run_exceeds_it(tiny_only):
    at = page(tab="Clipping")
    at.select_slider(key="gf_clip_c").set_value(2.0).run()
    frame = pd_concat(charts(at)["‖g‖ per step (c dashed)"][1])
    applied = frame[frame["series"].str.contains("applied")]["grad_norm"]
    free = frame[frame["series"] == "without clipping"]["grad_norm"]
    assert len(applied) == len(free) == 60
    assert applied.max() <= 2.0 + 1e-5 and (free > 2.0).any()


def test_every_widget_key_has_the_page_prefix(tiny_only):
    keys = []
    for tab in ("Exploding or vanishing", "Clipping", "What if…", "Connectivity", "Worked examples", "Over training"):
        at = page({"recurrent_lm": "tiny-lstm"}, tab)
        keys += [w.key for kind in ("slider", "select_slider", "text_area", "radio", "number_input")
                 for w in getattr(at.main, kind)]
    assert len(set(keys)) >= 10 and all(k and k.startswith("gf_") for k in keys), keys


@pytest.mark.parametrize("lang", ["en", "zh"])
@pytest.mark.parametrize("tab, key", [("Clipping", "gf_lr"), ("Worked examples", "gf_whh")])
def test_an_old_link_to_a_bench_opens_it_on_its_page(tiny_only, lang, tab, key):
    """A link made when the benches were tabs of the Gradient flow page (``?gf_tab=Clipping``, the tab named
    in its maker's language) opens that tab of the Exploding and vanishing page, with its other parameters."""
    from seqviz.text import gettext_in

    other = {"en": "zh", "zh": "en"}[lang]
    value = {"gf_lr": "2.0", "gf_whh": "0.9"}[key]
    at = open_page(GF, {"lang": lang, "gf_tab": gettext_in(other, tab), "recurrent_lm": "tiny-rnn", key: value,
                        "gf_tokens": "40"})
    assert not at.exception, at.exception
    assert at.title[0].value == gettext_in(lang, "Exploding and vanishing gradients")
    assert at.session_state["gf_ev_tab"] == gettext_in(lang, tab) and "gf_tab" not in at.query_params
    assert at.select_slider(key=key).value == float(value)
    # the text box is drawn only on the tabs that read it (issue 51): the link keeps its length for them
    assert "gf_tokens" not in {w.key for w in at.main.slider}
    assert at.query_params["gf_tokens"] == "40"  # kept for the tabs that read it


def test_the_text_follows_the_visitor_to_the_other_gradient_page(tiny_only):
    at = page({"recurrent_lm": "tiny-lstm"})
    at.text_area(key="gf_text").input("Now is the winter of our discontent").run()
    at.switch_page(f"pages/{EV.path}").run()
    assert not at.exception and at.text_area(key="gf_text").value == "Now is the winter of our discontent"


def _using(at) -> str:
    import re

    return next(m.group(1) for c in at.sidebar.caption if (m := re.search(r"Using \*\*(.+?)\*\*", c.value)))


def _first_shipped(need: str):
    from appkit.cache import list_checkpoints, shape
    from seqviz.families import of

    return next(c for c in list_checkpoints("recurrent_lm") if of(shape(c.ref())).applies(need))


def test_exploding_and_vanishing_opens_on_the_tanh_rnn_its_sidebar_names():
    """Issue 51: the sidebar said "Using shakespeare-char-gru" while the ρ bench ran on shakespeare-char-rnn."""
    at = page(tab="Exploding or vanishing")
    rnn = _first_shipped("tanh_recurrence")
    assert _using(at) == rnn.name
    bench = next(c.value for c in at.caption if "own W_hh has ρ" in c.value)
    assert bench.startswith(f"{rnn.name}'s own W_hh")  # the bench ran on the model the sidebar names
    assert not at.info  # nothing stands in for it
    at = page(tab="Clipping")  # the clipping bench trains its own RNN: it says that it does not use the sidebar's
    assert any("of its own" in i.value and rnn.name in i.value for i in at.info)


def test_the_two_paths_tab_draws_an_lstm_and_names_it_when_the_sidebar_holds_a_gru():
    """Issue 51: the tab opened on "Pick an LSTM checkpoint in the sidebar" because the sidebar's default is the GRU."""
    from seqviz.families import stand_in_note
    from seqviz import load
    from seqviz.views import gradients as views

    at = page(tab="LSTM's two paths")
    picked, lstm = _using(at), _first_shipped("cell_path")
    assert picked != lstm.name  # the page's default (no need of its own) is another family
    assert [i.value for i in at.info] == [stand_in_note(picked, lstm.name, "cell_path")]
    text, tokens = at.text_area(key="gf_text").value, at.slider(key="gf_tokens").value
    spec, frames = charts(at)["Hidden-state path vs cell-state path"]
    drawn = frames[0].sort_values(list(frames[0].columns)).reset_index(drop=True)
    lib = views.two_paths(load(lstm.path), text, tokens).data
    assert len(drawn) == len(lib)
    num = [c for c in lib.columns if lib[c].dtype.kind == "f"]
    for c in num:
        if c in drawn:
            assert sorted(drawn[c].dropna().round(9)) == sorted(lib[c].dropna().round(9)), c
