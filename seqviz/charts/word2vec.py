"""Altair charts for word vectors: the word map with analogy arrows, top-k bars, evaluation, bias axis.

Every function takes plain DataFrames (from ``seqviz.word2vec`` / ``seqviz.introspect.wordmap``)
and returns a chart; nothing here computes a similarity.
"""

from __future__ import annotations

import math

import altair as alt
import pandas as pd

from seqviz.charts import props, tips
from seqviz.text import N_, _

ROLE_COLOURS = {"a": "#1f77b4", "b": "#1f77b4", "c": "#d62728", "d": "#d62728", "label": "#333333"}
PAD = 0.05  # fraction of the data range added around the map
HEAD_AT = 0.8  # where along an arrow its head is drawn


def _domain(values: pd.Series) -> list[float]:
    low, high = float(values.min()), float(values.max())
    span = (high - low) or 1.0
    return [low - PAD * span, high + PAD * span]


def arrow_frame(points: pd.DataFrame, pairs, x_domain, y_domain, width: int, height: int) -> pd.DataFrame:
    """One row per arrow (x, y) -> (x2, y2), with the on-screen angle of its head.

    Vega rotates a point's shape clockwise from "up" by ``angle`` degrees; on screen the
    axes have different scales, so the angle is computed in pixels, not data units.
    """
    where = points.set_index("word")
    rows = []
    for start, end in pairs:
        if start not in where.index or end not in where.index:
            continue
        x, y, x2, y2 = (float(where.loc[start, "x"]), float(where.loc[start, "y"]),
                        float(where.loc[end, "x"]), float(where.loc[end, "y"]))
        dx = (x2 - x) / (x_domain[1] - x_domain[0]) * width
        dy = (y2 - y) / (y_domain[1] - y_domain[0]) * height
        # the head sits HEAD_AT of the way along, so the end word's marker does not hide it
        rows.append({"from": start, "to": end, "x": x, "y": y, "x2": x2, "y2": y2,
                     "hx": x + HEAD_AT * (x2 - x), "hy": y + HEAD_AT * (y2 - y),
                     "angle": math.degrees(math.atan2(dx, dy)) % 360, "arrow": f"{start} → {end}"})
    return pd.DataFrame(rows, columns=["from", "to", "x", "y", "x2", "y2", "hx", "hy", "angle", "arrow"])


def word_map_chart(points: pd.DataFrame, labels=(), analogy: dict | None = None, title: str = "",
                   width: int = 640, height: int = 520) -> alt.Chart:
    """Scatter of ``points`` (word, x, y[, rank, count]); hover shows the word.

    ``labels``: words written on the map. ``analogy``: {"a": man, "b": woman, "c": king,
    "d": queen}; those words are highlighted and the offsets a→b and c→d drawn as arrows
    (parallel arrows = the analogy holds in the map; t-SNE bends them): ``analogy_layers``, which
    an app can build on their own and add to a map built without them (``with_layers``).
    """
    x, y, hover, _domains = _map_channels(points)
    base = alt.Chart(points).mark_circle(size=18, opacity=0.45, color="#7f7f7f").encode(
        x=x, y=y, tooltip=hover)
    layers = [base]
    bold = set((analogy or {}).values())  # written in bold by the analogy's layers: each word once
    chosen = points[points["word"].isin([w for w in labels if w not in bold])]
    if len(chosen):
        layers.append(alt.Chart(chosen).mark_text(align="left", dx=4, dy=-4, fontSize=11, color="#333333")
                      .encode(x=x, y=y, text=alt.Text("word:N"), tooltip=hover))
    if analogy:
        layers += analogy_layers(points, analogy, width, height).layer
    return props(alt.layer(*layers), width=width, height=height, title=title)


def _map_channels(points: pd.DataFrame):
    """The map's x and y channels (fixed domains), its hover fields, and the domains (x, y)."""
    xd, yd = _domain(points["x"]), _domain(points["y"])
    return (alt.X("x:Q", axis=None, scale=alt.Scale(domain=xd)), alt.Y("y:Q", axis=None, scale=alt.Scale(domain=yd)),
            tips(*[c for c in ("word", "rank", "count") if c in points.columns]), (xd, yd))


def analogy_layers(points: pd.DataFrame, analogy: dict, width: int = 640, height: int = 520) -> alt.LayerChart:
    """The word map's analogy overlay alone: the offsets a→b and c→d as arrows, the four words marked."""
    x, y, hover, (xd, yd) = _map_channels(points)
    layers = []
    roles = {w: r for r, w in analogy.items() if w}
    hit = points[points["word"].isin(list(roles))].assign(role=lambda f: f["word"].map(roles))
    arrows = arrow_frame(points, [(analogy.get("a"), analogy.get("b")), (analogy.get("c"), analogy.get("d"))],
                         xd, yd, width, height)
    colour = alt.Color("arrow:N", title="offset", sort=list(arrows["arrow"]),
                       scale=alt.Scale(domain=list(arrows["arrow"]), range=["#1f77b4", "#d62728"]))
    if len(arrows):
        layers.append(alt.Chart(arrows).mark_rule(strokeWidth=2.5).encode(
            x=x, y=y, x2=alt.X2("x2:Q"), y2=alt.Y2("y2:Q"), color=colour, tooltip=tips("arrow")))
        layers.append(alt.Chart(arrows).mark_point(shape="triangle-up", size=160, filled=True, opacity=1)
                      .encode(x=alt.X("hx:Q", scale=alt.Scale(domain=xd), axis=None),
                              y=alt.Y("hy:Q", scale=alt.Scale(domain=yd), axis=None),
                              angle=alt.Angle("angle:Q", scale=None), color=colour, tooltip=tips("arrow")))
    if len(hit):
        layers.append(alt.Chart(hit).mark_circle(size=60, opacity=1, color="#000000").encode(
            x=x, y=y, tooltip=hover + tips("role")))
        layers.append(alt.Chart(hit).mark_text(align="left", dx=6, dy=-6, fontSize=14, fontWeight="bold")
                      .encode(x=x, y=y, text=alt.Text("word:N")))
    return alt.layer(*layers)


def with_layers(spec: dict, overlay: dict) -> dict:
    """A layered Vega-Lite ``spec`` with ``overlay``'s layers drawn on top (both as dicts, e.g. cached specs)."""
    return {**spec, "layer": spec["layer"] + overlay.get("layer", []),
            "datasets": {**spec.get("datasets", {}), **overlay.get("datasets", {})}}


def topk_chart(table: pd.DataFrame, value: str = "score", highlight=(), title: str = "",
               height_per_row: int = 20) -> alt.Chart:
    """Horizontal bars of ``table[value]`` per word, best on top; ``highlight`` words in red."""
    data = table.assign(marked=table["word"].isin(list(highlight)))
    hover = tips(*[c for c in ("rank", "word", value, "rank_without_exclusion", "count") if c in data.columns])
    return props(alt.Chart(data).mark_bar().encode(
        x=alt.X(f"{value}:Q", title=value),
        y=alt.Y("word:N", sort=list(data["word"]), title=None),
        color=alt.Color("marked:N", scale=alt.Scale(domain=[False, True], range=["#4c78a8", "#d62728"]),
                        legend=None),
        tooltip=hover,
    ), title=title, height=alt.Step(height_per_row))  # a fixed step: Streamlit squeezed a fixed height


# The Google analogy set's sections (Mikolov et al. 2013a), by the names its file gives them: msgids, so a
# researcher reads the names they know in English and their meaning in Chinese.
SECTIONS = {k: k for k in (
    N_("capital-common-countries"), N_("capital-world"), N_("currency"), N_("city-in-state"), N_("family"),
    N_("gram1-adjective-to-adverb"), N_("gram2-opposite"), N_("gram3-comparative"), N_("gram4-superlative"),
    N_("gram5-present-participle"), N_("gram6-nationality-adjective"), N_("gram7-past-tense"), N_("gram8-plural"),
    N_("gram9-plural-verbs"), N_("semantic"), N_("syntactic"), N_("total"))}
MEASURES = (N_("accuracy"), N_("coverage"))


def sections_chart(sections: pd.DataFrame, title: str = "Google analogies: accuracy on covered questions") -> alt.Chart:
    """Accuracy per section (bars) beside its coverage, sections and measures named in the installed language and
    never cut (labelLimit 0), every section labelled."""
    data = sections.copy()
    data["kind"] = data["section"].map(lambda s: _("syntactic") if s.startswith("gram") else _("semantic"))
    data["section"] = data["section"].map(lambda s: _(SECTIONS.get(s, s)))
    accuracy, coverage = (_(m) for m in MEASURES)
    long = pd.concat([data.assign(measure=accuracy, value=data["accuracy"]),
                      data.assign(measure=coverage, value=data["coverage"])], ignore_index=True)
    return props(alt.Chart(long).mark_bar().encode(
        y=alt.Y("section:N", sort=list(data["section"]), title=None, axis=alt.Axis(labelLimit=0, labelOverlap=False)),
        x=alt.X("value:Q", title="fraction", scale=alt.Scale(domain=[0, 1])),
        yOffset=alt.YOffset("measure:N", sort=[accuracy, coverage]),
        color=alt.Color("measure:N", title=_("measure"), sort=[accuracy, coverage],
                        scale=alt.Scale(domain=[accuracy, coverage], range=["#4c78a8", "#bbbbbb"])),
        tooltip=tips("section", "kind", "questions", "covered", "correct", alt.Tooltip("accuracy:Q", format=".3f"),
                     alt.Tooltip("coverage:Q", format=".3f")),
    ), title=title, height=alt.Step(16))  # 16 px a section: its two bars and its label (never dropped)


def bias_chart(table: pd.DataFrame, pole_a: str = "he", pole_b: str = "she") -> alt.Chart:
    """Diverging bars: projection of each word on unit(pole_a − pole_b)."""
    data = table.assign(side=table["projection"].map(lambda v: pole_a if v >= 0 else pole_b))
    return props(alt.Chart(data).mark_bar().encode(
        x=alt.X("projection:Q", title=f"cosine with {pole_a} − {pole_b}"),
        y=alt.Y("word:N", sort=list(data["word"]), title=None),
        color=alt.Color("side:N", scale=alt.Scale(domain=[pole_a, pole_b], range=["#4c78a8", "#e45756"])),
        tooltip=tips("word", alt.Tooltip("projection:Q", format=".3f")),
    ), height=alt.Step(20))
