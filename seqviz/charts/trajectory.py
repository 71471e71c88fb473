"""Altair charts of hidden-state trajectories, their turnable 3-D view (and the older pair view), and the padding study.

Charts are pure functions of DataFrames (see ``seqviz.introspect.projection``): they
return a chart and never display it.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts import props, tips
from seqviz.charts.palette import label_expr, model_scale
from seqviz.text import _

SHOWN = {"\n": "⏎", " ": "␣", "\t": "⇥", "\r": "␍"}
MAX_LABELS = 40  # token labels drawn per chart at most: more overlap into noise (every n-th token, hover for all)
FONT = 13  # axis and legend labels, read from the back of a classroom
MAX_CLOUD = 600  # reference points drawn behind a trajectory


def display_token(token: str) -> str:
    """A token as it should appear on a chart: whitespace made visible."""
    return "".join(SHOWN.get(ch, ch) for ch in str(token))


# Streamlit's theme sets autosize "fit" (both ways): a chart's height then holds its legends and axes,
# and legends below the plot squeezed it. "fit-x": the width follows the page, the height is the plot's.
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")


def label_every(frame: pd.DataFrame, max_labels: int = MAX_LABELS) -> pd.Series:
    """Which points get a token label: every n-th step of each text (n chosen so that at most about
    ``max_labels`` are drawn), and each text's last token; True/False per row of ``frame``."""
    if max_labels <= 0 or frame.empty:
        return pd.Series(False, index=frame.index)
    n = -(-len(frame) // max_labels)  # ceil: the thinning step
    last = frame.groupby("text")["step"].transform("max")
    return (frame["step"] % n == 0) | (frame["step"] == last)


def legend(title: str | None, gradient: bool = False, orient: str = "bottom", **options) -> alt.Legend:
    """A legend below the plot (or ``orient``), its labels never cut."""
    extra = {"gradientLength": 160} if gradient else {"direction": "vertical", "columns": 1}
    return alt.Legend(title=title, orient=orient, labelLimit=0, titleLimit=0, labelFontSize=FONT,
                      titleFontSize=FONT, **extra, **options)


def text_colour(texts, text_label: str = "text {i}") -> alt.Color:
    """One dark hue per text, in order; a legend above the plot only for several texts (one text's "text 1" told
    nothing, and beside the position bar below it pushed the bar's end out of a small chart)."""
    texts = list(dict.fromkeys(texts))
    names = {t: text_label.format(i=t.rsplit(" ", 1)[-1]) for t in texts}
    shown = None if len(texts) < 2 else legend("text", orient="top", labelExpr=label_expr(names))
    return alt.Color("text:N", title="text", scale=model_scale(texts), legend=shown)


def _axis() -> alt.Axis:
    return alt.Axis(labelFontSize=FONT, titleFontSize=FONT)


def _tooltip(frame: pd.DataFrame) -> list:
    fields = [alt.Tooltip("text:N", title="text"), alt.Tooltip("step:Q", title="step"),
              alt.Tooltip("shown:N", title="token"), alt.Tooltip("norm:Q", title="‖h_t‖", format=".3f"),
              alt.Tooltip("loss:Q", title="next-token loss (nats)", format=".3f")]
    if "snapshot" in frame:
        fields.insert(0, alt.Tooltip("snapshot:N", title="checkpoint"))
    return fields


def trajectory_chart(frame: pd.DataFrame, axis_names=("PC1", "PC2"), reference: pd.DataFrame | None = None,
                     axes=("x", "y"), title: str = "", width: int = 520, height: int = 420,
                     hover=None, attach_hover: bool = True, max_labels: int = MAX_LABELS,
                     autosize=FIT_X, text_label: str = "text {i}") -> alt.Chart:
    """The path h_t walks, one line per text, points coloured by position, labelled by token.

    ``frame``: text, step, token, x, y[, z], norm, loss (``trajectory_frame``).
    ``reference``: the reference sample's projected points, drawn as a faint cloud.
    ``hover``: a shared point selection (for linked views); one is made when None. A linked
    view passes ``attach_hover=False`` to use a selection another view defines.
    ``max_labels``: token labels drawn at most (``label_every``); every point keeps its tooltip.
    ``text_label``: how the legend names the stored "text i" (the installed language's, from the view).
    """
    if frame.empty:
        raise ValueError("nothing to draw: the trajectory has no points")
    data = frame.assign(shown=frame["token"].map(display_token))
    ax, ay = axes
    x = alt.X(f"{ax}:Q", title=axis_names[0 if ax == "x" else 2 if ax == "z" else 1], axis=_axis())
    y = alt.Y(f"{ay}:Q", title=axis_names[1 if ay == "y" else 0], axis=_axis())
    hover = hover if hover is not None else alt.selection_point(
        on="pointerover", nearest=True, fields=["text", "step"], empty=False)
    base = alt.Chart(data)
    path = base.mark_line(strokeWidth=1.2, opacity=0.55).encode(
        x=x, y=y, order=alt.Order("step:Q"), detail=alt.Detail("text:N"),
        color=text_colour(data["text"], text_label))
    points = base.mark_circle(size=55, opacity=0.9).encode(
        x=x, y=y, color=alt.Color("step:Q", title="position", scale=alt.Scale(scheme="viridis"),
                                  legend=legend("position", gradient=True)),
        size=alt.condition(hover, alt.value(220), alt.value(55)),
        tooltip=_tooltip(data))
    if attach_hover:  # named: else Altair names the view by hashing a repr of its DataFrame (~0.1 s, measured)
        points = props(points.add_params(hover), name="trajectory_points")
    layers = [path, points]
    labelled = data[label_every(data, max_labels)]
    if len(labelled):
        layers.append(alt.Chart(labelled).mark_text(dx=8, dy=-8, fontSize=FONT, color="#222").encode(
            x=x, y=y, text=alt.Text("shown:N")))
    if reference is not None and not reference.empty:
        step = -(-len(reference) // MAX_CLOUD)  # an even thinning (ceil): the cloud's shape, fewer marks
        cloud = alt.Chart(reference.iloc[::step]).mark_circle(size=10, color="#bbbbbb", opacity=0.35).encode(
            x=alt.X(f"{ax}:Q"), y=alt.Y(f"{ay}:Q"))
        layers.insert(0, cloud)
    chart = props(alt.layer(*layers).resolve_scale(color="independent"), width=width, height=height, title=title)
    return props(chart, autosize=autosize) if autosize is not None else chart


def pair_views(frame: pd.DataFrame, axis_names, reference: pd.DataFrame | None = None,
               title: str = "", size: int = 320, text_label: str = "text {i}") -> alt.HConcatChart:
    """A 3-D trajectory as two linked 2-D views sharing axis 2: (1, 2) and (3, 2).

    Altair has no 3-D marks; two views with a shared hover selection show all three
    coordinates without a new dependency.
    """
    if "z" not in frame:
        raise ValueError("the pair view needs a 3-D projection (a z column)")
    hover = alt.selection_point(on="pointerover", nearest=True, fields=["text", "step"], empty=False)
    left = trajectory_chart(frame, axis_names, reference, ("x", "y"), width=size, height=size, hover=hover,
                            autosize=None, text_label=text_label)  # autosize belongs to the top level only
    right = trajectory_chart(frame, axis_names, reference, ("z", "y"), width=size, height=size, hover=hover,
                             attach_hover=False, autosize=None, text_label=text_label)  # hovering either highlights both
    return props(alt.hconcat(left, right), title=title, autosize=alt.AutoSizeParams(type="pad"))


# A 3-D view Vega-Lite can draw: the points turned about the vertical axis by ``turn`` and tilted towards the
# viewer by ``tilt`` (two sliders under the chart, in the browser), drawn in orthographic projection, the nearer
# points larger. (u, v, depth) is an orthonormal rotation of the scaled (x, y, z): distances are kept.
TURN = "datum.xs * cos(turn * PI / 180) + datum.zs * sin(turn * PI / 180)"
_BACK = "(datum.zs * cos(turn * PI / 180) - datum.xs * sin(turn * PI / 180))"
LIFT = f"datum.ys * cos(tilt * PI / 180) - {_BACK} * sin(tilt * PI / 180)"
DEPTH = f"datum.ys * sin(tilt * PI / 180) + {_BACK} * cos(tilt * PI / 180)"


def _scaled(frame: pd.DataFrame, extent: float) -> pd.DataFrame:
    return frame.assign(xs=frame["x"] / extent, ys=frame["y"] / extent, zs=frame["z"] / extent)


def turntable(frame: pd.DataFrame, axis_names, reference: pd.DataFrame | None = None, title: str = "",
              size: int = 460, text_label: str = "text {i}") -> alt.LayerChart:
    """A 3-D trajectory as one turnable view: the path and its tokens, the reference cloud and the three axes
    from the origin, rotated in the browser by two bound sliders (turn, tilt); hover a point for its token."""
    if "z" not in frame:
        raise ValueError("the 3-D view needs a 3-D projection (a z column)")
    both = frame[list("xyz")] if reference is None else pd.concat([frame[list("xyz")], reference[list("xyz")]])
    extent = float(both.abs().to_numpy().max()) or 1.0
    data = _scaled(frame.assign(shown=frame["token"].map(display_token)), extent)
    turn = alt.param(name="turn", value=30, bind=alt.binding_range(min=-180, max=180, step=5, name=_("turn °")))
    tilt = alt.param(name="tilt", value=20, bind=alt.binding_range(min=-90, max=90, step=5, name=_("tilt °")))
    scale = alt.Scale(domain=[-1.8, 1.8], nice=False)
    x, y = alt.X("u:Q", scale=scale, axis=None), alt.Y("v:Q", scale=scale, axis=None)

    def turned(chart):
        return chart.transform_calculate(u=TURN, v=LIFT, depth=DEPTH)

    axes = pd.DataFrame({"xs": [1.0, 0, 0], "ys": [0, 1.0, 0], "zs": [0, 0, 1.0], "name": list(axis_names[:3])})
    origin = alt.Chart(axes).transform_calculate(u=TURN, v=LIFT).mark_rule(color="#777", strokeWidth=1.5).encode(
        x=x, y=y, x2=alt.datum(0), y2=alt.datum(0))
    names = turned(alt.Chart(axes)).mark_text(fontSize=FONT, color="#555", dx=6, dy=-6).encode(x=x, y=y, text="name:N")
    path = turned(alt.Chart(data)).mark_line(strokeWidth=1.2, opacity=0.55).encode(
        x=x, y=y, order=alt.Order("step:Q"), detail=alt.Detail("text:N"), color=text_colour(data["text"], text_label))
    points = turned(alt.Chart(data)).mark_circle(opacity=0.9).encode(
        x=x, y=y, color=alt.Color("step:Q", title="position", scale=alt.Scale(scheme="viridis"),
                                  legend=legend("position", gradient=True)),
        size=alt.Size("depth:Q", scale=alt.Scale(domain=[-1.7, 1.7], range=[15, 140]), legend=None),
        tooltip=_tooltip(data))
    labelled = data[label_every(data)]
    layers = [origin, names, path, points]
    if len(labelled):
        layers.append(turned(alt.Chart(labelled)).mark_text(dx=8, dy=-8, fontSize=FONT, color="#222").encode(
            x=x, y=y, text=alt.Text("shown:N")))
    if reference is not None and not reference.empty:
        step = -(-len(reference) // MAX_CLOUD)
        cloud = _scaled(reference.iloc[::step], extent)
        layers.insert(0, turned(alt.Chart(cloud)).mark_circle(size=10, color="#bbbbbb", opacity=0.35).encode(x=x, y=y))
    chart = alt.layer(*layers).add_params(turn, tilt).resolve_scale(color="independent")
    return props(chart, width=size, height=size, title=title, autosize=alt.AutoSizeParams(type="pad"))


# ------------------------------------------------------------------ padding and masks
def padding_grid_chart(grid: pd.DataFrame, max_steps: int = 120, label_steps: int = 40) -> alt.Chart:
    """The padded batch as a grid: rows are texts, columns positions, pads shaded.

    ``grid``: text, step, token, is_pad (``MaskStudy.grid``); only the last ``max_steps``
    positions are drawn when the batch is wider (the padding lives at the right end). The chart
    takes its container's width; tokens are written in the cells only up to ``label_steps`` columns
    (beyond, they would overprint: hover a cell for its token).
    """
    width = int(grid["step"].max()) + 1
    data = grid[grid["step"] >= width - max_steps].assign(
        shown=lambda d: d["token"].map(display_token).where(~d["is_pad"], ""),  # colour marks the pads
        kind=lambda d: d["is_pad"].map({True: "padding", False: "text"}))
    shown = int(data["step"].nunique())
    ticks = _ticks(data["step"])  # evenly spaced: every position overprints on a phone (the axis title says so)
    axis = alt.Axis(labelFontSize=FONT, titleFontSize=FONT, labelAngle=0, labelOverlap=False,
                    **({} if len(ticks) == shown else {"values": ticks}))
    x = alt.X("step:O", title="position in the padded batch", axis=axis) if len(ticks) == shown else \
        alt.X("step:O", title="position in the padded batch (every few labelled)", axis=axis)
    base = alt.Chart(data).encode(x=x, y=alt.Y("text:N", title=None, axis=_axis()))
    cells = base.mark_rect(stroke="white").encode(
        color=alt.Color("kind:N", title=None, scale=alt.Scale(domain=["text", "padding"],
                                                              range=["#9ecae1", "#e0e0e0"]),
                        legend=alt.Legend(orient="bottom", labelFontSize=FONT, labelLimit=0)),
        tooltip=tips("text:N", "step:Q", alt.Tooltip("shown:N", title="token"), "kind:N"))
    layers = [cells]
    if shown <= label_steps:
        layers.append(base.mark_text(fontSize=12).encode(text=alt.Text("shown:N")))
    return props(alt.layer(*layers), height=alt.Step(26), title="Padded batch", autosize=FIT_X)


def _ticks(steps: pd.Series, most: int = 12) -> list[int]:
    """At most about ``most`` evenly spaced position labels (every position overprints on a phone)."""
    lo, hi = int(steps.min()), int(steps.max())
    every = max(1, -(-(hi - lo + 1) // most))
    return list(range(lo, hi + 1, every))


def mask_distance_chart(table: pd.DataFrame) -> alt.Chart:
    """||h_respected - h_ignored|| per text: zero only for the text that needs no padding."""
    return props(alt.Chart(table).mark_bar().encode(
        x=alt.X("text:N", title=None, sort=None, axis=alt.Axis(labelFontSize=FONT, labelAngle=0)),
        y=alt.Y("distance:Q", title="‖h_respected − h_ignored‖", axis=_axis()),
        color=alt.Color("pads:Q", title="pad tokens", scale=alt.Scale(scheme="oranges"),
                        legend=legend("pad tokens", gradient=True)),
        tooltip=tips("text:N", "length:Q", "pads:Q", alt.Tooltip("distance:Q", format=".4f"),
                     alt.Tooltip("cosine:Q", format=".4f"), alt.Tooltip("loss_masked:Q", format=".3f"),
                     alt.Tooltip("loss_pads_counted:Q", format=".3f")),
    ), height=220, title="Final state read twice", autosize=FIT_X)


def final_states_chart(points: pd.DataFrame, axis_names=("PC1", "PC2"), text_label: str = "text {i}") -> alt.Chart:
    """Each text's two final states in the fitted space, joined by a line.

    ``points``: text, reading ("mask respected" / "mask ignored"), x, y.
    """
    base = alt.Chart(points).encode(x=alt.X("x:Q", title=axis_names[0], axis=_axis()),
                                    y=alt.Y("y:Q", title=axis_names[1], axis=_axis()))
    link = base.mark_line(color="#999", strokeDash=[4, 3]).encode(detail=alt.Detail("text:N"))
    dots = base.mark_point(size=110, filled=True).encode(
        color=text_colour(points["text"], text_label),  # each text in the trajectory's colour
        shape=alt.Shape("reading:N", title="final state read at", legend=legend("final state read at")),
        tooltip=tips("text:N", "reading:N", alt.Tooltip("x:Q", format=".3f"), alt.Tooltip("y:Q", format=".3f")))
    return props(alt.layer(link, dots), height=280, title="Final states in the fitted space", autosize=FIT_X)
