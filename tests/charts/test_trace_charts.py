"""Trajectory and gate chart builders: their data and encodings checked value by value."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from seqviz.charts import gates as CG
from seqviz.charts import trajectory as CT


def spec(chart) -> dict:
    import altair as alt

    with alt.data_transformers.disable_max_rows():
        return json.loads(json.dumps(chart.to_dict()))


def datasets(chart) -> list[pd.DataFrame]:
    return [pd.DataFrame(rows) for rows in spec(chart)["datasets"].values()]


def frame(n=5, texts=("a", "b"), dims=2) -> pd.DataFrame:
    rows = []
    for t in texts:
        for s in range(n):
            rows.append({"text": t, "step": s, "token": " \nxy"[s % 4], "x": s * 1.0, "y": -s * 2.0,
                         "z": s * 0.5, "norm": 1.0 + s, "loss": np.nan if s == n - 1 else 0.1 * s})
    out = pd.DataFrame(rows)
    return out if dims == 3 else out.drop(columns="z")


def test_display_token_makes_whitespace_visible():
    assert [CT.display_token(t) for t in [" ", "\n", "\t", "ab"]] == ["␣", "⏎", "⇥", "ab"]


def test_trajectory_chart_carries_every_point_and_its_hover_fields():
    f = frame()
    s = spec(CT.trajectory_chart(f, ("PC1", "PC2"), reference=pd.DataFrame({"x": [0.0], "y": [0.0]})))
    data = [d for d in (pd.DataFrame(v) for v in s["datasets"].values()) if "step" in d]
    assert len(data) == 1 and len(data[0]) == len(f)
    assert list(data[0]["shown"][:3]) == ["␣", "⏎", "x"]
    points = next(layer for layer in s["layer"] if layer["mark"]["type"] == "circle" and "tooltip" in layer["encoding"])
    titles = [t["title"] for t in points["encoding"]["tooltip"]]
    assert titles == ["text", "step", "token", "‖h_t‖", "next-token loss (nats)"]
    assert points["encoding"]["color"]["field"] == "step"
    with pytest.raises(ValueError, match="nothing to draw"):
        CT.trajectory_chart(f.iloc[:0])


def test_pair_views_show_axes_1_2_and_3_2():
    f = frame(dims=3)
    s = spec(CT.pair_views(f, ("PC1", "PC2", "PC3")))
    left, right = s["hconcat"]
    enc = [next(layer for layer in v["layer"] if layer["mark"]["type"] == "circle")["encoding"] for v in (left, right)]
    assert (enc[0]["x"]["field"], enc[0]["y"]["field"]) == ("x", "y")
    assert (enc[1]["x"]["field"], enc[1]["y"]["field"]) == ("z", "y")
    assert enc[1]["x"]["title"] == "PC3"
    with pytest.raises(ValueError, match="3-D"):
        CT.pair_views(frame(), ("PC1", "PC2"))


def test_padding_grid_hides_pad_text_and_keeps_the_last_positions():
    grid = pd.DataFrame([{"text": "text 1", "step": t, "token": "ab"[t % 2] if t < 3 else "<pad>", "is_pad": t >= 3}
                         for t in range(200)])
    data = datasets(CT.padding_grid_chart(grid, max_steps=50))[0]
    assert data["step"].min() == 150 and len(data) == 50
    assert set(data["shown"]) == {""} and set(data["kind"]) == {"padding"}
    small = datasets(CT.padding_grid_chart(grid.head(5)))[0]
    assert list(small["shown"]) == ["a", "b", "a", "", ""]


def test_heatmap_frame_holds_the_exact_values_in_unit_order():
    v = np.arange(24, dtype=float).reshape(6, 4)
    f = CG.heatmap_frame(v, list("abcdef"), units=[3, 1], steps=[2, 5])
    assert list(zip(f["step"], f["unit"], f["value"])) == [(2, 3, 11.0), (2, 1, 9.0), (5, 3, 23.0), (5, 1, 21.0)]
    assert list(f["token"]) == ["c", "c", "f", "f"]
    s = spec(CG.gate_heatmap(f, "forget", list("abcdef"), [3, 1], pick="pick"))
    assert s["encoding"]["y"]["sort"] == {"field": "row", "op": "min"}  # units in the given order, top down:
    rows = {d["unit"]: d["row"] for d in next(iter(s["datasets"].values()))}
    assert rows == {3: 0, 1: 1}
    assert s["encoding"]["color"]["scale"]["domain"] == [0.0, 1.0]
    assert s["params"][0]["name"] == "pick"
    assert '"c"' in s["encoding"]["x"]["axis"]["labelExpr"]  # the token labels the x axis


def test_value_domain_follows_the_squashing_function():
    assert CG.value_domain("forget", [0.3]) == (0.0, 1.0)
    assert CG.value_domain("h", [0.3]) == (-1.0, 1.0)
    assert CG.value_domain("c", [0.5, -2.5, 1.0]) == (-2.5, 2.5)


def test_unit_text_chart_breaks_lines_at_newlines_and_wraps():
    tokens = list("ab\ncd") + ["x"] * 7
    data = datasets(CG.unit_text_chart(tokens, np.linspace(0, 1, len(tokens)), "forget", 3, line_width=4))[0]
    assert list(zip(data["row"], data["col"]))[:6] == [(0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (1, 2)]
    assert list(data["row"][3:]) == [1, 1, 1, 1, 2, 2, 2, 2, 3]  # rows wrap after 4 tokens
    assert data["ink"][0] == "white" and data["ink"].iloc[-1] == "black"  # dark viridis end gets white text


def test_saturation_chart_orders_gates_as_the_cell_does():
    sat = pd.DataFrame({"layer": 0, "signal": ["output", "input", "forget", "cell"], "unit": 0,
                        "left": 0.1, "right": 0.2, "tokens": 10})
    s = spec(CG.saturation_chart(sat))
    assert s["facet"]["row"]["sort"] == ["input", "forget", "cell", "output"]
