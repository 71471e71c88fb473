"""Word-vector evaluation page: the Google analogies, WordSim-353 and SimLex-999, with their coverage."""

from contextlib import nullcontext

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, view_button
from appkit.i18n import _
from appkit.sidebar import word_vectors
from seqviz.export import state_line
from seqviz.views import word2vec as views

st.title(_("Word-vector evaluation"))
st.caption(_("How often the vectors solve the Google analogies, and how well their cosines rank word pairs as "
             "people do (Spearman ρ on WordSim-353 and SimLex-999), counting the questions they cannot answer."))
if (picked := word_vectors()) is None:
    st.stop()
ref, wv = picked
exports = view_button("word2vec_evaluation", f"word2vec evaluation · {ref.label}", wv)

if st.button(_("Recompute on these vectors"), help=_("Takes a few seconds (Google analogies, WordSim, SimLex).")):
    st.session_state["w2v.recomputed"] = ref.key
fresh = st.session_state.get("w2v.recomputed") == ref.key
with st.spinner(_("Evaluating on the Google analogies, WordSim-353 and SimLex-999...")) if fresh else nullcontext():
    shown = cm.view(views.evaluation, ref, recompute=fresh)
f = shown.facts
if not f["report"]:
    st.info(_("These vectors have no stored evaluation: press Recompute."))
    st.stop()
st.caption(_("Recomputed just now.") if fresh else _("Computed when the checkpoint was made (card.json)."))
e1, e2, e3, e4 = st.columns(4)
if f["accuracy"] is not None:
    e1.metric(_("Google analogies (3CosAdd)"), f"{f['accuracy']:.1%}", _("on {covered:,} of {n:,} covered").format(
        covered=f["covered"], n=f["questions"]), delta_color="off", delta_arrow="off")
    e2.metric(_("Nearest-to-c control"), f"{f['nearest_c_accuracy']:.1%}",
              help=_("Answer = c's nearest neighbour, ignoring a and b (Linzen 2016)."))
for col, (name, label) in zip((e3, e4), views.BENCHMARKS):
    if f[f"{name}_spearman"] is not None:
        col.metric(label, f"{f[f'{name}_spearman']:.3f}", _("{oov} of {n} pairs OOV").format(
            oov=f[f"{name}_oov"], n=f[f"{name}_pairs"]), delta_color="off", delta_arrow="off")
st.info(f["note"])
if shown.spec is not None:
    draw_view(shown, state_line(ref.label, None, evaluation="recomputed" if fresh else "card.json"), exports)
