"""Views of word vectors: an analogy's top k, a word's neighbours, the evaluation, the word map, the bias axis.

Each is ``fn(model, **choices) -> View`` (``seqviz.views``) on a ``WordVectors``; the three word2vec pages, the
stations lesson's analogy step and ``seqviz figure word2vec`` draw them. A word the vocabulary does
not hold raises ``VocabularyError`` (a ValueError naming it). The word map is computed once per
setting (``memo``) and shared by the map's points (``word_map``), the analogy drawn on it
(``analogy_layers``, a chart of its own that the page layers on the points) and the projector files;
the map a checkpoint ships (``wordmap.json``) is used when its settings match. Importing this module
costs neither Altair nor pandas: the views import what they run.
"""

from __future__ import annotations

from typing import TypedDict

from seqviz.text import N_, _
from seqviz.views import View, memo
from seqviz.views.registry import Figure, declare

# The word map's projections, as the page's radio names them ("t-SNE" and "PCA" are not translated).
PROJECTIONS = {"analogy": N_("PCA of the analogy"), "tsne": "t-SNE", "pca": "PCA"}
MAP_LABELS = 8  # c's nearest words labelled on a t-SNE or PCA map at first
BENCHMARKS = (("wordsim353", "WordSim-353 ρ"), ("simlex999", "SimLex-999 ρ"))  # the similarity scores shown


def projection_name(method: str) -> str:
    """A projection's name in the installed language."""
    return _(PROJECTIONS[method]) if method in PROJECTIONS else method


def _quad(words) -> dict:
    """(a, b, c, d) as the {"a", "b", "c", "d"} mapping the word map's functions take (empty words dropped)."""
    return {role: w for role, w in zip("abcd", words) if w}


# ------------------------------------------------------------------ analogies and neighbours
class AnalogyFacts(TypedDict):
    a: str  # a, b, c as read
    b: str  # ...
    c: str  # ...
    d: str  # the expected answer, else the top one: the analogy the word map draws
    method: str  # "3CosAdd" or "3CosMul"
    k: int  # answers shown
    exclude: bool  # a, b and c left out of the answers
    top: str  # the top answer
    score: float  # its score
    top_rank_without_exclusion: int  # its rank with a, b and c kept
    expected: str  # the expected answer ("" when none was given)
    expected_rank: int | None  # its rank (None: not ranked, or none given)
    expected_rank_without_exclusion: int | None  # ... with a, b and c kept
    expected_score: float | None  # its score
    vocabulary: int  # words searched


@declare(model="word2vec", facts=AnalogyFacts)
def analogy(model, a: str, b: str, c: str, method: str = "3CosAdd", k: int = 10, exclude: bool = True,
            expected: str | None = None) -> View:
    """a : b :: c : ? over the whole vocabulary by 3CosAdd or 3CosMul: the ``k`` best answers as bars (the
    expected answer in red), a, b and c left out of the answers when ``exclude``. Facts: the top answer, its
    score and rank without the exclusion, the expected answer's ranks and score, and ``d`` (the expected
    answer, else the top one: the analogy the word map draws)."""
    from seqviz.charts.word2vec import topk_chart
    from seqviz.word2vec.analogy import analogy as solve

    res = solve(model, a, b, c, method, int(k), bool(exclude), expected or None)
    top = res.table.iloc[0]
    chart = topk_chart(res.table, "score", [res.expected], f"{res.method}: {a} : {b} :: {c} : ?")
    return View(chart, res.table, {
        "a": res.a, "b": res.b, "c": res.c, "d": res.quad["d"], "method": res.method, "k": int(k),
        "exclude": bool(exclude), "top": str(top["word"]), "score": float(top["score"]),
        "top_rank_without_exclusion": int(top["rank_without_exclusion"]), "expected": res.expected or "",
        "expected_rank": res.expected_rank, "expected_rank_without_exclusion": res.expected_rank_without_exclusion,
        "expected_score": res.expected_score, "vocabulary": res.vocabulary}, "Analogy")


# An analogy's answers as a reader reads them (``seqviz.tables.readable``'s arguments): every score to 3 decimals.
ANALOGY_TABLE = {"columns": {"rank": N_("rank"), "word": N_("Word"), "score": N_("score")}, "digits": {"score": 3}}


class NearestFacts(TypedDict):
    word: str  # the word asked about
    neighbours: int  # words shown
    top: str  # the nearest ("" when none)


@declare(model="word2vec", facts=NearestFacts)
def nearest(model, word: str, k: int = 15) -> View:
    """The ``k`` words with the highest cosine to ``word`` (itself left out), as bars."""
    from seqviz.charts.word2vec import topk_chart
    from seqviz.word2vec.analogy import nearest as near

    table = near(model, word, int(k))
    chart = topk_chart(table, "cosine", title=_("Nearest to '{word}'").format(word=word.strip()))
    return View(chart, table, {"word": word.strip(), "neighbours": len(table),
                               "top": str(table["word"].iloc[0]) if len(table) else ""}, "Neighbours")


# ------------------------------------------------------------------ evaluation
def _why_low(card: dict) -> str:
    """seqviz.word2vec.evaluate.why_low in the installed language: why a small corpus scores low."""
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


class EvaluationFacts(TypedDict):
    report: bool  # there are scores (the card's or recomputed)
    recomputed: bool  # computed now on these vectors
    note: str  # why a small corpus scores low, in the installed language
    accuracy: float | None  # the Google analogies' accuracy (3CosAdd) on the questions covered
    covered: int | None  # questions whose four words are in the vocabulary
    questions: int | None  # questions in all
    nearest_c_accuracy: float | None  # the control: c's nearest word as the answer
    wordsim353_spearman: float | None  # WordSim-353's Spearman ρ
    wordsim353_oov: int | None  # its pairs out of the vocabulary
    wordsim353_pairs: int | None  # its pairs
    simlex999_spearman: float | None  # SimLex-999's Spearman ρ
    simlex999_oov: int | None  # ...
    simlex999_pairs: int | None  # ...


@declare(version=2, model="word2vec", facts=EvaluationFacts)
def evaluation(model, recompute: bool = False) -> View:
    """The Google analogies (3CosAdd), WordSim-353 and SimLex-999 scores: the card's (computed when the
    checkpoint was made), or computed now on these vectors (``recompute``, a few seconds); accuracy and
    coverage per analogy section as bars (None without sections). Facts ``report`` False: no scores."""
    from seqviz.charts.word2vec import sections_chart
    from seqviz.word2vec.evaluate import card_sections, evaluate_all

    report = evaluate_all(model) if recompute else (model.card.get("evaluation") or {})
    an = report.get("analogies", {})
    facts = {"report": bool(report), "recomputed": bool(recompute), "note": _why_low(model.card),
             **{k: an.get(k) for k in ("accuracy", "covered", "questions", "nearest_c_accuracy")}}
    for name, _label in BENCHMARKS:
        scores = report.get(name, {})
        facts.update({f"{name}_{k}": scores.get(k) for k in ("spearman", "oov", "pairs")})
    sections = card_sections(report)
    chart = sections_chart(sections) if len(sections) else None
    return View(chart, sections, facts, "Analogy accuracy by section")


# ------------------------------------------------------------------ the word map
def _map(model, method: str, n: int, perplexity: float, seed: int, quad: tuple):
    """(WordMap, its frame, whether it is the checkpoint's stored map), once per setting (``memo``).

    ``analogy``: a PCA of the four words of ``quad`` and their nearest words (n, perplexity, seed unused);
    t-SNE or PCA: the ``n`` most frequent words and the words of ``quad``, the stored map when it matches."""
    from seqviz.introspect import wordmap as wm

    if method == "analogy":
        key = ("word map", method, tuple(quad))
    else:
        key = ("word map", method, int(n), float(perplexity) if method == "tsne" else None, int(seed), tuple(quad))

    def compute():
        if method == "analogy":
            m = wm.analogy_map(model, _quad(quad))
            return m, wm.map_frame(m, model), False
        extra = tuple(w for w in quad if w)
        stored = wm.stored_word_map(model)
        if stored is not None and stored.matches(int(n), method, float(perplexity), int(seed), extra):
            return stored, wm.map_frame(stored, model), True
        m = wm.word_map(model, int(n), method, float(perplexity), int(seed), extra)
        return m, wm.map_frame(m, model), False

    return memo(model, key, compute)


class WordMapFacts(TypedDict):
    method: str  # "tsne", "pca" or "analogy"
    projection: str  # its name in the installed language
    words: int  # words on the map
    n: int  # the most frequent words asked for
    perplexity: float | None  # t-SNE's perplexity (None for another method)
    seed: int  # the projection's seed
    trustworthiness: float  # how well the map keeps each word's 5 nearest neighbours
    seconds: float  # how long the projection took
    stored: bool  # it is the checkpoint's stored map
    top_words: tuple[str, ...]  # the words the map can label
    labels: tuple[str, ...]  # the words it labels


@declare(version=2,  # 2: the analogy's words written once (bold), its zh title "24 个类比词的 PCA"
         model="word2vec", facts=WordMapFacts, figure=Figure("word2vec", text="words", choice="labels", default_text="",
                                                             options={"method": "method", "n": "n",
                                                                      "perplexity": "perplexity", "seed": "seed"},
                                                             quotes={"words": "{words}",
                                                                     "trustworthiness": "{trustworthiness:.3f}"}))
def word_map(model, method: str = "tsne", n: int = 1000, perplexity: float = 30.0, seed: int = 0, quad: tuple = (),
             labels: tuple | None = None) -> View:
    """The word map's points: ``method`` "analogy" (a PCA fitted on the analogy ``quad`` = (a, b, c, d) and
    each word's 5 nearest neighbours, every word labelled), "tsne" or "pca" of the ``n`` most frequent words
    (and the words of ``quad``), ``labels`` written on it (None: c's nearest words among them). Facts: the
    trustworthiness (5 neighbours), the projection's seconds, whether it is the stored map, the words the
    map can label (``top_words``) and those it labels."""
    from seqviz.charts.word2vec import word_map_chart
    from seqviz.word2vec.analogy import nearest as near

    m, frame, stored = _map(model, method, n, perplexity, seed, tuple(quad))
    top = tuple(model.top_words(int(n))) if method != "analogy" else tuple(frame["word"])
    if labels is None:
        c = _quad(quad).get("c")
        labels = (tuple(frame["word"]) if method == "analogy" else () if c is None else
                  tuple(w for w in near(model, c, MAP_LABELS)["word"] if w in set(top)))
    # one sentence per projection: zh read "24 个词的 类比词的 PCA" when the analogy's name went into the other
    title = (_("PCA of the {n:,} analogy words") if method == "analogy" else
             _("{projection} of {n:,} words")).format(projection=projection_name(method), n=len(frame))
    bold = set(_quad(quad).values())  # the analogy's words are written in bold by ``analogy_layers``: once, not twice
    chart = word_map_chart(frame, [w for w in labels if w not in bold], None, title)
    return View(chart, frame, {"method": method, "projection": projection_name(method), "words": len(frame),
                               "n": int(n), "perplexity": float(perplexity) if method == "tsne" else None,
                               "seed": int(seed), "trustworthiness": float(m.trustworthiness),
                               "seconds": float(m.seconds), "stored": stored, "top_words": top,
                               "labels": tuple(labels)}, "Word map")


class AnalogyLayersFacts(TypedDict):
    on_map: float | None  # cos(b − a, d − c) on the map (None: a word is missing)
    full: float | None  # ... in all dimensions
    dim: int  # the vectors' dimensions


@declare(model="word2vec", facts=AnalogyLayersFacts)
def analogy_layers(model, quad: tuple, method: str = "tsne", n: int = 1000, perplexity: float = 30.0,
                   seed: int = 0) -> View:
    """The analogy ``quad`` = (a, b, c, d) drawn on the word map of these settings: the offsets a→b and c→d as
    arrows and the four words marked, layers to draw over ``word_map``'s points. Facts: cos(b − a, d − c) on
    the map (``on_map``) and in all ``dim`` dimensions (``full``); None where a word is missing."""
    from seqviz.charts.word2vec import analogy_layers as layers
    from seqviz.introspect.wordmap import offsets

    _m, frame, _stored = _map(model, method, n, perplexity, seed, tuple(quad))
    on_map, full = offsets(frame, model, _quad(quad))
    return View(layers(frame, _quad(quad)), None, {"on_map": on_map, "full": full, "dim": model.dim}, "Word map")


class ProjectorFacts(TypedDict):
    vectors: str  # the projector's vectors.tsv
    labels: str  # ... and metadata.tsv


@declare(model="word2vec", facts=ProjectorFacts)
def projector(model, method: str = "tsne", n: int = 1000, perplexity: float = 30.0, seed: int = 0,
              quad: tuple = ()) -> View:
    """The word map's words as the TensorFlow Embedding Projector's two files (facts ``vectors`` and
    ``labels``, tab-separated text): their raw vectors and their names."""
    from seqviz.introspect.projection import projector_tsv

    m, frame, _stored = _map(model, method, n, perplexity, seed, tuple(quad))
    vectors, names = projector_tsv(model.vectors[[model.index[w] for w in m.words]], frame[["word"]])
    return View(None, None, {"vectors": vectors, "labels": names}, "Projector files")


# ------------------------------------------------------------------ the bias axis
class BiasAxisFacts(TypedDict):
    missing: tuple[str, ...]  # the words not in the vocabulary, left out
    found: int  # the words projected
    axis: str  # "pole_a − pole_b"


@declare(model="word2vec", facts=BiasAxisFacts)
def bias_axis(model, words: tuple, pole_a: str = "he", pole_b: str = "she") -> View:
    """Each of ``words`` projected on unit(pole_a − pole_b) (Bolukbasi et al. 2016) as diverging bars (None:
    none of them is in the vocabulary); facts: the words left out (``missing``)."""
    from seqviz.charts.word2vec import bias_chart
    from seqviz.word2vec.analogy import bias_projection

    table, missing = bias_projection(model, list(words), pole_a, pole_b)
    chart = bias_chart(table, pole_a, pole_b) if len(table) else None
    return View(chart, table, {"missing": tuple(missing), "found": len(table), "axis": f"{pole_a} − {pole_b}"},
                "Bias axis")


def parallel_note(on_map: float, full: float, dim: int) -> str:
    """What the map does to the analogy's two offsets, from their cosines on the map and in all ``dim`` dimensions:
    a linear map of two directions keeps parallel offsets parallel, but offsets that are not parallel can look so
    (or less so) once every other direction is dropped. Within 0.15 the two are said to agree."""
    values = {"on_map": on_map, "full": full, "dim": dim}
    if abs(on_map - full) <= 0.15:
        return _("The two offsets are about as parallel on this map (cosine {on_map:.2f}) as in all {dim} dimensions "
                 "({full:.2f}).").format(**values)
    if on_map > full:
        return _("On this map the two offsets look more parallel (cosine {on_map:.2f}) than they are in all {dim} "
                 "dimensions ({full:.2f}): the two directions kept flatter what the others hold apart, so the map "
                 "makes the analogy look better than it is.").format(**values)
    return _("On this map the two offsets look less parallel (cosine {on_map:.2f}) than they are in all {dim} "
             "dimensions ({full:.2f}): the directions the map drops hold part of the analogy.").format(**values)

