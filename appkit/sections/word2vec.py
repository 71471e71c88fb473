"""Sections of the word2vec page (pages/word2vec.py), one per tab; only the open tab runs."""

import streamlit as st

from appkit import models
from appkit.export import draw
from appkit.i18n import N_, _, error_lead
from appkit.models import ModelRef
from appkit.state import clamp, follow_link, keep_option
from seqviz.charts.word2vec import with_layers
from seqviz.export import state_line
from seqviz.introspect.projection import projector_tsv
from seqviz.introspect.wordmap import (DEFAULT, PROJECTIONS, analogy_map, count_range, map_csv, map_frame,
                                       offsets, perplexity_max, stored_word_map)
from seqviz.word2vec.analogy import DEFAULT_BIAS_WORDS, METHODS, analogy, bias_projection, compare_analogy, nearest
from seqviz.word2vec.evaluate import card_sections
from seqviz.word2vec.vectors import VocabularyError
from seqviz.charts import word2vec as word2vec_charts

LAB_TAB, NEIGHBOURS_TAB, EVALUATION_TAB, MAP_TAB, BIAS_TAB = (
    N_("Analogy lab"), N_("Neighbours"), N_("Evaluation"), N_("Word map"), N_("Bias axis"))
# The analogy the lab opens with; the word map draws the lab's analogy, read from these keys while the lab is closed.
ANALOGY = {"w2v_a": "man", "w2v_b": "woman", "w2v_c": "king", "w2v_expected": "queen"}
METHOD_KEY, EXCLUDE_KEY, DEFAULT_METHOD = "w2v_method", "w2v_exclude", next(iter(METHODS.values()))


def why_low(card: dict) -> str:
    """seqviz.word2vec.evaluate.why_low in the session's language: why a small corpus scores low."""
    corpus = card.get("corpus_info", {})
    size = (_("{words:,} words of {corpus} and a vocabulary of {vocabulary:,}").format(
        words=corpus["words"], corpus=corpus["corpus"], vocabulary=card.get("vocabulary", 0))
        if "words" in corpus else _("a corpus of unknown size"))
    return _("**Why the numbers are low.** These vectors learned from {size}, while the benchmarks ask about modern "
             "capitals, currencies and verb forms: most questions fall outside the vocabulary, and the ones left "
             "turn on words seen only a few times. Mikolov et al. (2013) trained on billions of words. **Why a hit "
             "is not proof.** Linzen (2016) shows that many analogies are solved by c's neighbourhood alone, and "
             "frequent words crowd every neighbourhood; excluding a, b and c also hides how often b or c is itself "
             "the nearest word. Compare the accuracy with the nearest-to-c control beside it.").format(size=size)



def fresh_view(view: list, heading: str) -> list:
    """The page's HTML-file list without an earlier run's ``heading`` (a fragment reruns on its own)."""
    view[:] = [s for s in view if s.heading != heading]
    return view


def words_or_warn(wv, fn, *args, **kw):
    """Run a lookup; show a warning (not a traceback) for words outside the vocabulary."""
    try:
        return fn(wv, *args, **kw)
    except (VocabularyError, ValueError) as e:
        st.warning(error_lead(e, _("Cannot look this up:")))



def asked(key: str, default):
    """A lab control's value where the lab tab is closed: kept by its URL binding, else in the URL, else its default."""
    return st.session_state[key] if key in st.session_state else st.query_params.get(key, default)


def lab_quad(wv) -> dict | None:
    """The lab's analogy as four words (d: the expected answer, else the top one) without drawing the lab: the
    word map's analogy while another tab is open. None (with a warning) if a word is not in the vocabulary."""
    a, b, c, expected = (asked(key, default) for key, default in ANALOGY.items())
    result = words_or_warn(wv, analogy, a, b, c, asked(METHOD_KEY, DEFAULT_METHOD), 1,
                           bool(st.session_state.get(EXCLUDE_KEY, True)), expected or None)
    return None if result is None else result.quad


def analogy_lab(ref: ModelRef, wv, exports: list) -> None:
    """The Analogy lab tab (not a fragment: its query is also the word map's, see ``lab_quad``)."""
    cols = st.columns(4)
    labels = ("a", _("b (a is to b ...)"), _("c (... as c is to ?)"), _("Expected answer (optional)"))
    a, b, c, expected = (col.text_input(label, default, key=key, bind="query-params")
                         for col, label, (key, default) in zip(cols, labels, ANALOGY.items()))
    o1, o2, o3 = st.columns(3)
    method = o1.radio(_("Method"), list(METHODS.values()), horizontal=True, key=METHOD_KEY, bind="query-params",
                      help=_("3CosAdd: argmax cos(d, b) − cos(d, a) + cos(d, c). 3CosMul: cos(d,b)·cos(d,c) / "
                             "(cos(d,a) + ε), cosines shifted to [0, 1] (Levy & Goldberg 2014)."))
    k = o2.slider(_("Top k"), 1, 30, 10, key="w2v_k", persist_state="page")
    exclude = o3.toggle(_("Exclude a, b, c from the answers"), True, key=EXCLUDE_KEY, persist_state="page",
                        help=_("The usual convention. Without it b or c is often the 'answer'."))
    result = words_or_warn(wv, analogy, a, b, c, method, k, exclude, expected or None)
    if result is not None:
        m1, m2, m3 = st.columns(3)
        top = result.table.iloc[0]
        m1.metric(_("Top answer"), top["word"], _("score {score:.3f}").format(score=top["score"]), delta_color="off",
                  delta_arrow="off")
        m2.metric(_("Its rank without exclusion"), f"{int(top['rank_without_exclusion']):,}",
                  help=_("Where it would stand if a, b and c were allowed as answers."))
        if result.expected:
            shown = f"{result.expected_rank:,}" if result.expected_rank is not None else _("a query word")
            m3.metric(_("Rank of '{word}'").format(word=result.expected), shown,
                      _("{rank:,} without exclusion").format(rank=result.expected_rank_without_exclusion),
                      delta_color="off", delta_arrow="off", help=_("Out of {n:,} words.").format(n=result.vocabulary))
        exports.footnote = state_line(ref.label, f"{a} : {b} :: {c} : ?", method=result.method, top_k=k,
                                      exclude_abc=exclude, expected=result.expected)
        draw(st, models.chart_spec(word2vec_charts.topk_chart, result.table, "score", [result.expected],
                                   f"{result.method}: {a} : {b} :: {c} : ?"),
             "Analogy", exports.footnote, result.table, exports)
        others = {o.name: (lambda o=o: models.model(o.ref())) for o in models.list_checkpoints("word2vec")
                  if o.path != ref.path}
        if others:
            st.markdown(_("**The same query on the other shipped vectors** (e.g. CBOW vs skip-gram, same corpus "
                          "and settings)"))
        compared = compare_analogy(others, a, b, c, method, k, exclude, expected or None)
        for col, (name, res) in zip(st.columns(max(len(others), 1)), compared.items()):
            if isinstance(res, Exception):
                col.warning(f"{name}: {error_lead(res)}")
                continue
            col.caption(_("{model} · '{word}' rank {rank}").format(model=name, word=res.expected, rank=res.expected_rank)
                        if res.expected else name)
            col.dataframe(res.table[["rank", "word", "score"]], hide_index=True)


@st.fragment
def neighbours(ref: ModelRef, wv, exports: list):
    word = st.text_input(_("Word"), "love", key="w2v_near", persist_state="page")
    many = st.slider(_("Neighbours"), 5, 50, 15, key="w2v_n_near", persist_state="page")
    table = words_or_warn(wv, nearest, word, many)
    if table is not None:
        draw(st, models.chart_spec(word2vec_charts.topk_chart, table, "cosine",
                                   title=_("Nearest to '{word}'").format(word=word.strip())), "Neighbours",
             state_line(ref.label, word.strip(), neighbours=len(table)), table, fresh_view(exports, "Neighbours"))


@st.fragment
def evaluate(ref: ModelRef, wv, exports: list):
    if st.button(_("Recompute on these vectors"), help=_("Takes a few seconds (Google analogies, WordSim, SimLex).")):
        st.session_state["w2v.recomputed"] = ref.key
    fresh = st.session_state.get("w2v.recomputed") == ref.key
    report = models.evaluate_vectors(ref, wv) if fresh else wv.card.get("evaluation")
    if not report:
        return st.info(_("These vectors have no stored evaluation: press Recompute."))
    st.caption(_("Recomputed just now.") if fresh else _("Computed when the checkpoint was made (card.json)."))
    an, (e1, e2, e3, e4) = report.get("analogies", {}), st.columns(4)
    if "accuracy" in an:
        e1.metric(_("Google analogies (3CosAdd)"), f"{an['accuracy']:.1%}", _("on {covered:,} of {n:,} covered").format(
            covered=an["covered"], n=an["questions"]), delta_color="off", delta_arrow="off")
        e2.metric(_("Nearest-to-c control"), f"{an['nearest_c_accuracy']:.1%}",
                  help=_("Answer = c's nearest neighbour, ignoring a and b (Linzen 2016)."))
    for col, name, label in ((e3, "wordsim353", "WordSim-353 ρ"), (e4, "simlex999", "SimLex-999 ρ")):
        r = report.get(name, {})
        if r.get("spearman") is not None:
            col.metric(label, f"{r['spearman']:.3f}", _("{oov} of {n} pairs OOV").format(oov=r["oov"], n=r["pairs"]),
                       delta_color="off", delta_arrow="off")
    st.info(why_low(wv.card))
    sections = card_sections(report)
    if len(sections):
        draw(st, models.chart_spec(word2vec_charts.sections_chart, sections), "Analogy accuracy by section",
             state_line(ref.label, None, evaluation="recomputed" if fresh else "card.json"), sections, fresh_view(exports, "Analogy accuracy by section"))


@st.fragment
def word_map(ref: ModelRef, wv, exports: list, quad):
    names = {"analogy": N_("PCA of the analogy"), "tsne": "t-SNE", "pca": "PCA"}
    name = lambda o: _(names[o])  # noqa: E731 - in the session's language, or the link's (follow_link)
    options = list(PROJECTIONS if quad else PROJECTIONS[1:])
    keep_option("w2v_proj", options)
    follow_link("w2v_proj", options, name)  # a link made in another language
    g1, g2, g3, g4 = st.columns([3, 2, 2, 1])
    how = g1.radio(_("Projection"), options, format_func=name, horizontal=True, key="w2v_proj", bind="query-params")
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
        st.caption(_("The analogy of the lab tab: {a} : {b} :: {c} : {d}.").format(**quad))
    stored = stored_word_map(wv)
    m = words_or_warn(wv, analogy_map, quad) if how == "analogy" else words_or_warn(wv,
        lambda _, *setting: stored if stored is not None and stored.matches(*setting) else models.word_map(
            ref, wv, *setting), n, how, float(perplexity), int(seed), tuple(w for w in (quad or {}).values() if w))
    if m is None:
        return
    frame = map_frame(m, wv)
    if how == "analogy":
        labels = list(frame["word"])
    else:
        near_c = words_or_warn(wv, nearest, quad["c"], 8) if quad else None
        labels = st.multiselect(_("Label these words"), wv.top_words(n), key="w2v_labels", accept_new_options=True,
                                default=[] if near_c is None else [w for w in near_c["word"] if w in wv.top_words(n)])
    title = _("{projection} of {n:,} words").format(projection=name(how), n=len(frame))
    spec = models.chart_spec(word2vec_charts.word_map_chart, frame, labels, None, title)  # kept while the analogy changes
    if quad:  # the analogy's arrows and words, built on their own (the map's 1,000 points were 0.2-0.3 s a word)
        spec = with_layers(spec, models.chart_spec(word2vec_charts.analogy_layers, frame, quad))
    draw(st, spec, "Word map", state_line(
        ref.label, None, words=len(frame), projection=how, seed=seed, trustworthiness=f"{m.trustworthiness:.3f}",
        perplexity=perplexity if how == "tsne" else None), frame, fresh_view(exports, "Word map"), csv=False)
    t1, t2, t3 = st.columns(3)
    t1.metric(_("Trustworthiness (5 neighbours)"), f"{m.trustworthiness:.3f}",
              help=_("1 = every word's map neighbours are also its neighbours in the vector space (Venna & Kaski)."))
    t2.metric(_("Projection time"), f"{m.seconds:.1f} s", _("stored with the checkpoint") if m is stored
              else _("computed"), delta_color="off", delta_arrow="off")
    on_map, full = offsets(frame, wv, quad)
    if on_map is not None:
        t3.metric(_("Cosine of the two offsets on this map"), f"{on_map:.2f}", _("{full:.2f} in all {dim} dimensions")
                  .format(full=full, dim=wv.dim), delta_color="off", delta_arrow="off",
                  help=_("cos(b − a, d − c) of the two arrows: 1 = parallel, 0 = at right angles."))
    tsv = lambda: projector_tsv(wv.vectors[[wv.index[w] for w in m.words]], frame[["word"]])  # noqa: E731 on click
    d1, d2, d3 = st.columns(3)
    d1.download_button(_("Map points (CSV)"), lambda: map_csv(frame), "wordmap.csv", on_click="ignore")
    d2.download_button(_("Projector vectors (TSV)"), lambda: tsv()[0], "vectors.tsv", on_click="ignore")
    d3.download_button(_("Projector labels (TSV)"), lambda: tsv()[1], "metadata.tsv", on_click="ignore")


@st.fragment
def bias_axis(ref: ModelRef, wv, exports: list):
    st.caption(_("Projection of each word on the direction he − she (Bolukbasi et al. 2016). Caution: one word "
                 "pair is a crude estimate of a direction, small corpora make it noisy, and a projection shows "
                 "what the text associates, not what is true of anyone."))
    chosen = st.text_input(_("Words (comma-separated)"), ", ".join(DEFAULT_BIAS_WORDS), key="w2v_bias",
                           persist_state="page")
    out = words_or_warn(wv, bias_projection, chosen.split(","))
    if out is not None and len(out[0]):
        if out[1]:
            st.caption(_("Not in the vocabulary: {words}").format(words=", ".join(out[1])))
        draw(st, models.chart_spec(word2vec_charts.bias_chart, out[0]), "Bias axis",
             state_line(ref.label, None, axis="he − she"), out[0], fresh_view(exports, "Bias axis"))
