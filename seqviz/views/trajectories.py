"""Views of hidden-state trajectories: the path h_t walks in a space fitted once on a reference sample, and
the padding study (a right-padded batch read with and without its mask).

Each is ``fn(model, **choices) -> View`` (``seqviz.views``); the Hidden-state trajectories page, the
stations lesson, ``seqviz figure trajectories`` and the HTML export draw them. ``ids`` is a tuple of texts,
each a tuple of token ids; ``space`` is the model whose fitted space the states are drawn in (None: the
model itself; a training snapshot is drawn in the final model's space so the frame stays still).
"""

from __future__ import annotations

import re
from typing import TypedDict

import numpy as np
import pandas as pd

from seqviz.charts import trajectory as charts
from seqviz.introspect.projection import (KNN, PASSAGE, fit_projection, mask_study, pick_texts, trajectory_frame,
                                          valid_states)
from seqviz.text import N_, _
from seqviz.views import View, memo
from seqviz.views.registry import Figure, declare

# What the page opens on: three texts (two of Hamlet, one not Shakespeare at all), read from an empty state.
DEFAULT_TEXTS = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer",
                 "HAMLET.\nThe rest is silence.", "The quick brown fox jumps over the lazy dog.")
# The padding study's table as the page shows it (``seqviz.tables.readable``): every column named for a reader
PADDING_TABLE = {"columns": {"text": N_("text"), "length": N_("length"), "pads": N_("pad tokens"),
                             "distance": N_("distance"), "cosine": N_("cosine"),
                             "norm_respected": N_("‖h‖, mask respected"), "norm_ignored": N_("‖h‖, mask ignored"),
                             "loss_masked": N_("loss, pads masked"), "loss_pads_counted": N_("loss, pads counted")},
                 "digits": 4}
MAX_TOKENS = 1000  # tokens read of each text (the page cuts longer ones with a notice)
REFERENCE = (8, 400)  # chunks x characters of held-out text the space is fitted on (``reference_texts``' own)

READINGS = {"mask respected (last real token)": N_("mask respected (last real token)"),
            "mask ignored (position T-1)": N_("mask ignored (position T-1)")}


def _layer(model, layer: int | None) -> int:
    n = model.config.n_layers
    layer = n - 1 if layer is None else int(layer)
    if not 0 <= layer < n:
        raise ValueError(f"layer must be 0..{n - 1}, got {layer}")
    return layer


def _texts(ids) -> tuple[tuple[int, ...], ...]:
    texts = tuple(tuple(int(i) for i in t) for t in ids)
    if not texts or not all(texts):
        raise ValueError("every text needs at least one token")
    return texts


def batch_trace(model, ids: tuple, layer: int | None = None):
    """``model.trace`` of several id sequences, right-padded into one batch (``memo``'d per model and texts): every
    name while that is small (``seqviz.budget.whole``), else ``layer``'s h and the head's names (its losses)."""
    from seqviz import budget

    texts = _texts(ids)
    if layer is None or budget.whole(model, sum(map(len, texts))):
        return memo(model, ("batch", texts), lambda: model.trace([list(t) for t in texts]))
    names = ["tokens", "mask", f"layers.{int(layer)}.h", "logits", "loss", "loss_mask"]
    return memo(model, ("batch", texts, int(layer)), lambda: model.trace([list(t) for t in texts], names=names))


def reference_trace(model, layer: int | None = None):
    """(the model's trace of the reference sample, where the sample came from), kept per model.

    One trace holds every layer's h (no gates: the fused kernels), so fitting another layer's or method's
    projection does not read the sample again; a model of real size reads a sample sized to it
    (``seqviz.views.gates.sample_texts``) and only ``layer``'s h.
    """
    from seqviz import budget
    from seqviz.views.gates import sample_texts

    texts, source = sample_texts(model, *REFERENCE)  # in the key: the corpus may be fetched after the first run
    if layer is None or budget.whole(model, sum(map(len, texts))):
        names = ["mask"] + [f"layers.{i}.h" for i in range(model.config.n_layers)]
        return memo(model, ("reference", source), lambda: (model.trace(texts, names=names), source))
    names = ["mask", f"layers.{int(layer)}.h"]
    return memo(model, ("reference", source, int(layer)), lambda: (model.trace(texts, names=names), source))


def projection(model, layer: int, method: str = "pca", dims: int = 2):
    """A projection of ``layers.{layer}.h`` fitted on the reference sample, once per model and setting."""
    def fit():
        trace, source = reference_trace(model, layer)
        return fit_projection(valid_states(trace, layer), method, dims, info={"layer": layer, "sample": source})
    return memo(model, ("projection", int(layer), method, int(dims)), fit)


class SpaceFacts(TypedDict):
    method: str  # "pca" or "tsne"
    dims: int  # 2 or 3
    explained: tuple[float, ...]  # the share of the reference variance each PCA axis holds
    n_reference: int  # reference states the space was fitted on
    perplexity: float  # t-SNE's perplexity
    k: int  # neighbours a new state is placed among (t-SNE)
    sample: str  # where the reference sample came from (English: ``describe_sample``)
    projection: str  # how the space was made, in English (exports' state lines)


def space_facts(proj) -> SpaceFacts:
    """What a caption says about a fitted space: its method, the variance its axes hold, where it was fitted."""
    return {"method": proj.method, "dims": proj.dims, "explained": tuple(float(v) for v in proj.explained),
            "n_reference": int(proj.info.get("n_reference", len(proj.ref_points))),
            "perplexity": float(proj.info.get("perplexity", 30)), "k": KNN, "sample": proj.info.get("sample", ""),
            "projection": proj.describe()}  # English, for exports' state lines


def describe(f: dict) -> str:
    """How a space was made (``space_facts``), in the installed language (exports quote the English ``projection``)."""
    if f["method"] == "pca":
        parts = ", ".join(f"PC{i + 1} {100 * v:.1f} %" for i, v in enumerate(f["explained"]))
        return _("{parts} of the reference variance (together {total:.1f} %)").format(
            parts=parts, total=100 * sum(f["explained"]))
    return _("t-SNE of {n:,} reference states (perplexity {perplexity:g}); a new state is placed at the weighted "
             "mean of its {k} nearest reference states").format(n=f["n_reference"], perplexity=f["perplexity"],
                                                                   k=f["k"])


_SAMPLE = re.compile(r"(?P<n>\d+) chunks x (?P<length>\d+) characters from (?P<source>.*)", re.DOTALL)
_PLAYS = re.compile(r"held-out validation plays \((?P<plays>.*)\)", re.DOTALL)


# How a caption names the shipped passage (``PASSAGE`` keys the views): a first visitor must not take it for
# held-out text.
PASSAGE_SHOWN = N_("the sample passage shipped with seqviz, which is not held-out text (no corpus folder was found: "
                   "the model may have trained on this passage)")


def describe_sample(sample: str) -> str:
    """Where the reference sample came from (``space_facts``' ``sample``: ``reference_texts``' English, which
    keys the cached trace and the shipped views) in the installed language; another text as it is."""
    found = _SAMPLE.fullmatch(sample)
    if found is None:
        return sample
    source = found["source"]
    if source == PASSAGE:
        source = _(PASSAGE_SHOWN)
    elif (plays := _PLAYS.fullmatch(source)) is not None:
        source = _("held-out validation plays ({plays})").format(plays=plays["plays"])
    return _("{n} chunks × {length} characters from {source}").format(n=int(found["n"]), length=int(found["length"]),
                                                                     source=source)


def title(name: str, layer: int, step: int | None = None) -> str:
    """A trajectory chart's title in the installed language: the model's name, layer[, step]."""
    return (_("{model} · layer {layer}").format(model=name, layer=layer)
            + (" · " + _("step {step}").format(step=step) if step is not None else ""))


def model_name(model) -> str:
    return (getattr(model, "card", None) or {}).get("name") or _("model")


def _opening(model, peers=(), folder=None) -> list[dict]:
    """A ``ships`` declaration: the choices the Hidden-state trajectories page draws at its defaults: the first text's path in
    the top layer's PCA plane (and in every other layer's, and in 3-D: what its Layer and View controls switch
    to), the same text in the comparison tab's small chart (at every layer), and at each training snapshot the
    folder keeps, in the final model's space and in the snapshot's own. ``seqviz precompute`` ships them, so a
    shared link draws them, and those controls move, before torch is imported."""
    from pathlib import Path

    from seqviz.files import list_snapshots
    from seqviz.introspect.language import prepare
    from seqviz.results import Peer, Snapshot

    ids = tuple(tuple(prepare(model.tokenizer, t, MAX_TOKENS)[0]) for t in DEFAULT_TEXTS)
    top = model.config.n_layers - 1
    main = {"ids": ids, "layer": top, "method": "pca", "dims": 2, "shown": "all", "space": None, "step": None}
    name = (getattr(model, "card", None) or {}).get("name")
    compact = {"ids": ids[:1], "layer": top, "method": "pca", "dims": 2, "name": name, "compact": True}
    others = [{**main, "layer": layer, "dims": dims} for layer in range(model.config.n_layers) for dims in (2, 3)]
    small = [{**compact, "layer": layer} for layer in range(model.config.n_layers)] if name else []  # it follows
    # The Over-training slider's steps, in the final model's space and each in its own (the toggle beside it).
    steps = [] if folder is None else list_snapshots(folder)
    over = [{**main, "step": s, "space": space, "at_snapshot": Snapshot(Path(folder), s)}
            for s in steps for space in (Peer(Path(folder)), None)]
    return [main] + [c for c in others if c != main] + small + over


# ------------------------------------------------------------------ the path h_t walks
class TrajectoryFacts(SpaceFacts):
    layer: int  # the layer whose h is drawn
    texts: int  # texts read
    points: int  # states drawn (valid tokens)
    shown: str  # "all" or one text's label


@declare(version=2, facts=TrajectoryFacts, ships=_opening, figure=Figure("trajectories", text="texts", choice="ids",
                                      options={"layer": "layer", "method": "method"},
                                      quotes={"layer": "{layer}", "projection": "{projection}"}))
def trajectory(model, ids: tuple, layer: int | None = None, method: str = "pca", dims: int = 2, shown: str = "all",
               space=None, name: str | None = None, step: int | None = None, compact: bool = False) -> View:
    """Every text's path in ``space``'s fitted space (``dims`` 2: one chart; 3: one view the visitor turns),
    the reference sample as a grey cloud; ``shown``: "all" or one text's label ("text 2"). Data: every text's
    points (the frame the CSV and TensorBoard metadata are made of). ``compact``: the comparison's small chart."""
    layer, texts = _layer(model, layer), _texts(ids)
    proj = projection(space if space is not None else model, layer, method, int(dims))
    frame = trajectory_frame(batch_trace(model, texts, layer), proj, layer)
    reference = pd.DataFrame(proj.ref_points, columns=list("xyz")[: proj.dims])
    drawn = pick_texts(frame, None if shown == "all" else shown)
    heading = title(model_name(model) if name is None else name, layer, step)
    if proj.dims == 3:
        chart = charts.turntable(drawn, proj.axis_names, reference, heading, text_label=_("text {i}"))
    else:
        size = {"width": 300, "height": 280} if compact else {}
        chart = charts.trajectory_chart(drawn, proj.axis_names, reference, title=heading, text_label=_("text {i}"),
                                        **size)
    return View(chart, frame, {**space_facts(proj), "layer": layer, "texts": len(texts), "points": len(frame),
                               "shown": shown}, "Trajectory")


class HiddenStatesFacts(TypedDict):
    layer: int  # the layer whose h is given
    units: int  # h's width
    points: int  # valid tokens (rows)


@declare(facts=HiddenStatesFacts)
def hidden_states(model, ids: tuple, layer: int | None = None) -> View:
    """Every valid token's full h_t of ``layer``, one row per token (text, step, then h0..h{H-1}); no chart:
    the vectors of the TensorBoard projector's tensors.tsv."""
    layer, texts = _layer(model, layer), _texts(ids)
    trace = batch_trace(model, texts, layer)
    mask = trace["mask"]
    states = trace[f"layers.{layer}.h"][mask].double().numpy()
    rows, steps = np.nonzero(mask.numpy())
    frame = pd.DataFrame(states, columns=[f"h{j}" for j in range(states.shape[1])])
    frame.insert(0, "step", steps)
    frame.insert(0, "text", [f"text {b + 1}" for b in rows])
    return View(None, frame, {"layer": layer, "units": states.shape[1], "points": len(frame)}, "Hidden states")


# ------------------------------------------------------------------ padding and masks (station S1)
def _study(model, texts: tuple, layer: int):
    return memo(model, ("mask study", texts, layer), lambda: mask_study(batch_trace(model, texts, layer), layer))


def _padded(model, ids, layer):
    layer, texts = _layer(model, layer), _texts(ids)
    if len(texts) < 2:
        raise ValueError("the padding study needs at least two texts")
    return layer, texts, _study(model, texts, layer)


class PaddedBatchFacts(TypedDict):
    texts: int  # texts in the batch
    width: int  # the batch's length T (the longest text)


@declare(version=2, facts=PaddedBatchFacts)  # 2: every position labelled, or its title says which
def padded_batch(model, ids: tuple, layer: int | None = None) -> View:
    """The texts right-padded into one batch: rows are texts, columns positions, pads shaded."""
    layer, texts, study = _padded(model, ids, layer)
    return View(charts.padding_grid_chart(study.grid), study.grid,
                {"texts": len(texts), "width": int(study.grid["step"].max()) + 1}, "Padded batch")


class MaskDistanceFacts(TypedDict):
    texts: int  # texts in the batch
    layer: int  # the layer read
    padded: int  # texts with pads
    length: int  # the last text's real tokens
    pads: int  # ... and its pads
    distance: float  # ‖h at its last real token − h at position T−1‖
    cosine: float  # the cosine between the two
    loss_masked: float  # the batch's loss with the mask respected
    loss_pads_counted: float  # ... with the pads counted


@declare(facts=MaskDistanceFacts)
def mask_distance(model, ids: tuple, layer: int | None = None) -> View:
    """‖h at each text's last real token − h at position T−1‖ per text: zero only for a text with no pads.
    Data: the study's table (length, pads, distance, cosine, norms, both losses); facts: the last text's row."""
    layer, texts, study = _padded(model, ids, layer)
    row = study.table.iloc[-1]
    facts = {"texts": len(texts), "layer": layer, "padded": int((study.table["pads"] > 0).sum()),
             **{k: (int(row[k]) if k in ("length", "pads") else float(row[k]))
                for k in ("length", "pads", "distance", "cosine", "loss_masked", "loss_pads_counted")}}
    return View(charts.mask_distance_chart(study.table), study.table, facts, "Mask distance")


@declare(facts=SpaceFacts)
def final_states(model, ids: tuple, layer: int | None = None, method: str = "pca", dims: int = 2,
                 space=None) -> View:
    """Each text's two final states (mask respected / ignored) in ``space``'s fitted space, joined by a line."""
    layer, texts, study = _padded(model, ids, layer)
    proj = projection(space if space is not None else model, layer, method, int(dims))
    ends = pd.concat([pd.DataFrame(proj.transform(states)[:, :2], columns=["x", "y"]).assign(
        text=study.table["text"], reading=_(READINGS[reading]))
        for states, reading in ((study.respected, "mask respected (last real token)"),
                                (study.ignored, "mask ignored (position T-1)"))], ignore_index=True)
    chart = charts.final_states_chart(ends, proj.axis_names, _("text {i}"))
    return View(chart, ends, space_facts(proj), "Final states")
