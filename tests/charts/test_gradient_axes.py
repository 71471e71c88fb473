"""The gradient charts read at a glance (issue 51): compared models are not squeezed by one that underflows, and
the G[t, k] map labels its positions and names its model."""

import json

import numpy as np
import pandas as pd
import pytest

from seqviz.charts import gradients as charts


def rows_of(chart) -> list[dict]:
    spec = json.loads(json.dumps(chart.to_dict()))
    return [row for rows in spec["datasets"].values() for row in rows]


def test_one_model_falling_to_1e_39_goes_to_the_floor_and_leaves_the_others_their_decades():
    distance = np.arange(40)
    rnn = pd.DataFrame({"model": "rnn", "distance": distance, "mean": 10.0 ** -distance.astype(float)})
    lstm = pd.DataFrame({"model": "lstm", "distance": distance, "mean": 10.0 ** (-distance / 20)})
    rows = rows_of(charts.distance_curves(pd.concat([rnn, lstm]), decades=charts.DECADES))
    ceiling = 10.0  # a decade above the largest value, 1
    floor = min(r["mean"] for r in rows)
    assert floor == pytest.approx(ceiling / 10 ** charts.DECADES)
    for r in rows:
        exact = 10.0 ** -r["distance"] if r["model"] == "rnn" else 10.0 ** (-r["distance"] / 20)
        if exact < floor:  # drawn at the floor, marked, its exact value kept for the tooltip
            assert r["mean"] == floor and r["off_scale"] == "0" and float(r["value"]) == pytest.approx(exact, rel=1e-3)
        else:
            assert r["mean"] == pytest.approx(exact) and r["off_scale"] == ""
    assert {r["model"] for r in rows if r["off_scale"] == "0"} == {"rnn"}
    # without a cap (one model's own curve), the axis reaches a decade below its smallest value
    alone = rows_of(charts.distance_curves(rnn))
    assert min(r["mean"] for r in alone) == pytest.approx(1e-40)


def test_the_gradient_map_labels_every_tenth_position_and_names_its_model():
    G = np.tril(np.random.default_rng(0).uniform(0.1, 1.0, (34, 35)), 1)
    spec = charts.gradient_heatmap(G, list("abcdefghijklmnopqrstuvwxyzABCDEFGHI"), "shakespeare-char-gru (GRU)").to_dict()
    encoding = spec["encoding"]
    assert encoding["x"]["axis"]["values"] == [0, 10, 20, 30] and encoding["y"]["axis"]["values"] == [0, 10, 20, 30]
    assert spec["title"]["subtitle"] == "shakespeare-char-gru (GRU)"
