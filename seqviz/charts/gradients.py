"""Altair charts for gradient flow: decay curves on a log axis, the G[t, k] heatmap, the
forget-gate product, training curves with and without clipping, and tokens shaded by connectivity (HTML).

Log axes share one number format (palette.LOG_LABEL_EXPR: 1e-5, 5e-1, 1, 10); zeros and inf are drawn at a floor and a ceiling,
marked hollow, never dropped (a log axis cannot draw 0, and one 0 would blank the chart)."""

from __future__ import annotations

import html

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts import props, tips
from seqviz.charts.palette import LOG_LABEL_EXPR, colour

FLOOR = 1e-300  # the lowest floor: float64 underflows near 1e-308
DECADES = 10  # compared models' distance curves span at most this many decades (a tanh RNN's 1e-39 goes to the floor)
# symbolOpacity: a legend merged over a 10-90 % band (opacity 0.12, the first layer) took the band's opacity, and its
# keys were too faint to match a line to its model from the back of a room.
LEGEND = alt.Legend(orient="bottom", direction="vertical", labelLimit=0, title=None, symbolType="stroke",
                    symbolSize=400, symbolStrokeWidth=2.5, symbolOpacity=1, labelFontSize=12)
DASHES = [[1, 0], [6, 3], [2, 2], [8, 3, 2, 3], [4, 4]]
# Strong and distinct, also on a projector; ten, so that the six shipped language models (and a few of a visitor's
# own) never share a colour: with five, the sixth (the RNN, in name order) was drawn exactly as the first (the GRU).
COLOURS = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f",
           "#bcbd22"]
# Container-wide charts fit their width and keep their height (Streamlit's default "fit" squeezes the plot to
# make room for the legend below it, and cut the title).
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")


def _series(field: str, order) -> tuple[alt.Color, alt.StrokeDash]:
    """Colour and dash both by ``field``: each series is told apart without colour too."""
    return (alt.Color(f"{field}:N", sort=order, legend=LEGEND, scale=alt.Scale(domain=order, range=COLOURS)),
            alt.StrokeDash(f"{field}:N", sort=order, legend=LEGEND, scale=alt.Scale(domain=order, range=DASHES)))


def _log_y(field: str, title: str | None = None) -> alt.Y:
    return alt.Y(f"{field}:Q", scale=alt.Scale(type="log"), title=title, axis=alt.Axis(labelExpr=LOG_LABEL_EXPR))


def on_scale(df: pd.DataFrame, cols, key: str | None = None,
             decades: int | None = None) -> tuple[pd.DataFrame, float, float]:
    """``df`` with 0 (underflow) and inf (overflow) in ``cols`` moved to a floor and a ceiling a log axis can draw.

    The floor is a decade below the smallest positive value (at least ``FLOOR``: values under it
    are floored too), and at most ``decades`` below the ceiling where that is given (one curve falling to 1e-39
    would otherwise squeeze every other into the top of the axis); the ceiling a decade above the largest finite
    one. ``key`` (one of ``cols``)
    gets ``off_scale``: "" / "0" / "inf" and ``value`` (its exact value as text) for the marks and
    tooltips. Rows whose ``key`` is NaN are dropped. Returns (frame, floor, ceiling).
    """
    df = df[df[key].notna()].copy() if key else df.copy()
    vals = df[list(cols)].to_numpy(dtype=float)
    pos = vals[np.isfinite(vals) & (vals > 0)]
    floor = max(FLOOR, 10.0 ** (np.floor(np.log10(pos.min())) - 1)) if pos.size else 1.0
    ceil = 10.0 ** (np.ceil(np.log10(pos.max())) + 1) if pos.size else 10.0
    if decades is not None:
        floor = max(floor, ceil / 10.0 ** decades)
    if key:
        v = df[key].to_numpy(dtype=float)
        df["off_scale"] = np.where(v == np.inf, "inf", np.where(v < floor, "0", ""))
        df["value"] = [f"{x:.3e}" for x in v]
    for c in cols:
        v = df[c].to_numpy(dtype=float)
        df[c] = np.where(np.isposinf(v), ceil, np.where(v < floor, floor, v))
    return df, floor, ceil


def _off_scale_marks(base: alt.Chart, y: str, title: str = "gradient norm (log scale)") -> alt.Chart:
    """Hollow circles at the floor (0, underflow) and hollow triangles at the ceiling (inf, overflow)."""
    return base.transform_filter("datum.off_scale != ''").mark_point(filled=False, size=70, strokeWidth=1.5).encode(
        y=_log_y(y, title), shape=alt.Shape("off_scale:N", scale=alt.Scale(domain=["0", "inf"], range=["circle", "triangle-up"]),
                        legend=None))


def distance_curves(df: pd.DataFrame, title: str = "‖∂L_t/∂h_k‖ against distance t − k",
                    note: str = "○ at the floor: 0 (below {floor:.0e}); △ at the top: inf",
                    decades: int | None = None) -> alt.Chart:
    """Lines of the mean (and a 10-90% band) per model; ``df`` from gradients.by_distance, stacked.

    Each model gets its own colour and dash, the legend sits below the plot with full names, and
    zeros/inf are drawn at a floor/ceiling with hollow marks (``note`` says so, formatted with them); ``decades``
    caps the axis (``on_scale``) where models are compared.
    """
    cols = [c for c in ("mean", "q10", "q90", "median") if c in df]
    df, floor, ceil = on_scale(df, cols, "mean", decades=decades)
    color, dash = _series("model", list(dict.fromkeys(df["model"])))
    base = alt.Chart(df).encode(x=alt.X("distance:Q", title="distance t − k (steps)"), color=color)
    layers = [base.mark_area(opacity=0.12).encode(y=_log_y("q10", "gradient norm (log scale)"), y2=alt.Y2("q90:Q"))] \
        if "q10" in df and df["q10"].ne(df["q90"]).any() else []
    layers.append(base.mark_line(strokeWidth=2).encode(
        y=_log_y("mean", "gradient norm (log scale)"), strokeDash=dash,
        tooltip=["model", "distance", alt.Tooltip("value:N", title="mean")]
        + [alt.Tooltip(f"{c}:Q", format=".3e") for c in cols[1:]]))
    if (df["off_scale"] != "").any():
        layers.append(_off_scale_marks(base, "mean"))
        title = alt.TitleParams(title, subtitle=note.format(floor=floor, ceil=ceil))
    return props(alt.layer(*layers), title=title, height=320, width="container", autosize=FIT_X)


def mark_distance(chart: alt.LayerChart, df: pd.DataFrame, d: int, label: str) -> alt.LayerChart:
    """``distance_curves``' chart with the distance a view asks about marked: a rule at ``d`` named ``label``,
    and each curve's mean there as a dot in the curve's colour (``df``: the curves' frame)."""
    order = list(dict.fromkeys(df["model"]))
    at = df[df["distance"] == int(d)].dropna(subset=["mean"])
    at = at[at["mean"] > 0]
    rule = alt.Chart(pd.DataFrame({"distance": [int(d)], "label": [label]})).encode(x=alt.X("distance:Q"))
    color, _dash = _series("model", order)
    dots = alt.Chart(at).mark_point(size=160, filled=True, opacity=1).encode(
        x=alt.X("distance:Q"), y=_log_y("mean"), color=color,
        tooltip=tips("model:N", "distance:Q", alt.Tooltip("mean:Q", format=".3e")))
    marked = chart.copy(deep=False)
    marked.layer = [*chart.layer, rule.mark_rule(color="#000", strokeWidth=2, strokeDash=[2, 3]),
                    rule.mark_text(align="left", dx=6, baseline="top", y=4, fontWeight="bold").encode(text="label:N"),
                    dots]
    return marked


def training_curves(runs: pd.DataFrame, clip: float, field: str, title: str, y_title: str,
                    log: bool = False, marks: pd.DataFrame | None = None) -> alt.Chart:
    """Per step ``field`` of each training run (``clipping.clipping_runs``), a dashed rule at ``clip`` on ||g||;
    ``marks`` (series, step, ``field``, label): points the view points at, ringed and labelled in their colour."""
    color, dash = _series("series", list(dict.fromkeys(runs["series"])))
    y = _log_y(field, y_title) if log else alt.Y(f"{field}:Q", title=y_title)
    line = alt.Chart(runs).mark_line(strokeWidth=2, point=alt.OverlayMarkDef(size=10)).encode(
        x=alt.X("step:Q", title="training step"), y=y, color=color, strokeDash=dash,
        tooltip=tips("series", "step", alt.Tooltip(f"{field}:Q", format=".3~g")))
    layers = [line]
    if log:
        layers.append(alt.Chart(pd.DataFrame({"c": [clip]})).mark_rule(color="#555", strokeDash=[3, 3]).encode(
            y=alt.Y("c:Q"), tooltip=[alt.Tooltip("c:Q", title="threshold c")]))
    if marks is not None and len(marks):
        ring = alt.Chart(marks).encode(x=alt.X("step:Q"), y=alt.Y(f"{field}:Q"), color=color)
        layers += [ring.mark_point(size=260, strokeWidth=3, filled=False),
                   ring.mark_text(dy=-16, fontWeight="bold").encode(text="label:N")]
    return props(alt.layer(*layers), title=title, height=260, width="container", autosize=FIT_X)


def gradient_heatmap(G: np.ndarray, tokens: list[str], model: str = "",
                     title: str = "G[t, k] = ‖∂L_t/∂h_k‖ (exact backpropagation)") -> alt.Chart:
    """G[t, k] as a heatmap: loss position t down, state position k across (every tenth labelled), log colour;
    ``model`` names the checkpoint under the title."""
    t_idx, k_idx = np.indices(G.shape)
    ok = np.isfinite(G) & (G > 0)
    df = pd.DataFrame({"t": t_idx[ok], "k": k_idx[ok], "value": G[ok]})
    df["token_t"] = [_show(tokens[i]) for i in df["t"]]
    df["token_k"] = [_show(tokens[i]) for i in df["k"]]
    # The log and one tooltip field besides the value are computed in the browser, once per cell when the data
    # arrive (a tooltip's own formatting runs per cell and hover, see gates.gate_heatmap): 4,950 cells for a
    # 100-token text are sent as five fields each.
    where = "datum.t + ' «' + datum.token_t + '» ← ' + datum.k + ' «' + datum.token_k + '»'"
    return props(alt.Chart(df).transform_calculate(log10="log(datum.value) / LN10", where=where).mark_rect().encode(
        # every tenth position labelled, as the axis titles say: a T x T grid has up to 1,000 steps
        x=alt.X("k:O", title="state position k (every 10th labelled)", axis=alt.Axis(
            values=list(range(0, G.shape[1], 10)), labelAngle=0, labelOverlap=False)),
        y=alt.Y("t:O", title="loss position t (every 10th labelled)", axis=alt.Axis(
            values=list(range(0, G.shape[0], 10)), labelOverlap=False)),
        color=alt.Color("log10:Q", title="log₁₀ ‖∂L_t/∂h_k‖", scale=alt.Scale(scheme="viridis")),
        tooltip=[alt.Tooltip("value:Q", title="‖∂L_t/∂h_k‖", format=".3e"),
                 alt.Tooltip("where:N", title="t «token» ← k «token»")],
    ), height=360, width="container", autosize=FIT_X,
        title=alt.TitleParams(title, subtitle=model or alt.Undefined))


def forget_curve(df: pd.DataFrame) -> alt.Chart:
    """Mean product of forget gates over a span of d steps (log axis; an underflow drawn hollow at the floor)."""
    df, _, _ = on_scale(df, [c for c in ("mean", "median") if c in df], "mean")
    base = alt.Chart(df).encode(x=alt.X("distance:Q", title="distance t − k"))
    line = base.mark_line(color=colour("forget"), strokeWidth=2).encode(
        y=_log_y("mean", title="mean ∏ f_j"),
        tooltip=tips("distance", alt.Tooltip("value:N", title="mean"), alt.Tooltip("median:Q", format=".3e")))
    return props(alt.layer(line, _off_scale_marks(base, "mean", title="mean ∏ f_j")),
        height=280, width="container", autosize=FIT_X, title="Forget-gate product ∏_{j=k+1}^{t} f_j (≈ ∂C_t/∂C_k)")


def power_curves(df: pd.DataFrame, x: str, y: str, color: str, title: str) -> alt.Chart:
    """A worked-example table as lines on a log axis (f^k, (‖W‖γ)^d), one colour and dash per curve."""
    df = df[df[y] > 0]
    colour, dash = _series(color, list(dict.fromkeys(df[color])))
    return props(alt.Chart(df).mark_line(strokeWidth=2).encode(
        x=alt.X(f"{x}:Q"), y=_log_y(y, y), color=colour, strokeDash=dash,
        tooltip=[x, color, alt.Tooltip(f"{y}:Q", format=".4e")],
    ), height=260, width="container", autosize=FIT_X, title=title)


def _show(token: str) -> str:
    return {"\n": "⏎", " ": "␣", "\t": "⇥"}.get(token, token)


def connectivity_html(tokens: list[str], weights: np.ndarray, target: int) -> str:
    """Input tokens shaded by ||∂logit/∂x_k|| (normalised to the largest); the target outlined."""
    top = float(np.max(weights)) if len(weights) and np.max(weights) > 0 else 1.0
    spans = []
    for k, tok in enumerate(tokens):
        w = float(weights[k]) if k < len(weights) else 0.0
        alpha = 0.05 + 0.9 * (w / top) if k < len(weights) else 0.0
        border = "outline:2px solid #e76f51;" if k == target else ""
        label = html.escape(_show(tok))
        title = f"k={k} token={tok!r} ‖∂logit/∂x_k‖={w:.3e}" if k < len(weights) else "after the target"
        spans.append(f'<span title="{html.escape(title)}" style="background:rgba(38,70,83,{alpha:.3f});'
                     f'color:{"#fff" if alpha > 0.5 else "#111"};{border}padding:1px 0;'
                     f'font-family:monospace;white-space:pre">{label}</span>')
        if tok == "\n":
            spans.append("<br>")
    return f'<div style="line-height:1.9;font-size:15px">{"".join(spans)}</div>'
