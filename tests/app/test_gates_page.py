"""The Gates page through AppTest: it opens on the LSTM, its memory finder agrees with a brute-force
loop, the bias what-if moves the spans, and data-dependent ranges never raise."""

from __future__ import annotations

import json
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from streamlit.testing.v1 import AppTest

from appkit.cache import list_checkpoints
from appkit.registry import PAGES
from seqviz.inputs import read_texts, split_texts
from seqviz import load
from tests.app.test_pages import APP
from tests.app.test_picker_truth import box, in_use

GATES = next(p for p in PAGES if p.path == "gates.py")
LM = next(p for p in PAGES if p.path == "language_model.py")


def visit(at: AppTest, page) -> AppTest:
    at.switch_page(f"pages/{page.path}")
    at.run()
    assert not at.exception, f"{page.path}: {at.exception}"
    return at


def fresh() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=180)
    at.run()
    assert not at.exception, at.exception
    return at


def memory_metric(at) -> tuple[int, int]:
    """(unit, span) from the memory tab's first metric, "Unit 3: ∏f > 0.5 for" / "≥ 12 tokens"."""
    m = next(m for m in at.metric if m.label.startswith("Unit "))
    return int(re.search(r"Unit (\d+)", m.label).group(1)), int(re.search(r"(\d+) tokens?", m.value).group(1))


def brute_best(f: np.ndarray, start: int) -> tuple[int, float]:
    """The longest span over all units, one factor at a time; and the best log-product among those."""
    best = (-1, -np.inf)
    for u in range(f.shape[1]):
        p, n = 1.0, 0
        for s in range(start, len(f)):
            p *= f[s, u]
            if p <= 0.5:
                break
            n += 1
        best = max(best, (n, float(np.log(f[start:, u]).sum())))
    return best


@pytest.mark.skipif({"shakespeare-char-lstm", "shakespeare-char-gru"} - {c.name for c in list_checkpoints("recurrent_lm")},
                    reason="needs the shipped LSTM and GRU")
def test_gates_opens_on_the_lstm_and_a_visitors_choice_wins():
    at = visit(fresh(), GATES)
    assert in_use(at)[0] == "shakespeare-char-lstm"
    assert at.segmented_control(key="gate_signal_lstm").value == "input"  # the LSTM's gates
    visit(at, LM)
    assert box(at).value == "shakespeare-char-gru"  # LM opens on the first shipped model, chosen by no one
    box(at).select("shakespeare-char-rnn").run()  # picking the name already shown is no change: go via the RNN
    box(at).select("shakespeare-char-gru").run()
    assert not at.exception, at.exception
    visit(at, GATES)
    assert in_use(at)[0] == "shakespeare-char-gru" and box(at).value == "shakespeare-char-gru"
    assert at.segmented_control(key="gate_signal_gru").value == "reset"


def test_memory_tab_finds_the_longest_span_and_the_what_if_moves_it(tiny_only):
    at = visit(fresh(), GATES)
    box(at).select("tiny-lstm").run()
    assert not at.exception, at.exception
    text = at.text_area(key="gate_text").value
    at.slider(key="gate_pos").set_value(5).run()
    assert not at.exception and not at.error, at.exception
    model = load(tiny_only / "tiny-lstm")
    ids = read_texts(model, "\n".join(split_texts(text)[:1]))[0][0]  # what the page reads
    f = model.trace([list(ids)])["layers.0.gates.forget"][0].double().numpy()
    unit, span = memory_metric(at)
    want_span, want_kept = brute_best(f, 5)
    assert span == want_span
    # the gate per token and the ranking wait in collapsed expanders, drawn once opened (a collapsed one's
    # charts are drawn by the browser too)
    assert not at.table and len(at.get("vega_lite_chart")) == 3  # heat map, means, the ∏ chart
    (gates,) = [e for e in at.expander if e.label == "The forget gate f of this unit at each token"]
    assert not gates.proto.expanded and not gates.get("vega_lite_chart")
    at.session_state["gate_mem_ranking"] = True
    at.session_state["gate_mem_steps"] = True
    at.run()
    table = at.table[0].value  # the longest memories first, the metric's unit on top
    assert int(table.index[0]) == unit and int(table.iloc[0]["tokens above 0.5"]) == span
    assert np.log(f[5:, unit]).sum() == pytest.approx(want_kept)  # among equal spans, the one that kept most
    # the ∏ chart leads, named by its start token, and draws the running product of this unit's f from there;
    # the gate per token behind its steps waits in a collapsed expander
    from seqviz.charts.presenter import title_text  # a long title reaches the page in lines (fit_titles)

    product = next(c for c in at.get("vega_lite_chart")
                   if "∏ f since position 5" in title_text(json.loads(c.proto.spec)["title"]))
    assert f"(«{model.tokenizer.tokens[ids[5]]}»)" in title_text(json.loads(product.proto.spec)["title"])
    rows = pd.concat([pa.ipc.open_stream(d.data.data).read_pandas() for d in product.proto.datasets])
    drawn = rows[(rows["run"] == "as trained") & rows["product"].notna()].sort_values("step")
    assert np.allclose(drawn["product"], np.cumprod(f[5:, unit])[:len(drawn)], rtol=1e-5)
    assert len(drawn) > 1 and drawn["step"].iloc[0] == 5
    (gates,) = [e for e in at.expander if e.label == "The forget gate f of this unit at each token"]
    assert len(gates.get("vega_lite_chart")) == 1
    (ranking,) = [e for e in at.expander if e.label.startswith("The 8 units that keep their memory longest")]
    assert ranking.table[0].value.equals(table)  # the table read above is in it
    # the bias shift reruns the tab; a shift of 0 changes nothing, a positive one lengthens it
    at.slider(key="gate_dbias").set_value(0.0).run()
    assert at.metric[0].delta.startswith("+0 ")
    at.slider(key="gate_dbias").set_value(3.0).run()
    assert not at.exception
    assert int(at.metric[1].delta.split()[0]) > 0  # the median span grows with b_f + 3


def test_a_shorter_text_after_a_longer_one_with_the_position_at_the_end(tiny_only):
    at = visit(fresh(), GATES)
    long = "To be, or not to be, that is the question.\n" * 4
    at.text_area(key="gate_text").input(long).run()
    at.slider(key="gate_pos").set_value(len(long) - 1).run()
    at.selectbox(key="gate_layer").set_value(1).run()
    assert not at.exception, at.exception
    for tab_text in ("Hi.", "x"):
        at.text_area(key="gate_text").input(tab_text).run()
        assert not at.exception, at.exception
        assert at.slider(key="gate_pos").value <= max(len(tab_text) - 1, 1)
    at.text_area(key="gate_text").input("").run()
    assert not at.exception and any("Type a text" in i.value for i in at.info)
    for name in ("tiny-gru", "tiny-rnn", "tiny-lstm"):  # every cell, the layer kept
        box(at).select(name).run()
        assert not at.exception, (name, at.exception)
