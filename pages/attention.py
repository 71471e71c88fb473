"""Attention page: live translation and its alignment (ours or a transformers model's), the bottleneck."""

import streamlit as st

from appkit import models
from appkit.i18n import _, error_lead
from appkit.export import draw, view_button
from appkit.sections import attention as sec
from appkit.sidebar import checkpoint_picker
from seqviz.export import state_line
from seqviz.hf_seq2seq import HFSeq2Seq
from seqviz.introspect.attention import bleu_curves, bleu_table, display, example_sentences, known_source_words
from seqviz.charts import attention as attention_charts

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
card, heldout = model.card or {}, models.heldout(ref)
task, examples = card.get("task", "zh-en"), example_sentences(heldout)
default = "我昨天在公园吃了一个苹果" if task == "zh-en" or not examples else next(iter(examples.values()))[0]
if st.session_state.get("att_task") != task:  # another task's sentence would be all <unk>
    st.session_state["att_task"], st.session_state["att_sentence"] = task, default


def use_example():
    if st.session_state.get("att_example"):
        st.session_state["att_sentence"] = examples[st.session_state["att_example"]][0]


left, right = st.columns([3, 2])
right.selectbox(_("Held-out sentence"), list(examples), format_func=sec.example_label, index=None, key="att_example",
                on_change=use_example, placeholder=_("pick one (never seen in training)"), disabled=not examples)
text = left.text_input(_("Source sentence"), key="att_sentence", bind="query-params",
                       help=_("Chinese with or without spaces; units the model does not know stay in as <unk>."))
known = [] if hf else known_source_words(model)
if known:
    with st.expander(_("The {n} source words this model knows").format(n=len(known))):
        st.markdown(" ".join(f"`{w}`" for w in known))
        st.caption(_("Build a sentence from these; anything else is read as <unk>."))
try:
    result = models.hf_translate(ref, text or "") if hf else models.translate(ref, text or "")
except ValueError as e:
    st.info(error_lead(e, _("Cannot translate this:")))
    st.stop()
if result["unknown"]:
    st.warning(_("Not in the model's vocabulary (kept as <unk>, still translated): {words}").format(
        words=", ".join(repr(u) for u in result["unknown"])))
st.markdown(_("**Source units:** {units}").format(units=" · ".join(f"`{p}`" for p in display(result["pieces"]))))
st.markdown(_("**Greedy translation:** {translation}").format(translation=result["translation"] or _("(empty)")))
reference = {src.replace(" ", ""): r for src, r in examples.values()}.get((text or "").replace(" ", ""))
if reference is not None:
    same = reference.replace(" ", "") == result["translation"].replace(" ", "")
    st.caption(_("Reference: {reference} — {verdict}").format(
        reference=reference, verdict=_("exact match") if same else _("differs")))

if not hf and model.attn is None:
    st.info(_("This model has no attention: its decoder sees the same fixed vector (the encoder's final "
              "state) at every step, so there is no alignment to draw. See the bottleneck below."))
else:
    st.subheader(_("Alignment"))
    sec.alignment(ref, text, result, hf, exports)
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
    draw(st, models.chart_spec(attention_charts.bleu_vs_length, curves), "BLEU against sentence length",
         state_line(None, None, task=task, models=", ".join(cards)), curves, exports)
    st.caption(_("Corpus BLEU (sacrebleu) of greedy translations of held-out sentences, by source length, "
                 "as measured when each checkpoint was made (Bahdanau et al. 2015, fig. 2). Without attention "
                 "every sentence must fit through one vector, and long sentences stop fitting."))
    st.dataframe(bleu_table(curves))
if heldout:
    sec.recompute(model, card, heldout)
