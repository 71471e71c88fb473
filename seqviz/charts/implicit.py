"""Altair charts for memory as attention: one step's shares of the memory above what removing each write does.

Pure functions of DataFrames (from ``seqviz.views.implicit``); the maps themselves are drawn by
``seqviz.charts.attention.alignment_heatmap``, in the shape of Bahdanau's alignment.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts import props, tips
from seqviz.charts import require_columns as _check
from seqviz.charts.attention import source_axis

SHARE_COLUMNS = {"j", "source", "source_label", "weight", "delta_loss", "own", "units", "named"}
OWN, EARLIER, BEFORE = "#d62728", "#4c78a8", "#9d9d9d"  # the step's own token, an earlier one, the "…" column
HURTS, HELPS = "#c2410c", "#2b8a3e"  # a knockout that raises the loss, one that lowers it
BAR_PX = 16  # a bar's width with its gap: 33 bars fit a laptop's page, a lesson's 17 a phone


def shares_and_knockouts(frame: pd.DataFrame, share_title: str, delta_title: str, title: str = "") -> alt.VConcatChart:
    """Above: each earlier token's share of the memory at one step (bars; the step's own token in red, tokens
    before the window summed in one grey "…" bar; the values of the ``named`` bars on top). Below, on the same columns: the change of the loss
    there when that token's write is removed (an exact knockout; none for "…" and the step's own token)."""
    _check(frame, SHARE_COLUMNS, "shares_and_knockouts")
    order = frame.sort_values("j")["source_label"].tolist()
    kind = frame.assign(kind=["own" if o else "before" if lab.startswith("<") else "earlier"
                              for o, lab in zip(frame["own"], frame["source_label"])])
    x = alt.X("source_label:N", sort=order, axis=source_axis(order, title="earlier token"))
    bare = alt.X("source_label:N", sort=order, axis=alt.Axis(labels=False, ticks=False, title=None))
    tooltip = tips(alt.Tooltip("source:N", title="token"), alt.Tooltip("weight:Q", title="share", format=".3f"),
                   alt.Tooltip("delta_loss:Q", title="Δ loss (nats)", format="+.4f"),
                   alt.Tooltip("units:N", title="units carrying it"))
    colour = alt.Color("kind:N", scale=alt.Scale(domain=["own", "earlier", "before"], range=[OWN, EARLIER, BEFORE]),
                       legend=None)
    share = alt.Chart(kind).encode(x=bare, y=alt.Y("weight:Q", title=share_title))
    named = alt.Chart(kind[kind["named"]]).encode(x=bare, y=alt.Y("weight:Q"))  # the bars a caption names: the
    top = share.mark_bar().encode(color=colour, tooltip=tooltip) + named.mark_text(dy=-6, fontSize=10).encode(
        text=alt.Text("weight:Q", format=".2f"))  # only their values, which then never overlap on a phone
    knocked = kind.dropna(subset=["delta_loss"]).assign(sign=lambda f: ["up" if d > 0 else "down"
                                                                        for d in f["delta_loss"]])
    effect = alt.Chart(knocked).encode(x=x, y=alt.Y("delta_loss:Q", title=delta_title))
    bottom = effect.mark_bar().encode(
        color=alt.Color("sign:N", scale=alt.Scale(domain=["up", "down"], range=[HURTS, HELPS]), legend=None),
        tooltip=tooltip)
    rule = alt.Chart(pd.DataFrame({"y": [0.0]})).mark_rule(color="#666").encode(y=alt.Y("y:Q"))
    width = BAR_PX * len(order)  # a concatenation cannot take the container's width: both plots as wide, per bar
    chart = alt.vconcat(props(top, height=170, width=width), props(bottom + rule, height=150, width=width),
                        spacing=4).resolve_scale(
        x="shared", color="independent")
    return props(chart, title=title) if title else chart
