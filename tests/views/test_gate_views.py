"""seqviz.views.gates against the model's own trace, read by hand: what the page, the lesson and the CLI draw."""

from __future__ import annotations

import numpy as np
import pytest

from seqviz import figures
from seqviz.text import translator
from seqviz.views import gates as views
from tests.app.test_gates_page import brute_best
from tests.conftest import build_tiny_lm

TEXT = "To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n" * 2


@pytest.fixture(scope="module")
def lstm():
    return build_tiny_lm("lstm", seed=3)


@pytest.fixture(scope="module")
def ids(lstm):
    return tuple(lstm.tokenizer.encode(TEXT).ids)


def test_the_heat_map_holds_the_trace_s_values_on_the_position_s_page(lstm, ids):
    view = views.heat_map(lstm, ids, layer=1, signal="forget", order_by="index", units=5, position=70)
    forget = lstm.trace([list(ids)])["layers.1.gates.forget"][0].numpy()  # [T, U]
    assert (view.facts["first"], view.facts["last"]) == (64, min(127, len(ids) - 1))  # the page of 64 holding 70
    for row in view.data.sample(20, random_state=0).itertuples():
        assert row.value == pytest.approx(float(forget[row.step, row.unit]), abs=1e-6)
    shown = view.data[view.data["r_index"] < view.facts["units"]]  # what the chart opens on
    assert sorted(set(shown["unit"])) == [0, 1, 2, 3, 4]  # by index: the first five


def test_every_order_the_browser_switches_to_ranks_the_units_as_computed_here(lstm, ids):
    """The chart holds the 96 first units of each order with their ranks; each order's first n (any n the
    slider offers) are the n largest by variance over the whole text, by value at the position, by index."""
    view = views.heat_map(lstm, ids, layer=0, signal="input", order_by="value", units=3, position=10)
    gate = lstm.trace([list(ids)])["layers.0.gates.input"][0].double().numpy()  # [T, U]
    by_rank = lambda order: view.data.drop_duplicates("unit").sort_values(f"r_{order}")["unit"].to_numpy()  # noqa: E731
    expected = {"variance": np.argsort(-gate.var(0), kind="stable"), "value": np.argsort(-gate[10], kind="stable"),
                "index": np.arange(gate.shape[1])}
    for order, units in expected.items():
        assert list(by_rank(order)[: views.MOST_UNITS]) == list(units[: views.MOST_UNITS]), order
    assert int(by_rank("value")[0]) == int(np.argmax(gate[10]))  # the largest at the position comes first
    assert view.facts["units"] == 4 and view.facts["order"] == "value"  # 3 is below the slider's least, 4
    assert len(view.data) == view.data["unit"].nunique() * 64  # every kept unit on the whole page of tokens


def test_the_means_quote_the_mean_over_units_at_the_position(lstm, ids):
    view = views.gate_means(lstm, ids, layer=0, position=12)
    t = lstm.trace([list(ids)])
    for gate in ("input", "forget", "output"):
        assert view.facts[gate] == pytest.approx(float(t[f"layers.0.gates.{gate}"][0, 12].mean()), abs=1e-6)


def test_the_longest_memory_is_the_one_a_loop_over_units_finds(lstm, ids):
    f = lstm.trace([list(ids)])["layers.0.gates.forget"][0].double().numpy()
    start = 5
    best = brute_best(f, start)[0]  # one factor at a time, as the book multiplies them
    spans = views.memory_spans(lstm, ids, layer=0, position=start, delta=0.0)
    product = views.memory_product(lstm, ids, layer=0, position=start, delta=2.0)
    assert spans.facts["span"] == best == product.facts["span"]
    assert product.facts["span_shifted"] >= product.facts["span"]  # a larger forget bias keeps it at least as long
    assert product.facts["longer_by"] == product.facts["span_shifted"] - product.facts["span"]


def test_a_plain_rnn_has_no_memory_view():
    rnn = build_tiny_lm("rnn", seed=1)
    with pytest.raises(ValueError, match="no gate"):
        views.memory_spans(rnn, tuple(rnn.tokenizer.encode(TEXT).ids))


def test_titles_go_through_the_installed_translator(lstm, ids):
    with translator(lambda s: "«" + s + "»"):
        view = views.heat_map(lstm, ids, signal="forget")
    assert view.chart.to_dict(validate=False)["title"] == "««forget gate f»: token × unit»"


@pytest.mark.parametrize("signal, domain, scheme", [("forget", [0.0, 1.0], "viridis"), ("h", [-1.0, 1.0], "redblue")])
def test_one_unit_on_the_text_is_coloured_over_its_function_s_range(lstm, ids, signal, domain, scheme):
    """A gate's unit over the sigmoid's 0-1, h over tanh's -1..1 (it was coloured around 0 as a free value, the
    gate's translated label not being a signal name), the legend naming the unit in the installed language."""
    view = views.unit_on_text(lstm, ids, layer=1, signal=signal, unit=7)
    name = "layers.1.gates.forget" if signal == "forget" else "layers.1.h"
    assert view.data[signal].to_numpy() == pytest.approx(lstm.trace([list(ids)])[name][0, :, 7].numpy(), abs=1e-6)
    cells = view.chart.to_dict(validate=False)["layer"][0]["encoding"]["color"]
    assert (cells["scale"]["domain"], cells["scale"]["scheme"]) == (domain, scheme)
    with translator(lambda s: "«" + s + "»"):
        title = views.unit_on_text(lstm, ids, layer=1, signal=signal, unit=7).chart.to_dict(validate=False)
    assert title["layer"][0]["encoding"]["color"]["title"].endswith(" · unit 7»")


def test_the_cli_figure_is_the_page_s_view(lstm):
    chart, frame, footnote = figures.render("gates", lstm, TEXT, layer=1, signal="forget", sort="index", units=5,
                                            position=70)
    view = views.heat_map(lstm, tuple(lstm.tokenizer.encode(TEXT).ids), layer=1, signal="forget",
                          order_by="index", units=5, position=70)
    assert frame.equals(view.data) and "64–" in footnote
