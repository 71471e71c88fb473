"""Held-out pairs for the views that measure over many sentences: the model's own, or the user's pairs file.

``pairs_file`` reads a TSV file (``source<TAB>target`` a line, ``seqviz.seq2seq.pairs_file``) in the
model's tokens and says what was used and what was left out; its ``pairs`` fact, a tuple of (source,
target) texts, is the ``pairs=`` choice of the views over pairs (``held_out``, ``strategies``,
``measured_bleu``, the menus), hashable so a view of them is cached like any other. ``held_pairs`` is
what those views read: the given pairs in the model's tokens, else the model folder's ``heldout.json``.
"""

from __future__ import annotations

from pathlib import Path
from typing import NotRequired, TypedDict

from seqviz.text import _
from seqviz.views import View, memo
from seqviz.views.registry import declare

NEEDS_PAIRS = ("this model keeps no held-out pairs (heldout.json): give a pairs file, one pair a line as "
               "source<TAB>target")


def tokenized(model, pairs: tuple):
    """``tokenize_pairs`` of (source, target) texts, once per model and pairs."""
    from seqviz.seq2seq.pairs_file import tokenize_pairs

    return memo(model, ("pairs-file", tuple(pairs)), lambda: tokenize_pairs(model, pairs))


def shipped_pairs(model) -> list:
    """The pairs of the model's folder (``heldout.json``; [] when it has none, as a plain state dict)."""
    from seqviz.seq2seq.checkpoints import load_heldout

    folder = (model.card or {}).get("path")
    return load_heldout(folder) if folder and Path(folder).is_dir() else []


def held_pairs(model, pairs: tuple = (), n: int | None = None) -> list:
    """The first ``n`` (None: all) of ``pairs`` in the model's tokens, else of its folder's held-out pairs;
    ValueError (``NEEDS_PAIRS``) when there are none."""
    found = list(tokenized(model, pairs).pairs) if pairs else shipped_pairs(model)
    if not found:
        raise ValueError(NEEDS_PAIRS)
    return found if n is None else found[: int(n)]


class PairsFileFacts(TypedDict):
    name: str  # the file's name
    pairs: tuple[tuple[str, str], ...]  # the (source, target) texts the model can read: the other views' ``pairs=``
    used: int  # how many
    lines: int  # lines of the file
    blank: int  # blank lines skipped
    capped: int  # pairs left out after the first ``cap``
    cap: int | None  # the most pairs read
    dropped: int  # pairs with a token outside a vocabulary that has no unknown token
    source_oov: float  # the share of unknown source tokens
    target_oov: float  # ... of target tokens
    unknown: tuple[str, ...]  # the commonest unknown tokens, both sides, commonest first


@declare(model="seq2seq", facts=PairsFileFacts)
def pairs_file(model, data: bytes, name: str = "pairs.tsv", cap: int | None = 1000) -> View:
    """No chart: a pairs file read for this model. Facts: the ``pairs`` it can read ((source, target) texts,
    the ``pairs=`` choice of the other views), ``used`` (their count), ``blank`` lines skipped, ``capped`` pairs
    after the first ``cap``, ``dropped`` ones (a token outside a vocabulary without an unknown token), the
    ``source_oov`` and ``target_oov`` shares of unknown tokens and the commonest ``unknown`` ones. ValueError
    (naming the line) for a malformed file."""
    from seqviz.seq2seq.pairs_file import read_pairs

    text = read_pairs(data, name, cap)
    tok = tokenized(model, text.pairs)
    kept = tuple(text.pairs[i] for i in tok.kept)
    facts = {"name": text.name, "pairs": kept, "used": len(kept), "lines": text.lines, "blank": text.blank,
             "capped": text.capped, "cap": cap, "dropped": tok.dropped, "source_oov": tok.source_oov,
             "target_oov": tok.target_oov, "unknown": tok.unknown}
    return View(None, None, facts, "Pairs file")


class FramingFacts(TypedDict):
    applies: bool  # False: a model that frames no source, or nothing to score (no other fact then)
    framings: NotRequired[tuple[tuple[str, float], ...]]  # (label, nats/token) of each framing
    chosen: NotRequired[str]  # the model's framing
    chosen_nats: NotRequired[float]  # ... its nats/token
    best: NotRequired[str]  # the cheapest framing
    best_nats: NotRequired[float]  # ... its nats/token
    pairs: NotRequired[int]  # pairs scored
    gap: NotRequired[float]  # chosen_nats − best_nats
    se: NotRequired[float]  # the gap's standard error
    worse: NotRequired[bool]  # the model's framing is worse beyond noise
    fields: NotRequired[tuple[tuple[str, object], ...]]  # (spec field, value) that select the best
    origin: NotRequired[tuple[tuple[str, str], ...]]  # (field, where the model's value came from)


@declare(model="seq2seq", facts=FramingFacts)
def framing(model, pairs: tuple = (), src: str = "", reference: str = "") -> View:
    """No chart: which source framing (start/end tokens around the sentence) the given pairs, else the typed
    sentence and its reference, say the model was trained with (``seqviz.seq2seq.framing``). Facts: ``applies``
    (False for a model that frames no source, or nothing to score), ``framings`` ((label, nats/token) each),
    the model's ``chosen`` label and ``chosen_nats``, the ``best`` and ``best_nats``, ``pairs``, ``gap``, ``se``,
    ``worse`` (beyond noise), ``fields`` ((spec field, value) that select the best) and ``origin`` ((field, where
    the model's value came from))."""
    from seqviz.seq2seq.framing import check_framing

    if not hasattr(model.config, "source_bos"):
        return View(None, None, {"applies": False}, "Source framing")
    if pairs:
        found = list(tokenized(model, pairs).pairs)
    else:
        try:
            tok = tokenized(model, ((src, reference),)) if src.strip() and reference.strip() else None
        except ValueError:  # a token the vocabularies cannot hold: the sentence's own views say so
            tok = None
        found = list(tok.pairs) if tok is not None else []
    check = memo(model, ("framing", tuple((p.src, p.tgt) for p in found)),
                 lambda: check_framing(model, found))
    if check is None:
        return View(None, None, {"applies": False}, "Source framing")
    facts = {"applies": True, "framings": tuple((f.label, f.nats) for f in check.framings),
             "chosen": check.chosen.label, "chosen_nats": check.chosen.nats, "best": check.best.label,
             "best_nats": check.best.nats, "pairs": check.pairs, "gap": check.gap, "se": check.se,
             "worse": check.worse, "fields": tuple(check.fields.items()), "origin": tuple(check.origin.items())}
    return View(None, None, facts, "Source framing")


def reading(f: dict) -> str:
    """What ``pairs_file`` read (its facts ``f``) in one sentence: the pairs used, what was left out, unknown tokens."""
    left = [_("{n:,} blank lines skipped").format(n=f["blank"])] if f["blank"] else []
    if f["capped"]:
        left.append(_("{n:,} pairs after the first {cap:,} left out").format(n=f["capped"], cap=f["cap"]))
    if f["dropped"]:
        left.append(_("{n:,} pairs with a token the model cannot hold left out").format(n=f["dropped"]))
    return _("Measuring on **{name}**: {n:,} pairs{left}; unknown tokens: {src:.1%} of the source, {tgt:.1%} of the "
             "target.").format(name=f["name"], n=f["used"], left=" (" + "; ".join(left) + ")" if left else "",
                               src=f["source_oov"], tgt=f["target_oov"])


def verdict(f: dict) -> tuple[str, str | None]:
    """What ``framing`` found (its facts ``f``, where it applies): each framing's cost in one sentence, and a warning
    naming the spec fields to set when the model's framing is the worse one (else None)."""
    costs = "; ".join(_("{framing}: {nats:.2f}").format(framing=label, nats=nats) for label, nats in f["framings"])
    said = _("Source framing checked on {n:,} pairs, nats/token: {costs}. The model reads {chosen}.").format(
        n=f["pairs"], costs=costs, chosen=f["chosen"])
    if not f["worse"]:
        return said, None
    fields = ", ".join(f'"{k}": {str(v).lower()}' for k, v in f["fields"])
    return said, _("Your pairs cost {chosen_nats:.2f} nats/token framed as {chosen} but {best_nats:.2f} as {best}: the "
                   "model was probably trained with {best}. Set {fields} in the spec.").format(
        chosen_nats=f["chosen_nats"], chosen=f["chosen"], best_nats=f["best_nats"], best=f["best"], fields=fields)
