"""Views of per-token surprisal: coloured-text HTML, Altair bar/line charts, training curves.

All functions take the DataFrames of ``seqviz.introspect.language`` and return an HTML
string or an Altair chart; none of them displays anything.
"""

from __future__ import annotations

import html
import math

import altair as alt
import pandas as pd

from seqviz.charts import props, tips
from seqviz.text import N_, _
from seqviz.charts.gates import token_axis, token_width
from seqviz.charts.trajectory import display_token
from seqviz.charts.palette import model_scale

LN2 = math.log(2.0)
# ColorBrewer YlOrRd (9 classes, Brewer 2003): light = expected, dark red = surprising.
PALETTE = ("#ffffcc", "#ffeda0", "#fed976", "#feb24c", "#fd8d3c", "#fc4e2a", "#e31a1c", "#bd0026",
           "#800026")
UNIT_COLUMN = {"nats": "loss", "bits": "bits"}
UNIT_NAMES = {"nats": N_("nats"), "bits": N_("bits")}  # as people read them, in the installed language
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")  # the width follows the page, the height is the plot's


def _check_unit(unit: str) -> str:
    if unit not in UNIT_COLUMN:
        raise ValueError(f"unit must be 'nats' or 'bits', got {unit!r}")
    return UNIT_COLUMN[unit]


def colour(value: float, scale_max: float) -> str:
    """Hex colour of ``value`` on the palette, 0 -> first colour, >= scale_max -> last."""
    if value != value:  # NaN: an unscored token
        return "#eeeeee"
    t = min(max(value / scale_max, 0.0), 1.0) * (len(PALETTE) - 1)
    lo = int(math.floor(t))
    hi = min(lo + 1, len(PALETTE) - 1)
    a, b = PALETTE[lo], PALETTE[hi]
    mix = [round(int(a[k:k + 2], 16) * (1 - (t - lo)) + int(b[k:k + 2], 16) * (t - lo)) for k in (1, 3, 5)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def _shown(token: str) -> str:
    """Whitespace made visible enough to hover: a newline shows as a return arrow, then breaks."""
    if token == "\n":
        return "&#8629;\n"
    return html.escape(token)


def surprisal_html(table: pd.DataFrame, kind: str, scale_max: float, unit: str = "nats") -> str:
    """The text as HTML spans coloured by surprisal, each with its exact loss in a hover title.

    ``scale_max`` is in nats (e.g. ln V, the loss of a uniform guess); values at or above
    it get the darkest colour.
    """
    column = _check_unit(unit)
    sep = "" if kind == "char" else " "
    spans = []
    for row in table.itertuples(index=False):
        if row.loss != row.loss:
            title = _("{token} at position {position}: not scored (no context before it)").format(
                token=repr(row.token), position=row.position)
        else:
            title = _("{token} at position {position}: {value:.3f} {unit} (p = {p:.3g}); the model expected "
                      "{expected} (p = {pe:.2f})").format(token=repr(row.token), position=row.position,
                                                          value=getattr(row, column), unit=_(UNIT_NAMES[unit]),
                                                          p=row.prob, expected=repr(row.expected),
                                                          pe=row.expected_prob)
        bg = colour(row.loss, scale_max)
        fg = "#ffffff" if row.loss == row.loss and row.loss / scale_max > 0.7 else "#111111"
        spans.append(f'<span title="{html.escape(title, quote=True)}" style="background:{bg};color:{fg};'
                     f'border-radius:2px">{_shown(row.token)}</span>')
    body = sep.join(spans)
    return (f'<div class="seqviz-surprisal" style="font-family:ui-monospace,Menlo,Consolas,monospace;'
            f'white-space:pre-wrap;line-height:1.9;font-size:0.95rem">{body}</div>')


def continuation_html(prompt_tail: str, sample: str) -> str:
    """The end of the prompt in grey, then the sampled continuation highlighted."""
    return ('<div class="seqviz-sample" style="font-family:ui-monospace,Menlo,Consolas,monospace;'
            'white-space:pre-wrap;line-height:1.6;font-size:0.9rem;background:#f7f7f8;border-radius:6px;padding:0.8rem">'
            f'<span style="color:#777">{html.escape(prompt_tail)}</span>'
            f'<span style="background:#fde7d3;color:#111;border-radius:2px">{html.escape(sample)}</span></div>')


def legend_html(scale_max: float, unit: str = "nats", note: str = "") -> str:
    """A horizontal colour bar from 0 to ``scale_max`` nats, labelled in ``unit``."""
    _check_unit(unit)
    top = scale_max if unit == "nats" else scale_max / LN2
    stops, name = ", ".join(PALETTE), _(UNIT_NAMES[unit])
    return (f'<div style="display:flex;align-items:center;gap:0.5rem;font-size:0.8rem;color:#555">'
            f'<span>{html.escape(_("0 {unit} (certain)").format(unit=name))}</span><span style="flex:0 0 12rem;'
            f'height:0.8rem;background:linear-gradient(90deg, {stops});border-radius:2px"></span>'
            f'<span>{top:.2f} {html.escape(name)}{html.escape(note)}</span></div>')


def surprisal_bars(table: pd.DataFrame, scale_max: float, unit: str = "nats", height: int = 220,
                   max_bars: int = 400, label_top: bool = False) -> alt.Chart:
    """Bar per scored token: height and colour = surprisal; tooltip gives token, loss, p, expected.

    Beyond ``max_bars`` tokens bars merge into a block, so long texts get coloured ticks instead. ``label_top``: the
    tallest bar (the biggest surprise) labelled with its token and value above it.
    """
    column = _check_unit(unit)
    top = scale_max if unit == "nats" else scale_max / LN2
    data = table.dropna(subset=["loss"]).copy()
    data["shown"] = data["token"].map(repr)
    data["guess"] = data["expected"].map(repr)
    if len(data) <= max_bars:  # each bar under its token (an ordinal axis of every position, labelled by token)
        mark = alt.Chart(data).mark_bar()
        x = alt.X("position:O", title="token", scale=alt.Scale(domain=list(range(len(table)))),
                  axis=token_axis(list(table["token"]), "token"))
    else:
        mark = alt.Chart(data).mark_tick(thickness=1)
        x = alt.X("position:Q", title="token position", scale=alt.Scale(domain=[0, max(len(table) - 1, 1)]))
    bars = mark.encode(
        x=x,
        y=alt.Y(f"{column}:Q", title=f"surprisal ({unit})"),
        color=alt.Color(f"{column}:Q", scale=alt.Scale(scheme="yelloworangered", domain=[0, top], clamp=True),
                        legend=None),
        tooltip=tips("position:Q", alt.Tooltip("shown:N", title="token"),
                     alt.Tooltip(f"{column}:Q", title=unit, format=".3f"), alt.Tooltip("prob:Q", title="p", format=".3g"),
                     alt.Tooltip("guess:N", title="expected"),
                     alt.Tooltip("expected_prob:Q", title="p(expected)", format=".2f")))
    if label_top and len(data):
        worst = data.loc[[data[column].idxmax()]]
        worst = worst.assign(label=[f"«{display_token(t)}» {v:.2f}" for t, v in zip(worst["token"], worst[column])])
        bars = alt.layer(bars, alt.Chart(worst).mark_text(baseline="bottom", dy=-4, fontWeight="bold").encode(
            x=x, y=alt.Y(f"{column}:Q"), text="label:N"))
    return props(bars, height=height, **(token_width(len(table)) if len(data) <= max_bars else {}))


def compare_lines(long: pd.DataFrame, unit: str = "nats", window: int = 25, height: int = 320) -> alt.Chart:
    """Running mean of surprisal over ``window`` tokens, one line per model (``introspect.language.compare``)."""
    column = _check_unit(unit)
    if window < 1:
        raise ValueError("window must be at least 1")
    models = list(dict.fromkeys(long["model"]))  # in the order given: the legend's and the colours'
    data = long.dropna(subset=["loss"]).sort_values(["model", "position"]).copy()
    data["running"] = data.groupby("model")[column].transform(lambda s: s.rolling(window, min_periods=1).mean())
    return props(alt.Chart(data).mark_line().encode(
        x=alt.X("position:Q", title="token position", scale=alt.Scale(domainMin=0, nice=False)),
        y=alt.Y("running:Q", title=f"{window}-token mean ({unit})"),
        # the legend above the plot (at the right it took half of a 390 px phone's width), hence the height
        color=alt.Color("model:N", title=None, scale=model_scale(models),
                        legend=alt.Legend(orient="top", direction="vertical")),
        tooltip=tips("model:N", "position:Q", alt.Tooltip("running:Q", title=f"running mean ({unit})", format=".3f")),
    ), height=height)


def training_curves(history: list[dict], height: int = 160) -> alt.Chart:
    """Train and validation loss against step, from a model card's ``history`` list."""
    frame = pd.DataFrame(history)
    keep = [c for c in ("train_loss", "val_loss") if c in frame]
    if frame.empty or "step" not in frame or not keep:
        raise ValueError("history needs 'step' and 'train_loss'/'val_loss' entries")
    long = frame.melt(id_vars="step", value_vars=keep, var_name="split", value_name="loss").dropna()
    long["split"] = long["split"].map({"train_loss": "train", "val_loss": "validation"})
    return props(alt.Chart(long).mark_line(point=True).encode(
        x=alt.X("step:Q", title="training step"),
        y=alt.Y("loss:Q", title="loss (nats/token)", scale=alt.Scale(zero=False)),
        color=alt.Color("split:N", title=None, legend=alt.Legend(orient="top")),
        tooltip=tips("split:N", "step:Q", alt.Tooltip("loss:Q", format=".3f")),
    ), height=height)


CARD_CURVE_HEIGHT = 150  # px of plot for a zoo card's training curves (legend and axis come on top)


def card_curves(history: list[dict]) -> alt.Chart:
    """``training_curves`` small, for a model card in a column: the plot keeps its height (Streamlit's "fit" autosize
    put legend and axes inside it: a 5 px plot; "fit-x" does not), 12 px guides."""
    return training_curves(history, height=CARD_CURVE_HEIGHT).properties(
        autosize=alt.AutoSizeParams(type="fit-x", contains="padding")).configure_axis(
        labelFontSize=12, titleFontSize=12, tickCount=4, labelOverlap=True).configure_legend(
        labelFontSize=12, labelLimit=0)


def perplexity_bars(frame: pd.DataFrame, chosen: str | None = None) -> alt.Chart:
    """One bar per model (``model``, ``perplexity``), its value written on it, ``chosen`` outlined: which model the
    text surprises least, beside one model's surprisal per token."""
    order = list(frame["model"])
    data = frame.assign(chosen=[m == chosen for m in order], shown=[f"{p:.2f}" for p in frame["perplexity"]])
    base = alt.Chart(data).encode(
        y=alt.Y("model:N", sort=order, title=None, axis=alt.Axis(labelLimit=480)),
        x=alt.X("perplexity:Q", title="perplexity", scale=alt.Scale(zero=True)))
    bars = base.mark_bar(stroke="#000").encode(
        color=alt.Color("model:N", scale=model_scale(order), legend=None),
        strokeWidth=alt.condition("datum.chosen", alt.value(3), alt.value(0)),
        tooltip=tips("model:N", alt.Tooltip("perplexity:Q", format=".2f")))
    text = base.mark_text(align="left", dx=4).encode(text="shown:N")
    return props(bars + text, height=alt.Step(34), width="container", autosize=FIT_X,
                 title="Perplexity of each model on this text")
