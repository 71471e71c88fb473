"""Attention page: live translation and its alignment (ours or a transformers model's), the bottleneck."""

import streamlit as st

from appkit import models
from appkit.i18n import _, error_lead, localize_chart
from appkit.export import draw, export_buttons, view_button
from appkit.sidebar import checkpoint_picker
from seqviz.charts.attention import SELECTION, alignment_heatmap, bleu_vs_length, target_weights_bar
from seqviz.charts.cross_attention import head_grid
from seqviz.export import state_line
from seqviz.hf_seq2seq import HEAD_MEAN, HFSeq2Seq, attention_shape, heads_frame, select_heads
from seqviz.introspect.attention import (TEMPERATURE_RANGE, alignment_frame, alignment_matrix_csv, bleu_by_length,
                                         bleu_curves, bleu_table, display, example_sentences, most_reordered, translate_text)

st.title(_("Attention"))
st.caption(_("Bahdanau attention (2015): before writing each target word the decoder scores every source "
             "word, e_tj = vᵀ tanh(W_s s_{t−1} + W_h h_j), turns the scores into weights α = softmax(e) and "
             "reads the weighted sum c_t = Σ α_tj h_j. Without attention the whole sentence must pass "
             "through one fixed vector, the encoder's last state."))

ref = checkpoint_picker("seq2seq", prefer="zh-en-attention-gru")  # the lesson's model, unless one was chosen
if ref is None:
    st.stop()
model = models.model(ref)
exports = view_button("attention", f"Attention · {ref.label}", model)
hf = isinstance(model, HFSeq2Seq)  # a transformers encoder-decoder (Marian, T5, BART ...)
card = model.card or {}
task = card.get("task", "zh-en")
heldout = models.heldout(ref)
examples = example_sentences(heldout)
default = "我昨天在公园吃了一个苹果" if task == "zh-en" or not examples else next(iter(examples.values()))[0]
if st.session_state.get("s2s_task") != task:  # another task's sentence would be all <unk>
    st.session_state["s2s_task"], st.session_state["sentence"] = task, default


def use_example():
    if st.session_state.get("example"):
        st.session_state["sentence"] = examples[st.session_state["example"]][0]


def example_label(key: str) -> str:
    """'9 units: 老师 今天 ...' (example_sentences' menu key) in the session's language."""
    n, _sep, sentence = key.partition(" units: ")
    return _("{n} units: {sentence}").format(n=n, sentence=sentence) if sentence else key


left, right = st.columns([3, 2])
right.selectbox(_("Held-out sentence"), list(examples), format_func=example_label, index=None, key="example", on_change=use_example,
                placeholder=_("pick one (never seen in training)"), disabled=not examples)
text = left.text_input(_("Source sentence"), key="sentence", bind="query-params",
                       help=_("Chinese with or without spaces; units the model does not know stay in as <unk>."))
try:
    result = (models.hf_translate(ref, text or "") if hf
              else translate_text(model, text or ""))
except ValueError as e:
    st.info(error_lead(e, _("Cannot translate this:")))
    st.stop()
if result["unknown"]:
    st.warning(_("Not in the model's vocabulary (kept as <unk>, still translated): {words}").format(
        words=", ".join(repr(u) for u in result["unknown"])))
st.markdown(_("**Source units:** {units}").format(units=" · ".join(f"`{p}`" for p in display(result["pieces"]))))
st.markdown(_("**Greedy translation:** {translation}").format(translation=result["translation"] or _("(empty)")))
references = {src.replace(" ", ""): ref for src, ref in examples.values()}
reference = references.get((text or "").replace(" ", ""))
if reference is not None:
    same = reference.replace(" ", "") == result["translation"].replace(" ", "")
    st.caption(_("Reference: {reference} — {verdict}").format(
        reference=reference, verdict=_("exact match") if same else _("differs")))

if not hf and model.attn is None:
    st.info(_("This model has no attention: its decoder sees the same fixed vector (the encoder's final "
              "state) at every step, so there is no alignment to draw. See the bottleneck below."))
else:
    st.subheader(_("Alignment"))
    trace = result["trace"]
    if hf:
        st.caption(_("A transformer's decoder has cross-attention in every layer, several heads each: "
                     "α = softmax(q_t · k_j / √d) per head (Vaswani et al. 2017). Pick one head, or their mean."))
        n_layers, n_heads = attention_shape(trace)
        layers = [f"decoder layer {i}" for i in range(n_layers)]
        heads = ["mean of heads"] + [f"head {h}" for h in range(n_heads)]
        for key, options in (("hf_layer", layers), ("hf_head", heads)):  # another model: other choices
            if st.session_state.get(key) not in options:
                st.session_state[key] = options[-1] if key == "hf_layer" else options[0]
        c1, c2 = st.columns(2)
        layer = layers.index(c1.selectbox(_("Layer"), layers, key="hf_layer", format_func=lambda o: _(
            "decoder layer {i}").format(i=o.split()[-1])))
        head = heads.index(c2.selectbox(_("Head"), heads, key="hf_head", help=_("Each head attends on its own."),
                                        format_func=lambda o: _("mean of heads") if o == "mean of heads"
                                        else _("head {h}").format(h=o.split()[-1]))) - 1
        trace = select_heads(trace, layer, HEAD_MEAN if head < 0 else head)
    temperature = st.slider(_("Temperature"), *TEMPERATURE_RANGE, 1.0, 0.1, key="att_temp", bind="query-params",
                            help=_("softmax(e / T) recomputed from the stored scores: 0.1 turns soft alignment "
                                   "into a hard pointer, 5 into a near-uniform average; 1 is the model's own α."))
    if hf:
        st.caption(_("transformers returns the weights α, not the scores e. log α = e − logsumexp(e) differs from "
                     "e by a constant per row, which softmax ignores, so softmax(log α / T) is exact for one head; "
                     "on the mean of heads, T sharpens or flattens the averaged map."))
    frame = alignment_frame(trace, 0, temperature, source=result["pieces"])
    targets = [f"{t}: {w}" for t, w in enumerate(result["target"])]
    if st.session_state.get("target_word") not in targets:
        st.session_state["target_word"] = targets[most_reordered(frame)]

    def on_click():
        picked = (st.session_state["heatmap"].selection or {}).get(SELECTION) or []
        if picked and "t" in picked[0]:
            st.session_state["target_word"] = targets[int(picked[0]["t"])]

    t = targets.index(st.selectbox(_("Target word"), targets, key="target_word",
                                   help=_("Or click a row of the heatmap.")))
    exports.footnote = state_line(ref.label, text, translation=result["translation"] or "(empty)",
                               temperature=temperature, target=targets[t],
                               **({"layer": layer, "head": heads[head + 1]} if hf else {}))
    heat = localize_chart(alignment_heatmap(frame, selected=t))
    st.altair_chart(heat, key="heatmap", on_select=on_click, selection_mode=SELECTION, width="stretch")
    export_buttons(heat, "Alignment", exports.footnote, frame, exports, csv=False)
    c1, c2 = st.columns([3, 1])
    row = frame[frame["t"] == t].sort_values("weight", ascending=False).iloc[0]
    draw(c1, target_weights_bar(frame, t, title=_("α from “{word}”").format(word=row["target"])),
         "Weights of one target word", exports.footnote, frame[frame["t"] == t], exports)
    c2.metric(_("Strongest source for “{word}”").format(word=row["target"]), row["source"],
              _("weight {weight:.3f}").format(weight=row["weight"]), delta_color="off")
    c2.download_button(_("Download α as CSV"), alignment_matrix_csv(frame), file_name="alignment.csv",
                       mime="text/csv", help=_("Rows: target words; columns: source units; at this temperature."))
    if hf:
        with st.expander(_("Every head of decoder layer {layer}").format(layer=layer), expanded=True):
            hf_heads = heads_frame(result["trace"], layer)
            draw(st, head_grid(hf_heads), f"Every head of layer {layer}", state_line(ref.label, text, layer=layer),
                 hf_heads, exports, width=None)
    hits = card.get("alignment") or {}
    if "content_hit_rate" in hits:
        st.caption(_("Alignment quality on {n:,} held-out content words: argmax α lands on the source word the "
                     "grammar says it translates {rate:.1%} of the time ({all_rate:.1%} over all {all_n:,} aligned "
                     "words).").format(n=hits["content_words"], rate=hits["content_hit_rate"],
                                       all_rate=hits["aligned_hit_rate"], all_n=hits["aligned_words"]))

if hf:
    st.stop()  # the bottleneck compares the recurrent checkpoints trained here
st.subheader(_("The bottleneck: BLEU against sentence length"))
cards = {c.name: c.card for c in models.list_checkpoints("seq2seq") if c.card.get("task") == task}
cards.setdefault(card.get("name", "this model"), card)
curves = bleu_curves(cards)
if curves.empty:
    st.info(_("No BLEU-by-length table is stored with these checkpoints."))
else:
    draw(st, bleu_vs_length(curves), "BLEU against sentence length",
         state_line(None, None, task=task, models=", ".join(cards)), curves, exports)
    st.caption(_("Corpus BLEU (sacrebleu) of greedy translations of held-out sentences, by source length, "
                 "as measured when each checkpoint was made (Bahdanau et al. 2015, fig. 2). Without attention "
                 "every sentence must fit through one vector, and long sentences stop fitting."))
    st.dataframe(bleu_table(curves))
if heldout:
    n = st.select_slider(_("Held-out pairs to recompute on"), [100, 250, 500, 1000], 250, key="n_recompute")
    if st.button(_("Recompute BLEU by length for {model}").format(model=card.get("name") or _("this model"))):
        with st.spinner(_("Translating the held-out sentences...")):
            st.dataframe(bleu_by_length(model, heldout[:n]), hide_index=True)
