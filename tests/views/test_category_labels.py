"""A categorical axis labels every category it draws (issue 51, item 1): every declared view (``test_facts.CALLS``)
is drawn by Vega (vl-convert's scene graph) as the app draws it at 390 px, and no label of a nominal or ordinal axis
is dropped, nor would be were Vega asked to drop the ones that collide (so none is drawn over another).

Streamlit's chart theme sets ``labelOverlap: true`` on every axis (``static/js/CustomTheme*.js`` of Streamlit 1.67),
so an axis that leaves it to the theme hides labels as soon as they crowd: the Language model page's surprisal bars
labelled one character in four ("T b ␣ ␣ t o e …"). An axis whose labels are sparse on purpose says so in its own
title and is listed in ``SPARSE`` with the reason.
"""

from __future__ import annotations

import copy

import pytest

from seqviz.views import registry
from seqviz.views.spec import printable, to_spec
from tests.views.test_facts import CALLS, load  # noqa: F401 - load: the shared fixture

# Streamlit 1.67's axis theme (CustomTheme: labelFontSize twoSm = 12 px, labelSeparation twoXS = 4 px ...).
STREAMLIT_AXIS = {"labelFontSize": 12, "labelLimit": 100, "labelFlush": True, "labelFlushOffset": 1,
                  "labelBound": False, "labelPadding": 16, "labelSeparation": 4, "labelOverlap": True}
COLUMN = 358  # px: a chart's column at a 390 px window (tests/browser/test_fit.py)
MARK = 7  # the z-index given to discrete axes, to find their labels in the scene graph

# view -> why its categorical axes label chosen categories only (their own ``values``; each says so in its title).
SPARSE = {
    "gradients.gradient_heatmap": "a T x T grid of up to 1,000 steps: every 10th position labelled, as its titles say",
    "trajectories.padded_batch": "up to 120 positions, their tokens written in the cells: about 12 positions labelled "
                                 "once there are more, as its title says",
}


def test_the_sparse_table_names_declared_views():
    assert set(SPARSE) <= set(CALLS)


def with_theme(spec: dict, force: bool) -> dict:
    """``spec`` under Streamlit's axis theme (the spec's own config outranks it, as in the app), discrete axes marked;
    ``force``: every axis asked to drop the labels that collide, and only those (its own ``labelOverlap`` removed,
    no gap asked between labels)."""
    spec = copy.deepcopy({k: v for k, v in spec.items() if k != "datasets"}) | {"datasets": spec.get("datasets", {})}
    if force:
        _drop_overlap(spec)
    config = spec.get("config") or {}
    axis = {**STREAMLIT_AXIS, **({"labelSeparation": 0} if force else {}), **config.get("axis", {})}
    spec["config"] = {**config, "axis": axis, "axisDiscrete": {**config.get("axisDiscrete", {}), "zindex": MARK}}
    return stretched(printable(spec, COLUMN))


def stretched(spec: dict) -> dict:
    """``spec`` as Streamlit draws it across its column (``width="stretch"``, ArrowVegaLiteChart: the width, and each
    plain row's of a vconcat, set to the column's), unless its width is a step per category: ``appkit.draw.draw_view``
    draws such a chart at its own width, scrolling in a box of its own."""
    if isinstance(spec.get("width"), dict) and "step" in spec["width"]:
        return spec
    spec["width"] = COLUMN
    for row in spec.get("vconcat", []):
        if isinstance(row, dict) and not {"hconcat", "vconcat", "concat", "facet", "repeat"} & set(row):
            row["width"] = COLUMN
    return spec


def _drop_overlap(node) -> None:
    if isinstance(node, dict):
        node.pop("labelOverlap", None)
        for k, v in node.items():
            if k not in ("datasets", "data"):
                _drop_overlap(v)
    elif isinstance(node, list):
        for v in node:
            _drop_overlap(v)


def discrete_labels(spec: dict) -> list[list[dict]]:
    """The label items (text, opacity, angle) of each discrete axis Vega draws of ``spec``."""
    import vl_convert as vlc

    def walk(node, marked=False):
        if isinstance(node, dict):
            if node.get("role") == "axis":
                marked = node.get("zindex") == MARK
            if node.get("role") == "axis-label" and marked:
                yield node["items"]
            for v in node.values():
                yield from walk(v, marked)
        elif isinstance(node, list):
            for v in node:
                yield from walk(v, marked)

    return list(walk(vlc.vegalite_to_scenegraph(spec, vl_version="v6_4")))


def dropped(spec: dict, force: bool) -> list[str]:
    """What Vega hides or would hide of each discrete axis: "n of m labels (first hidden: 'x')"; with ``force``,
    only of axes with level or upright labels (a slanted label's box overlaps its neighbour's while its text
    does not)."""
    out = []
    for items in discrete_labels(with_theme(spec, force)):
        hidden = [i for i in items if not i.get("opacity", 1)]
        if hidden and not (force and any(i.get("angle", 0) % 90 for i in items)):
            out.append(f"{len(hidden)} of {len(items)} labels hidden (first {hidden[0].get('text')!r})")
    return out


@pytest.mark.parametrize("name", sorted(CALLS))
def test_every_categorical_axis_labels_every_category(name, load, tmp_path):  # noqa: F811
    done = CALLS[name](load, tmp_path)
    found = []
    for view in done if isinstance(done, tuple) else (done,):
        if view is None or view.chart is None:
            continue
        spec = to_spec(view.chart)
        found += [f"as drawn: {d}" for d in dropped(spec, force=False)]
        found += [f"drawn over each other: {d}" for d in dropped(spec, force=True)]
        sparse = sparse_axes(spec)
        assert not sparse or name in SPARSE, f"{name}: {sparse} label some categories only; say why in SPARSE"
        assert all("every" in title for title in sparse), f"{name}: {sparse} do not say which categories they label"
    assert not found, f"{name} at {COLUMN} px: " + "; ".join(found)


def sparse_axes(node) -> list[str]:
    """The titles of the discrete x/y axes of a spec that label chosen categories only (their own ``values``)."""
    out = []
    if isinstance(node, dict):
        for channel in ("x", "y"):
            enc = (node.get("encoding") or {}).get(channel)
            if isinstance(enc, dict) and enc.get("type") in ("nominal", "ordinal") and \
                    "values" in (enc.get("axis") or {}):
                out.append(str(enc.get("title", enc.get("field"))))
        out += [t for k, v in node.items() if k not in ("datasets", "data", "encoding") for t in sparse_axes(v)]
    elif isinstance(node, list):
        out += [t for v in node for t in sparse_axes(v)]
    return out


def test_the_walk_sees_a_crowded_axis():
    """The check itself: 40 ordinal bars across 358 px under Streamlit's theme lose labels; with labelOverlap off and
    a step of 20 px each they keep every one."""
    import altair as alt
    import pandas as pd

    frame = pd.DataFrame({"i": range(40), "v": range(40)})
    crowded = to_spec(alt.Chart(frame).mark_bar().encode(x="i:O", y="v:Q").properties(width="container"))
    assert dropped(crowded, force=False) and dropped(crowded, force=True)
    labelled = to_spec(alt.Chart(frame).mark_bar().encode(x=alt.X("i:O", axis=alt.Axis(labelOverlap=False, labelAngle=0)),
                                                          y="v:Q").properties(width=alt.Step(20)))
    assert not dropped(labelled, force=False) and not dropped(labelled, force=True)
    assert registry.named("language.surprisal")  # the walk's views are the registry's (test_facts.CALLS)


def test_a_word_model_s_surprisal_labels_every_word_upright():
    """A word-level text of 60 tokens: a step of 14 px each, every word labelled, standing upright (a word is wider
    than its step)."""
    import pandas as pd

    from seqviz.charts.language import surprisal_bars

    words = ("to be or not that is the question whether tis nobler in mind suffer slings arrows outrageous "
             "fortune take arms against sea troubles").split() * 3
    table = pd.DataFrame({"position": range(60), "token": words[:60], "loss": [float("nan")] + [1.0] * 59,
                          "bits": 1.4, "prob": 0.4, "expected": "the", "expected_prob": 0.5})
    spec = to_spec(surprisal_bars(table, 9.0))
    assert spec["width"] == {"step": 14}
    labels = discrete_labels(with_theme(spec, force=False))
    assert [i["text"] for i in labels[0]] == words[:60] and all(i["opacity"] == 1 for i in labels[0])
    assert {i["angle"] for i in labels[0]} == {270} and not dropped(spec, force=True)
