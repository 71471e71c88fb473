"""Altair charts of gate activations: token x unit heatmaps, per-token means, saturation, memory.

Pure functions of arrays and DataFrames (``seqviz.introspect.gates`` / ``units``);
they return charts and never display them.
"""

from __future__ import annotations

import json

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts.trajectory import display_token

SIGMOID_DOMAIN, TANH_DOMAIN = (0.0, 1.0), (-1.0, 1.0)
SATURATION_ORDER = ("input", "forget", "cell", "output", "reset", "update", "new", "h")  # the cell's own order


def value_domain(name: str, values) -> tuple[float, float]:
    """Colour domain: the squashing function's range, or symmetric around 0 for c/preact."""
    if name in ("input", "forget", "output", "reset", "update"):
        return SIGMOID_DOMAIN
    if name in ("cell", "new", "h"):
        return TANH_DOMAIN
    m = float(np.nanmax(np.abs(values))) if np.size(values) else 1.0
    return (-m or -1.0, m or 1.0)


def _token_axis(tokens: list[str], title: str = "token") -> alt.Axis:
    """An ordinal step axis labelled with the token at each step (a literal lookup array)."""
    labels = json.dumps([display_token(t) for t in tokens])
    return alt.Axis(title=title, labelExpr=f"{labels}[datum.value]", labelAngle=0, labelFontSize=11,
                    labelOverlap=False, labelFont="monospace")  # every token labelled, none dropped


def heatmap_frame(values, tokens: list[str], units, steps=None) -> pd.DataFrame:
    """Long frame for the heatmap: one row per (step, unit) with the exact value."""
    v = np.asarray(values, dtype=np.float64)
    steps = np.arange(len(v)) if steps is None else np.asarray(steps)
    units = np.asarray(units)
    grid = v[np.ix_(steps, units)]
    return pd.DataFrame({"step": np.repeat(steps, len(units)), "unit": np.tile(units, len(steps)),
                         "token": np.repeat([tokens[s] for s in steps], len(units)),
                         "value": grid.ravel()})


def gate_heatmap(frame: pd.DataFrame, name: str, tokens: list[str], unit_order,
                 domain=None, title: str = "", pick: str | None = None) -> alt.Chart:
    """Token x unit heatmap: x = tokens (in order), y = units in ``unit_order``; hover = exact value.

    ``pick``: name of a click selection on the step, so an app can react to a clicked token.
    """
    domain = domain or value_domain(name, frame["value"])
    scheme = "viridis" if domain[0] >= 0 else "redblue"
    data = frame.assign(shown=frame["token"].map(display_token))
    chart = alt.Chart(data).mark_rect().encode(
        x=alt.X("step:O", axis=_token_axis(tokens)),
        y=alt.Y("unit:O", sort=[int(u) for u in unit_order], title="unit",
                axis=alt.Axis(labelOverlap=False, labelFontSize=8)),
        color=alt.Color("value:Q", title=name, scale=alt.Scale(
            domain=list(domain), scheme=scheme, reverse=scheme == "redblue", clamp=True)),
        tooltip=[alt.Tooltip("step:Q"), alt.Tooltip("shown:N", title="token"), alt.Tooltip("unit:Q"),
                 alt.Tooltip("value:Q", format=".5f")],
    ).properties(width=alt.Step(12), height=alt.Step(9), title=title or f"{name}: token × unit")
    if pick:
        chart = chart.add_params(alt.selection_point(name=pick, fields=["step"], on="click"))
    return chart


def gate_means_chart(frame: pd.DataFrame, tokens: list[str]) -> alt.Chart:
    """Per-token mean over units of each gate, drawn under the text (tokens on the x axis)."""
    data = frame.assign(shown=frame["token"].map(display_token))
    return alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=18)).encode(
        x=alt.X("step:O", axis=_token_axis(tokens, "text")),
        y=alt.Y("mean:Q", title="mean over units"),
        color=alt.Color("signal:N", title="gate"),
        tooltip=["step:Q", alt.Tooltip("shown:N", title="token"), "signal:N",
                 alt.Tooltip("mean:Q", format=".4f")],
    ).properties(width=alt.Step(12), height=220, title="Mean gate value at each token")


def unit_text_chart(tokens: list[str], values, name: str = "h", unit: int | None = None,
                    line_width: int = 80, domain=None) -> alt.Chart:
    """The text laid out line by line, each token's cell coloured by one unit's value.

    Lines break at newlines (shown as ⏎) and wrap at ``line_width`` tokens.
    """
    v = np.asarray(values, dtype=np.float64)
    cols, rows, col, row = [], [], 0, 0
    for tok in tokens:
        cols.append(col)
        rows.append(row)
        col += 1
        if "\n" in tok or col >= line_width:
            col, row = 0, row + 1
    data = pd.DataFrame({"col": cols, "row": rows, "step": np.arange(len(tokens)),
                         "shown": [display_token(t) for t in tokens], "value": v})
    domain = domain or value_domain(name, v)
    scheme = "viridis" if domain[0] >= 0 else "redblue"
    # white ink where the cell is dark: the low end of viridis, both ends of red-blue
    where = np.clip((v - domain[0]) / ((domain[1] - domain[0]) or 1.0), 0, 1)
    data["ink"] = np.where(where < 0.45, "white", "black") if scheme == "viridis" else \
        np.where(np.abs(where - 0.5) > 0.3, "white", "black")
    base = alt.Chart(data).encode(x=alt.X("col:O", axis=None), y=alt.Y("row:O", axis=None))
    cells = base.mark_rect().encode(
        color=alt.Color("value:Q", title=f"{name} unit {unit}" if unit is not None else name,
                        scale=alt.Scale(domain=list(domain), scheme=scheme,
                                        reverse=scheme == "redblue", clamp=True),
                        legend=alt.Legend(orient="top", direction="horizontal")),
        tooltip=["step:Q", alt.Tooltip("shown:N", title="token"), alt.Tooltip("value:Q", format=".4f")])
    text = base.mark_text(fontSize=12, font="monospace").encode(
        text="shown:N", color=alt.Color("ink:N", scale=None, legend=None))
    return (alt.layer(cells, text).resolve_scale(color="independent")
            .properties(width=alt.Step(11), height=alt.Step(18)))


def saturation_chart(frame: pd.DataFrame) -> alt.FacetChart:
    """Karpathy et al. (2015), Fig. 4: per unit, fraction left- vs right-saturated, per gate and layer."""
    points = alt.Chart().mark_circle(size=22, opacity=0.6).encode(
        x=alt.X("left:Q", title="fraction left-saturated", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("right:Q", title="fraction right-saturated", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("signal:N", title="gate", legend=None),
        tooltip=["layer:N", "signal:N", "unit:Q", alt.Tooltip("left:Q", format=".3f"),
                 alt.Tooltip("right:Q", format=".3f"), "tokens:Q"])
    # every unit lies below left + right = 1; units on the line are always saturated
    diagonal = alt.Chart().mark_rule(color="#999", strokeDash=[4, 3]).encode(
        x=alt.datum(0), y=alt.datum(1), x2=alt.datum(1), y2=alt.datum(0))
    order = [s for s in SATURATION_ORDER if s in set(frame["signal"])]
    return alt.layer(points, diagonal, data=frame).properties(width=125, height=125).facet(
        row=alt.Row("layer:N", title="layer"), column=alt.Column("signal:N", title=None, sort=order))


def forget_product_chart(frame: pd.DataFrame, tokens: list[str], unit: int, gate: str = "forget") -> alt.VConcatChart:
    """One unit's retention gate per token, and its running product on a log axis."""
    data = frame.assign(shown=frame["token"].map(display_token))
    tips = ["step:Q", alt.Tooltip("shown:N", title="token"), alt.Tooltip("gate:Q", format=".4f"),
            alt.Tooltip("product:Q", format=".3e")]
    x = alt.X("step:O", axis=_token_axis(tokens, "text"))
    gate_line = alt.Chart(data).mark_line(point=True).encode(
        x=x, y=alt.Y("gate:Q", title=f"{gate} gate", scale=alt.Scale(domain=[0, 1])), tooltip=tips
    ).properties(width=alt.Step(12), height=120)
    prod = alt.Chart(data).mark_line(color="#d62728").encode(
        x=x, y=alt.Y("product:Q", title=f"∏ {gate} (log)", scale=alt.Scale(type="log")), tooltip=tips
    ).properties(width=alt.Step(12), height=200)
    return alt.vconcat(gate_line, prod).properties(title=f"Unit {unit}: memory kept since the start step")


def ranking_chart(table: pd.DataFrame) -> alt.Chart:
    """Units ranked by correlation with a text feature (``rank_units``): signed r as bars."""
    data = table.assign(label=table["feature"] + " · unit " + table["unit"].astype(str))
    return alt.Chart(data).mark_bar().encode(
        x=alt.X("r:Q", title="Pearson r", scale=alt.Scale(domain=[-1, 1])),
        y=alt.Y("label:N", sort=None, title=None, axis=alt.Axis(labelOverlap=False, labelLimit=260)),
        color=alt.Color("feature:N", legend=None),
        tooltip=["feature:N", "unit:Q", alt.Tooltip("r:Q", format=".4f")],
    ).properties(height=alt.Step(18), width=360, title="Units that track a feature of the text")
