"""Decoding strategies: one sentence's beam search as a tree, and greedy vs beam vs sampling over held-out pairs."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, draw_wide, view_button
from appkit.i18n import _
from appkit.pairs import exposure_opening, seed_sentence, sentence_inputs
from seqviz.export import state_line
from seqviz.tables import readable
from seqviz.views import decoding as views

STRATEGY_PAIRS = 200  # held-out pairs the strategies are measured on (exposure.json's)

st.title(_("Decoding strategies"))
st.caption(_("Greedy decoding keeps the one most likely token at each step; beam search keeps the k most likely "
             "prefixes and can recover a reference that greedy drops; sampling draws each token from the "
             "model's distribution. The same sentence as on the page *Exposure bias*."))
picked, base, pairs, step = exposure_opening()
ref = picked.ref  # shares the sentence and stage with Exposure bias
card = base.card or {}
at = ref.at(step)
exports = view_button("decoding", f"Decoding strategies · {ref.label}", base)
origin = (card.get("task"), pairs[:1])  # as on the Exposure bias page: another task's sentence would be all <unk>


def first_pair() -> tuple[str, str]:
    f = cm.view(views.first_pair, ref, pairs=pairs).facts
    return f["source"], f["reference"]


seed_sentence(origin, first_pair)
sentence = sentence_inputs()
src, reference = sentence["src"], sentence["reference"]


@st.fragment  # the beam size reruns this section only
def beam_tree():
    exports[:] = [s for s in exports if s.heading != "Beam tree"]
    beam_k = st.slider(_("Beam size k"), 1, 8, views.BEAM_K, key="eb_beam", bind="query-params")
    try:
        beam = cm.view(views.beam, at, **sentence, k=beam_k)
    except ValueError as e:
        st.info(_("Type a source sentence and its reference ({reason}).").format(reason=e))
        return
    b = beam.facts
    st.markdown(_("**Beam k={k}:** {output} — {verdict}").format(
        k=beam_k, output=b["best"], verdict=_("the reference stays on the beam.") if b["fell_off"] is None
        else _("the reference falls off the beam at step {step}.").format(step=b["fell_off"])))
    draw_wide(beam, state_line(ref.label, src, reference=reference, beam=beam_k, step=step), exports, "decoding_tree")
    if b["shown"] < b["steps"]:
        st.caption(_("The tree shows the first {shown} steps of {n}.").format(shown=b["shown"], n=b["steps"]))


@st.fragment  # the toggle reruns this section only
def strategies():
    exports[:] = [s for s in exports if s.heading != "Decoding strategies"]
    if not pairs and cm.view_of_path(views.menu, at) is None:
        st.info(_("This checkpoint keeps no held-out pairs (heldout.json) to measure on: give a pairs file above."))
        return
    label = _("BLEU and time per sentence of each strategy ({n} pairs of your file)") if pairs else \
        _("BLEU and time per sentence of each strategy (200 held-out pairs)")
    if not st.toggle(label.format(n=min(len(pairs), STRATEGY_PAIRS)), key="eb_strat", persist_state="page"):
        return
    choice = {"n": STRATEGY_PAIRS, "ks": (1, 2, 4, 8)}
    table = cm.view(views.strategies, at, **choice, pairs=pairs) if pairs else \
        cm.view_of_path(views.shipped_strategies, at, **choice) or cm.view(views.strategies, at, **choice)
    draw_view(table, state_line(ref.label, None, step=step, pairs=table.facts["pairs"]), exports, width="content",
              csv=False)
    st.dataframe(readable(table.data, **views.STRATEGY_TABLE), hide_index=True)


st.subheader(_("Beam search on this sentence"))
beam_tree()
st.subheader(_("Greedy vs beam vs sampling over many sentences"))
strategies()
picked.finish()  # after the charts: the sidebar says what was found; the model loads for the next move
