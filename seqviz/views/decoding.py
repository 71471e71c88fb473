"""Views of a translator decoding: one sentence teacher-forced vs free-running, an injected error, beam search,
the decoding strategies, and the error curves over its held-out set.

Each is ``fn(model, **choices) -> View`` (``seqviz.views``) for one of seqviz's own RNN encoder-decoders
(``Seq2Seq``, also the plain state-dict family); the Exposure bias and Decoding strategies pages, the exposure
lesson's injection step and ``seqviz figure exposure_bias`` draw them. A sentence's views take the source text
and the reference as typed (``gold_tokens``: characters for a character vocabulary, else words). The held-out
views read the pairs of a pairs file (``pairs=``, ``seqviz.views.pairs``) or of the model's folder
(``heldout.json``); ``pair_menu`` lists a pairs file's to pick from, ``first_pair`` gives a sentence to open
on; ``shipped_held_out``, ``shipped_strategies`` and ``menu`` are views of a checkpoint's files
(``fn(folder, snapshot, **choices) -> View | None``): what ``exposure.json`` holds for these weights, read
without loading the model. ``held_out_compared`` and ``held_out_summary``
combine several models' held-out views.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TypedDict

import pandas as pd

from seqviz.charts.exposure import strategy_label
from seqviz.tables import PERCENT
from seqviz.text import N_, _
from seqviz.views import View, deferred, memo
from seqviz.views.registry import Figure, declare
from seqviz.views.pairs import held_pairs
from seqviz.views.exposure import DivergenceNumbers, LogprobNumbers, _divergence_view, _logprob_view

# torch: imported when a view is computed, not when one is read (called through the module: tests count its
# error_matrices calls)
ex = deferred("seqviz.introspect.exposure")

PARTS = ("by_position", "after", "matrix")  # the held-out study's three tables
COMPARED_COLUMNS = {"model": N_("model"), "free-running output": N_("free-running output"),
            "first divergence": N_("first divergence"), "edit distance": N_("edit distance"),
            "injected": N_("injected"), "continues as": N_("continues as"), "recovers": N_("recovers"),
            "edit distance after injection": N_("edit distance after injection")}
# The strategies table as a reader reads it (``seqviz.tables.readable``'s arguments): the view keeps its keys.
STRATEGY_TABLE = {"columns": {"strategy": N_("strategy"), "k": N_("beam size k"), "bleu": N_("BLEU"),
                              "exact": N_("exact match"), "ms_per_sentence": N_("ms per sentence")},
                  "digits": {"bleu": 1, "exact": PERCENT, "ms_per_sentence": 1},
                  "values": {"strategy": strategy_label}}
# The held-out summary likewise: each run spelled out ("TF" read as a typo to a first visitor).
SUMMARY_TABLE = {"columns": {"model": N_("model"), "sentences": N_("sentences"),
                             "TF token error": N_("token error, teacher-forced"),
                             "FR token error": N_("token error, free-running"), "exposure gap": N_("exposure gap"),
                             "FR exact": N_("exact match, free-running")},
                 "digits": {"TF token error": PERCENT, "FR token error": PERCENT, "exposure gap": PERCENT,
                            "FR exact": PERCENT}}
STUDY_PAIRS = 1000  # held-out pairs the error curves are measured on (exposure.json's)


def gold_tokens(model, text: str) -> tuple[str, ...]:
    """A typed reference as the model's target tokens (``introspect.exposure.reference_tokens``)."""
    return tuple(ex.reference_tokens(model, text or ""))


def _compared(model, src: str, ref: str) -> dict:
    gold = gold_tokens(model, ref)
    return memo(model, ("compared", src, gold), lambda: ex.compare_translation(model, src, list(gold)))


class SentenceFacts(TypedDict):
    first_divergence: int | None  # the first position where free running leaves the reference (None: never)
    divergence_token: str | None  # the reference's token there
    free_running: str  # the greedy output
    edit_distance: int  # its token edit distance to the reference
    reference: tuple[str, ...]  # the reference's tokens as read
    source: str  # the source sentence


class SentenceLogprobFacts(SentenceFacts, LogprobNumbers):
    pass


class SentenceDivergenceFacts(SentenceFacts, DivergenceNumbers):
    pass


def _facts(model, src: str, ref: str) -> SentenceFacts:
    run = _compared(model, src, ref)
    div, table = run["first_divergence"], run["table"]
    return {"first_divergence": div, "divergence_token": None if div is None else str(table.gold[div]),
            "free_running": " ".join(run["free_running"]), "edit_distance": int(run["edit_distance"]),
            "reference": gold_tokens(model, ref), "source": src}


def _opened(model, peers=(), folder=None) -> dict[str, list[dict]]:
    """What the Exposure bias page (the held-out pair free running gets wrong first; the ``COMPARED_BY_DEFAULT``
    checkpoints of the same task beside it; an error injected at ``INJECT_AT``) and the Decoding strategies page (the
    first held-out pair, beam ``BEAM_K``) draw at their defaults on ``folder``'s final weights, by view name.
    Nothing without a shipped study."""
    from seqviz.files import read_json

    held = None if folder is None else shipped_held_out(str(folder), None, part="by_position")
    listed = None if held is None else menu(str(folder), None, first_errors=tuple(held.facts["first_errors"]))
    if listed is None or not listed.facts["pairs"]:
        return {}
    first = first_pair(model).facts
    _label, src, reference = listed.facts["pairs"][0]
    sentence = {"src": src, "reference": reference}
    task = (getattr(model, "card", None) or {}).get("task")
    rivals = tuple((name, peer) for name, peer in peers if COMPARED_BY_DEFAULT in name and name != Path(folder).name
                   and (Path(peer.folder) / "card.json").is_file()
                   and read_json(Path(peer.folder) / "card.json").get("task") == task)
    k = min(INJECT_AT, len(gold_tokens(model, reference)))
    return {"first_pair": [{"pairs": ()}], "beam": [{"src": first["source"], "reference": first["reference"], "k": BEAM_K}],
            "gold_logprob": [sentence], "divergence": [sentence], "injectable": [{"reference": reference, "k": k}],
            "injection": [{**sentence, "k": k, "token": None}],
            "comparison": [{**sentence, "rivals": rivals}, {**sentence, "rivals": rivals, "k": k, "token": None}]
            if rivals else []}


def _opening(name: str):
    """A ``ships`` declaration: the choices ``_opened`` gives the view ``name``."""
    return lambda model, peers=(), folder=None: _opened(model, peers, folder).get(name, [])


@declare(model="seq2seq", facts=SentenceLogprobFacts, ships=_opening("gold_logprob"),
         figure=Figure("exposure_bias", choice="src", options={"reference": "reference"}, required=("reference",),
                       default_text="held-out", quotes={"free running": "{free_running}"}))
def gold_logprob(model, src: str, reference: str = "") -> View:
    """log p(reference token y_t) at each position after the reference prefix (teacher-forced) and after the
    model's own greedy output (free-running); a rule where they first differ. Facts: ``first_divergence`` and
    its gold token, the ``free_running`` output, its ``edit_distance`` to the reference, the mean log p and
    the wrong tokens of each run, the ``reference`` tokens read."""
    return _logprob_view(_compared(model, src, reference)["table"], _facts(model, src, reference))


@declare(model="seq2seq", facts=SentenceDivergenceFacts, ships=_opening("divergence"))
def divergence(model, src: str, reference: str = "") -> View:
    """KL(p_TF ‖ p_FR) and the decoder state distance ‖h_TF − h_FR‖ at each position of the two runs."""
    return _divergence_view(_compared(model, src, reference)["table"], _facts(model, src, reference))


class InjectableFacts(TypedDict):
    tokens: tuple[str, ...]  # every token the decoder can be forced to emit at k but the reference's own
    k: int  # the position


@declare(model="seq2seq", facts=InjectableFacts, ships=_opening("injectable"))
def injectable(model, reference: str, k: int) -> View:
    """No chart. Facts: ``tokens``, every token the decoder can be forced to emit at position ``k`` but the
    reference's own there."""
    gold = list(gold_tokens(model, reference))
    return View(None, None, {"tokens": tuple(ex.injection_choices(model, gold, int(k))), "k": int(k)},
                "Tokens to inject")


class InjectionFacts(TypedDict):
    k: int  # the position of the injected error
    injected: str  # the token forced there
    errors_after: int  # positions after k whose output differs from the reference
    output: str  # the output with the error injected
    edit_distance: int  # its token edit distance to the reference
    recovered: bool  # edit_distance at most 1
    gold: str  # the reference's token at k
    own: str  # the model's own output, nothing injected
    edits_vs_own: int  # the injected output's edits after k against its own
    rejoins: bool  # edits_vs_own at most 1: back on its own track


# 3: the run drawn as word error rate aligns it to the reference (a skipped reference word is a column of its own)
@declare(version=3, model="seq2seq", facts=InjectionFacts, ships=_opening("injection"))
def injection(model, src: str, reference: str, k: int, token: str | None = None) -> View:
    """Force the reference prefix y_<k, then ``token`` at k (None: the model's own second choice there), then let
    the decoder run on its own: what it emits per position, which differ from the reference, its state's distance
    to the teacher-forced run's. Facts: the ``injected`` token, ``errors_after`` k, the ``output``, its
    ``edit_distance`` to the reference, ``recovered`` (at most 1), the reference's token ``gold`` at k; ``own``, the
    model's own output with nothing injected, ``edits_vs_own`` after k and ``rejoins`` (at most 1): recovery judged
    against what the model would have said, not against the reference it may already have missed."""
    from seqviz.charts.exposure import injection_chart

    gold = gold_tokens(model, reference)
    k = int(k)
    inj = memo(model, ("injected", src, gold, k, token), lambda: ex.inject_error(model, src, list(gold), k, token))
    facts = {"k": k, "injected": inj["injected"], "errors_after": int(inj["errors_after"]),
             "output": " ".join(inj["output"]), "edit_distance": int(inj["edit_distance"]),
             "recovered": bool(inj["recovered"]), "gold": (list(gold) + [model.tgt_vocab.end])[k],
             "own": " ".join(inj["own"]), "edits_vs_own": int(inj["edits_vs_own"]), "rejoins": bool(inj["rejoins"])}
    return View(injection_chart(inj["columns"]), inj["table"], facts, "Injected error")


class ModelsFacts(TypedDict):
    models: tuple[str, ...]  # the models, by name


@declare(model="seq2seq", facts=ModelsFacts, ships=_opening("comparison"))
def comparison(model, src: str, reference: str, rivals: tuple = (), k: int | None = None,
               token: str | None = None) -> View:
    """No chart: one row per compared model (``rivals``: (name, model) pairs; ``model`` itself is not a row):
    its free-running output, first divergence and edit distance, and with ``k`` what the same injection does."""
    gold = list(gold_tokens(model, reference))
    table = ex.compare_models(dict(rivals), src, gold, None if k is None else int(k), token)
    # the page shows these headers
    shown = table.rename(columns=lambda c: _(COMPARED_COLUMNS[c]) if c in COMPARED_COLUMNS else c)
    return View(None, shown, {"models": tuple(name for name, _m in rivals)}, "Compared models")


class BeamFacts(TypedDict):
    k: int  # the beam's width
    best: str  # the best output
    fell_off: int | None  # the step the reference fell off the beam (None: it stays on)
    shown: int  # steps drawn
    steps: int  # steps decoded


@declare(model="seq2seq", facts=BeamFacts, ships=_opening("beam"))
def beam(model, src: str, reference: str, k: int = 4) -> View:
    """One sentence's beam search of width ``k`` as a tree (the first steps that matter). Facts: the ``best``
    output, the step the reference ``fell_off`` the beam (None: it stays on), ``shown`` of ``steps``."""
    from seqviz.charts.exposure import beam_tree_chart
    from seqviz.decoding import beam_view

    res = beam_view(model, src, list(gold_tokens(model, reference)), int(k))
    facts = {"k": int(k), "best": " ".join(res["best"]), "fell_off": res["fell_off"], "shown": int(res["shown"]),
             "steps": int(res["steps"])}
    return View(beam_tree_chart(res["tree"]), res["tree"], facts, "Beam tree")


# ------------------------------------------------------------------ the held-out set
def _pairs(folder) -> list:
    from seqviz.seq2seq.checkpoints import load_heldout

    return load_heldout(folder) if folder and Path(folder).is_dir() else []


class StrategiesFacts(TypedDict):
    pairs: int  # held-out pairs decoded
    best: str  # the strategy with the best BLEU
    best_bleu: float  # its BLEU


def _strategy_view(table: pd.DataFrame, n: int) -> View:
    from seqviz.charts.exposure import strategy_chart

    best = table.loc[table["bleu"].idxmax()]
    return View(strategy_chart(table), table, {"pairs": int(n), "best": str(best["strategy"]),
                                               "best_bleu": float(best["bleu"])}, "Decoding strategies")


@declare(version=2, model="seq2seq", facts=StrategiesFacts)
def strategies(model, n: int = 200, ks: tuple = (1, 2, 4, 8), pairs: tuple = ()) -> View:
    """BLEU, exact match and time per sentence of greedy, beam k in ``ks`` and sampling on the first ``n``
    held-out pairs (``pairs``: a pairs file's, else the model folder's), decoded now. Facts: the ``pairs``
    used, the strategy with the ``best`` BLEU."""
    from seqviz.decoding import strategy_table

    held = held_pairs(model, tuple(pairs), int(n))
    return _strategy_view(strategy_table(model, held, ks=tuple(ks)), len(held))


@declare(version=2, model=None, facts=StrategiesFacts)
def shipped_strategies(folder: str, snapshot: int | None, n: int = 200, ks: tuple = (1, 2, 4, 8)) -> View | None:
    """``strategies`` read from the folder's exposure.json; None when it does not hold them for these weights."""
    table = ex.shipped_strategies(folder, snapshot, int(n), tuple(ks))
    return None if table is None else _strategy_view(table, n)


class HeldOutFacts(TypedDict):
    model: str  # the model's name
    sentences: int  # held-out pairs decoded
    tf_token_error: float  # the token error rate teacher-forced
    fr_token_error: float  # ... free-running
    exposure_gap: float  # fr_token_error − tf_token_error
    tf_exact: float  # exact matches teacher-forced
    fr_exact: float  # ... free-running
    first_errors: tuple[int | None, ...]  # each pair's first free-running error (None: none)


def _held_out_view(study: dict, part: str, name: str) -> View:
    from seqviz.charts import exposure as charts

    if part not in PARTS:
        raise ValueError(f"part must be one of {', '.join(PARTS)}, got {part!r}")
    frame = study[part].assign(model=name) if part != "matrix" else study[part]
    s = study["summary"]
    facts = {"model": name, "sentences": s["sentences"], "tf_token_error": s["tf"]["token_error_rate"],
             "fr_token_error": s["fr"]["token_error_rate"], "exposure_gap": s["exposure_gap"],
             "tf_exact": s["tf"]["exact"], "fr_exact": s["fr"]["exact"],
             "first_errors": tuple(study["first_errors"])}
    build = {"by_position": charts.error_rate_chart, "after": charts.after_error_chart,
             "matrix": charts.conditional_heatmap}[part]
    return View(None if frame.empty else build(frame), frame, facts, TITLES[part])


TITLES = {"by_position": "Error rate by position", "after": "After the first error",
          "matrix": "Conditional error heatmap"}


@declare(model="seq2seq", facts=HeldOutFacts)
def held_out(model, part: str = "by_position", n: int = STUDY_PAIRS, pairs: tuple = ()) -> View:
    """One table of the model's two runs over the first ``n`` held-out pairs (``pairs``: a pairs file's, else the
    model folder's), decoded now: the token error rate by output position (``by_position``), P(error at s + d |
    first error at s) (``after``), or that for free running by (s, t) buckets (``matrix``); no chart when it is
    empty. Facts: the summary (token error of each run, the exposure gap, exact matches, the ``sentences``
    used) and each pair's ``first_errors`` free-running error."""
    pairs = tuple(pairs)
    study = memo(model, ("held-out", int(n), pairs),
                 lambda: ex.dataset_view(model, held_pairs(model, pairs, int(n))))
    return _held_out_view(study, part, (model.card or {}).get("name", "this model"))


@declare(model=None, facts=HeldOutFacts)
def shipped_held_out(folder: str, snapshot: int | None, part: str = "by_position",
                     n: int = STUDY_PAIRS) -> View | None:
    """``held_out`` read from the folder's exposure.json; None when it does not hold it for these weights."""
    study = ex.read_study(folder, snapshot, int(n))
    if study is None:
        return None
    from seqviz.files import read_json

    card = Path(folder) / "card.json"
    name = (read_json(card) if card.is_file() else {}).get("name", "this model")
    return _held_out_view(study, part, name)


@declare(model=None, facts=ModelsFacts)
def held_out_compared(tables: Mapping[str, pd.DataFrame], part: str = "by_position") -> View:
    """Several models' ``held_out(...).data`` of one part (``by_position`` or ``after``, by name) on one chart."""
    from seqviz.charts import exposure as charts

    if part not in ("by_position", "after"):
        raise ValueError(f"part must be 'by_position' or 'after', got {part!r}")
    frame = pd.concat([t.assign(model=name) for name, t in tables.items()], ignore_index=True)
    chart = None if frame.empty else (charts.error_rate_chart if part == "by_position" else charts.after_error_chart)(frame)
    return View(chart, frame, {"models": tuple(tables)}, TITLES[part])


@declare(model=None, facts=ModelsFacts)
def held_out_summary(summaries: Mapping[str, dict]) -> View:
    """No chart: one row per model (its ``held_out(...).facts``, by name): sentences, the token error of each
    run, the exposure gap, free running's exact matches."""
    frame = pd.DataFrame([{"model": name, "sentences": f["sentences"], "TF token error": f["tf_token_error"],
                           "FR token error": f["fr_token_error"], "exposure gap": f["exposure_gap"],
                           "FR exact": f["fr_exact"]} for name, f in summaries.items()])
    return View(None, frame, {"models": tuple(summaries)}, "Summary")


class MenuFacts(TypedDict):
    pairs: tuple[tuple[str, str, str], ...]  # (label, source, reference) of each pair offered
    count: int  # the held-out pairs there are


@declare(model=None, facts=MenuFacts)
def menu(folder: str, snapshot: int | None, first_errors: tuple = (), n: int = 60) -> View | None:
    """A view of files: the held-out pairs to pick from (those free running gets wrong first, from
    ``first_errors``) as ``pairs``, (label, source, reference) triples; None when the folder keeps none."""
    pairs = _pairs(folder)
    if not pairs:
        return None
    picks = ex.heldout_menu(pairs, list(first_errors), int(n)) if first_errors else {}
    return View(None, None, {"pairs": tuple((label, *ex.pair_texts(pairs[i])) for label, i in picks.items()),
                             "count": len(pairs)}, "Held-out pairs")


@declare(model="seq2seq", facts=MenuFacts)
def pair_menu(model, pairs: tuple, first_errors: tuple = (), n: int = 60) -> View:
    """``menu`` of a pairs file's ``pairs`` ((source, target) texts, ``views.pairs.pairs_file``), shown as written
    in the file; ``first_errors`` those of ``held_out(model, pairs=pairs)``."""
    from seqviz.views.pairs import tokenized

    tok = tokenized(model, tuple(pairs))
    picks = ex.heldout_menu(list(tok.pairs), list(first_errors), int(n)) if first_errors else {}
    shown = tuple((f"{i}: {pairs[tok.kept[i]][0]}" + ("  (FR errs)" if label.endswith("  (FR errs)") else ""),
                   *pairs[tok.kept[i]]) for label, i in picks.items())
    return View(None, None, {"pairs": shown, "count": len(tok.pairs)}, "Held-out pairs")


class FirstPairFacts(TypedDict):
    source: str  # the first held-out pair's source ("" when there is none)
    reference: str  # ... and its reference


@declare(model="seq2seq", facts=FirstPairFacts, ships=_opening("first_pair"))
def first_pair(model, pairs: tuple = ()) -> View:
    """No chart: a sentence to open on, the first held-out pair (of a pairs file's ``pairs``, as written there,
    else of the model folder's) as ``source`` and ``reference`` texts to type; both empty when there is none."""
    from seqviz.views.pairs import shipped_pairs

    held = shipped_pairs(model)
    source, reference = tuple(pairs[0]) if pairs else ex.pair_texts(held[0]) if held else ("", "")
    return View(None, None, {"source": source, "reference": reference}, "First held-out pair")


# ------------------------------------------------------------------ what the pages open on
INJECT_AT = 2  # the injection slider's default (a shorter reference: its last position)
BEAM_K = 4  # the beam slider's default
COMPARED_BY_DEFAULT = "zh-en-small"  # the checkpoints of the same task the Exposure bias page compares by default
