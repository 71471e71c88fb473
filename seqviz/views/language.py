"""Views of a recurrent LM reading a text: surprisal per token, a sampled continuation, models compared.

``surprisal`` and ``continuation`` are ``fn(model, **choices) -> View`` (``seqviz.views``); the Language
model page, the stations lesson's S7 step and ``seqviz figure language_model`` draw them.
``shipped_surprisal`` is the same first view read from the scores a checkpoint folder ships beside its
weights (``scores.json``), without loading the model or importing torch: a view of files,
``fn(folder, snapshot, **choices) -> View | None`` (None: the files do not hold it, read the model).
``comparison`` and ``summary`` combine several models' surprisal tables of one text.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NotRequired, TypedDict

import pandas as pd

from seqviz.charts import language as charts
from seqviz.introspect import language as lang  # called through the module: tests count its score_text calls
from seqviz.introspect.language import LN2, MAX_TOKENS, ScoredText
from seqviz.text import N_, _
from seqviz.views import View, memo
from seqviz.views.registry import Figure, declare

PROMPT_SHOWN = 160  # characters of the prompt shown before a sampled continuation
WINDOW = 25  # tokens of the running mean along the text when models are compared
PER_UNIT = {"nats": 1.0, "bits": 1 / LN2}  # 1 bit = ln 2 nats


def _unit(unit: str) -> str:
    if unit not in PER_UNIT:
        raise ValueError(f"unit must be 'nats' or 'bits', got {unit!r}")
    return unit


def scored(model, text: str, max_tokens: int = MAX_TOKENS) -> ScoredText:
    """``introspect.language.score_text`` of ``text``, once per model (``memo``): the views of one text share it.

    Raises the ValueError of a text with no token the model knows."""
    return memo(model, ("scored", text, int(max_tokens)),
                lambda: lang.score_text(model, text, max_tokens=int(max_tokens)))


class SurprisalFacts(TypedDict):
    perplexity: float  # exp(mean loss): the text's perplexity
    mean_loss: float  # mean −log p per scored token, nats
    mean: float  # ... in ``unit``
    unit: str  # "nats" or "bits"
    tokens: int  # tokens read
    scored: int  # tokens scored (each but the first)
    vocab_size: int  # V
    scale: float  # ln V: a uniform guess's loss, the darkest colour
    kind: str  # the tokenizer's kind ("char", "word" ...)
    unknown: tuple[str, ...]  # pieces not in the vocabulary, left out
    truncated: int  # tokens cut past ``max_tokens``
    max_tokens: int  # the most tokens read
    text: str  # the text as read
    worst: NotRequired[str]  # the most surprising token (when one is scored)
    worst_loss: NotRequired[float]  # its loss, nats
    worst_position: NotRequired[int]  # its position


def _surprisal(s: ScoredText, unit: str, max_tokens: int) -> View:
    """The view of one scored text: bars per scored token (None when nothing is scored) and its numbers."""
    scale = math.log(s.vocab_size)  # a uniform guess over the vocabulary has loss ln V: the darkest colour
    chart = charts.surprisal_bars(s.table, scale, unit) if s.n_scored else None
    facts = {"perplexity": s.perplexity, "mean_loss": s.mean_loss, "mean": s.mean_loss * PER_UNIT[unit],
             "unit": unit, "tokens": len(s.table), "scored": s.n_scored, "vocab_size": s.vocab_size,
             "scale": scale, "kind": s.kind, "unknown": tuple(s.unknown), "truncated": s.truncated,
             "max_tokens": max_tokens, "text": s.text}
    if s.n_scored:
        worst = s.table.loc[s.table["loss"].idxmax()]
        facts.update(worst=str(worst["token"]), worst_loss=float(worst["loss"]), worst_position=int(worst["position"]))
    return View(chart, s.table, facts, "Surprisal per token")


@declare(version=2, facts=SurprisalFacts,  # 2: every token labelled, a step each
         figure=Figure("language_model", options={"unit": "unit"}, quotes={"perplexity": "{perplexity:.2f}"}))
def surprisal(model, text: str, unit: str = "nats", max_tokens: int = MAX_TOKENS) -> View:
    """−log p(token | everything before it) of each token of ``text`` (its first ``max_tokens`` known tokens),
    as bars coloured from certain to a uniform guess (ln V); facts: perplexity = exp(mean loss), the mean
    loss in ``unit``, tokens scored, the vocabulary size, what was left out or cut."""
    return _surprisal(scored(model, text, max_tokens), _unit(unit), int(max_tokens))


def reading_notes(facts: Mapping) -> list[str]:
    """What ``surprisal`` could not read (its facts): tokens not in the vocabulary, and the tokens cut past its
    ``max_tokens`` (the ones read are ``tokens``)."""
    notes = []
    if facts["unknown"]:
        notes.append(_("{n} character(s) or word(s) are not in this model's vocabulary and were left out: "
                       "{shown}").format(n=len(facts["unknown"]), shown=" ".join(repr(u) for u in facts["unknown"][:30])))
    if facts["truncated"]:
        notes.append(_("The text is longer than {max:,} tokens: only the first {max:,} were read "
                       "({cut:,} tokens cut).").format(max=facts["tokens"], cut=facts["truncated"]))
    return notes


@declare(version=2, model=None, facts=SurprisalFacts)
def shipped_surprisal(folder: str, snapshot: int | None, text: str, unit: str = "nats",
                      max_tokens: int = MAX_TOKENS) -> View | None:
    """``surprisal`` of the folder's final weights read from its ``scores.json``, without torch; None for a
    training snapshot's weights, or when the file does not hold ``text`` as the weights read it now."""
    _unit(unit)
    if snapshot is not None:
        return None  # the shipped scores are the final weights'
    shipped = lang.read_scores(folder, text, int(max_tokens))
    return None if shipped is None else _surprisal(shipped, unit, int(max_tokens))


class ContinuationFacts(TypedDict):
    sample: str  # the sampled tokens, joined
    prompt_tail: str  # the prompt's last characters, as shown before the sample
    n: int  # tokens sampled
    temperature: float  # the sampling temperature (0: the likeliest each step)
    seed: int  # the sampler's seed


@declare(facts=ContinuationFacts)
def continuation(model, text: str, n: int = 120, temperature: float = 0.8, seed: int = 0,
                 max_tokens: int = MAX_TOKENS) -> View:
    """``n`` tokens sampled after ``text`` (its last ``max_tokens`` known tokens) at ``temperature`` (0: the
    likeliest each step), the same for the same seed; no chart: facts hold the sample and the prompt's end."""
    sample = lang.continue_text(model, text, n=int(n), temperature=float(temperature), seed=int(seed),
                                max_tokens=int(max_tokens))
    tail = ("..." if len(text) > PROMPT_SHOWN else "") + text[-PROMPT_SHOWN:]
    return View(None, None, {"sample": sample, "prompt_tail": tail, "n": int(n), "temperature": float(temperature),
                             "seed": int(seed)}, "Continuation")


# ------------------------------------------------------------------ several models on one text
def _along(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    columns = ["model", "position", "token", "loss", "bits"]
    frames = [t.assign(model=name)[columns] for name, t in tables.items()]
    return pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=columns)


class ComparisonFacts(TypedDict):
    models: tuple[str, ...]  # the models compared, in order
    window: int  # tokens of the running mean
    unit: str  # "nats" or "bits"


@declare(model=None, facts=ComparisonFacts)
def comparison(tables: Mapping[str, pd.DataFrame], unit: str = "nats", window: int = WINDOW) -> View:
    """Each model's surprisal (``surprisal(...).data``, by name) along the same text, as a running mean over
    ``window`` tokens, one line per model; data: the long table (model, position, token, loss, bits)."""
    along = _along(tables)
    chart = charts.compare_lines(along, _unit(unit), window=int(window))
    return View(chart, along, {"models": tuple(tables), "window": int(window), "unit": unit},
                "Surprisal along the text, per model")


# The comparison table's columns: English names in the data (CSV, tests), msgids a page shows translated.
SUMMARY_COLUMNS = (N_("model"), N_("tokens scored"), N_("loss (nats/token)"), N_("bits/token"), N_("perplexity"))
PER_TOKEN = SUMMARY_COLUMNS[2:]  # numbers shown to 3 decimals
# The table as a reader reads it (``seqviz.tables.readable``'s arguments): perplexity and bits first, so that a
# 390 px phone shows them beside the model's name without scrolling.
SUMMARY_TABLE = {"columns": {c: c for c in (SUMMARY_COLUMNS[0], SUMMARY_COLUMNS[4], SUMMARY_COLUMNS[3],
                                            SUMMARY_COLUMNS[2], SUMMARY_COLUMNS[1])}, "digits": 3}


class SummaryFacts(TypedDict):
    models: tuple[str, ...]  # the models, in order
    same_tokens: bool  # every model cut the text into the same tokens
    best: str | None  # the model with the lowest perplexity (None: none scored a token)
    best_perplexity: float | None  # its perplexity


@declare(model=None, facts=SummaryFacts)
def summary(tables: Mapping[str, pd.DataFrame]) -> View:
    """One row per model (``surprisal(...).data``, by name): tokens scored, mean loss in nats and bits per
    token, perplexity; no chart. Facts: the model with the lowest perplexity and its perplexity, and whether
    every model cut the text into the same tokens (if not, a loss per token compares different units)."""
    rows = [{"model": name, "tokens scored": int(t["loss"].notna().sum()), "loss (nats/token)": lang.mean_loss(t),
             "bits/token": lang.mean_loss(t) / LN2, "perplexity": lang.perplexity(t)} for name, t in tables.items()]
    frame = pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
    scored_rows = frame.dropna(subset=["perplexity"])
    best = scored_rows.loc[scored_rows["perplexity"].idxmin()] if len(scored_rows) else None
    pieces = {tuple(t["token"]) for t in tables.values()}
    return View(None, frame, {"models": tuple(tables), "same_tokens": len(pieces) <= 1,
                              "best": None if best is None else str(best["model"]),
                              "best_perplexity": None if best is None else float(best["perplexity"])},
                "Perplexity per model")
