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


def _vega(expr: str, datum: dict, **params) -> float:
    """A turntable expression (Vega's cos, sin, PI, datum.*, params) evaluated in Python."""
    import math

    return eval(expr.replace("datum.", "d_").replace("PI", "math.pi").replace("cos(", "math.cos(")
                .replace("sin(", "math.sin("), {"math": math}, {**{f"d_{k}": v for k, v in datum.items()}, **params})


def test_the_3d_view_is_one_turnable_rotation_of_the_three_coordinates():
    """Issue 51: "3-D" drew two 2-D panels. One view now, turned in the browser by two bound sliders; its
    (u, v, depth) is a rotation of the scaled (x, y, z): every point keeps its distance from the origin and
    from every other point, whatever the angles."""
    import itertools

    f = frame(dims=3)
    s = spec(CT.turntable(f, ("PC1", "PC2", "PC3")))
    assert "hconcat" not in s and {p["name"]: p["bind"]["input"] for p in s["params"]} == {"turn": "range",
                                                                                           "tilt": "range"}
    rows = next(v for v in s["datasets"].values() if "step" in v[0])
    extent = max(abs(f[c]).max() for c in "xyz")
    assert [r["xs"] for r in rows] == pytest.approx(list(f["x"] / extent))
    calc = {c["as"]: c["calculate"] for layer in s["layer"] for c in layer.get("transform", [])}
    for turn, tilt in itertools.product((0, 30, -135), (0, 20, 75)):
        def at(r):
            return [_vega(calc[k], r, turn=turn, tilt=tilt) for k in ("u", "v", "depth")]
        for a, b in itertools.combinations(rows[:6], 2):
            before = sum((a[k] - b[k]) ** 2 for k in ("xs", "ys", "zs"))
            after = sum((p - q) ** 2 for p, q in zip(at(a), at(b)))
            assert after == pytest.approx(before, rel=1e-12, abs=1e-15)
    front = [_vega(calc[k], rows[1], turn=0, tilt=0) for k in ("u", "v")]
    assert front == pytest.approx([rows[1]["xs"], rows[1]["ys"]])  # unturned: the PC1-PC2 plane, seen from PC3


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
