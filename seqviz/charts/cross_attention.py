"""Altair chart of a transformer layer's cross-attention: one small heatmap per head, side by side.

A pure function of the table ``seqviz.hf_seq2seq.heads_frame`` builds; it returns the chart.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts import props, tips

HEAD_COLUMNS = {"head", "t", "target_label", "j", "source_label", "weight"}


def head_grid(frame: pd.DataFrame, columns: int = 4, cell: int = 14) -> alt.Chart:
    """Target (rows) x source (columns) per head, ``columns`` heads to a row, one shared colour scale."""
    missing = sorted(HEAD_COLUMNS - set(frame.columns))
    if missing:
        raise ValueError(f"head_grid needs columns {missing}; got {list(frame.columns)}")
    if frame.empty:
        raise ValueError("head_grid: nothing to draw (the table is empty)")
    src = frame.drop_duplicates("j").sort_values("j")["source_label"].tolist()
    tgt = frame.drop_duplicates("t").sort_values("t")["target_label"].tolist()
    # Every word labelled (Streamlit's theme drops crowded labels), 10 px: a 14 px cell holds its row's label
    # (Vega's box of a 10 px label is 14 px tall).
    axis = alt.Axis(labelExpr="split(datum.value, ':')[1]", labelOverlap=False, labelFontSize=10)
    return props(alt.Chart(frame).mark_rect().encode(
        x=alt.X("source_label:N", sort=src, title="source", axis=alt.Axis(
            labelExpr=axis.labelExpr, labelAngle=-60, labelOverlap=False, labelFontSize=10)),
        y=alt.Y("target_label:N", sort=tgt, title="target", axis=axis),
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, 1]), title="weight"),
        tooltip=tips("head:O", alt.Tooltip("target_label:N", title="target"),
                     alt.Tooltip("source_label:N", title="source"), alt.Tooltip("weight:Q", format=".4f")),
    ), width=max(80, cell * len(src)), height=max(80, cell * len(tgt))).facet(
        facet=alt.Facet("head:O", title="head"), columns=columns)
