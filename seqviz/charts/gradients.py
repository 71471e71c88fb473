"""Altair charts for gradient flow: decay curves on a log axis, the G[t, k] heatmap, the
forget-gate product, and tokens shaded by connectivity (HTML)."""

from __future__ import annotations

import html

import altair as alt
import numpy as np
import pandas as pd


def distance_curves(df: pd.DataFrame, title: str = "‖∂L_t/∂h_k‖ against distance t − k") -> alt.Chart:
    """Lines of the mean (and a 10-90% band) per model; ``df`` from gradients.by_distance, stacked."""
    df = df[df["mean"] > 0].copy()
    base = alt.Chart(df).encode(x=alt.X("distance:Q", title="distance t − k (steps)"),
                                color=alt.Color("model:N", title=None))
    band = base.mark_area(opacity=0.15).encode(
        y=alt.Y("q10:Q", scale=alt.Scale(type="log"), title="gradient norm (log scale)"), y2="q90:Q")
    line = base.mark_line(point=alt.OverlayMarkDef(size=12)).encode(
        y=alt.Y("mean:Q", scale=alt.Scale(type="log")),
        tooltip=["model", "distance", alt.Tooltip("mean:Q", format=".3e"), alt.Tooltip("median:Q", format=".3e"),
                 alt.Tooltip("q10:Q", format=".3e"), alt.Tooltip("q90:Q", format=".3e"), "count"])
    return (band + line).properties(title=title, height=320)


def gradient_heatmap(G: np.ndarray, tokens: list[str]) -> alt.Chart:
    """G[t, k] as a heatmap: loss position t down, state position k across, log colour."""
    t_idx, k_idx = np.indices(G.shape)
    ok = np.isfinite(G) & (G > 0)
    df = pd.DataFrame({"t": t_idx[ok], "k": k_idx[ok], "value": G[ok],
                       "log10": np.log10(G[ok])})
    df["token_t"] = [_show(tokens[i]) for i in df["t"]]
    df["token_k"] = [_show(tokens[i]) for i in df["k"]]
    return alt.Chart(df).mark_rect().encode(
        x=alt.X("k:O", title="state position k", axis=alt.Axis(labels=False, ticks=False)),
        y=alt.Y("t:O", title="loss position t", axis=alt.Axis(labels=False, ticks=False)),
        color=alt.Color("log10:Q", title="log₁₀ ‖∂L_t/∂h_k‖", scale=alt.Scale(scheme="viridis")),
        tooltip=["t", "token_t", "k", "token_k", alt.Tooltip("value:Q", format=".3e")],
    ).properties(height=360, title="G[t, k] = ‖∂L_t/∂h_k‖ (exact backpropagation)")


def forget_curve(df: pd.DataFrame) -> alt.Chart:
    """Mean product of forget gates over a span of d steps (log axis)."""
    df = df[df["mean"] > 0]
    return alt.Chart(df).mark_line(color="#2a9d8f").encode(
        x=alt.X("distance:Q", title="distance t − k"),
        y=alt.Y("mean:Q", scale=alt.Scale(type="log"), title="mean ∏ f_j"),
        tooltip=["distance", alt.Tooltip("mean:Q", format=".3e"), alt.Tooltip("median:Q", format=".3e")],
    ).properties(height=280, title="Forget-gate product ∏_{j=k+1}^{t} f_j (≈ ∂C_t/∂C_k)")


def power_curves(df: pd.DataFrame, x: str, y: str, color: str, title: str) -> alt.Chart:
    """A worked-example table as lines on a log axis (f^k, (‖W‖γ)^d)."""
    df = df[df[y] > 0]
    return alt.Chart(df).mark_line().encode(
        x=alt.X(f"{x}:Q"), y=alt.Y(f"{y}:Q", scale=alt.Scale(type="log")),
        color=alt.Color(f"{color}:N"), tooltip=[x, color, alt.Tooltip(f"{y}:Q", format=".4e")],
    ).properties(height=260, title=title)


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
