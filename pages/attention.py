"""Attention page: live translation and its alignment (seqviz's, a transformers model's or a user's plain one)."""

import streamlit as st

from appkit import cache
from appkit.draw import draw_view, view_button
from appkit.i18n import _, error_lead
from appkit.pairs import own_pairs
from appkit.sidebar import deferred_picker
from appkit.state import keep_option
from appkit.widgets import lazy_expander
from seqviz.charts.attention import SELECTION
from seqviz.export import state_line
from seqviz.introspect.attention import DIFFUSE_FRACTION, TEMPERATURE_RANGE, alignment_matrix_csv
from seqviz.views import attention as views
from seqviz.views import implicit_compare as memories

st.title(_("Attention"))
st.caption(_("Bahdanau attention (2015): before writing each target word the decoder scores every source "
             "word, e_tj = vᵀ tanh(W_s s_{t−1} + W_h h_j), turns the scores into weights α = softmax(e) and "
             "reads the weighted sum c_t = Σ α_tj h_j. Without attention the whole sentence must pass "
             "through one fixed vector, the encoder's last state."))
picked = deferred_picker("seq2seq", prefer="zh-en-attention-gru")  # the lesson's model, unless one was chosen
if picked is None:
    st.stop()
ref = picked.ref
model = picked.info()  # config and card: no torch while the alignment comes shipped
exports = view_button("attention", f"Attention · {ref.label}", model.card)
vocab = cache.view(views.vocabulary, ref).facts
hf = vocab["hf"]  # a transformers encoder-decoder (Marian, T5, BART ...)
card, pairs = model.card or {}, () if hf else own_pairs(ref, "att_pairs")  # a pairs file's, else the model's own
held = cache.view(views.pair_examples, ref, pairs=pairs) if pairs else cache.view_of_path(views.examples, ref)
examples = {} if held is None else {key: (src, reference) for key, src, reference in held.facts["examples"]}
task = (card.get("task", "zh-en"), pairs[:1])
if st.session_state.get("att_task") != task:  # another task's sentence would be all <unk>
    st.session_state["att_task"] = task
    st.session_state["att_sentence"] = views.default_sentence(card, examples, vocab["known"], bool(pairs))


def example_label(key: str) -> str:
    """'9 units: 老师 今天 ...' (a menu key of views.attention.examples) in the session's language."""
    n, _sep, sentence = key.partition(" units: ")
    return _("{n} units: {sentence}").format(n=n, sentence=sentence) if sentence else key


def use_example():
    if st.session_state.get("att_example"):
        st.session_state["att_sentence"] = examples[st.session_state["att_example"]][0]


left, right = st.columns([3, 2])
right.selectbox(_("Held-out sentence"), list(examples), format_func=example_label, index=None, key="att_example",
                on_change=use_example, placeholder=_("pick one (never seen in training)"), disabled=not examples)
text = left.text_input(_("Source sentence"), key="att_sentence", bind="query-params",
                       help=_("Chinese with or without spaces; units the model does not know stay in as <unk>."))
known = vocab["known"]
if known:
    with st.expander(_("The {n} source words this model knows").format(n=len(known))):
        st.markdown(" ".join(f"`{w}`" for w in known))
        st.caption(_("Build a sentence from these; anything else is read as <unk>."))
text = text or ""
try:
    result = cache.view(views.translation, ref, text=text).facts
except ValueError as e:
    st.info(error_lead(e, _("Cannot translate this:")))
    st.stop()
if result["unknown"]:
    st.warning(_("Not in the model's vocabulary (kept as <unk>, still translated): {words}").format(
        words=", ".join(repr(u) for u in result["unknown"])))
st.markdown(_("**Source units:** {units}").format(units=" · ".join(f"`{p}`" for p in result["pieces"])))
st.markdown(_("**Greedy translation:** {translation}").format(translation=result["translation"] or _("(empty)")))
reference = {src.replace(" ", ""): r for src, r in examples.values()}.get(text.replace(" ", ""))
if reference is not None:
    same = reference.replace(" ", "") == result["translation"].replace(" ", "")
    st.caption(_("Reference: {reference} — {verdict}").format(
        reference=reference, verdict=_("exact match") if same else _("differs")))


def head_choice() -> dict:
    """A transformers model's decoder layer and head (-1: the mean of its heads), from their two menus."""
    st.caption(_("A transformer's decoder has cross-attention in every layer, several heads each: "
                 "α = softmax(q_t · k_j / √d) per head (Vaswani et al. 2017). Pick one head, or their mean."))
    n_layers, n_heads = result["layers"], result["heads"]
    for key, options, first in (("att_hf_layer", range(n_layers), n_layers - 1), ("att_hf_head", range(-1, n_heads), -1)):
        keep_option(key, list(options), first) if key in st.session_state else st.session_state.setdefault(key, first)
    c1, c2 = st.columns(2)
    layer = c1.selectbox(_("Layer"), range(n_layers), key="att_hf_layer",
                         format_func=lambda i: _("decoder layer {i}").format(i=i))
    head = c2.selectbox(_("Head"), range(-1, n_heads), key="att_hf_head", help=_("Each head attends on its own."),
                        format_func=lambda h: _("head {h}").format(h=h) if h >= 0 else _("mean of heads"))
    return {"layer": layer, "head": head}


@st.fragment  # the temperature, target word and head reruns only this section
def alignment():
    exports[:] = [s for s in exports if s.heading not in ("Alignment", "Weights of one target word")]
    choice = head_choice() if hf else {}
    temperature = st.slider(_("Temperature"), *TEMPERATURE_RANGE, 1.0, 0.1, key="att_temp", bind="query-params",
                            help=_("softmax(e / T) recomputed from the stored scores: below 1 sharpens α towards a "
                                   "hard pointer, above 1 flattens it towards the uniform 1/n; 1 is the model's "
                                   "own α. The line under the map gives the row maxima at this T."))
    if hf:
        st.caption(_("transformers returns the weights α, not the scores e. log α = e − logsumexp(e) differs from "
                     "e by a constant per row, which softmax ignores, so softmax(log α / T) is exact for one head; "
                     "on the mean of heads, T sharpens or flattens the averaged map."))
    chosen = {"text": text, "temperature": temperature, **choice}
    targets = [f"{t}: {w}" for t, w in enumerate(result["target"])]
    if st.session_state.get("att_target") not in targets:  # opens on the sharpest content word
        st.session_state["att_target"] = targets[cache.view(views.alignment, ref, **chosen).facts["target"]]

    def on_click():
        picked = (st.session_state["att_heatmap"].selection or {}).get(SELECTION) or []
        if picked and "t" in picked[0]:
            st.session_state["att_target"] = targets[int(picked[0]["t"])]

    t = targets.index(st.selectbox(_("Target word"), targets, key="att_target", help=_("Or click a row of the heatmap.")))
    exports.footnote = state_line(ref.label, text, translation=result["translation"] or "(empty)",
                                  temperature=temperature, target=targets[t], **choice)
    heat = cache.view(views.alignment, ref, **chosen, target=t)
    draw_view(heat, exports.footnote, exports, csv=False, key="att_heatmap", on_select=on_click,
              selection_mode=SELECTION)
    st.caption(views.alignment_caption(heat.facts))
    bar = cache.view(views.target_weights, ref, **chosen, target=t)
    row = bar.facts
    c1, c2 = st.columns([3, 1])
    with c1:
        draw_view(bar, exports.footnote, exports)
    c2.metric(_("Strongest source for “{word}”").format(word=row["word"]), row["source"],
              _("largest weight α = {weight:.3f}").format(weight=row["max_weight"]), delta_color="off",
              delta_arrow="off")  # a reading, not a change: an arrow ("↑ weight 0.984") meant nothing
    c2.download_button(_("Download α as CSV"), lambda: alignment_matrix_csv(heat.data), file_name="alignment.csv",
                       mime="text/csv", help=_("Rows: target words; columns: source units; at this temperature."))
    st.markdown(views.target_sentence(row))
    table = cache.view(views.entropy, ref, **chosen)
    if (note := views.function_words_note(table.facts)) is not None:
        st.markdown(note)
    if every := lazy_expander(_("Entropy of α for every target word (diffuse: ≥ {p:.0%} of ln n)").format(
            p=DIFFUSE_FRACTION), "attn_entropy_open"):
        number = st.column_config.NumberColumn
        every.dataframe(table.data, hide_index=True, column_order=("target", "source", "max_weight", "entropy",
                     "fraction", "diffuse"), column_config={"target": _("target"), "source": _("strongest source"),
                     "diffuse": _("diffuse"), "max_weight": number(_("max α"), format="%.3f"), "entropy": number(
                     _("entropy (nats)"), format="%.3f"), "fraction": number(_("entropy / ln n"), format="percent")})
    if hf:
        with st.expander(_("Every head of decoder layer {layer}").format(layer=choice["layer"]), expanded=True):
            grid = cache.view(views.heads, ref, text=text, layer=choice["layer"])
            draw_view(grid, state_line(ref.label, text, layer=choice["layer"]), None, width=None)


if not vocab["attention"]:
    st.info(_("This model has no attention: its decoder sees the same fixed vector (the encoder's final "
              "state) at every step, so there is no alignment to draw. What that bottleneck costs long sentences "
              "is on the page BLEU by length; its teacher-forced and free-running runs on Exposure bias."))
    st.page_link("pages/bleu_length.py", label=_("BLEU against sentence length"), icon=":material/show_chart:")
else:
    st.subheader(_("Alignment"))
    alignment()
    hits = card.get("alignment") or {}
    if "content_hit_rate" in hits:
        st.caption(_("Alignment quality on {n:,} held-out content words: argmax α lands on the source word the "
                     "grammar says it translates {rate:.1%} of the time ({all_rate:.1%} over all {all_n:,} aligned "
                     "words).").format(n=hits["content_words"], rate=hits["content_hit_rate"],
                                       all_rate=hits["aligned_hit_rate"], all_n=hits["aligned_words"]))
    beside = sorted((c for c in cache.list_checkpoints("recurrent_lm") if c.name in memories.COMPARED),
                    key=lambda c: memories.COMPARED.index(c.name))
    # The translation read by recurrent LMs, in the alignment's shape: computed once opened (1-2 s a new sentence).
    if beside and result["translation"] and (box := lazy_expander(
            _("The translation in recurrent memories, beside the alignment"), "att_memories", icon=":material/blur_linear:")):
        try:
            maps = cache.view(memories.word_maps, ref, text=text, models=tuple((c.name, c.ref()) for c in beside))
        except ValueError as e:  # a word the LMs cannot read
            box.info(error_lead(e, _("The recurrent models cannot read this translation:")))
        else:
            with box:
                draw_view(maps, state_line(ref.label, text, translation=result["translation"]), exports,
                          width="content")
                st.caption(memories.word_caption(maps.facts))
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
