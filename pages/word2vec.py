"""word2vec page: analogy lab (3CosAdd/3CosMul), neighbours, honest evaluation, the word map, the bias axis."""

import hashlib

import streamlit as st

from appkit import models
from appkit.i18n import _, error_lead
from appkit.export import view_button
from appkit.models import ModelRef
from appkit.sections import word2vec as sec
from appkit.sidebar import checkpoint_picker
from appkit.widgets import lazy_tabs
from seqviz.checkpoints import CheckpointError
from seqviz.word2vec.formats import MAX_UPLOAD_BYTES

MAX_WORDS_READ = 500_000  # GloVe's 400k words fit; 500k x 300 takes ~1.2 GB with the unit-length copy
st.title(_("word2vec: analogies and the word map"))
st.caption(_("king − man + woman ≈ queen: the offset woman − man, added to king, lands near queen. Cosines are "
             "taken on unit-normalised vectors over the whole vocabulary."))
limit = int(st.sidebar.number_input(
    _("Words to read from a vector file"), 1_000, MAX_WORDS_READ, 100_000, 10_000, key="w2v_limit",
    help=_("Only the most frequent N words (the first N rows of a word2vec, GloVe or fastText file) are read; "
           "a large file is never read whole. Shipped checkpoints are read whole.")))
ref = checkpoint_picker("word2vec", limit=limit)
wv = models.model(ref) if ref is not None else None
upload = st.sidebar.file_uploader(_("Or open a word2vec/GloVe/fastText vector file (.bin, .txt, .vec; ≤ {mb} "
                                    "MB)").format(mb=MAX_UPLOAD_BYTES >> 20), type=["bin", "txt", "vec"], key="w2v_file")
if upload is not None:
    data = upload.getvalue()
    digest = hashlib.sha1(data).hexdigest()
    try:
        wv = models.uploaded_vectors(digest, data, upload.name, limit)
        ref = ModelRef(upload.name, digest, "word2vec", limit=limit, family="word2vec", label=upload.name,
                       source="Upload")  # names the uploaded vectors in the caches below
        st.sidebar.caption(_("Using **{name}** ({n:,} words × {dim}).").format(name=upload.name, n=len(wv),
                                                                              dim=wv.dim))
    except CheckpointError as e:
        st.error(error_lead(e, _("Could not read that vector file:")))
if wv is None:
    st.stop()
exports = view_button("word2vec", f"word2vec · {ref.label}", wv)

# Lazy tabs: only the open one runs (an analogy change reran all five); the word map reads the lab's analogy.
SECTIONS = {sec.LAB_TAB: sec.analogy_lab, sec.NEIGHBOURS_TAB: sec.neighbours, sec.EVALUATION_TAB: sec.evaluate,
            sec.MAP_TAB: lambda *args: sec.word_map(*args, sec.lab_quad(wv)), sec.BIAS_TAB: sec.bias_axis}
opened, tab = lazy_tabs(list(SECTIONS), "w2v_tab")
with tab:
    SECTIONS[opened](ref, wv, exports)
