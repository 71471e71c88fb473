"""Sections of the attention page (pages/attention.py): the alignment and BLEU-recompute fragments."""

import streamlit as st

from appkit import models as cm
from appkit.export import draw, export_buttons
from appkit.i18n import N_, _, localize_chart
from appkit.models import ModelRef
from appkit.state import keep_option
from seqviz.charts.attention import SELECTION
from seqviz.export import state_line
from seqviz.hf_seq2seq import HEAD_MEAN, attention_shape, heads_frame, select_heads
from seqviz.introspect.attention import (DIFFUSE_FRACTION, TEMPERATURE_RANGE, alignment_frame, alignment_matrix_csv,
                                         bleu_by_length, default_target, target_stats, temperature_summary)
from seqviz.charts import attention as attention_charts
from seqviz.charts import cross_attention as cross_attention_charts


def example_label(key: str) -> str:
    """'9 units: 老师 今天 ...' (example_sentences' menu key) in the session's language."""
    n, _sep, sentence = key.partition(" units: ")
    return _("{n} units: {sentence}").format(n=n, sentence=sentence) if sentence else key


BAR_TITLE = N_("α from “{word}”")  # the weights bar chart's title


def views(frame, t: int, bar_title: str) -> tuple[dict, dict]:
    """The alignment heat map (row ``t`` selected) and the bar chart of row ``t``'s weights, as specs."""
    return (cm.chart_spec(attention_charts.alignment_heatmap, frame, selected=t),
            cm.chart_spec(attention_charts.target_weights_bar, frame, t, title=bar_title))


@st.fragment  # the temperature, target word and head reruns only this section
def alignment(ref: ModelRef, text: str, result: dict, hf: bool, exports: list):
    exports[:] = [s for s in exports if s.heading not in ("Alignment", "Weights of one target word")]
    trace, choice = result["trace"], {}
    if hf:
        st.caption(_("A transformer's decoder has cross-attention in every layer, several heads each: "
                     "α = softmax(q_t · k_j / √d) per head (Vaswani et al. 2017). Pick one head, or their mean."))
        n_layers, n_heads = attention_shape(trace)
        for key, options, first in (("att_hf_layer", range(n_layers), n_layers - 1), ("att_hf_head", range(-1, n_heads), -1)):
            keep_option(key, list(options), first) if key in st.session_state else st.session_state.setdefault(key, first)
        c1, c2 = st.columns(2)
        choice["layer"] = c1.selectbox(_("Layer"), range(n_layers), key="att_hf_layer",
                                       format_func=lambda i: _("decoder layer {i}").format(i=i))
        choice["head"] = c2.selectbox(_("Head"), range(-1, n_heads), key="att_hf_head", help=_("Each head attends on its own."),
                                      format_func=lambda h: _("head {h}").format(h=h) if h >= 0 else _("mean of heads"))
        trace = select_heads(trace, choice["layer"], HEAD_MEAN if choice["head"] < 0 else choice["head"])
    temperature = st.slider(_("Temperature"), *TEMPERATURE_RANGE, 1.0, 0.1, key="att_temp", bind="query-params",
                            help=_("softmax(e / T) recomputed from the stored scores: below 1 sharpens α towards a "
                                   "hard pointer, above 1 flattens it towards the uniform 1/n; 1 is the model's "
                                   "own α. The line under the map gives the row maxima at this T."))
    if hf:
        st.caption(_("transformers returns the weights α, not the scores e. log α = e − logsumexp(e) differs from "
                     "e by a constant per row, which softmax ignores, so softmax(log α / T) is exact for one head; "
                     "on the mean of heads, T sharpens or flattens the averaged map."))
    frame = alignment_frame(trace, 0, temperature, source=result["pieces"])
    stats, targets = target_stats(frame), [f"{t}: {w}" for t, w in enumerate(result["target"])]
    if st.session_state.get("att_target") not in targets:  # opens on the sharpest content word
        st.session_state["att_target"] = targets[default_target(stats)]

    def on_click():
        picked = (st.session_state["att_heatmap"].selection or {}).get(SELECTION) or []
        if picked and "t" in picked[0]:
            st.session_state["att_target"] = targets[int(picked[0]["t"])]

    t = targets.index(st.selectbox(_("Target word"), targets, key="att_target", help=_("Or click a row of the heatmap.")))
    exports.footnote = state_line(ref.label, text, translation=result["translation"] or "(empty)",
                                  temperature=temperature, target=targets[t], **choice)
    row = stats.iloc[t]
    heat, bar = views(frame, t, _(BAR_TITLE).format(word=row["target"]))
    heat = localize_chart(heat)
    cm.show(st, heat, key="att_heatmap", on_select=on_click, selection_mode=SELECTION, width="stretch")
    export_buttons(heat, "Alignment", exports.footnote, frame, exports, csv=False)
    s = temperature_summary(stats)
    what = (_("near-uniform (every row's maximum ≤ 1.5/n = {limit:.2f})").format(limit=s["limit"])
            if s["verdict"] == "uniform" else _("closer to uniform, not uniform") if temperature > 1
            else _("sharper than the model's own") if temperature < 1 else _("the model's own"))
    st.caption(_("At T = {T:g} α is {what}: row maxima {lo:.2f}–{hi:.2f}, against 1/n = {u:.2f}; entropy on average "
                 "{f:.0%} of ln {n}.").format(T=temperature, what=what, lo=s["max_lo"], hi=s["max_hi"], u=s["uniform"],
                                              n=s["n"], f=s["mean_fraction"]))
    c1, c2 = st.columns([3, 1])
    draw(c1, bar, "Weights of one target word", exports.footnote, frame[frame["t"] == t], exports)
    c2.metric(_("Strongest source for “{word}”").format(word=row["target"]), row["source"],
              _("weight {weight:.3f}").format(weight=row["max_weight"]), delta_color="off")
    c2.download_button(_("Download α as CSV"), alignment_matrix_csv(frame), file_name="alignment.csv",
                       mime="text/csv", help=_("Rows: target words; columns: source units; at this temperature."))
    st.markdown(_("“{word}” puts {w:.2f} on {source}; the entropy of its α is {h:.2f} nats, {f:.0%} of ln {n}: "
                  "**{verdict}** at T = {T:g}.").format(
        word=row["target"], w=row["max_weight"], source=row["source"], h=row["entropy"], f=row["fraction"],
        n=row["n_source"], T=temperature, verdict=_("diffuse") if row["diffuse"] else _("not diffuse")))
    function = stats[stats["word"] & ~stats["content"]]
    if len(function):
        listed = ", ".join(f"“{r.target}” {r.max_weight:.2f} → {r.source}" for r in function.itertuples())
        diffuse = ", ".join(f"“{w}”" for w in function.loc[function["diffuse"], "target"])
        st.markdown(_("**Function words** (the lesson expects them to attend diffusely): {listed}. ").format(
            listed=listed) + (_("Diffuse on this model at T = {T:g}: {words}.").format(T=temperature, words=diffuse)
                              if diffuse else _("None is diffuse on this model at T = {T:g}: each points at one "
                                                "source word.").format(T=temperature)))
    with st.expander(_("Entropy of α for every target word (diffuse: ≥ {p:.0%} of ln n)").format(p=DIFFUSE_FRACTION)):
        number = st.column_config.NumberColumn
        st.dataframe(stats, hide_index=True, column_order=("target", "source", "max_weight", "entropy", "fraction",
                     "diffuse"), column_config={"target": _("target"), "source": _("strongest source"), "diffuse":
                     _("diffuse"), "max_weight": number(_("max α"), format="%.3f"), "entropy": number(
                     _("entropy (nats)"), format="%.3f"), "fraction": number(_("entropy / ln n"), format="percent")})
    if hf:
        with st.expander(_("Every head of decoder layer {layer}").format(layer=choice["layer"]), expanded=True):
            hf_heads = heads_frame(result["trace"], choice["layer"])
            draw(st, cm.chart_spec(cross_attention_charts.head_grid, hf_heads), f"Every head of layer {choice['layer']}",
                 state_line(ref.label, text, layer=choice["layer"]), hf_heads, None, width=None)


@st.fragment
def recompute(model, card: dict, heldout: list):
    n = st.select_slider(_("Held-out pairs to recompute on"), [100, 250, 500, 1000], 250, key="att_n_recompute",
                         format_func="{:,}".format)
    if st.button(_("Recompute BLEU by length for {model}").format(model=card.get("name") or _("this model"))):
        with st.spinner(_("Translating the held-out sentences...")):
            st.dataframe(bleu_by_length(model, heldout[:n]), hide_index=True)
