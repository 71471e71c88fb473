"""word2vec page: analogy lab (3CosAdd/3CosMul), neighbours, honest evaluation, the word map, the bias axis."""

import hashlib
from contextlib import nullcontext

import streamlit as st

from appkit import models as cm
from appkit.export import view_button
from appkit.i18n import N_, _, error_lead
from appkit.models import Drawn, ModelRef
from appkit.sidebar import checkpoint_picker
from appkit.state import clamp, follow_link, keep_option
from appkit.widgets import draw_view, lazy_tabs
from seqviz.charts.word2vec import with_layers
from seqviz.checkpoints import CheckpointError
from seqviz.export import state_line
from seqviz.introspect.wordmap import DEFAULT, PROJECTIONS, count_range, map_csv, perplexity_max
from seqviz.views import word2vec as views
from seqviz.word2vec.analogy import DEFAULT_BIAS_WORDS, METHODS
from seqviz.word2vec.formats import MAX_UPLOAD_BYTES

MAX_WORDS_READ = 500_000  # GloVe's 400k words fit; 500k x 300 takes ~1.2 GB with the unit-length copy
LAB_TAB, NEIGHBOURS_TAB, EVALUATION_TAB, MAP_TAB, BIAS_TAB = (
    N_("Analogy lab"), N_("Neighbours"), N_("Evaluation"), N_("Word map"), N_("Bias axis"))
# The analogy the lab opens with; the word map draws the lab's analogy, read from these keys while the lab is closed.
ANALOGY = {"w2v_a": "man", "w2v_b": "woman", "w2v_c": "king", "w2v_expected": "queen"}
METHOD_KEY, EXCLUDE_KEY, K_KEY, DEFAULT_METHOD, DEFAULT_K = "w2v_method", "w2v_exclude", "w2v_k", \
    next(iter(METHODS.values())), 10

st.title(_("word2vec: analogies and the word map"))
st.caption(_("king − man + woman ≈ queen: the offset woman − man, added to king, lands near queen. Cosines are "
             "taken on unit-normalised vectors over the whole vocabulary."))
limit = int(st.sidebar.number_input(
    _("Words to read from a vector file"), 1_000, MAX_WORDS_READ, 100_000, 10_000, key="w2v_limit",
    help=_("Only the most frequent N words (the first N rows of a word2vec, GloVe or fastText file) are read; "
           "a large file is never read whole. Shipped checkpoints are read whole.")))
ref = checkpoint_picker("word2vec", limit=limit)
wv = cm.model(ref) if ref is not None else None
upload = st.sidebar.file_uploader(_("Or open a word2vec/GloVe/fastText vector file (.bin, .txt, .vec; ≤ {mb} "
                                    "MB)").format(mb=MAX_UPLOAD_BYTES >> 20), type=["bin", "txt", "vec"], key="w2v_file")
if upload is not None:
    data = upload.getvalue()
    digest = hashlib.sha1(data).hexdigest()
    try:
        wv = cm.uploaded_vectors(digest, data, upload.name, limit)
        ref = ModelRef(upload.name, digest, "word2vec", limit=limit, family="word2vec", label=upload.name,
                       source="Upload")  # names the uploaded vectors in the caches below
        cm.hold(ref, wv)  # the views find the upload by this ref
        st.sidebar.caption(_("Using **{name}** ({n:,} words × {dim}).").format(name=upload.name, n=len(wv),
                                                                              dim=wv.dim))
    except CheckpointError as e:
        st.error(error_lead(e, _("Could not read that vector file:")))
if wv is None:
    st.stop()
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


def asked(key: str, default):
    """A lab control's value where the lab tab is closed: kept by its URL binding, else in the URL, else its default."""
    return st.session_state[key] if key in st.session_state else st.query_params.get(key, default)


def lab_choices(a, b, c, expected, method, k, exclude) -> dict:
    return {"a": a, "b": b, "c": c, "method": method, "k": int(k), "exclude": bool(exclude),
            "expected": expected or None}


def lab_quad() -> tuple:
    """The lab's analogy as (a, b, c, d) (d: the expected answer, else the top one) without drawing the lab: the
    word map's analogy while another tab is open. () (with a warning) if a word is not in the vocabulary."""
    a, b, c, expected = (asked(key, default) for key, default in ANALOGY.items())
    shown = looked_up(views.analogy, ref, **lab_choices(a, b, c, expected, asked(METHOD_KEY, DEFAULT_METHOD),
                                                        st.session_state.get(K_KEY, DEFAULT_K),
                                                        st.session_state.get(EXCLUDE_KEY, True)))
    return () if shown is None else tuple(shown.facts[r] for r in "abcd")


def analogy_lab() -> None:
    """The Analogy lab tab (not a fragment: its query is also the word map's, see ``lab_quad``)."""
    cols = st.columns(4)
    labels = ("a", _("b (a is to b ...)"), _("c (... as c is to ?)"), _("Expected answer (optional)"))
    a, b, c, expected = (col.text_input(label, default, key=key, bind="query-params")
                         for col, label, (key, default) in zip(cols, labels, ANALOGY.items()))
    o1, o2, o3 = st.columns(3)
    method = o1.radio(_("Method"), list(METHODS.values()), horizontal=True, key=METHOD_KEY, bind="query-params",
                      help=_("3CosAdd: argmax cos(d, b) − cos(d, a) + cos(d, c). 3CosMul: cos(d,b)·cos(d,c) / "
                             "(cos(d,a) + ε), cosines shifted to [0, 1] (Levy & Goldberg 2014)."))
    k = o2.slider(_("Top k"), 1, 30, DEFAULT_K, key=K_KEY, persist_state="page")
    exclude = o3.toggle(_("Exclude a, b, c from the answers"), True, key=EXCLUDE_KEY, persist_state="page",
                        help=_("The usual convention. Without it b or c is often the 'answer'."))
    choices = lab_choices(a, b, c, expected, method, k, exclude)
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
        col.dataframe(res.data[["rank", "word", "score"]], hide_index=True)


@st.fragment
def neighbours():
    word = st.text_input(_("Word"), "love", key="w2v_near", persist_state="page")
    many = st.slider(_("Neighbours"), 5, 50, 15, key="w2v_n_near", persist_state="page")
    shown = looked_up(views.nearest, ref, word=word, k=many)
    if shown is not None:
        draw_view(shown, state_line(ref.label, shown.facts["word"], neighbours=shown.facts["neighbours"]),
                  fresh_view(exports, shown.title))


@st.fragment
def evaluate():
    if st.button(_("Recompute on these vectors"), help=_("Takes a few seconds (Google analogies, WordSim, SimLex).")):
        st.session_state["w2v.recomputed"] = ref.key
    fresh = st.session_state.get("w2v.recomputed") == ref.key
    with st.spinner(_("Evaluating on the Google analogies, WordSim-353 and SimLex-999...")) if fresh else nullcontext():
        shown = cm.view(views.evaluation, ref, recompute=fresh)
    f = shown.facts
    if not f["report"]:
        return st.info(_("These vectors have no stored evaluation: press Recompute."))
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
        draw_view(shown, state_line(ref.label, None, evaluation="recomputed" if fresh else "card.json"),
                  fresh_view(exports, shown.title))


def projection(method: str) -> str:
    """A projection's name in the session's language, or the link's (follow_link)."""
    return _(views.PROJECTIONS[method])


@st.fragment
def word_map(quad: tuple):
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
    st.caption(_("t-SNE keeps each word's neighbours, not directions, so it bends the analogy's parallel offsets; "
                 "the analogy view is a PCA fitted on the four words and their 5 nearest neighbours each (as in "
                 "Mikolov et al. 2013), a linear map that keeps parallel offsets parallel."))
    if quad:
        st.caption(_("The analogy of the lab tab: {a} : {b} :: {c} : {d}.").format(**dict(zip("abcd", quad))))
    setting = ({"method": how, "quad": quad} if how == "analogy" else
               {"method": how, "n": n, "perplexity": float(perplexity), "seed": int(seed), "quad": quad})
    with st.spinner(_("Computing the word map...")):
        points = looked_up(views.word_map, ref, **setting)
    if points is None:
        return
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
        perplexity=perplexity if how == "tsne" else None), fresh_view(exports, points.title), csv=False)
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
    tsv = lambda: cm.view(views.projector, ref, **setting).facts  # noqa: E731 - made on a click
    d1, d2, d3 = st.columns(3)
    d1.download_button(_("Map points (CSV)"), lambda: map_csv(points.data), "wordmap.csv", on_click="ignore")
    d2.download_button(_("Projector vectors (TSV)"), lambda: tsv()["vectors"], "vectors.tsv", on_click="ignore")
    d3.download_button(_("Projector labels (TSV)"), lambda: tsv()["labels"], "metadata.tsv", on_click="ignore")


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


# Lazy tabs: only the open one runs (an analogy change reran all five); the word map reads the lab's analogy.
SECTIONS = {LAB_TAB: analogy_lab, NEIGHBOURS_TAB: neighbours, EVALUATION_TAB: evaluate,
            MAP_TAB: lambda: word_map(lab_quad()), BIAS_TAB: bias_axis}
opened, tab = lazy_tabs(list(SECTIONS), "w2v_tab")
with tab:
    SECTIONS[opened]()
