"""The trajectory and gate pages through AppTest: the numbers they show match the library's."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from tests.conftest import ROOT

PAGES = ROOT / "pages"


@pytest.fixture
def small_corpus(monkeypatch):
    """No corpus folder: reference sample and search text come from the shipped passage (fast)."""
    from seqviz.introspect import projection

    monkeypatch.setattr(projection, "SHAKESPEARE", ROOT / "no-such-folder")


def run(page: str, query: dict | None = None) -> AppTest:
    at = AppTest.from_file(str(PAGES / page), default_timeout=180)
    at.query_params.update(query or {"recurrent_lm": "tiny-lstm"})
    at.run()
    assert not at.exception, at.exception
    return at


def test_trajectories_padding_study_and_views(tiny_only, small_corpus):
    at = run("trajectories.py", {"recurrent_lm": "tiny-lstm", "traj_tab": "Padding and masks"})  # a lazy tab
    table = at.dataframe[0].value  # as a reader reads it: named columns, numbers rounded to 4 decimals
    assert list(table.columns) == ["text", "length", "pad tokens", "distance", "cosine", "‖h‖, mask respected",
                                   "‖h‖, mask ignored", "loss, pads masked", "loss, pads counted"]
    assert all(len(v.split(".")[1]) == 4 for v in table["cosine"])
    pads, distance = table["pad tokens"].astype(int), table["distance"].astype(float)
    assert list(pads == 0) == list(distance == 0)  # only the unpadded text agrees
    assert (pads > 0).sum() == 2 and (distance[pads > 0] > 0).all()
    assert any("shipped with seqviz" in c.value for c in at.caption)  # where the fitted space came from
    at.radio(key="traj_view").set_value("3-D").run()
    assert not at.exception and at.get("vega_lite_chart")
    assert not at.select_slider  # tiny checkpoints keep no snapshots: no training slider


def test_trajectories_warn_about_unknown_and_long_texts(tiny_only, small_corpus):
    from seqviz.inputs import MAX_TOKENS

    at = run("trajectories.py")
    at.text_area(key="traj_text").input("a" * (MAX_TOKENS + 7) + "\n---\nnaïve").run()
    warnings = " ".join(w.value for w in at.warning)
    assert "the last 7 were cut" in warnings and "'ï'" in warnings
    assert not at.exception


def test_gates_tabs_parameter_counts_memory_and_saturation(tiny_only, small_corpus):
    at = run("gates.py", {"recurrent_lm": "tiny-lstm", "gate_tab": "Parameter count"})
    params = at.dataframe[0].value
    assert (params["actual"] == params["formula_pytorch"]).all()
    assert set(params["groups"]) == {1, 3, 4} and len(params) == 6  # tiny rnn, gru, lstm x 2 layers
    at = run("gates.py", {"recurrent_lm": "tiny-lstm", "gate_tab": "Memory ∏ f"})
    assert any("constant error carousel" in c.value for c in at.caption)
    at = run("gates.py", {"recurrent_lm": "tiny-rnn", "gate_tab": "Memory ∏ f"})
    assert any("no gate that keeps its state" in i.value for i in at.info)
    at = run("units.py", {"recurrent_lm": "tiny-lstm", "units_tab": "Saturation"})  # over the corpus sample
    assert any("Karpathy" in c.value for c in at.caption) and not at.dataframe and not at.table  # the others did not run
    at = run("gates.py", {"recurrent_lm": "tiny-lstm"})  # the first tab: the memory of the forget gate (S6)
    assert any("constant error carousel" in c.value for c in at.caption)
    assert not any("Karpathy" in c.value for c in at.caption)


def test_gates_pattern_search_lists_matches(tiny_only, small_corpus):
    at = run("units.py", {"recurrent_lm": "tiny-lstm", "units_tab": "Pattern search"})
    at.slider(key="units_thr").set_value(-0.5).run()
    at.checkbox(key="units_edges").uncheck().run()
    at.slider(key="units_span").set_value((2, 3)).run()
    at.toggle(key="units_search").set_value(True).run()
    assert not at.exception
    hits = at.dataframe[0].value
    assert 0 < len(hits) <= 20 and list(hits["score"]) == sorted(hits["score"], reverse=True)
    assert any("tokens searched" in c.value for c in at.caption)


def test_trajectories_move_through_training_snapshots(tmp_path, monkeypatch, small_corpus):
    import torch

    from seqviz.checkpoints import save_weights
    from tests.conftest import build_tiny_lm

    model = build_tiny_lm("gru", seed=4)
    folder = model.save_pretrained(tmp_path / "tiny-gru-snap", {"name": "snap"})
    (folder / "snapshots").mkdir()
    save_weights(build_tiny_lm("gru", seed=5), folder / "snapshots" / "step-10.safetensors", dtype=torch.float16)
    save_weights(build_tiny_lm("gru", d_hidden=7), folder / "snapshots" / "step-20.safetensors")  # a bad file
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tmp_path))
    at = run("trajectories.py", {"recurrent_lm": "tiny-gru-snap"})
    assert at.select_slider[0].options == ["10", "20", "final"]
    final_spec = at.get("vega_lite_chart")[0].proto.spec
    at.select_slider(key="traj_step").set_value("10").run()
    assert not at.exception
    spec = at.get("vega_lite_chart")[0].proto.spec
    assert "step 10" in spec and spec != final_spec  # other weights, other path, same fitted space
    at.select_slider(key="traj_step").set_value("20").run()
    assert not at.exception  # a snapshot that does not fit the config: a message, not a traceback
    assert "at step 20" in at.error[0].value and "shape" in at.error[0].value


def test_single_units_inspector_opens_on_the_unit_that_follows_a_feature_best(tiny_only, small_corpus):
    from seqviz.registry import load
    from seqviz.views import gates as views

    at = run("units.py", {"recurrent_lm": "tiny-lstm", "units_tab": "Unit inspector", "units_layer": "1"})
    model = load(tiny_only / "tiny-lstm")
    best = views.unit_ranking(model, layer=1, signal=at.segmented_control(key="units_signal_lstm").value)
    assert at.number_input(key="units_unit").value == int(best.data["unit"].iloc[0]) != 0  # not merely the first
    assert any("Pearson r" in c.value for c in at.caption) and len(at.get("vega_lite_chart")) == 2
