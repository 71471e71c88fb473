"""Issue 15 part 6: charts read from the back of a classroom and on a phone (legends, fonts, heights).

Assertions on the Vega-Lite specs the chart builders of the exposure-bias, trajectory and zoo views
produce: full names in legends (labelLimit 0, below the plot), label fonts >= 11 px, runs and models
told apart by colour *and* dash, sparse token labels, a zoo curve tall enough to read.
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest

from seqviz.charts import exposure as CE
from seqviz.charts import trajectory as CT

LONG = ("zh-en-small-teacher-forcing", "zh-en-small-scheduled-sampling")  # cut to "…scheduled-s…" before


def spec(chart) -> dict:
    import altair as alt

    with alt.data_transformers.disable_max_rows():
        return json.loads(json.dumps(chart.to_dict()))


def walk(node, key):
    """Every value stored under ``key`` anywhere in a spec."""
    if isinstance(node, dict):
        for k, v in node.items():
            if k == key:
                yield v
            yield from walk(v, key)
    elif isinstance(node, list):
        for v in node:
            yield from walk(v, key)


def legends(s: dict) -> list[dict]:
    return [leg for leg in walk(s, "legend") if isinstance(leg, dict)]


def curves(models=LONG) -> pd.DataFrame:
    rows = [{"model": m, "run": run, "position": p, "error_rate": (i + 1) * 0.1 + p / 100 + (run == "free-running") * 0.2,
             "tokens": 50} for i, m in enumerate(models) for run in CE.RUNS for p in (0, 5, 10)]
    return pd.DataFrame(rows)


def marks(s: dict) -> list[dict]:
    return [m for m in walk(s, "mark") if isinstance(m, dict)]


@pytest.mark.parametrize("build", [CE.error_rate_chart, lambda f: CE.after_error_chart(
    f.rename(columns={"position": "distance", "error_rate": "p_error", "tokens": "sentences"}))])
def test_model_curves_name_models_in_full_below_the_plot(build):
    s = spec(build(curves()))
    legs = legends(s)
    assert legs and all(leg["labelLimit"] == 0 and leg["orient"] == "bottom" for leg in legs)
    assert all(leg.get("labelFontSize", 0) >= 11 for leg in legs)
    data = pd.concat(pd.DataFrame(v) for v in s["datasets"].values())
    assert set(data["model"]) == set(LONG)  # the names travel whole; nothing shortens them


def test_two_models_differ_in_colour_and_runs_in_dash():
    s = spec(CE.error_rate_chart(curves()))
    enc = s["encoding"]
    assert enc["color"]["field"] == "model" and enc["strokeDash"]["field"] == "run"
    colours = enc["color"]["scale"]["range"]
    assert len(set(colours[: len(LONG)])) == len(LONG)  # the two models: two colours
    dashes = dict(zip(enc["strokeDash"]["scale"]["domain"], map(tuple, enc["strokeDash"]["scale"]["range"])))
    assert dashes["teacher-forced"] != dashes["free-running"]
    # one model: the runs differ in colour AND dash (not two near-identical blues)
    one = spec(CE.error_rate_chart(curves(LONG[:1])))["encoding"]
    assert one["color"]["field"] == one["strokeDash"]["field"] == "run"
    cols = dict(zip(one["color"]["scale"]["domain"], one["color"]["scale"]["range"]))
    assert cols["teacher-forced"] != cols["free-running"]


def test_gold_logprob_runs_differ_in_colour_and_dash():
    table = pd.DataFrame({"t": [0, 1, 2], "gold": ["a", "b", "<eos>"], "tf_token": ["a", "b", "<eos>"],
                          "fr_token": ["a", "c", ""], "gold_logp_tf": [-0.1, -0.2, -0.3],
                          "gold_logp_fr": [-0.1, -2.0, np.nan]})
    s = spec(CE.gold_logprob_chart(table, 1))
    line = s["layer"][0]["encoding"]
    assert line["color"]["field"] == line["strokeDash"]["field"] == "run"
    assert line["strokeDash"]["scale"]["range"][0] != line["strokeDash"]["scale"]["range"][1]
    assert all(leg["labelLimit"] == 0 for leg in legends(s))


def beam_nodes(k=4, steps=10) -> pd.DataFrame:
    rows = [{"step": t, "rank": r, "token": ["tomorrow", "he", "will", "school"][r % 4], "logprob": -t - r,
             "parent_rank": (r if t else None), "finished": False, "gold": r == 0} for t in range(steps) for r in range(k)]
    rows.append({"step": steps - 1, "rank": None, "token": "<eos>", "logprob": -9.0, "parent_rank": 0,
                 "finished": True, "gold": True})
    return pd.DataFrame(rows)


def test_beam_tree_labels_are_big_and_the_legend_is_below_the_nodes():
    s = spec(CE.beam_tree_chart(beam_nodes()))
    text = next(m for m in marks(s) if m["type"] == "text")
    assert text["fontSize"] >= 11
    assert all(leg["orient"] == "bottom" for leg in legends(s))  # never over the last column ("tomorrow")
    # room per step for the longest token at that size: 8 characters * 0.62 * font + a gap
    assert s["width"] / 10 >= 0.62 * text["fontSize"] * len("tomorrow")


def test_every_text_mark_and_axis_label_is_at_least_11_px():
    frame = pd.DataFrame({"text": "text 1", "step": range(5), "token": list("abcde"), "x": np.arange(5.0),
                          "y": np.arange(5.0), "norm": 1.0, "loss": 0.5})
    grid = pd.DataFrame([{"text": "text 1", "step": t, "token": "a", "is_pad": t > 2} for t in range(6)])
    table = pd.DataFrame({"text": ["text 1", "text 2"], "distance": [0.0, 1.0], "pads": [0, 3], "length": [6, 3],
                          "cosine": [1.0, 0.5], "loss_masked": [1.0, 1.0], "loss_pads_counted": [1.0, 2.0]})
    specs = [spec(c) for c in (CT.trajectory_chart(frame), CT.padding_grid_chart(grid),
                               CT.mask_distance_chart(table), CE.beam_tree_chart(beam_nodes()),
                               CE.error_rate_chart(curves()))]
    for s in specs:
        # Streamlit's theme autosize "fit" puts legends and axes inside the height (a few-px plot): not these
        assert s["autosize"]["type"] in ("fit-x", "pad")
        assert all(m["fontSize"] >= 11 for m in marks(s) if m["type"] == "text" and "fontSize" in m)
        assert all(size >= 11 for size in walk(s, "labelFontSize"))
        assert all(leg.get("labelLimit", 0) == 0 for leg in legends(s) if leg.get("orient") == "bottom")


def test_trajectory_labels_only_a_few_tokens():
    n = 240  # 3 texts x 80 points: the tangle of the issue
    frame = pd.DataFrame({"text": np.repeat(["text 1", "text 2", "text 3"], 80), "step": np.tile(np.arange(80), 3),
                          "token": "x", "x": np.random.default_rng(0).normal(size=n),
                          "y": np.random.default_rng(1).normal(size=n), "norm": 1.0, "loss": 0.1})
    keep = CT.label_every(frame, 40)
    every = -(-n // 40)  # 6: steps 0, 6, ..., 78 (14 of them) and the last step 79
    assert keep.sum() == 3 * (len(range(0, 80, every)) + 1)
    assert list(frame[keep & (frame["text"] == "text 1")]["step"])[:3] == [0, every, 2 * every]
    s = spec(CT.trajectory_chart(frame))
    labelled = [pd.DataFrame(v) for v in s["datasets"].values()]
    assert min(len(d) for d in labelled if "shown" in d) == keep.sum()  # the text layer's rows
    assert all(leg["orient"] in ("bottom", "top") for leg in legends(s))  # never beside the plot (a phone's width)


def test_padding_grid_title_is_short_and_the_chart_takes_its_container():
    grid = pd.DataFrame([{"text": f"text {b}", "step": t, "token": "a", "is_pad": t > 30 + b} for b in range(3)
                         for t in range(90)])
    s = spec(CT.padding_grid_chart(grid))
    assert s["title"] == "Padded batch" and "width" not in s  # no 14 px step: the page stretches it
    assert not [m for m in marks(s) if m["type"] == "text"]  # 90 columns: no overprinted tokens, hover instead
    x = (s.get("encoding") or s["layer"][0]["encoding"])["x"]
    assert x["axis"]["values"] == list(range(0, 90, 8))  # ceil(90 / 12) = 8: every 8th position, 12 labels


def test_zoo_training_curves_are_tall_enough(tmp_path, monkeypatch, tiny_lm_dir):
    import shutil

    from streamlit.testing.v1 import AppTest

    from tests.conftest import ROOT

    shutil.copytree(tiny_lm_dir / "tiny-lstm", tmp_path / "tiny-lstm")
    card = json.loads((tmp_path / "tiny-lstm" / "card.json").read_text())
    card["history"] = [{"step": 1, "train_loss": 4.0, "val_loss": 4.1}, {"step": 2, "train_loss": 3.0, "val_loss": 3.5}]
    (tmp_path / "tiny-lstm" / "card.json").write_text(json.dumps(card))
    monkeypatch.setenv("SEQVIZ_CHECKPOINTS", str(tmp_path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.query_params["zoo_curves"] = "true"
    at.run()
    assert not at.exception and at.toggle(key="zoo_curves").value
    (chart,) = at.get("vega_lite_chart")
    s = json.loads(chart.proto.spec)
    assert s["height"] >= 120 and s["autosize"]["type"] == "fit-x"  # the plot's own height, legend on top
    assert s["config"]["axis"]["labelFontSize"] >= 11 and s["config"]["axis"]["labelOverlap"]


def test_a_trajectory_names_its_texts_above_the_plot_only_when_there_are_several():
    """One text: no colour legend ("text 1" told nothing, and beside the position bar it pushed the bar's end
    out of a small chart); several: above the plot, each in its own dark hue, named in the view's language."""
    one = pd.DataFrame({"text": "text 1", "step": range(5), "token": list("abcde"), "x": np.arange(5.0),
                        "y": np.arange(5.0), "norm": 1.0, "loss": 0.5})
    colour = [c for c in walk(spec(CT.trajectory_chart(one)), "color") if isinstance(c, dict) and c.get("field") == "text"]
    assert colour and all(c["legend"] is None for c in colour)
    two = pd.concat([one, one.assign(text="text 2")])
    (colour,) = [c for c in walk(spec(CT.trajectory_chart(two, text_label="文本 {i}")), "color")
                 if isinstance(c, dict) and c.get("field") == "text"]
    assert colour["legend"]["orient"] == "top" and colour["scale"]["range"] == ["#0072B2", "#D55E00"]
    assert "文本 2" in colour["legend"]["labelExpr"] and colour["scale"]["domain"] == ["text 1", "text 2"]


def test_gradient_legends_show_their_keys_at_full_strength():
    """The mean lines' legend is merged with the 10-90 % band's (opacity 0.12, the first layer): its keys took
    that opacity and could not be matched to a line from the back of a room."""
    from seqviz.charts.gradients import distance_curves

    frame = pd.DataFrame([{"model": m, "distance": d, "mean": 10.0 ** -d, "median": 10.0 ** -d, "q10": 10.0 ** -(d + 1),
                           "q90": 10.0 ** -(d - 1), "count": 5} for m in ("a", "b") for d in range(4)])
    legs = legends(spec(distance_curves(frame, "t")))
    assert legs and all(leg["symbolOpacity"] == 1 for leg in legs)


def test_the_final_states_colour_each_text_as_its_trajectory_does():
    points = pd.DataFrame([{"text": t, "reading": r, "x": 1.0, "y": 2.0} for t in ("text 1", "text 2")
                           for r in ("mask respected", "mask ignored")])
    path = pd.DataFrame({"text": ["text 1", "text 2"], "step": 0, "token": "a", "x": 0.0, "y": 0.0, "norm": 1.0,
                         "loss": 0.5})
    text = [c for s in (CT.final_states_chart(points, text_label="文本 {i}"), CT.trajectory_chart(path, text_label="文本 {i}"))
            for c in walk(spec(s), "color") if isinstance(c, dict) and c.get("field") == "text"]
    assert len(text) == 2 and text[0]["scale"] == text[1]["scale"] and "文本 2" in text[0]["legend"]["labelExpr"]
