"""BLEU by length: the bottleneck of an encoder-decoder without attention, stored with the checkpoints or measured now."""

import streamlit as st

from appkit import cache
from appkit.draw import draw_view, view_button
from appkit.i18n import _
from appkit.pairs import in_use, own_pairs
from appkit.sidebar import checkpoint_picker
from seqviz.card_lines import synthetic_note
from seqviz.export import state_line
from seqviz.tables import readable
from seqviz.views import attention as views
from seqviz.views.pairs import NEEDS_PAIRS

st.title(_("BLEU against sentence length"))
st.caption(_("Without attention the whole source sentence must pass through one fixed vector, the encoder's last "
             "state; the longer the sentence, the more of it is lost (Cho et al. 2014; Bahdanau et al. 2015, "
             "fig. 2). Corpus BLEU (sacrebleu) of greedy translations, by source length in the model's units."))
ref = checkpoint_picker("seq2seq", prefer="zh-en-attention-gru")  # the lesson's model, unless one was chosen
if ref is None:
    st.stop()
model = cache.model(ref)
if cache.view(views.vocabulary, ref).facts["hf"]:
    st.info(_("These curves compare seqviz's recurrent encoder-decoders and plain PyTorch ones; a transformers "
              "model's alignment is on the Attention page."))
    st.stop()
exports = view_button("bleu_length", f"BLEU by length · {ref.label}", model)
card = model.card or {}
name = card.get("name") or ref.label
if (generated := synthetic_note(card)) is not None:
    st.caption(generated)
pairs = own_pairs(ref, "att_pairs")  # a pairs file's, else the model's own held-out pairs

st.subheader(_("As measured when each checkpoint was made"))
task = card.get("task")
cards = {c.name: c.card for c in cache.list_checkpoints("seq2seq") if task and c.card.get("task") == task}
cards.setdefault(name, card)
curves = cache.view_of_data(views.bottleneck, cards=cards)
if curves.spec is None:
    st.info(_("No BLEU-by-length table is stored with this checkpoint; measure one below."))
else:
    draw_view(curves, state_line(None, None, task=task, models=", ".join(curves.facts["models"])), exports)
    st.caption(_("Each line as stored in the checkpoint's card.json, on its own held-out sentences."))
    st.dataframe(views.stored_bleu_text(cache.view_of_data(views.bleu_table, cards=cards).data), hide_index=True)


@st.fragment  # the number of pairs and the button rerun this section only
def measured():
    st.subheader(_("Measured now"))
    n = st.select_slider(_("Held-out pairs to measure on"), [100, 250, 500, 1000], 250, key="att_n_recompute",
                         format_func="{:,}".format)
    where = _("your pairs file") if pairs else _("the model's held-out pairs")
    if not pairs and not st.button(_("Measure BLEU by length now"), key="att_measure",
                                   help=_("Greedy translations of {model} on {where}.").format(model=name, where=where)):
        return
    try:
        with st.spinner(_("Translating the held-out sentences...")):
            table = cache.view(views.measured_bleu, ref, n=n, pairs=pairs)
    except ValueError as e:
        st.info(_("Give a pairs file above to measure on: this model keeps no held-out pairs (heldout.json).")
                if str(e) == NEEDS_PAIRS else str(e))
        return
    if table.spec is not None:
        draw_view(table, state_line(ref.label, None, pairs=table.facts["pairs"], pairs_file=in_use()), exports,
                  csv=False)
    st.caption(_("Greedy translations of {n:,} pairs of {where}, scored now.").format(n=table.facts["pairs"],
                                                                                     where=where))
    st.dataframe(readable(table.data, **views.MEASURED_TABLE), hide_index=True)


measured()
