"""Altair charts of gate activations: token x unit heatmaps, per-token means, saturation, memory.

Pure functions of arrays and DataFrames (``seqviz.introspect.gates`` / ``units``);
they return charts and never display them.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts import props, tips
from seqviz.charts.palette import WHAT_IF, colour, label_expr, log_axis, signal_scale
from seqviz.charts.trajectory import display_token

SIGMOID_DOMAIN, TANH_DOMAIN = (0.0, 1.0), (-1.0, 1.0)
# Container-wide charts fit their width and keep their height (Streamlit's default "fit" squeezes the plot
# to make room for the legend and axes inside the given height).
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")
TOKEN_PX = 14  # px per token: a 12 px monospace character is ~7 px wide; Vega's box of an upright 10 px word 14 px
PHONE_PLOT = 300  # px of plot a 390 px phone's column keeps beside a y axis
# Outlines of the tokens a view points at (the target, the word asked about): dark and distinct from the cells'
# viridis and red-blue fills (Okabe & Ito's vermillion, then black).
MARK_COLOURS = ("#D55E00", "#000000", "#CC79A7")
SATURATION_ORDER = ("input", "forget", "cell", "output", "reset", "update", "new", "h")  # the cell's own order


def value_domain(name: str, values) -> tuple[float, float]:
    """Colour domain: the squashing function's range, or symmetric around 0 for c/preact."""
    if name in ("input", "forget", "output", "reset", "update", "decay"):
        return SIGMOID_DOMAIN
    if name in ("cell", "new", "h"):
        return TANH_DOMAIN
    m = float(np.nanmax(np.abs(values))) if np.size(values) else 1.0
    return (-m or -1.0, m or 1.0)


def token_axis(tokens: list[str], title: str = "token") -> alt.Axis:
    """An ordinal step axis labelled with the token at each step (a literal lookup array), every token: a chart of
    more tokens than a phone's column holds gets a step of ``TOKEN_PX`` each (``token_width``) and scrolls.

    Issue 51: dropping the labels that crowd (Streamlit's theme does unless told not to) left one character in four
    ("T b ␣ ␣ t o e …"), which reads as gibberish. A token longer than a character stands upright.
    """
    shown = [display_token(t) for t in tokens]
    upright = any(len(s) > 1 for s in shown)
    return alt.Axis(title=title, labelExpr=f"{json.dumps(shown)}[datum.value]", labelAngle=-90 if upright else 0,
                    labelFontSize=10 if upright else 12, labelOverlap=False, labelFont="monospace", labelPadding=4,
                    labelLimit=120)


def token_width(n: int) -> dict:
    """The width (and autosize) of a chart of ``n`` tokens along x: its container's while a 390 px phone's column
    keeps ``TOKEN_PX`` a token (``PHONE_PLOT``), else ``TOKEN_PX`` a token (``appkit.draw.show`` then draws it at
    that width, scrolling in its own box)."""
    if n * TOKEN_PX <= PHONE_PLOT:
        return {"width": "container", "autosize": FIT_X}
    return {"width": alt.Step(TOKEN_PX), "autosize": alt.AutoSizeParams(type="pad", contains="padding")}


def heatmap_frame(values, tokens: list[str], units, steps=None) -> pd.DataFrame:
    """Long frame for the heatmap: one row per (step, unit) with the exact value."""
    v = np.asarray(values, dtype=np.float64)
    steps = np.arange(len(v)) if steps is None else np.asarray(steps)
    units = np.asarray(units)
    grid = v[np.ix_(steps, units)]
    return pd.DataFrame({"step": np.repeat(steps, len(units)), "unit": np.tile(units, len(steps)),
                         "token": np.repeat([tokens[s] for s in steps], len(units)),
                         "value": grid.ravel()})


@dataclass(frozen=True)
class UnitSwitch:
    """A heat map's unit order and count chosen in the browser, with no server round trip: Vega-Lite point
    selections bound to a radio (named ``names[0]``, field ``by``) and a slider (``names[1]``, field ``n``) under
    the chart. The frame holds each unit's rank in every order (``r_<order>``); the chart keeps the ``n`` first
    of the chosen one. ``orders``: order -> the label shown; ``order``/``units``: what it opens with."""

    orders: dict
    order: str
    units: int
    least: int
    most: int
    order_label: str = "Sort units by"
    units_label: str = "Units shown"
    names: tuple = ("unit_order", "unit_count")  # the selections' names, as an app reads them back

    def rank(self) -> str:
        """The row of a unit in the chosen order, as a Vega expression."""
        *first, last = list(self.orders)
        return "".join(f"{self.names[0]}.by == {json.dumps(o)} ? datum.r_{o} : " for o in first) + f"datum.r_{last}"

    def apply(self, chart: alt.Chart) -> alt.Chart:
        order = alt.selection_point(name=self.names[0], fields=["by"], value=self.order, bind=alt.binding_radio(
            options=list(self.orders), labels=[str(v) for v in self.orders.values()], name=self.order_label + " "))
        count = alt.selection_point(name=self.names[1], fields=["n"], value=int(self.units), bind=alt.binding_range(
            min=self.least, max=self.most, step=1, name=self.units_label + " "))
        return chart.add_params(order, count).transform_calculate(row=self.rank()).transform_filter(
            f"datum.row < {self.names[1]}.n")


def gate_heatmap(frame: pd.DataFrame, name: str, tokens: list[str], unit_order=None,
                 domain=None, title: str = "", pick: str | None = None, legend: str = "",
                 switch: UnitSwitch | None = None) -> alt.Chart:
    """Token x unit heatmap: x = tokens (in order), y = units in ``unit_order``; hover = exact value.

    A step per token (``token_width``), 16 px per unit row: every unit labelled.
    ``pick``: name of a click selection on the step, so an app can react to a clicked token. ``switch``:
    the order and the count of units are chosen in the browser instead (``UnitSwitch``; ``unit_order`` unused).
    """
    domain = domain or value_domain(name, frame["value"])
    scheme = "viridis" if domain[0] >= 0 else "redblue"
    if switch is None:
        # The rows' order as a field: a sort *list* becomes a chain of one comparison per unit that the
        # browser's expression interpreter evaluates for every cell (48 deep for 3,072 cells, measured).
        data = frame.drop(columns="token").assign(row=frame["unit"].map({int(u): i for i, u in enumerate(unit_order)}))
    else:  # one row per unit, a column per step (a tenth of the long form's size), unfolded in the browser
        steps = [str(s) for s in dict.fromkeys(frame["step"])]
        data = frame.pivot(index="unit", columns="step", values="value")
        data.columns = steps
        data = data.join(frame.groupby("unit")[[f"r_{o}" for o in switch.orders]].first()).reset_index()
    shown = json.dumps([display_token(t) for t in tokens])  # by step: the tooltip's text is made in the browser
    chart = props(alt.Chart(data).mark_rect().encode(
        x=alt.X("step:O", axis=token_axis(tokens)),
        y=alt.Y("unit:O", sort=alt.EncodingSortField("row", op="min"), title="unit",
                axis=alt.Axis(labelOverlap=False, labelFontSize=11)),  # 11 px in a 16 px row (Vega's box of its text)
        color=alt.Color("value:Q", title=legend or name, scale=alt.Scale(
            domain=list(domain), scheme=scheme, reverse=scheme == "redblue", clamp=True),
            legend=alt.Legend(orient="top", direction="horizontal", gradientLength=160)),
        # Two tooltip fields, one of them made once per row: the browser interprets each field's formatting
        # per cell, and four fields were half of this chart's drawing time (3,072 cells, measured).
        tooltip=[alt.Tooltip("value:Q", format=".5f"), alt.Tooltip("where:N", title="step «token» · unit")],
    ), height=alt.Step(16), title=title or f"{name}: token × unit", **token_width(len(tokens)))
    if switch is not None:  # the chosen units first, then their cells; thousands of cells: on a canvas
        chart = switch.apply(chart).transform_fold(steps, as_=["step", "value"]).transform_calculate(
            step="toNumber(datum.step)").properties(usermeta={"embedOptions": {"renderer": "canvas"}})
    chart = chart.transform_calculate(where=f"datum.step + ' «' + {shown}[datum.step] + '» · ' + datum.unit")
    if pick:
        chart = chart.add_params(alt.selection_point(name=pick, fields=["step"], on="click"))
    return chart


def gate_means_chart(frame: pd.DataFrame, tokens: list[str], labels: dict | None = None,
                     position: int | None = None, levels: pd.DataFrame | None = None) -> alt.Chart:
    """Per-token mean over units of each gate, drawn under the text (tokens on the x axis).

    Each gate in its own colour (``seqviz.charts.palette``); ``labels``: signal -> name shown in the legend.
    ``position``: the token a view asks about, marked by a rule; ``levels`` (signal, mean, label): a level a
    view compares with (a gate's average over the text), dashed in the gate's colour.
    """
    data = frame.assign(shown=frame["token"].map(display_token))
    signals = list(dict.fromkeys(frame["signal"]))
    legend = alt.Legend(orient="top", labelFontSize=13, symbolStrokeWidth=3, columns=2, labelLimit=170,
                        **({"labelExpr": label_expr(labels)} if labels else {}))
    color = alt.Color("signal:N", title=None, scale=signal_scale(signals), sort=signals, legend=legend)
    x = alt.X("step:O", axis=token_axis(tokens, "text"))
    lines = alt.Chart(data).mark_line(point=alt.OverlayMarkDef(size=22), strokeWidth=2.5).encode(
        x=x, y=alt.Y("mean:Q", title="mean over units", axis=alt.Axis(labelFontSize=12)), color=color,
        tooltip=tips("step:Q", alt.Tooltip("shown:N", title="token"), "signal:N", alt.Tooltip("mean:Q", format=".4f")))
    layers = [lines]
    if levels is not None and len(levels):
        layers.append(alt.Chart(levels).mark_rule(strokeDash=[6, 4], strokeWidth=2).encode(
            y="mean:Q", color=color, tooltip=tips(alt.Tooltip("label:N", title="level"),
                                                  alt.Tooltip("mean:Q", format=".4f"))))
    if position is not None:
        at = pd.DataFrame({"step": [int(position)], "shown": [display_token(tokens[int(position)])]})
        layers.append(alt.Chart(at).mark_rule(color="#000", strokeWidth=2).encode(
            x=alt.X("step:O"), tooltip=tips("step:Q", alt.Tooltip("shown:N", title="token"))))
    return props(alt.layer(*layers) if len(layers) > 1 else lines, height=220, title="Mean gate value at each token",
                 **token_width(len(tokens)))


def text_layout(tokens: list[str], line_width: int = 80) -> tuple[list[int], list[int]]:
    """(column, row) of each token of a text laid out line by line: lines break at newlines and before a word
    that would cross ``line_width`` tokens (a word: the tokens from one that starts with or follows whitespace to
    the next such), so no word is cut across lines; a word longer than a line is cut at the line's end."""
    starts = [i == 0 or tok[:1].isspace() or tokens[i - 1][-1:].isspace() for i, tok in enumerate(tokens)]
    cols, rows, col, row = [], [], 0, 0
    for i, tok in enumerate(tokens):
        if starts[i] and col and not tok.isspace():
            end = next((j for j in range(i + 1, len(tokens)) if starts[j]), len(tokens))
            if col + (end - i) > line_width and end - i <= line_width:
                col, row = 0, row + 1
        cols.append(col)
        rows.append(row)
        col += 1
        if "\n" in tok or col >= line_width:
            col, row = 0, row + 1
    return cols, rows


def unit_text_chart(tokens: list[str], values, name: str = "h", unit: int | None = None,
                    line_width: int = 80, domain=None, title: str | None = None,
                    marks: dict | None = None) -> alt.Chart:
    """The text laid out line by line, each token's cell coloured by one unit's value.

    Lines break at newlines (shown as ⏎) and wrap at ``line_width`` tokens. ``name``: the signal (a gate is
    coloured over its sigmoid's range 0-1, h over tanh's, others symmetrically around 0); ``title``: the
    legend's (None: “name unit k”). ``marks``: step -> what the step is (a label) for the tokens a view points at,
    each outlined (``MARK_COLOURS`` in order of their labels) and named in the tooltip's ``mark`` field.
    """
    v = np.asarray(values, dtype=np.float64)
    if len(v) == len(tokens) - 1:  # the first token is never predicted: shown, uncoloured (NaN), not dropped
        v = np.concatenate([[np.nan], v])
    cols, rows = text_layout(tokens, line_width)
    data = pd.DataFrame({"col": cols, "row": rows, "step": np.arange(len(tokens)),
                         "shown": [display_token(t) for t in tokens], "value": v})
    domain = domain or value_domain(name, v)
    scheme = "viridis" if domain[0] >= 0 else "redblue"
    # white ink where the cell is dark: the low end of viridis, both ends of red-blue
    where = np.clip((v - domain[0]) / ((domain[1] - domain[0]) or 1.0), 0, 1)
    data["ink"] = np.where(where < 0.45, "white", "black") if scheme == "viridis" else \
        np.where(np.abs(where - 0.5) > 0.3, "white", "black")
    if marks:
        data["mark"] = [marks.get(int(s), "") for s in data["step"]]
    base = alt.Chart(data).encode(x=alt.X("col:O", axis=None), y=alt.Y("row:O", axis=None))
    cells = base.mark_rect().encode(
        color=alt.Color("value:Q", title=title or (f"{name} unit {unit}" if unit is not None else name),
                        scale=alt.Scale(domain=list(domain), scheme=scheme,
                                        reverse=scheme == "redblue", clamp=True),
                        legend=alt.Legend(orient="top", direction="horizontal")),
        tooltip=tips("step:Q", alt.Tooltip("shown:N", title="token"), alt.Tooltip("value:Q", format=".4f")))
    text = base.mark_text(fontSize=12, font="monospace").encode(
        text=alt.Text("shown:N"), color=alt.Color("ink:N", scale=None, legend=None))
    layers = [cells, text]
    if marks:
        kinds = list(dict.fromkeys(v for v in marks.values() if v))
        layers.append(base.transform_filter("datum.mark != ''").mark_rect(filled=False, strokeWidth=3).encode(
            stroke=alt.Stroke("mark:N", title=None, scale=alt.Scale(domain=kinds, range=list(MARK_COLOURS[: len(kinds)])),
                              legend=alt.Legend(orient="bottom", direction="vertical", symbolType="square")),
            tooltip=tips(alt.Tooltip("mark:N", title="marked"), "step:Q", alt.Tooltip("shown:N", title="token"))))
    return props(alt.layer(*layers).resolve_scale(color="independent"), width=alt.Step(11), height=alt.Step(18))


def saturation_chart(frame: pd.DataFrame, labels: dict | None = None) -> alt.FacetChart:
    """Karpathy et al. (2015), Fig. 4: per unit, fraction left- vs right-saturated, per gate and layer.

    One row per gate (in the cell's order, each in its palette colour), one column per layer:
    two columns of 130 px fit a phone. ``labels``: signal -> name shown in the row headers.
    """
    order = [s for s in SATURATION_ORDER if s in set(frame["signal"])]
    points = alt.Chart().mark_circle(size=24, opacity=0.6).encode(
        x=alt.X("left:Q", title="fraction left-saturated", scale=alt.Scale(domain=[0, 1])),
        y=alt.Y("right:Q", title="fraction right-saturated", scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("signal:N", title="gate", legend=None, scale=signal_scale(order)),
        tooltip=tips("layer:N", "signal:N", "unit:Q", alt.Tooltip("left:Q", format=".3f"),
                     alt.Tooltip("right:Q", format=".3f"), "tokens:Q"))
    # every unit lies below left + right = 1; units on the line are always saturated
    diagonal = alt.Chart().mark_rule(color="#999", strokeDash=[4, 3]).encode(
        x=alt.datum(0), y=alt.datum(1), x2=alt.datum(1), y2=alt.datum(0))
    header = alt.Header(labelFontSize=13, labelFontWeight="bold", labelAngle=0, labelOrient="top", labelAnchor="start",
                        **({"labelExpr": label_expr(labels)} if labels else {}))
    return props(alt.layer(points, diagonal, data=frame), width=130, height=130).facet(
        column=alt.Column("layer:N", title="layer", header=alt.Header(labelFontSize=13)),
        row=alt.Row("signal:N", title=None, sort=order, header=header))


def _runs(frame: pd.DataFrame, gate: str, gates: list[str] | None = None):
    """Colour and dash per run: the first in the gate's palette colour, a second (the what-if) dashed black;
    or each run in its own signal's colour (``gates``: two models' long names, one per line below the plot,
    never cut on a phone), the second dashed."""
    runs = list(dict.fromkeys(frame["run"]))
    colours = [colour(g) for g in gates] if gates else [colour(gate), WHAT_IF]
    legend = alt.Legend(orient="bottom", direction="vertical", labelFontSize=13, labelLimit=0, symbolStrokeWidth=3) \
        if gates else alt.Legend(orient="top", labelFontSize=13, labelLimit=320, symbolStrokeWidth=3)
    return dict(color=alt.Color("run:N", title=None, scale=alt.Scale(domain=runs, range=colours[: len(runs)]),
                                legend=legend),
                strokeDash=alt.StrokeDash("run:N", scale=alt.Scale(domain=runs, range=[[1, 0], [6, 3]][: len(runs)]),
                                          legend=None),
                tooltip=["step:Q", alt.Tooltip("shown:N", title="token"), alt.Tooltip("run:N", title="model"),
                         alt.Tooltip("gate:Q", format=".4f"), alt.Tooltip("product:Q", format=".3e")])


def _steps(frame: pd.DataFrame, title: str) -> alt.X:
    lo, hi = int(frame["step"].min()), int(frame["step"].max())
    return alt.X("step:Q", title=title, scale=alt.Scale(domain=[lo, max(hi, lo + 1)], nice=False),
                 axis=alt.Axis(labelFontSize=12, tickMinStep=1, format="d"))


def decade_ticks(low: float, threshold: float | None = None, most: int = 7) -> list[float]:
    """Tick values for a log axis from 1 down to ``low``: whole decades (every 2nd, 3rd ... if there are
    more than ``most``), and the threshold when given."""
    k = int(np.floor(np.log10(max(low, 1e-300))))
    every = max(1, -(-(-k + 1) // most))
    ticks = [10.0 ** e for e in range(0, k - every, -every)]  # down to the first decade at or below low
    return sorted(set(ticks + ([threshold] if threshold else [])), reverse=True)


def retention_chart(frame: pd.DataFrame, gate: str = "forget", title: str = "forget gate f",
                    step_title: str = "position", head: str = "", gates: list[str] | None = None) -> alt.Chart:
    """One unit's retention gate (f or z) at each token, per run (``memory.product_frame``); container-wide."""
    data = frame.assign(shown=frame["token"].map(display_token))
    return props(alt.Chart(data).mark_line(strokeWidth=2.5).encode(
        x=_steps(frame, step_title), y=alt.Y("gate:Q", title=title, scale=alt.Scale(domain=[0, 1]),
                                             axis=alt.Axis(labelFontSize=12, tickCount=3)), **_runs(frame, gate, gates)
    ), width="container", height=130, autosize=FIT_X, **({"title": head} if head else {}))


def forgetting_chart(frame: pd.DataFrame, gates: list[str], title: str = "forgotten per token, −log gate",
                     step_title: str = "position", head: str = "") -> alt.Chart:
    """What each run forgets at each token, −log of its retention gate, on a log axis: gates near 1 (a Mamba's
    decay 0.9983-0.9999) differ by a factor there, where a 0-1 axis draws them as one line at 1."""
    data = frame.assign(shown=frame["token"].map(display_token),
                        forgotten=-np.log(np.clip(frame["gate"].to_numpy(dtype=float), 1e-300, 1.0 - 1e-12)))
    ticks = decade_ticks(float(data["forgotten"].min()) if len(data) else 0.1)
    top = 10.0 ** int(np.ceil(np.log10(max(float(data["forgotten"].max()) if len(data) else 1.0, 1e-12))))
    return props(alt.Chart(data).mark_line(strokeWidth=2.5).encode(
        x=_steps(frame, step_title),
        y=alt.Y("forgotten:Q", title=title, scale=alt.Scale(type="log", domain=[ticks[-1], top], nice=False),
                axis=log_axis(title, labelFontSize=12, values=[t for t in decade_ticks(ticks[-1]) if t <= top])),
        **_runs(frame, gates[0], gates)), width="container", height=240, autosize=FIT_X,
        **({"title": head} if head else {}))


def memory_chart(frame: pd.DataFrame, gate: str = "forget", threshold: float = 0.5, title: str = "",
                 product_title: str = "∏ f (log)", step_title: str = "position",
                 gates: list[str] | None = None) -> alt.LayerChart:
    """The running product ∏ gate from the start position, per run, on a log axis labelled at decades
    (one format, ``palette.LOG_LABEL_EXPR``), with a dotted rule at the threshold the memory span uses.
    ``gates``: each run's own signal colour (two models' gates), instead of the gate's and the what-if's."""
    data = frame[frame["product"] > 0].assign(shown=frame["token"].map(display_token))
    ticks = decade_ticks(float(data["product"].min()) if len(data) else 0.1, threshold)
    prod = alt.Chart(data).mark_line(strokeWidth=2.5).encode(
        x=_steps(frame, step_title), y=alt.Y("product:Q", scale=alt.Scale(type="log", domain=[ticks[-1], 1], nice=False),
                                             axis=log_axis(product_title, labelFontSize=12, values=ticks)),
        **_runs(frame, gate, gates))
    rule = alt.Chart(pd.DataFrame({"product": [threshold]})).mark_rule(color="#555", strokeDash=[3, 3],
                                                                       strokeWidth=1.5).encode(y=alt.Y("product:Q"))
    return props(alt.layer(prod, rule), width="container", height=240, autosize=FIT_X,
                                            title=title or "Memory kept since the start position")


def ranking_chart(table: pd.DataFrame) -> alt.Chart:
    """Units ranked by correlation with a text feature (``rank_units``): signed r as bars."""
    data = table.assign(label=table["feature"] + " · unit " + table["unit"].astype(str))
    return props(alt.Chart(data).mark_bar().encode(
        x=alt.X("r:Q", title="Pearson r", scale=alt.Scale(domain=[-1, 1])),
        y=alt.Y("label:N", sort=None, title=None, axis=alt.Axis(labelOverlap=False, labelLimit=170, labelFontSize=12)),
        color=alt.Color("feature:N", legend=None),
        tooltip=tips("feature:N", "unit:Q", alt.Tooltip("r:Q", format=".4f")),
    ), height=alt.Step(20), width="container", autosize=FIT_X, title="Units that track a feature of the text")
