"""Altair charts of what an edit of the state changed: paired bars (edited units against the control, the
next-token distribution before and after a patch). Pure functions of DataFrames (``seqviz.views.interventions``).
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts import props, require_columns, tips
from seqviz.charts.trajectory import display_token

SERIES_COLOURS = ("#c0392b", "#7f8c8d", "#2980b9")  # the edited units (or "after"), the control, a third run


def paired_bars(frame: pd.DataFrame, value_title: str = "Δ surprisal (nats)", label_title: str = "token",
                title: str = "", tokens: bool = True) -> alt.Chart:
    """Horizontal bars, one group per ``label`` (in the frame's order), one bar per ``series`` (in its order
    of appearance): columns label, series, value. ``tokens``: the labels are tokens (spaces drawn as ␣), not
    names."""
    require_columns(frame, {"label", "series", "value"}, "paired_bars")
    data = frame.assign(shown=frame["label"].map(display_token) if tokens else frame["label"])
    series = list(dict.fromkeys(data["series"]))
    labels = list(dict.fromkeys(data["shown"]))
    colour = alt.Color("series:N", sort=series, title=None, legend=alt.Legend(orient="top"),
                       scale=alt.Scale(domain=series, range=list(SERIES_COLOURS[:len(series)])))
    bars = alt.Chart(data).mark_bar().encode(
        y=alt.Y("shown:N", sort=labels, title=label_title, axis=alt.Axis(labelFontSize=13, labelLimit=140)),
        yOffset=alt.YOffset("series:N", sort=series), x=alt.X("value:Q", title=value_title), color=colour,
        tooltip=tips(alt.Tooltip("shown:N", title=label_title), alt.Tooltip("series:N", title="run"),
                     alt.Tooltip("value:Q", title=value_title, format=".4f")))
    zero = alt.Chart(pd.DataFrame({"value": [0.0]})).mark_rule(color="#333").encode(x="value:Q")
    return props(alt.layer(bars, zero), title=title, width="container",
                 height=alt.Step(max(6, 24 // len(series))))


def long_pairs(frame: pd.DataFrame, label: str, columns: dict[str, str]) -> pd.DataFrame:
    """A wide frame (one row per ``label``) as paired_bars' long one: each of ``columns`` (column -> the
    series' name shown) becomes a series."""
    parts = [pd.DataFrame({"label": frame[label].to_numpy(), "series": name, "value": frame[col].to_numpy()})
             for col, name in columns.items()]
    return pd.concat(parts, ignore_index=True)
