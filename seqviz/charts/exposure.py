"""Altair charts for exposure bias and decoding: per-position runs, error curves, the beam tree.

Pure functions of DataFrames (from ``seqviz.introspect.exposure`` and ``seqviz.decoding``);
they return charts and never display them.
"""

from __future__ import annotations

import altair as alt
import pandas as pd

from seqviz.charts import require_columns as _need

RUN_COLORS = alt.Scale(domain=["teacher-forced", "free-running"], range=["#1f77b4", "#d62728"])


def _labelled(table: pd.DataFrame) -> pd.DataFrame:
    out = table.copy()
    out["label"] = [f"{t}:{g}" for t, g in zip(out["t"], out["gold"])]
    return out


def _x(table: pd.DataFrame) -> alt.X:
    order = _labelled(table)["label"].tolist()
    return alt.X("label:N", sort=order, title="position : gold token",
                 axis=alt.Axis(labelExpr="split(datum.value, ':')[1]", labelAngle=-45, labelOverlap=False))


def gold_logprob_chart(table: pd.DataFrame, divergence: int | None) -> alt.Chart:
    """log p(gold token) per position under teacher forcing and free running; a rule at the divergence."""
    _need(table, {"t", "gold", "gold_logp_tf", "gold_logp_fr"}, "gold_logprob_chart")
    frame = _labelled(table)
    long = frame.melt(id_vars=["label", "t", "gold", "tf_token", "fr_token"],
                      value_vars=["gold_logp_tf", "gold_logp_fr"], var_name="run", value_name="logp")
    long["run"] = long["run"].map({"gold_logp_tf": "teacher-forced", "gold_logp_fr": "free-running"})
    long = long.dropna(subset=["logp"])
    line = alt.Chart(long).mark_line(point=True).encode(
        x=_x(table), y=alt.Y("logp:Q", title="log p(gold token), nats"),
        color=alt.Color("run:N", scale=RUN_COLORS, title="prefix"),
        tooltip=["run:N", "gold:N", alt.Tooltip("tf_token:N", title="TF argmax"),
                 alt.Tooltip("fr_token:N", title="FR emitted"), alt.Tooltip("logp:Q", format=".4f")])
    layers = [line]
    if divergence is not None:
        mark = frame[frame["t"] == divergence]
        layers.append(alt.Chart(mark).mark_rule(color="#d62728", strokeDash=[4, 3]).encode(x=_x(table)))
    return alt.layer(*layers).properties(height=240)


def divergence_chart(table: pd.DataFrame) -> alt.Chart:
    """KL(p_TF || p_FR) and the state distance ||h_TF - h_FR|| per position, one above the other."""
    _need(table, {"t", "gold", "kl", "h_dist"}, "divergence_chart")
    frame = _labelled(table)
    charts = []
    for column, title, color in (("kl", "KL(p_TF ‖ p_FR), nats", "#9467bd"), ("h_dist", "‖h_TF − h_FR‖", "#8c564b")):
        charts.append(alt.Chart(frame.dropna(subset=[column])).mark_bar(color=color).encode(
            x=_x(table), y=alt.Y(f"{column}:Q", title=title),
            tooltip=["t:Q", "gold:N", "fr_token:N", alt.Tooltip(f"{column}:Q", format=".4f")],
        ).properties(height=120))
    return alt.vconcat(*charts).resolve_scale(x="shared")


def injection_chart(table: pd.DataFrame, k: int) -> alt.Chart:
    """After forcing a wrong token at k: state distance to the teacher-forced run, and which tokens are wrong."""
    _need(table, {"t", "gold", "emitted", "wrong", "h_dist"}, "injection_chart")
    frame = table.copy()
    frame["label"] = [f"{t}:{e or '∅'}" for t, e in zip(frame["t"], frame["emitted"])]
    frame["status"] = ["forced" if t <= k and w else "gold prefix" if t < k else ("wrong" if w else "right")
                       for t, w in zip(frame["t"], frame["wrong"])]
    x = alt.X("label:N", sort=frame["label"].tolist(), title="position : emitted token",
              axis=alt.Axis(labelExpr="split(datum.value, ':')[1]", labelAngle=-45, labelOverlap=False))
    colors = alt.Scale(domain=["gold prefix", "forced", "right", "wrong"],
                       range=["#9ecae1", "#ff7f0e", "#2ca02c", "#d62728"])
    bars = alt.Chart(frame).mark_bar().encode(
        x=x, y=alt.Y("h_dist:Q", title="‖h − h_TF‖"), color=alt.Color("status:N", scale=colors, title="token"),
        tooltip=["t:Q", "gold:N", "emitted:N", "status:N", alt.Tooltip("h_dist:Q", format=".4f")])
    return bars.properties(height=220)


def _run_curves(frame: pd.DataFrame, x: str, y: str, x_title: str, y_title: str, count: str) -> alt.Chart:
    """A probability against x per decoding run (colour) and model (dash)."""
    _need(frame, {x, y, "run", count, "model"}, f"{y} chart")
    return alt.Chart(frame).mark_line(point=True).encode(
        x=alt.X(f"{x}:Q", title=x_title),
        y=alt.Y(f"{y}:Q", title=y_title, scale=alt.Scale(domain=[0, 1])),
        color=alt.Color("run:N", scale=RUN_COLORS, title="decoding"),
        strokeDash=alt.StrokeDash("model:N", title="model"),
        tooltip=["model:N", "run:N", f"{x}:Q", alt.Tooltip(f"{y}:Q", format=".3f"), f"{count}:Q"],
    ).properties(height=260)


def error_rate_chart(frame: pd.DataFrame) -> alt.Chart:
    """Token error rate against output position; colour = run, dash = model (when several)."""
    return _run_curves(frame, "position", "error_rate", "output position (bucket start)", "token error rate",
                       "tokens")


def after_error_chart(frame: pd.DataFrame) -> alt.Chart:
    """P(error at s + d | first error at s) against d, both runs (the snowball vs the baseline)."""
    return _run_curves(frame, "distance", "p_error", "tokens after the first error (d)",
                       "P(error at s + d | first error at s)", "sentences")


def conditional_heatmap(frame: pd.DataFrame) -> alt.Chart:
    """P(error at t | first error at s) for free running, s x t buckets."""
    _need(frame, {"first_error", "position", "p_error", "tokens", "sentences"}, "conditional_heatmap")
    return alt.Chart(frame).mark_rect().encode(
        x=alt.X("position:O", title="position t (bucket start)"),
        y=alt.Y("first_error:O", title="first error at s (bucket start)"),
        color=alt.Color("p_error:Q", scale=alt.Scale(scheme="reds", domain=[0, 1]), title="P(error)"),
        tooltip=["first_error:O", "position:O", alt.Tooltip("p_error:Q", format=".3f"), "tokens:Q", "sentences:Q"],
    ).properties(height=260)


def strategy_chart(frame: pd.DataFrame) -> alt.Chart:
    """BLEU and milliseconds per sentence of each decoding strategy."""
    _need(frame, {"strategy", "bleu", "ms_per_sentence"}, "strategy_chart")
    order = frame["strategy"].tolist()
    base = alt.Chart(frame).encode(y=alt.Y("strategy:N", sort=order, title=None))
    bleu = base.mark_bar().encode(x=alt.X("bleu:Q", title="BLEU", scale=alt.Scale(domain=[0, 100])),
                                  tooltip=["strategy:N", alt.Tooltip("bleu:Q", format=".2f"),
                                           alt.Tooltip("exact:Q", format=".1%")])
    ms = base.mark_bar(color="#888").encode(x=alt.X("ms_per_sentence:Q", title="ms per sentence"),
                                            tooltip=["strategy:N", alt.Tooltip("ms_per_sentence:Q", format=".2f")])
    return alt.hconcat(bleu.properties(width=260), ms.properties(width=180))


def beam_tree_chart(nodes: pd.DataFrame) -> alt.Chart:
    """The beam as a tree: step across, beam rank down; the gold prefix in green, finished hypotheses below."""
    _need(nodes, {"step", "rank", "token", "logprob", "parent_rank", "finished", "gold"}, "beam_tree_chart")
    frame = nodes.copy()
    k = int(frame["rank"].max() + 1) if frame["rank"].notna().any() else 1
    done_row = frame[frame["finished"]].groupby("step").cumcount()
    frame["y"] = frame["rank"].astype(float)
    frame.loc[frame["finished"], "y"] = k + 0.5 + done_row.astype(float)
    frame["kind"] = ["gold prefix" if g else ("finished" if f else "beam") for g, f in zip(frame["gold"], frame["finished"])]
    edges = frame[frame["parent_rank"].notna()].copy()
    edges["x0"], edges["y0"] = edges["step"] - 1, edges["parent_rank"].astype(float)
    colors = alt.Scale(domain=["gold prefix", "beam", "finished"], range=["#2ca02c", "#555555", "#9467bd"])
    y = alt.Y("y:Q", title="beam rank (finished hypotheses below)", scale=alt.Scale(reverse=True), axis=None)
    lines = alt.Chart(edges).mark_rule(opacity=0.5).encode(
        x=alt.X("x0:Q", title="output step", axis=alt.Axis(tickMinStep=1, format="d")), y=alt.Y("y0:Q", scale=alt.Scale(reverse=True), axis=None),
        x2="step:Q", y2="y:Q", color=alt.Color("kind:N", scale=colors, title=None))
    text = alt.Chart(frame).mark_text(fontSize=11, fontWeight="bold").encode(
        x=alt.X("step:Q"), y=y, text="token:N", color=alt.Color("kind:N", scale=colors, title=None),
        tooltip=["step:Q", "token:N", alt.Tooltip("logprob:Q", title="cumulative log p", format=".3f"), "kind:N"])
    steps = int(frame["step"].max()) + 1
    return alt.layer(lines, text).properties(width=max(300, 56 * steps), height=max(160, 34 * (k + 2)))
