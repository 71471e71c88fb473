"""Altair charts for exposure bias and decoding: per-position runs, error curves, the beam tree.

Pure functions of DataFrames (from ``seqviz.introspect.exposure`` and ``seqviz.decoding``);
they return charts and never display them.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts import props, tips
from seqviz.charts import require_columns as _need
from seqviz.text import N_, _

# The runs and token kinds the data hold (English keys), shown in the installed language: a chart's series
# are translated where it is drawn (``_shown``), the tables the views return keep the keys.
RUNS = [N_("teacher-forced"), N_("free-running")]
STATUS = [N_("gold prefix"), N_("forced"), N_("right"), N_("wrong"), N_("skipped (in brackets)")]
KINDS = [N_("gold prefix"), N_("beam"), N_("finished")]


def _shown(values) -> list[str]:
    return [_(v) for v in values]


def run_scales() -> tuple[alt.Scale, alt.Scale, alt.Scale]:
    """(colour, dash, shape) of the two runs: Okabe & Ito blue / vermillion, teacher-forced dashed."""
    runs = _shown(RUNS)
    return (alt.Scale(domain=runs, range=["#0072B2", "#D55E00"]), alt.Scale(domain=runs, range=[[6, 3], [1, 0]]),
            alt.Scale(domain=runs, range=["square", "circle"]))
# Models compared on one chart: colour-blind-safe hues other than the two runs' (Okabe & Ito 2008)
MODEL_COLORS = ["#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#000000", "#F0E442"]
FONT = 13  # labels read from the back of a classroom (and >= 11 px on a phone)


def legend(title: str | None, columns: int = 1, **extra) -> alt.Legend:
    """A legend below the plot whose labels are never cut ("...scheduled-s..."): full names, one per line."""
    return alt.Legend(title=title, orient="bottom", direction="vertical", columns=columns, labelLimit=0,
                      titleLimit=0, labelFontSize=FONT, titleFontSize=FONT, symbolStrokeWidth=2.5, **extra)


# Streamlit's theme sets autosize "fit" (both ways): the chart's height then holds its legend and axes
# too, and a legend below the plot squeezed the plot to a few pixels. "fit-x": the width follows the
# page, the height is the plot's own.
FIT_X = alt.AutoSizeParams(type="fit-x", contains="padding")


def _axis(**kwargs) -> alt.Axis:
    return alt.Axis(labelFontSize=FONT, titleFontSize=FONT, **kwargs)


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    out["label"] = [f"{t}:{g}" for t, g in zip(out["t"], out["gold"])]
    return out


def _x(table: pd.DataFrame) -> alt.X:
    order = _labelled(table)["label"].tolist()
    return alt.X("label:N", sort=order, title=_("position : gold token"),
                 axis=_axis(labelExpr="split(datum.value, ':')[1]", labelAngle=-45, labelOverlap=False))


def gold_logprob_chart(table: pd.DataFrame, divergence: int | None) -> alt.Chart:
    """log p(gold token) per position under teacher forcing and free running; a rule at the divergence."""
    _need(table, {"t", "gold", "gold_logp_tf", "gold_logp_fr"}, "gold_logprob_chart")
    frame = _labelled(table)
    long = frame.melt(id_vars=["label", "t", "gold", "tf_token", "fr_token"],
                      value_vars=["gold_logp_tf", "gold_logp_fr"], var_name="run", value_name="logp")
    long["run"] = long["run"].map({"gold_logp_tf": _(RUNS[0]), "gold_logp_fr": _(RUNS[1])})
    long = long.dropna(subset=["logp"])
    colours, dashes, shapes = run_scales()
    prefix = _("prefix")
    line = alt.Chart(long).mark_line(point=True, strokeWidth=2.5).encode(
        x=_x(table), y=alt.Y("logp:Q", title=_("log p(gold token), nats"), axis=_axis()),
        color=alt.Color("run:N", scale=colours, title=prefix, legend=legend(prefix, 2)),
        strokeDash=alt.StrokeDash("run:N", scale=dashes, title=prefix, legend=legend(prefix, 2)),
        shape=alt.Shape("run:N", scale=shapes, title=prefix, legend=legend(prefix, 2)),
        tooltip=tips("run:N", "gold:N", alt.Tooltip("tf_token:N", title=_("TF argmax")),
                     alt.Tooltip("fr_token:N", title=_("FR emitted")), alt.Tooltip("logp:Q", format=".4f")))
    layers = [line]
    if divergence is not None:
        mark = frame[frame["t"] == divergence]
        layers.append(alt.Chart(mark).mark_rule(color="#D55E00", strokeDash=[4, 3]).encode(x=_x(table)))
    return props(alt.layer(*layers), height=240, autosize=FIT_X)


def divergence_chart(table: pd.DataFrame) -> alt.Chart:
    """KL(p_TF || p_FR) and the state distance ||h_TF - h_FR|| per position, one above the other."""
    _need(table, {"t", "gold", "kl", "h_dist"}, "divergence_chart")
    frame = _labelled(table)
    charts = []
    for column, title, color in (("kl", _("KL(p_TF ‖ p_FR), nats"), "#9467bd"), ("h_dist", "‖h_TF − h_FR‖", "#8c564b")):
        charts.append(props(alt.Chart(frame.dropna(subset=[column])).mark_bar(color=color).encode(
            x=_x(table), y=alt.Y(f"{column}:Q", title=title, axis=_axis()),
            tooltip=tips("t:Q", "gold:N", "fr_token:N", alt.Tooltip(f"{column}:Q", format=".4f")),
        ), height=120))
    return alt.vconcat(*charts).resolve_scale(x="shared")


def injection_chart(columns: pd.DataFrame) -> alt.Chart:
    """After forcing a wrong token at k, the run as word error rate aligns it to the reference
    (``exposure.aligned_columns``): a bar per emitted token, its state's distance to the teacher-forced run's,
    coloured by what it is (gold prefix, forced, right, wrong: a substituted or an added token); a reference
    token the run leaves out is a column of its own, labelled (in brackets) where the run skips it, marked ✗."""
    _need(columns, {"order", "gold", "emitted", "op", "h_dist"}, "injection_chart")
    gold, forced, right, wrong, skipped = _shown(STATUS)
    status = {"prefix": gold, "forced": forced, "match": right, "sub": wrong, "ins": wrong, "skip": skipped}
    frame = columns.assign(status=columns["op"].map(status),
                           label=[e if op != "skip" else f"({g})" for e, g, op in
                                  zip(columns["emitted"], columns["gold"], columns["op"])],
                           mark=["✗" if op == "skip" else "" for op in columns["op"]])
    frame["label"] = [f"{o}:{lab}" for o, lab in zip(frame["order"], frame["label"])]
    x = alt.X("label:N", sort=frame["label"].tolist(), title=_("emitted token"),
              axis=_axis(labelExpr="split(datum.value, ':')[1]", labelAngle=-45, labelOverlap=False))
    colors = alt.Scale(domain=_shown(STATUS), range=["#9ecae1", "#E69F00", "#009E73", "#D55E00", "#7F0000"])
    token = _("token")
    base = alt.Chart(frame).encode(x=x, color=alt.Color("status:N", scale=colors, title=token, legend=legend(token, 2)),
                                   tooltip=tips(alt.Tooltip("gold:N", title=_("reference")), "emitted:N", "status:N",
                                                alt.Tooltip("h_dist:Q", format=".4f")))
    bars = base.mark_bar().encode(y=alt.Y("h_dist:Q", title="‖h − h_TF‖", axis=_axis()))
    marks = base.transform_filter("datum.mark != ''").mark_text(fontWeight="bold", baseline="bottom").encode(
        y=alt.datum(0), text="mark:N")
    return props(alt.layer(bars, marks), height=220, autosize=FIT_X)


def _run_curves(frame: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, count: str) -> alt.Chart:
    """A probability against x per decoding run and model.

    One model: colour and dash both tell the runs apart. Several: colour (and point shape) is the
    model, dash the run, so the teacher-forcing and the scheduled-sampling model's curves never share a
    colour; every legend sits below the plot with the full names.
    """
    _need(frame, {x, y, "run", count, "model"}, f"{y} chart")
    frame = frame.assign(run=frame["run"].map(lambda r: _(r) if r in RUNS else r))
    models = list(dict.fromkeys(frame["model"]))
    colours, dashes, shapes = run_scales()
    decoding, model = _("decoding"), _("model")
    dash = alt.StrokeDash("run:N", scale=dashes, title=decoding,
                          legend=legend(decoding, 2, symbolType="stroke", symbolStrokeColor="#333"))
    if len(models) > 1:
        palette = alt.Scale(domain=models, range=[MODEL_COLORS[i % len(MODEL_COLORS)] for i in range(len(models))])
        color = alt.Color("model:N", scale=palette, title=model, legend=legend(model))
        shape = alt.Shape("model:N", title=model, legend=legend(model))
    else:
        color = alt.Color("run:N", scale=colours, title=decoding, legend=legend(decoding, 2))
        shape = alt.Shape("run:N", scale=shapes, title=decoding, legend=legend(decoding, 2))
    return props(alt.Chart(frame).mark_line(point=True, strokeWidth=2.5).encode(
        x=alt.X(f"{x}:Q", title=x_title, axis=_axis()),
        y=alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(domain=[0, 1]), axis=_axis()),
        color=color, strokeDash=dash, shape=shape, detail=alt.Detail("run:N"),
        tooltip=tips("model:N", "run:N", f"{x}:Q", alt.Tooltip(f"{y}:Q", format=".3f"), f"{count}:Q"),
    ), height=260, autosize=FIT_X)


def error_rate_chart(frame: pd.DataFrame) -> alt.Chart:
    """Token error rate against output position; colour = run, dash = model (when several)."""
    return _run_curves(frame, "position", "error_rate", _("output position (bucket start)"), _("token error rate"),
                       "tokens")


def after_error_chart(frame: pd.DataFrame) -> alt.Chart:
    """P(error at s + d | first error at s) against d, both runs (the snowball vs the baseline)."""
    return _run_curves(frame, "distance", "p_error", _("tokens after the first error (d)"),
                       _("P(error at s + d | first error at s)"), "sentences")


def conditional_heatmap(frame: pd.DataFrame) -> alt.Chart:
    """P(error at t | first error at s) for free running, s x t buckets."""
    _need(frame, {"first_error", "position", "p_error", "tokens", "sentences"}, "conditional_heatmap")
    return props(alt.Chart(frame).mark_rect().encode(
        x=alt.X("position:O", title=_("position t (bucket start)"), axis=_axis(labelAngle=0)),
        y=alt.Y("first_error:O", title=_("first error at s (bucket start)"), axis=_axis()),
        color=alt.Color("p_error:Q", scale=alt.Scale(scheme="reds", domain=[0, 1]), title=_("P(error)"),
                        legend=alt.Legend(orient="bottom", labelFontSize=FONT, titleFontSize=FONT)),
        tooltip=tips("first_error:O", "position:O", alt.Tooltip("p_error:Q", format=".3f"), "tokens:Q", "sentences:Q"),
    ), height=260, autosize=FIT_X)


def strategy_label(key: str) -> str:
    """A strategy's key in ``decoding.strategy_table`` ("greedy", "beam k=4", "sample T=0.5") in the visitor's
    language."""
    if key == "greedy":
        return _("greedy")
    kind, _sep, value = key.partition("=")
    if kind == "beam k":
        return _("beam k={k}").format(k=value)
    if kind == "sample T":
        return _("sampling T={t}").format(t=value)
    return key


BAR_STEP = FONT + 11  # px per bar: each category's label fits its band, so Vega hides none of them


def strategy_chart(frame: pd.DataFrame) -> alt.Chart:
    """BLEU and milliseconds per sentence of each decoding strategy, every bar labelled (a band of ``BAR_STEP``
    px holds its label; Vega's overlap check, which dropped every other label, is off)."""
    _need(frame, {"strategy", "bleu", "ms_per_sentence"}, "strategy_chart")
    frame = frame.assign(strategy=frame["strategy"].map(strategy_label))
    order = frame["strategy"].tolist()
    base = alt.Chart(frame).encode(y=alt.Y("strategy:N", sort=order, title=None,
                                           axis=_axis(labelLimit=0, labelOverlap=False)))
    bleu = base.mark_bar().encode(x=alt.X("bleu:Q", title="BLEU", scale=alt.Scale(domain=[0, 100]), axis=_axis()),
                                  tooltip=tips("strategy:N", alt.Tooltip("bleu:Q", format=".2f"),
                                               alt.Tooltip("exact:Q", format=".1%")))
    ms = base.mark_bar(color="#888").encode(x=alt.X("ms_per_sentence:Q", title=_("ms per sentence"), axis=_axis()),
                                            tooltip=tips("strategy:N", alt.Tooltip("ms_per_sentence:Q", format=".2f")))
    height = alt.Step(BAR_STEP)
    return alt.hconcat(props(bleu, width=200, height=height), props(ms, width=140, height=height))


def beam_tree_chart(nodes: pd.DataFrame, font: int = 14) -> alt.Chart:
    """The beam as a tree: step across, beam rank down; the gold prefix in green, finished hypotheses below.

    Tokens are drawn at ``font`` px (>= 11) with room for them (``step_width`` px per step, measured from
    the longest token), and the legend sits below the tree, never over a node.
    """
    _need(nodes, {"step", "rank", "token", "logprob", "parent_rank", "finished", "gold"}, "beam_tree_chart")
    frame = nodes.copy()
    k = int(frame["rank"].max() + 1) if frame["rank"].notna().any() else 1
    done_row = frame[frame["finished"]].groupby("step").cumcount()
    frame["y"] = frame["rank"].astype(float)
    frame.loc[frame["finished"], "y"] = k + 0.5 + done_row.astype(float)
    gold, beam, finished = _shown(KINDS)
    frame["kind"] = [gold if g else (finished if f else beam) for g, f in zip(frame["gold"], frame["finished"])]
    edges = frame[frame["parent_rank"].notna()].copy()
    edges["x0"], edges["y0"] = edges["step"] - 1, edges["parent_rank"].astype(float)
    colors = alt.Scale(domain=_shown(KINDS), range=["#009E73", "#555555", "#8E3C6F"])
    rows = float(frame["y"].max()) + 1 if len(frame) else 1.0
    y_scale = alt.Scale(reverse=True, domain=[-0.6, rows - 0.4], nice=False)
    y = alt.Y("y:Q", title=_("beam rank (finished hypotheses below)"), axis=None, scale=y_scale)
    steps = int(frame["step"].max()) + 1
    x_scale = alt.Scale(domain=[-0.6, steps - 0.4], nice=False)
    lines = alt.Chart(edges).mark_rule(opacity=0.5).encode(
        x=alt.X("x0:Q", title=_("output step"), scale=x_scale, axis=_axis(tickMinStep=1, format="d", grid=False)),
        y=alt.Y("y0:Q", scale=y_scale, axis=None), x2=alt.X2("step:Q"), y2=alt.Y2("y:Q"),
        color=alt.Color("kind:N", scale=colors, title=None, legend=legend(None, 3)))
    text = alt.Chart(frame).mark_text(fontSize=max(int(font), 11), fontWeight="bold").encode(
        x=alt.X("step:Q", scale=x_scale), y=y, text=alt.Text("token:N"),
        color=alt.Color("kind:N", scale=colors, title=None),
        tooltip=tips("step:Q", "token:N", alt.Tooltip("logprob:Q", title=_("cumulative log p"), format=".3f"), "kind:N"))
    longest = int(frame["token"].astype(str).str.len().max()) if len(frame) else 1
    step_width = max(56, int(0.62 * max(int(font), 11) * longest) + 16)
    return props(alt.layer(lines, text), width=step_width * steps, height=int(max(3, rows) * (font + 14)),
                                             autosize=alt.AutoSizeParams(type="pad"))  # its own size: no squeeze
