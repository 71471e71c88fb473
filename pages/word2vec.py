"""word2vec page: the analogy lab (3CosAdd/3CosMul), a word's neighbours, the he − she axis."""

import streamlit as st

from appkit import cache as cm
from appkit.draw import draw_view, view_button
from appkit.i18n import N_, _, error_lead
from appkit.sidebar import word_vectors
from appkit.state import forward_moved
from appkit.widgets import LAB, analogy_row, lazy_tabs
from seqviz.export import state_line
from seqviz.refs import ModelRef
from seqviz.tables import readable
from seqviz.views import word2vec as views
from seqviz.views.spec import Drawn
from seqviz.word2vec.analogy import DEFAULT_BIAS_WORDS, METHODS

LAB_TAB, NEIGHBOURS_TAB, BIAS_TAB = N_("Analogy lab"), N_("Neighbours"), N_("Bias axis")
# Tabs that are pages of their own now: an older link (?w2v_tab=Word map) opens that page, with its parameters.
forward_moved("w2v_tab", (N_("Word map"),), "pages/word_map.py", {"w2v_tab": None})
forward_moved("w2v_tab", (N_("Evaluation"),), "pages/word2vec_evaluation.py", {"w2v_tab": None})

st.title(_("word2vec: analogies and neighbours"))
st.caption(_("king − man + woman ≈ queen: the offset woman − man, added to king, lands near queen. Cosines are "
             "taken on unit-normalised vectors over the whole vocabulary."))
if (picked := word_vectors()) is None:
    st.stop()
ref, wv = picked
exports = view_button("word2vec", f"word2vec · {ref.label}", wv)


def fresh_view(view: list, heading: str) -> list:
    """The page's HTML-file list without an earlier run's ``heading`` (a fragment reruns on its own)."""
    view[:] = [s for s in view if s.heading != heading]
    return view


def looked_up(fn, ref: ModelRef, **choices) -> Drawn | None:
    """``cm.view(fn, ref, **choices)``; a warning (not a traceback) for words outside the vocabulary: None."""
    try:
        return cm.view(fn, ref, **choices)
    except ValueError as e:  # VocabularyError is one
        st.warning(error_lead(e, _("Cannot look this up:")))


def analogy_lab() -> None:
    """The Analogy lab tab: its query (bound to the URL) is also the one the Word map page draws."""
    a, b, c, expected = analogy_row()
    o1, o2, o3 = st.columns(3)
    method = o1.radio(_("Method"), list(METHODS.values()), horizontal=True, key="w2v_method", bind="query-params",
                      help=_("3CosAdd: argmax cos(d, b) − cos(d, a) + cos(d, c). 3CosMul: cos(d,b)·cos(d,c) / "
                             "(cos(d,a) + ε), cosines shifted to [0, 1] (Levy & Goldberg 2014), ε = 1e-6 as in gensim."))
    k = o2.slider(_("Top k"), 1, 30, LAB["w2v_k"], key="w2v_k", persist_state="session")
    exclude = o3.toggle(_("Exclude a, b, c from the answers"), LAB["w2v_exclude"], key="w2v_exclude",
                        persist_state="session", help=_("The usual convention. Without it b or c is often the 'answer'."))
    choices = {"a": a, "b": b, "c": c, "method": method, "k": int(k), "exclude": bool(exclude),
               "expected": expected or None}
    shown = looked_up(views.analogy, ref, **choices)
    if shown is None:
        return
    f = shown.facts
    m1, m2, m3 = st.columns(3)
    m1.metric(_("Top answer"), f["top"], _("score {score:.3f}").format(score=f["score"]), delta_color="off",
              delta_arrow="off")
    m2.metric(_("Its rank without exclusion"), f"{f['top_rank_without_exclusion']:,}",
              help=_("Where it would stand if a, b and c were allowed as answers."))
    if f["expected"]:
        rank = f"{f['expected_rank']:,}" if f["expected_rank"] is not None else _("a query word")
        m3.metric(_("Rank of '{word}'").format(word=f["expected"]), rank,
                  _("{rank:,} without exclusion").format(rank=f["expected_rank_without_exclusion"]),
                  delta_color="off", delta_arrow="off", help=_("Out of {n:,} words.").format(n=f["vocabulary"]))
    exports.footnote = state_line(ref.label, f"{a} : {b} :: {c} : ?", method=f["method"], top_k=k,
                                  exclude_abc=exclude, expected=f["expected"] or None)
    draw_view(shown, exports.footnote, exports)
    others = [o for o in cm.list_checkpoints("word2vec") if o.path != ref.path]
    if others:
        st.markdown(_("**The same query on the other shipped vectors** (e.g. CBOW vs skip-gram, same corpus "
                      "and settings)"))
    for col, other in zip(st.columns(max(len(others), 1)), others):
        try:
            res = cm.view(views.analogy, other.ref(), **choices)
        except (ValueError, OSError) as e:  # a word it does not hold, a folder it cannot read
            col.warning(f"{other.name}: {error_lead(e)}")
            continue
        g = res.facts
        col.caption(_("{model} · '{word}' rank {rank}").format(model=other.name, word=g["expected"],
                                                               rank=g["expected_rank"])
                    if g["expected"] else other.name)
        col.dataframe(readable(res.data, **views.ANALOGY_TABLE), hide_index=True)
    st.page_link("pages/word_map.py", label=_("This analogy on the word map"), icon=":material/bubble_chart:")


@st.fragment
def neighbours():
    word = st.text_input(_("Word"), "love", key="w2v_near", persist_state="page")
    many = st.slider(_("Neighbours"), 5, 50, 15, key="w2v_n_near", persist_state="page")
    shown = looked_up(views.nearest, ref, word=word, k=many)
    if shown is not None:
        draw_view(shown, state_line(ref.label, shown.facts["word"], neighbours=shown.facts["neighbours"]),
                  fresh_view(exports, shown.title))


@st.fragment
def bias_axis():
    st.caption(_("Projection of each word on the direction he − she (Bolukbasi et al. 2016). Caution: one word "
                 "pair is a crude estimate of a direction, small corpora make it noisy, and a projection shows "
                 "what the text associates, not what is true of anyone."))
    chosen = st.text_input(_("Words (comma-separated)"), ", ".join(DEFAULT_BIAS_WORDS), key="w2v_bias",
                           persist_state="page")
    shown = looked_up(views.bias_axis, ref, words=tuple(w.strip() for w in chosen.split(",") if w.strip()))
    if shown is not None and shown.spec is not None:
        if shown.facts["missing"]:
            st.caption(_("Not in the vocabulary: {words}").format(words=", ".join(shown.facts["missing"])))
        draw_view(shown, state_line(ref.label, None, axis=shown.facts["axis"]), fresh_view(exports, shown.title))


# Lazy tabs: only the open one runs (an analogy change reran all of them).
SECTIONS = {LAB_TAB: analogy_lab, NEIGHBOURS_TAB: neighbours, BIAS_TAB: bias_axis}
opened, tab = lazy_tabs(list(SECTIONS), "w2v_tab")
with tab:
    SECTIONS[opened]()
