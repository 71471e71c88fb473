"""Altair charts for attention: the alignment heatmap, one target word's weights, BLEU vs length.

Pure functions of DataFrames (from ``seqviz.introspect.attention``); they return charts
and never display them.
"""

from __future__ import annotations

import unicodedata

import altair as alt
import pandas as pd

from seqviz.charts import props, tips
from seqviz.charts import require_columns as _check
from seqviz.charts.palette import model_scale

ALIGN_COLUMNS = {"t", "target", "target_label", "j", "source", "source_label", "weight"}
SELECTION = "target_word"  # name of the click selection on the heatmap (a target step t)


def _order(frame: pd.DataFrame, label: str, pos: str) -> list[str]:
    return frame.drop_duplicates(pos).sort_values(pos)[label].tolist()


def label_pixels(label: str, font_px: float = 11.0) -> float:
    """Rough width of an axis label: a CJK (wide) character is about one em, any other about 0.6 em."""
    return sum(font_px if unicodedata.east_asian_width(ch) in "WF" else 0.6 * font_px for ch in label)


def source_axis(labels: list[str], title: str = "source") -> alt.Axis:
    """The source-word axis: labels level while each fits its column, angled -45° once they would collide.

    The test runs in the browser on the drawn width (Vega's ``width`` signal), so one chart reads
    well at 1,400 px and on a 390 px phone (where 我 and 昨天 used to run into each other).
    """
    words = [s.split(":", 1)[-1] for s in labels] or [""]
    need = max(label_pixels(w) for w in words) + 6
    tight = f"width / {max(len(words), 1)} < {need:.0f}"
    return alt.Axis(title=title, labelExpr="split(datum.value, ':')[1]", labelOverlap=False, labelFontSize=11,
                    labelAngle=alt.ExprRef(f"{tight} ? -45 : 0"),
                    labelAlign=alt.ExprRef(f"{tight} ? 'right' : 'center'"), labelLimit=120)


def alignment_heatmap(frame: pd.DataFrame, selected: int | None = None, cell: int = 24,
                      axes: tuple[str, str] = ("target", "source"), clickable: bool = True,
                      top: float = 1.0) -> alt.Chart:
    """Target (rows) x source (columns), shaded by weight; hover shows the exact values. ``axes``: the rows' and
    the columns' titles (a recurrent memory's map: the step and the earlier token it holds); ``clickable`` False:
    no click selection (maps drawn side by side in one chart, whose selections would share a name); ``top``: the
    weight shaded darkest (a larger one is shaded as it: a map of many small shares stays readable).

    Rows are about ``cell`` pixels high; the width is left to the container, the colour legend sits on
    top so the source columns get the whole width (9 CJK labels fit level on a 390 px phone).
    Clicking a cell selects its target word (selection ``target_word`` on field ``t``);
    ``selected`` outlines that row.
    """
    _check(frame, ALIGN_COLUMNS, "alignment_heatmap")
    src_order, tgt_order = _order(frame, "source_label", "j"), _order(frame, "target_label", "t")
    pick = alt.selection_point(name=SELECTION, fields=["t"], on="click", empty=False)
    tooltip = [alt.Tooltip("target:N", title=axes[0]), alt.Tooltip("source:N", title=axes[1]),
               alt.Tooltip("weight:Q", title="weight", format=".4f")]
    if "alpha" in frame.columns:
        tooltip.append(alt.Tooltip("alpha:Q", title="alpha (T=1)", format=".4f"))
    if "score" in frame.columns:
        tooltip.append(alt.Tooltip("score:Q", title="score e", format=".3f"))
    base = alt.Chart(frame).encode(
        x=alt.X("source_label:N", sort=src_order, axis=source_axis(src_order, axes[1])),
        y=alt.Y("target_label:N", sort=tgt_order, title=axes[0],
                axis=alt.Axis(labelExpr="split(datum.value, ':')[1]", labelOverlap=False, labelFontSize=11)),
    )
    rects = base.mark_rect().encode(
        color=alt.Color("weight:Q", scale=alt.Scale(scheme="blues", domain=[0, top], **({"clamp": True} if top < 1 else {})),
                        title="weight",
                        legend=alt.Legend(orient="top", direction="horizontal", gradientLength=120)),
        tooltip=tooltip,
    )
    if clickable:
        rects = rects.encode(stroke=alt.condition(pick, alt.value("#d62728"), alt.value(None)),
                             strokeWidth=alt.condition(pick, alt.value(2), alt.value(0))).add_params(pick)
    rects = props(rects, name="alignment_cells")  # named: else Altair hashes a repr of the DataFrame to name it
    layers = [rects]
    if selected is not None:
        row = frame[frame["t"] == selected]
        layers.append(alt.Chart(row).mark_rect(fill=None, stroke="#d62728", strokeWidth=2).encode(
            x=alt.X("source_label:N", sort=src_order), y=alt.Y("target_label:N", sort=tgt_order)))
    n_tgt = len(tgt_order)
    cell = cell if n_tgt <= 25 else max(12, cell * 2 // 3)  # long sentences: smaller rows
    # Streamlit fits the whole chart (legend, axes, angled labels) into the height: add room for them
    return props(alt.layer(*layers), height=cell * n_tgt + 130)


def target_weights_bar(frame: pd.DataFrame, t: int, title: str | None = None,
                       level: tuple[float, str] | None = None) -> alt.Chart:
    """The weights one target word puts on each source word, with the exact value on each bar.

    ``title``: the weight axis's title (default "α from “<word>”"), e.g. a translated one; ``level``: (weight,
    label), a line a view compares the bars with (a question's "more than half"), dashed."""
    _check(frame, ALIGN_COLUMNS, "target_weights_bar")
    row = frame[frame["t"] == t]
    if row.empty:
        raise ValueError(f"target step {t} is not in the table (steps 0..{int(frame['t'].max())})")
    order = _order(row, "source_label", "j")
    word = row["target"].iloc[0]
    base = alt.Chart(row).encode(
        x=alt.X("source_label:N", sort=order, axis=source_axis(order)),
        y=alt.Y("weight:Q", scale=alt.Scale(domain=[0, 1]), title=title or f"α from “{word}”"),
    )
    bars = base.mark_bar().encode(tooltip=tips("source:N", alt.Tooltip("weight:Q", format=".4f")))
    text = base.mark_text(dy=-6, fontSize=10).encode(text=alt.Text("weight:Q", format=".2f"))
    layers = [bars, text]
    if level is not None:
        line = alt.Chart(pd.DataFrame({"weight": [level[0]], "label": [level[1]]})).encode(y="weight:Q")
        layers += [line.mark_rule(color="#000", strokeDash=[5, 4], strokeWidth=2),
                   line.mark_text(align="right", baseline="bottom", dy=-3, x="width").encode(text="label:N")]
    return props(alt.layer(*layers), height=200)


def bleu_vs_length(curves: pd.DataFrame, selected: str | None = None) -> alt.Chart:
    """BLEU against source-length bucket, one line per model (Bahdanau et al. 2015, fig. 2).

    The legend sits under the plot with whole model names (a right-hand legend cut them at 390 px); ``selected``:
    the bucket a view asks about, marked by a rule."""
    _check(curves, {"bucket", "min_len", "bleu", "model", "n"}, "bleu_vs_length")
    order = curves.drop_duplicates("bucket").sort_values("min_len")["bucket"].tolist()
    base = alt.Chart(curves).encode(
        x=alt.X("bucket:N", sort=order, title="source length (units)", axis=alt.Axis(labelAngle=0)),
        y=alt.Y("bleu:Q", scale=alt.Scale(domain=[0, 100]), title="BLEU"),
        color=alt.Color("model:N", title="model", scale=model_scale(curves["model"]),
                        legend=alt.Legend(orient="bottom", direction="vertical", labelLimit=0, titleLimit=0)),
    )
    line = base.mark_line(point=True).encode(
        tooltip=tips("model:N", "bucket:N", alt.Tooltip("bleu:Q", format=".1f"),
                     alt.Tooltip("n:Q", title="sentences", format=",")))
    if selected is not None:
        rule = alt.Chart(pd.DataFrame({"bucket": [selected]})).mark_rule(color="#000", strokeWidth=2, strokeDash=[2, 3])
        line = alt.layer(rule.encode(x=alt.X("bucket:N", sort=order)), line)
    return props(line, height=260 + 22 * curves["model"].nunique())  # the legend is inside the height
