"""word2vec charts: arrow geometry computed by hand, layers present, bars in rank order."""

from __future__ import annotations

import pandas as pd
import pytest

from seqviz.charts.word2vec import (HEAD_AT, analogy_layers, arrow_frame, bias_chart, sections_chart, topk_chart,
                                    with_layers, word_map_chart)

POINTS = pd.DataFrame({"word": ["man", "woman", "king", "queen", "the"], "x": [0.0, 1.0, 0.0, 0.0, 5.0],
                       "y": [0.0, 0.0, 0.0, 2.0, 5.0], "rank": [3, 4, 2, 5, 1]})


def test_arrow_heads_point_along_the_offset_on_screen():
    # domains 10 wide and 4 high on a 500 x 200 canvas: one data unit is 50 px both ways
    arrows = arrow_frame(POINTS, [("man", "woman"), ("king", "queen"), ("man", "absent")],
                         [0, 10], [0, 4], 500, 200)
    assert list(arrows["arrow"]) == ["man → woman", "king → queen"]  # a missing word draws no arrow
    assert arrows["angle"].tolist() == pytest.approx([90.0, 0.0])  # right = 90° clockwise from up; up = 0°
    assert arrows.loc[0, ["hx", "hy"]].tolist() == pytest.approx([HEAD_AT, 0.0])
    # unequal scales: 1 unit right is 100 px, 1 unit up is 25 px -> atan2(100, 25) from up
    skew = arrow_frame(pd.DataFrame({"word": ["a", "b"], "x": [0.0, 1.0], "y": [0.0, 1.0]}), [("a", "b")],
                       [0, 5], [0, 8], 500, 200)
    assert skew["angle"][0] == pytest.approx(75.96375653207353)


def test_word_map_layers_labels_and_highlights():
    spec = word_map_chart(POINTS, labels=["the"], analogy={"a": "man", "b": "woman", "c": "king", "d": "queen"},
                          title="t").to_dict()
    marks = [layer["mark"]["type"] if isinstance(layer["mark"], dict) else layer["mark"] for layer in spec["layer"]]
    assert marks == ["circle", "text", "rule", "point", "circle", "text"]
    datasets = list(spec["datasets"].values())
    labelled = next(d for d in datasets if len(d) == 1 and d[0]["word"] == "the")
    assert labelled[0]["rank"] == 1
    highlighted = next(d for d in datasets if {r.get("role") for r in d} == {"a", "b", "c", "d"})
    assert {r["word"] for r in highlighted} == {"man", "woman", "king", "queen"}
    plain = word_map_chart(POINTS).to_dict()
    assert "layer" in plain and len(plain["layer"]) == 1



def test_a_map_and_its_analogy_built_apart_compose_to_the_whole_chart():
    """The app keeps the map's spec while the analogy changes and adds ``analogy_layers`` on top of it."""
    import json

    quad = {"a": "man", "b": "woman", "c": "king", "d": "queen"}
    whole = word_map_chart(POINTS, labels=["the"], analogy=quad, title="map").to_dict()
    parts = with_layers(word_map_chart(POINTS, labels=["the"], title="map").to_dict(),
                        analogy_layers(POINTS, quad).to_dict())
    assert json.dumps(parts, sort_keys=True) == json.dumps(whole, sort_keys=True)
    assert len(parts["layer"]) == 6  # points, labels; arrows, heads, the four words, their names

def test_topk_bars_keep_rank_order_and_mark_the_expected_word():
    table = pd.DataFrame({"rank": [1, 2, 3], "word": ["queen", "prince", "widow"], "score": [0.7, 0.65, 0.6]})
    spec = topk_chart(table, "score", highlight=["prince"]).to_dict()
    assert spec["encoding"]["y"]["sort"] == ["queen", "prince", "widow"]
    rows = next(iter(spec["datasets"].values()))
    assert [r["marked"] for r in rows] == [False, True, False]


def test_sections_chart_has_accuracy_and_coverage_per_section():
    sections = pd.DataFrame({"section": ["family", "gram1-adjective-to-adverb"], "questions": [506, 992],
                             "covered": [200, 10], "correct": [20, 0], "accuracy": [0.1, 0.0],
                             "coverage": [200 / 506, 10 / 992]})
    rows = next(iter(sections_chart(sections).to_dict()["datasets"].values()))
    got = {(r["section"], r["measure"]): r["value"] for r in rows}
    assert got[("family", "accuracy")] == 0.1 and got[("family", "coverage")] == pytest.approx(200 / 506)
    assert {r["kind"] for r in rows} == {"semantic", "syntactic"}


def test_bias_chart_colours_by_side():
    rows = next(iter(bias_chart(pd.DataFrame({"word": ["duke", "nurse"], "projection": [0.2, -0.3]}))
                     .to_dict()["datasets"].values()))
    assert [r["side"] for r in rows] == ["he", "she"]
