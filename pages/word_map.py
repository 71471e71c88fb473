"""Word map page: the vocabulary in 2-D (t-SNE, PCA, or a PCA of one analogy) with the analogy's offset arrows."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, view_button
from appkit.i18n import _, error_lead
from appkit.sidebar import word_vectors
from appkit.state import clamp, follow_link, keep_option
from appkit.widgets import analogy_row, lab_setting
from seqviz.charts.word2vec import with_layers
from seqviz.export import state_line
from seqviz.introspect.wordmap import DEFAULT, PROJECTIONS, count_range, map_csv, perplexity_max
from seqviz.views import word2vec as views
from seqviz.views.spec import Drawn

st.title(_("Word map"))
st.caption(_("t-SNE keeps each word's neighbours, not directions, so it bends the analogy's offsets; the analogy "
             "view is a PCA fitted on the four words and their 5 nearest neighbours each (as in Mikolov et al. "
             "2013): a linear map, but of two directions only, so the offsets' cosine on it can differ from their "
             "cosine in all dimensions (compared under the map)."))
if (picked := word_vectors()) is None:
    st.stop()
ref, wv = picked
exports = view_button("word_map", f"Word map · {ref.label}", wv)


def analogy_quad() -> tuple:
    """The analogy drawn on the map as (a, b, c, d) (d: the expected answer, else the lab's top one); () (with
    a warning) if a word is not in the vocabulary. Its boxes are the Analogy lab's, and so is the method."""
    a, b, c, expected = analogy_row()
    try:
        shown = cm.view(views.analogy, ref, a=a, b=b, c=c, method=lab_setting("w2v_method"),
                        k=int(lab_setting("w2v_k")), exclude=bool(lab_setting("w2v_exclude")), expected=expected or None)
    except ValueError as e:  # VocabularyError is one
        st.warning(error_lead(e, _("Cannot look this up:")))
        return ()
    return tuple(shown.facts[r] for r in "abcd")


def projection(method: str) -> str:
    """A projection's name in the session's language, or the link's (follow_link)."""
    return _(views.PROJECTIONS[method])


@st.fragment
def word_map(quad: tuple):
    exports[:] = []  # a fragment's rerun replaces its chart in the HTML file
    options = list(PROJECTIONS if quad else PROJECTIONS[1:])
    keep_option("w2v_proj", options)
    follow_link("w2v_proj", options, projection)  # a link made in another language
    g1, g2, g3, g4 = st.columns([3, 2, 2, 1])
    how = g1.radio(_("Projection"), options, format_func=projection, horizontal=True, key="w2v_proj",
                   bind="query-params")
    lo, hi, default, step = count_range(len(wv))
    clamp("w2v_n", lo, hi)  # a smaller vocabulary than the last one: pull the kept count into range
    n = g2.slider(_("Words (most frequent)"), lo, hi, default, step, key="w2v_n", bind="query-params",
                  disabled=how == "analogy")
    clamp("w2v_perplexity", 2, perplexity_max(n))
    perplexity = g3.slider(_("Perplexity"), 2, perplexity_max(n), min(int(DEFAULT["perplexity"]), perplexity_max(n)),
                           key="w2v_perplexity", bind="query-params", disabled=how != "tsne")
    seed = g4.number_input(_("Seed"), 0, 10_000, DEFAULT["seed"], key="w2v_seed", bind="query-params",
                           disabled=how != "tsne")
    if quad:
        st.caption(_("The analogy drawn: {a} : {b} :: {c} : {d} (d: the expected answer, else the lab's top "
                     "one).").format(**dict(zip("abcd", quad))))
    setting = ({"method": how, "quad": quad} if how == "analogy" else
               {"method": how, "n": n, "perplexity": float(perplexity), "seed": int(seed), "quad": quad})
    with st.spinner(_("Computing the word map...")):
        try:
            points = cm.view(views.word_map, ref, **setting)
        except ValueError as e:
            return st.warning(error_lead(e, _("Cannot look this up:")))
    f = points.facts
    if how != "analogy":
        labels = st.multiselect(_("Label these words"), list(f["top_words"]), key="w2v_labels",
                                accept_new_options=True, default=list(f["labels"]))
        if tuple(labels) != f["labels"]:
            points = cm.view(views.word_map, ref, **setting, labels=tuple(labels))
    spec = points.spec  # kept while the analogy changes
    if quad:  # the analogy's arrows and words, a view of their own (the map's 1,000 points were 0.2-0.3 s a word)
        overlay = cm.view(views.analogy_layers, ref, **setting)
        spec = with_layers(spec, overlay.spec)
    draw_view(Drawn(spec, points.data, f, points.title), state_line(
        ref.label, None, words=f["words"], projection=how, seed=seed, trustworthiness=f"{f['trustworthiness']:.3f}",
        perplexity=perplexity if how == "tsne" else None), exports, csv=False)
    t1, t2, t3 = st.columns(3)
    t1.metric(_("Trustworthiness (5 neighbours)"), f"{f['trustworthiness']:.3f}",
              help=_("1 = every word's map neighbours are also its neighbours in the vector space (Venna & Kaski)."))
    t2.metric(_("Projection time"), f"{f['seconds']:.1f} s", _("stored with the checkpoint") if f["stored"]
              else _("computed"), delta_color="off", delta_arrow="off")
    if quad and overlay.facts["on_map"] is not None:
        o = overlay.facts
        t3.metric(_("Cosine of the two offsets on this map"), f"{o['on_map']:.2f}", _("{full:.2f} in all {dim} "
                  "dimensions").format(full=o["full"], dim=o["dim"]), delta_color="off", delta_arrow="off",
                  help=_("cos(b − a, d − c) of the two arrows: 1 = parallel, 0 = at right angles."))
        st.caption(views.parallel_note(o["on_map"], o["full"], o["dim"]))
    tsv = lambda: cm.view(views.projector, ref, **setting).facts  # noqa: E731 - made on a click
    d1, d2, d3 = st.columns(3)
    d1.download_button(_("Map points (CSV)"), lambda: map_csv(points.data), "wordmap.csv", on_click="ignore")
    d2.download_button(_("Projector vectors (TSV)"), lambda: tsv()["vectors"], "vectors.tsv", on_click="ignore")
    d3.download_button(_("Projector labels (TSV)"), lambda: tsv()["labels"], "metadata.tsv", on_click="ignore")


word_map(analogy_quad())
