"""Views of gradient flow through time: ‖∂L_t/∂h_k‖ by distance, the LSTM's two paths, the ρ bench, clipping,
what-if copies, connectivity, training snapshots and the chapter's worked examples.

Each is ``fn(model, **choices) -> View`` (``seqviz.views``); the two gradient pages, the stations lesson,
``seqviz figure gradient_flow`` and the HTML export draw them. ``text`` is read by each model's own tokenizer,
its first ``tokens`` tokens. Compute once, slice many: a causal model's loss at t depends only on tokens
≤ t + 1, so G[t, k] of the first n tokens is the top-left (n−1) × n block of G for the text cut at
``MAX_GRADIENT_TOKENS``; every Tokens setting reads the one matrix (``matrix``).
"""

from __future__ import annotations

from typing import NotRequired, TypedDict

import altair as alt
import numpy as np
import pandas as pd

from seqviz.charts import gates as gate_charts
from seqviz.charts import gradients as charts
from seqviz import budget
from seqviz.families import of
from seqviz.config import MAX_GRADIENT_TOKENS
from seqviz.introspect import worked_examples as we
from seqviz.introspect.projection import corpus_text
from seqviz.text import N_, _
from seqviz.views import View, deferred, memo, traced
from seqviz.views.registry import Figure, NoFacts, declare

gr = deferred("seqviz.introspect.gradients")  # torch: imported when a view is computed, not when one is read
cl = deferred("seqviz.introspect.clipping")

NOTE = N_("○ drawn at {floor:.0e}: the value is below it (0 = underflow); △ drawn at the top: inf (overflow)")
RUNS = {"without clipping": N_("without clipping"), "with clipping": N_("with clipping")}
COLUMNS = {"∂h_3/∂h_1 (book's method)": N_("∂h_3/∂h_1 (book's method)"),
           "∂h_3/∂h_1 (book, printed)": N_("∂h_3/∂h_1 (book, printed)")}
TAMED = 0.1  # clipping "tames" the spikes when its largest loss rise is under a tenth of the unclipped run's
EDITS = ("forget_shift", "orthogonal")  # what a what-if copy may change (gradients.edited_copy)


class _Shared:
    """What ``memo`` keys the model-free results on (the clipping runs train their own small RNN)."""


SHARED = _Shared()


DEFAULT_TEXT = ("To be, or not to be, that is the question:\nWhether 'tis nobler in the mind to suffer\n"
                "The slings and arrows of outrageous fortune")  # what both gradient pages backpropagate through
TOKENS = 100  # tokens read by default
RHOS = tuple(round(0.5 + 0.1 * i, 1) for i in range(16))  # the ρ bench's settings, 0.5 to 2.0
RHO = 1.2

def _ids(model, text: str) -> tuple[int, ...]:
    """The text's first ``MAX_GRADIENT_TOKENS`` token ids; ValueError under two (a loss needs a next token)."""
    ids = tuple(model.tokenizer.encode(text).ids[:MAX_GRADIENT_TOKENS])
    if len(ids) < 2:
        raise ValueError(_("the text needs at least two known tokens"))
    return ids


def _edited(model, edit: tuple):
    """``model`` itself (edit ``()``) or a private copy with ``edit`` = (name, value) applied (made again when
    asked: what is kept is its G, not a model-sized copy per slider value)."""
    if not edit:
        return model
    name, value = edit
    if name not in EDITS:
        raise ValueError(f"a what-if copy changes {' or '.join(EDITS)}, not {name!r}")
    if name == "forget_shift" and not of(model).applies("cell_path"):
        raise ValueError(of(model).why_not("cell_path"))
    return gr.edited_copy(model, **{name: value})


def matrix(model, text: str, tokens: int = 100, layer: int = -1, wrt: str = "h", edit: tuple = ()):
    """(G [n−1, n], the n token pieces): G[t, k] = ‖∂L_t/∂{h|c}_k‖ of ``layer`` over the first n = ``tokens``
    tokens, sliced from the one matrix of the text cut at ``MAX_GRADIENT_TOKENS`` (kept per model); for a Mamba
    ``wrt="h"`` means the block's scan state s (``introspect.mamba_gradients``)."""
    ids = _ids(model, text)
    layer = int(layer) % model.config.n_layers
    if wrt == "h":  # what its recurrence carries: a Mamba's scan state s, not h (h_k of the top block reaches
        wrt = of(model).carried  # only L_k: seqviz.introspect.mamba_gradients)
    n = max(2, min(int(tokens), len(ids), budget.pairs_for(model, MAX_GRADIENT_TOKENS)))
    if not budget.whole(model, MAX_GRADIENT_TOKENS):  # a model of real size: G of the tokens shown, not of the most
        ids = ids[:n]
    full = memo(model, ("G", ids, layer, wrt, tuple(edit)),
                lambda: gr.gradient_matrix(_edited(model, tuple(edit)), _tensor(ids), layer=layer, wrt=wrt))
    return full[: n - 1, :n], model.tokenizer.encode(text).pieces[:n]


def full_matrices(models, text: str) -> None:
    """Each model's G on ``text`` at ``MAX_GRADIENT_TOKENS`` (``matrix``, memoised): what every Tokens setting of
    the distance views slices. A model that cannot read the text is skipped (the view says why), and so is a model
    of real size (``seqviz.budget.whole``): its G is computed for the tokens shown only."""
    for model in models:
        if not budget.whole(model, MAX_GRADIENT_TOKENS):
            continue
        try:
            matrix(model, text, MAX_GRADIENT_TOKENS)
        except ValueError:
            continue


def _tensor(ids):
    import torch

    return torch.tensor([list(ids)])


def curve(model, text: str, tokens: int = 100, layer: int = -1, wrt: str = "h", edit: tuple = (),
          label: str = "") -> pd.DataFrame:
    """One model's ``by_distance`` table (mean, median, 10–90 % of G[t, t − d]) labelled ``label``."""
    return gr.by_distance(matrix(model, text, tokens, layer, wrt, edit)[0]).assign(model=label)


def _curves(frames: list[pd.DataFrame], title: str, facts: dict, name: str) -> View:
    data = pd.concat(frames, ignore_index=True)
    return View(charts.distance_curves(data, title, _(NOTE), decades=charts.DECADES), data, facts, name)


def cell_label(name: str, model) -> str:
    """A model's name in a legend, its family's title after it unless the name already says it (a lesson passes
    the names a class reads, ``seqviz.names``: "LSTM (Shakespeare, characters)")."""
    title = of(model).title
    return name if title in name else f"{name} ({title})"


# ------------------------------------------------------------------ by distance
def _on_text(model, peers=(), folder=None) -> list[dict]:
    """A ``ships`` declaration: the Gradient flow page's default text and length."""
    return [{"text": DEFAULT_TEXT, "tokens": TOKENS}]


class TokensFacts(TypedDict):
    tokens: int  # n: the tokens G is computed over


@declare(facts=TokensFacts, ships=_on_text)
def token_pieces(model, text: str, tokens: int = 100) -> View:
    """The n = ``tokens`` pieces G is computed over (one row each); no chart. ValueError under two tokens."""
    ids = _ids(model, text)
    pieces = model.tokenizer.encode(text).pieces[: max(2, min(int(tokens), len(ids)))]
    return View(None, pd.DataFrame({"k": range(len(pieces)), "token": pieces}), {"tokens": len(pieces)}, "Tokens")


class FarthestFacts(TypedDict):
    distance: int | None  # the largest distance every curve reaches (None: a curve has no point)
    fastest: NotRequired[str]  # the model whose mean ‖∂L_t/∂h_k‖ is smallest there
    fastest_value: NotRequired[float]  # ... that mean
    slowest: NotRequired[str]  # the model whose mean is largest there
    slowest_value: NotRequired[float]  # ... that mean


class DistanceFacts(FarthestFacts):
    models: tuple[str, ...]  # the curves drawn (model and family)
    tokens: int  # tokens read
    skipped: tuple[tuple[str, str], ...]  # (model, why) of each model left out
    fewer: NotRequired[tuple[tuple[str, int], ...]]  # (model, tokens) of each model of real size that read fewer


@declare(version=2, facts=DistanceFacts, ships=lambda model, peers=(), folder=None:  # every checkpoint the page lists, compared
         [{"text": DEFAULT_TEXT, "tokens": TOKENS, "models": tuple(peers)}] if peers else [],
         figure=Figure("gradient_flow", options={"tokens": "tokens", "layer": "layer", "wrt": "wrt"},
                       compared="models", quotes={"tokens": "{tokens}"}))
def distance_curve(model, text: str, tokens: int = 100, models: tuple = (), layer: int = -1, wrt: str = "h") -> View:
    """‖∂L_t/∂{h|c}_k‖ of ``layer`` (the top one) against t − k for each (name, model) of ``models`` (none:
    ``model``, "chosen model"); facts: the models drawn, the tokens read and, per model left out, why."""
    frames, skipped, read, fewer = [], [], [], []
    for name, m in [*models] or [(_("chosen model"), model)]:
        try:
            frames.append(curve(m, text, tokens, layer, wrt, label=cell_label(name, m) if models else name))
        except ValueError as e:
            skipped.append((name, str(e)))
            continue
        read.append(min(int(tokens), len(_ids(m, text)), budget.pairs_for(m, MAX_GRADIENT_TOKENS)))
        if read[-1] < min(int(tokens), len(_ids(m, text))):  # a model of real size: fewer tokens (the caption says)
            fewer.append((frames[-1]["model"].iloc[0], read[-1]))
    if not frames:
        frames.append(curve(model, text, tokens, layer, wrt, label=_("chosen model")))
        read.append(min(int(tokens), len(_ids(model, text))))
    return _curves(frames, _("‖∂L_t/∂h_k‖ against distance t − k"),
                   {"models": tuple(f["model"].iloc[0] for f in frames), "tokens": read[0],
                    **({"fewer": tuple(fewer)} if fewer else {}), "skipped": tuple(skipped), **farthest(frames)},
                   "Gradient by distance, per model")


def _far(frames: list[pd.DataFrame]) -> tuple[int | None, list[float]]:
    """The largest distance every curve reaches and each curve's mean there, in the frames' order (None, [])."""
    reach = [f.dropna(subset=["mean"]) for f in frames]
    if not all(len(f) for f in reach):
        return None, []
    d = int(min(f["distance"].max() for f in reach))
    return d, [float(f.loc[f["distance"] == d, "mean"].iloc[0]) for f in reach]


def farthest(frames: list[pd.DataFrame]) -> FarthestFacts:
    """At the largest distance every curve reaches (``distance``): the model whose mean ‖∂L_t/∂h_k‖ is smallest
    there (``fastest``, its ``fastest_value``) and largest (``slowest``, ``slowest_value``): what the caption
    says falls fastest, for the models drawn."""
    d, values = _far(frames)
    if d is None:
        return {"distance": None}
    at = dict(zip((f["model"].iloc[0] for f in frames), values))
    fastest, slowest = min(at, key=at.get), max(at, key=at.get)
    return {"distance": d, "fastest": fastest, "fastest_value": at[fastest], "slowest": slowest,
            "slowest_value": at[slowest]}


def then(sentence: str, following: str) -> str:
    """Two sentences, joined as the installed language joins them (a space in English, none in Chinese)."""
    return _("{sentence} {following}").format(sentence=sentence, following=following)


def distance_caption(facts: dict) -> str:
    """The sentence under the distance curves, from ``distance_curve``'s facts (the models drawn, not the lesson's)."""
    said = _("Mean over loss positions t of ‖∂L_t/∂h_k‖ for the top layer (band: 10–90 % of t). A straight falling "
             "line on this log axis is exponential decay.")
    for name, n in facts.get("fewer", ()):  # G's work grows with the square of the tokens: a large model reads fewer
        said = then(said, _("{name} is large: its curve reads the first {n} tokens.").format(name=name, n=n))
    if facts.get("distance") is None:
        return said
    if len(facts["models"]) < 2:
        return then(said, _("{t} steps back it is {v:.1e}.").format(t=facts["distance"], v=facts["fastest_value"]))
    return then(said, _("{t} steps back it is smallest for {fastest} ({v:.1e}) and largest for {slowest} "
                        "({w:.1e}).").format(t=facts["distance"], fastest=facts["fastest"], v=facts["fastest_value"],
                                             slowest=facts["slowest"], w=facts["slowest_value"]))


@declare(version=3, facts=TokensFacts, ships=_on_text)  # 3: every 10th position labelled, as its axes say
def gradient_heatmap(model, text: str, tokens: int = 100) -> View:
    """G[t, k] itself, loss position down, state position across, log colour, the checkpoint named."""
    G, pieces = matrix(model, text, tokens)
    name = (getattr(model, "card", None) or {}).get("name", "")
    return View(charts.gradient_heatmap(G, pieces, cell_label(name, model) if name else of(model).title,
                                        _("G[t, k] = ‖∂L_t/∂h_k‖ (exact backpropagation)")), pd.DataFrame(G).rename_axis("t").reset_index(),
                {"tokens": len(pieces)}, "Gradient matrix")


class TwoPathsFacts(TypedDict, total=False):  # none when a curve has no point
    distance: int  # the largest distance both curves reach
    h: float  # the hidden-state path's mean ‖∂L_t/∂h_k‖ there
    c: float  # the cell-state path's mean ‖∂L_t/∂C_k‖ there


@declare(version=2, facts=TwoPathsFacts)
def two_paths(model, text: str, tokens: int = 100) -> View:
    """The LSTM's hidden-state path ‖∂L_t/∂h_k‖ against its cell-state path ‖∂L_t/∂C_k‖."""
    frames = [curve(model, text, tokens, label=_("via h: ‖∂L_t/∂h_k‖")),
              curve(model, text, tokens, wrt="c", label=_("via C: ‖∂L_t/∂C_k‖"))]
    d, values = _far(frames)
    at = {} if d is None else {"distance": d, **dict(zip("hc", values))}
    return _curves(frames, _("Hidden-state path vs cell-state path"), at, "h path vs C path")


def two_paths_caption(facts: dict) -> str:
    """The sentence under the two paths, from ``two_paths``' facts: which path carries more far back, by how much."""
    said = _("The lesson's ∂C_t/∂C_{t−1} ≈ f_t: where the forget gates stay near 1, their product — and the "
             "cell-state gradient — decays slowly.")
    if "distance" not in facts:
        return said
    h, c = facts["h"], facts["c"]
    if c >= h:
        return then(said, _("{t} steps back the cell-state path carries {c:.1e} and the hidden-state path {h:.1e}: "
                            "{r:.3g} times as much through C.").format(t=facts["distance"], c=c, h=h,
                                                                      r=c / h if h > 0 else float("inf")))
    return then(said, _("Here the hidden-state path carries more: {t} steps back {h:.1e} through h against {c:.1e} "
                        "through C.").format(t=facts["distance"], h=h, c=c))


class LayerFacts(TypedDict):
    layer: int  # the layer read


@declare(facts=LayerFacts)
def forget_curve(model, text: str, tokens: int = 100, layer: int = -1) -> View:
    """Mean over units and t of ∏ f_j over d steps (≈ ∂C_t/∂C_k) on the first ``tokens`` tokens."""
    ids = _ids(model, text)
    layer = int(layer) % model.config.n_layers
    n = max(2, min(int(tokens), len(ids)))
    forget = traced(model, ids, layer)[f"layers.{layer}.gates.forget"][0, :n]  # a prefix of the trace: causal
    frame = gr.forget_product(forget)
    return View(charts.forget_curve(frame), frame, {"layer": layer}, "Forget product")


class LayersFacts(TypedDict):
    layers: int  # the model's layers, one curve each
    note: NotRequired[str]  # a model of real size: its top layer alone is drawn, and this says so


@declare(version=2, facts=LayersFacts)
def layers(model, text: str, tokens: int = 100) -> View:
    """‖∂L_t/∂h_k‖ of each layer: the loss reaches layer 0 through every layer above it. A model of real size
    (``seqviz.budget.whole``) draws its top layer alone (a lower layer's G is a backward pass through every block
    above it from every loss: minutes for mamba-130m), and its ``note`` says so."""
    n = model.config.n_layers
    shown = range(n) if budget.whole(model, MAX_GRADIENT_TOKENS) else [n - 1]
    note = {} if len(shown) == n else {"note": _(
        "This model is large ({n} layers): the curve of its top layer alone is drawn; a lower layer's takes a "
        "backward pass through every layer above it from every loss.").format(n=n)}
    return _curves([curve(model, text, tokens, layer=i, label=_("layer {i}").format(i=i)) for i in shown],
                   _("‖∂L_t/∂h_k‖ per layer"), {"layers": n, **note}, "Gradient per layer")


class WhatIfFacts(TypedDict):
    change: str  # the edit, as "name value"


@declare(version=2, facts=WhatIfFacts)
def what_if(model, text: str, tokens: int = 100, edit: tuple = ("orthogonal", True)) -> View:
    """The curve before and after ``edit`` (``gradients.edited_copy`` on a private copy)."""
    return _curves([curve(model, text, tokens, label=_("original")),
                    curve(model, text, tokens, edit=tuple(edit), label=_("changed copy"))],
                   _("Before and after the change"), {"change": f"{edit[0]} {edit[1]}"}, "Before and after the change")


@declare(facts=LayerFacts)
def spectrum_change(model, edit: tuple = ("orthogonal", True)) -> View:
    """‖W‖₂ and max|eig W| of each recurrent block of the top layer, before and after ``edit``; no chart."""
    top = model.config.n_layers - 1
    before = gr.recurrent_spectrum(model, top).set_index("block")
    after = gr.recurrent_spectrum(_edited(model, tuple(edit)), top).set_index("block")
    table = pd.merge(before, after, left_index=True, right_index=True,
                     suffixes=(" " + _("before"), " " + _("after")))
    return View(None, table, {"layer": top}, "Spectrum before and after")


class OverTrainingFacts(TypedDict):
    step: int | None  # the snapshot's training step (None: the final model)


@declare(version=2, facts=OverTrainingFacts)
def over_training(model, text: str, tokens: int = 100, snapshot=None, step: int | None = None) -> View:
    """The curve of ``snapshot`` (a training snapshot's model, at ``step``; None: the final model) beside
    the final model's."""
    earlier = curve(snapshot if snapshot is not None else model, text, tokens,
                    label=_("step {step}").format(step=_("final") if step is None else step))
    return _curves([earlier, curve(model, text, tokens, label=_("final"))], _("The curve while the model learned"),
                   {"step": step}, "Over training")


# ------------------------------------------------------------------ exploding or vanishing: the ρ bench
def _linear(model, ids: tuple):
    """``clipping.linear_chain`` at ρ = 1 on the text cut at the maximum (any ρ rescales it exactly)."""
    return memo(model, ("linear chain", ids), lambda: cl.linear_chain(model, ids))


def _tanh(model, ids: tuple, rho: float, rho_trained: float):
    """``clipping.tanh_chain`` at ``rho`` on the text cut at the maximum: a causal RNN's G over the first n tokens
    is its top-left block, so every Tokens setting slices it."""
    return memo(model, ("tanh chain", ids, float(rho)), lambda: cl.tanh_chain(model, ids, float(rho), rho_trained))


def radius_source(model, text: str, rho: float) -> None:
    """What ``radius_bench`` slices at every Tokens setting for ``rho`` (memoised): the page computes it ahead."""
    ids = _ids(model, text)
    _tanh(model, ids, rho, _linear(model, ids)["rho_trained"])


class RadiusFacts(TypedDict):
    rho: float  # the spectral radius W_hh was rescaled to
    d: int  # the distance t − k the ratios are read at (``far``, within the text)
    tokens: int  # tokens read
    rho_trained: float  # W_hh's own spectral radius
    norm_trained: float  # ‖W_hh‖₂ as trained
    norm: float  # ‖W_hh‖₂ rescaled
    lin0: float  # the linear chain's mean gradient norm at distance 0
    lin: float  # ... at distance d
    lin_ratio: float  # lin / lin0
    rho_d: float  # ρ^d: what the linear chain's ratio follows
    tanh0: float  # the trained RNN's (its own tanh) mean gradient norm at distance 0
    tanh: float  # ... at distance d
    tanh_ratio: float  # tanh / tanh0
    per_step: float  # the trained RNN's mean factor per step
    tanh_prime: float  # the mean tanh′ along the text
    explodes: bool  # tanh > tanh0
    vanishes: bool  # tanh <= tanh0
    linear_grows: bool  # lin > lin0


@declare(needs=("tanh_recurrence",), facts=RadiusFacts,  # the Exploding-and-vanishing page's ρ slider: each ρ its copy
         ships=lambda model, peers=(), folder=None: [{"text": DEFAULT_TEXT, "tokens": TOKENS, "rho": rho} for rho in RHOS])
def radius_bench(model, text: str, tokens: int = 100, rho: float = 1.2, far: int = 20, short: bool = False) -> View:
    """The top W_hh rescaled to spectral radius ``rho``: the linear chain (tanh′ = 1, along W's leading
    eigenvector) grows like ρ^(t−k) above 1 and shrinks below, the trained tanh RNN at the same ρ still vanishes. Both in float64; facts at distances 0 and ``far``.
    ``short``: the short legend names (a lesson on a phone)."""
    if not of(model).applies("tanh_recurrence"):
        raise ValueError(of(model).why_not("tanh_recurrence"))
    ids = _ids(model, text)
    n = max(2, min(int(tokens), len(ids)))
    lin = _linear(model, ids)
    full = _tanh(model, ids, rho, lin["rho_trained"])
    tanh = {"G": full["G"][: n - 1, :n], "norm": full["norm"], "mean_tanh_prime": float(full["tanh_prime"][:n].mean())}
    # along W's leading eigenvector, at the mean size of this text's own seeds: exactly ρ^d at distance d
    linear = gr.by_distance(lin["seed_norms"][: n - 1].mean() * cl.scale_chain(lin["G1"][: n - 1, :n], float(rho)))
    own = gr.by_distance(tanh["G"])
    names = (_("linear regime (tanh′ = 1)") if short else _("linear regime: tanh′ = 1, along W's leading eigenvector"),
             _("trained RNN, its own tanh"))
    data = pd.concat([linear.assign(model=names[0]), own.assign(model=names[1])], ignore_index=True)
    d = min(int(far), n - 2)
    lin0, lind, tanh0, tanhd = (cl.at_distance(c, k) for c in (linear, own) for k in (0, d))
    facts = {"rho": float(rho), "d": d, "tokens": n, "rho_trained": lin["rho_trained"],
             "norm_trained": lin["norm_trained"], "norm": tanh["norm"], "lin0": lin0, "lin": lind,
             "lin_ratio": lind / lin0, "rho_d": float(rho) ** d, "tanh0": tanh0, "tanh": tanhd,
             "tanh_ratio": tanhd / tanh0, "per_step": cl.per_step(own, d), "tanh_prime": tanh["mean_tanh_prime"],
             "explodes": tanhd > tanh0, "vanishes": tanhd <= tanh0,
             "linear_grows": lind > lin0 * (1 + 1e-9)}  # at ρ = 1 it stays level (equal to float64 rounding)
    return View(charts.distance_curves(data, _("Same ρ, two regimes"), _(NOTE)), data, facts,
                "Linear chain vs trained RNN")


# ------------------------------------------------------------------ clipping: a small RNN trained twice
def _run(clip: float | None, lr: float, seed: int, chars: int) -> pd.DataFrame:
    """One ``clipping.train_run`` on the first ``chars`` characters of the held-out text (the unclipped run is
    shared by every threshold). Keyed on the text's source too: the corpus may arrive after the first run
    (a fresh clone falls back to the shipped passage until it is fetched)."""
    text, source = corpus_text()
    return memo(SHARED, ("clipping run", source, clip, float(lr), int(seed), int(chars)),
                lambda: cl.train_run(text[: int(chars)], clip, lr=float(lr), seed=int(seed)))


class ClippingFacts(TypedDict):
    c: float  # the clipping threshold
    lr: float  # the learning rate
    seed: int  # both runs' seed
    steps: int  # SGD steps per run
    plays: bool  # trained on the held-out plays (False: the shipped passage)
    free_max: float  # the largest ‖g‖ without clipping
    free_jump: float  # the largest loss jump without clipping
    free_final: float  # the final loss without clipping
    above: int  # steps whose ‖g‖ was above c (clipped)
    kept_max: float  # the largest norm applied with clipping (≤ c)
    kept_jump: float  # the largest loss jump with clipping
    kept_final: float  # the final loss with clipping
    kept_pct: float  # the largest jump with clipping, in per cent of the largest without
    tamed: bool  # the largest jump with clipping is under TAMED (a tenth) of the largest without
    not_tamed: bool  # ... it is not


def _runs(clip: float, lr: float, seed: int, chars: int):
    runs = cl.stack_runs(_run(None, lr, seed, chars), _run(float(clip), lr, seed, chars))
    runs["series"] = runs["run"].map(lambda r: _(RUNS[r]))
    s = cl.run_summary(runs, float(clip))
    free, kept = s["without clipping"], s["with clipping"]
    facts = {"c": float(clip), "lr": float(lr), "seed": int(seed), "steps": len(runs) // 2,
             "plays": corpus_text()[1].startswith("held-out"), "free_max": free["max_norm"],
             "free_jump": free["jump"], "free_final": free["final"], "above": kept["above"],
             "kept_max": kept["max_applied"], "kept_jump": kept["jump"], "kept_final": kept["final"],
             "kept_pct": 100 * kept["jump"] / free["jump"] if free["jump"] > 0 else float("nan"),
             # tamed: the clipped run's largest one-step rise of the loss under a tenth of the unclipped run's
             "tamed": kept["jump"] < TAMED * free["jump"], "not_tamed": kept["jump"] >= TAMED * free["jump"]}
    return runs, facts


def largest_jumps(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run (``series``), the step whose loss rose most over the step before, with that rise: what the
    clipping question is about, marked on the loss chart."""
    rows = []
    for series, r in runs.groupby("series", sort=False):
        rise = np.diff(r["loss"].to_numpy())
        i = int(np.argmax(rise)) + 1
        rows.append({"series": series, "step": int(r["step"].iloc[i]), "loss": float(r["loss"].iloc[i]),
                     "rise": float(rise[i - 1]), "label": f"+{rise[i - 1]:.2f}"})
    return pd.DataFrame(rows)


@declare(facts=ClippingFacts)
def clipping_norms(model=None, clip: float = 1.0, lr: float = 3.0, seed: int = 0, chars: int = 20000) -> View:
    """‖g‖ per SGD step without and with ``clip_grad_norm_(c)``, and the norm applied (≤ c); ``model`` unused
    (the bench trains its own one-layer tanh RNN, 64 units, 60 steps)."""
    runs, facts = _runs(clip, lr, seed, chars)
    applied = runs[runs["run"] == "with clipping"].assign(grad_norm=lambda f: f["applied_norm"],
                                                          series=_("applied ‖g‖ (≤ c)"))
    norms = pd.concat([runs, applied], ignore_index=True)
    chart = charts.training_curves(norms, float(clip), "grad_norm", _("‖g‖ per step (c dashed)"),
                                   _("‖g‖ (log scale)"), True)
    return View(chart, norms, facts, "Gradient norm per step")


@declare(facts=ClippingFacts)
def clipping_loss(model=None, clip: float = 1.0, lr: float = 3.0, seed: int = 0, chars: int = 20000) -> View:
    """The training loss per step of the same two runs."""
    runs, facts = _runs(clip, lr, seed, chars)
    chart = charts.training_curves(runs, float(clip), "loss", _("Loss per step (largest rise marked)"),
                                   _("loss (nats)"), marks=largest_jumps(runs))
    return View(chart, runs, facts, "Loss per step")


# ------------------------------------------------------------------ connectivity (Distill 2019)
FAR_SHARE = 0.25  # "a real share" of the gradient from far back: more than a quarter (the lesson's question says so)
TENTH = 0.1  # a character "still read": at least a tenth of the strongest one's gradient


class ConnectivityFacts(TypedDict):
    t: int  # the target position
    token: str  # its token
    next: str  # the token predicted after it
    tokens: int  # tokens read
    far: int  # "far": more than this many tokens back (t − k > far)
    n_far: int  # how many tokens lie that far back
    far_share: float  # the share of the gradient norm from far tokens
    far_pct: float  # the same in per cent
    tenth: int  # how many far tokens get at least a tenth of the largest norm
    reach: int  # the farthest distance t − k at which a token gets at least a tenth of the largest norm
    uses_far: bool  # far_share > FAR_SHARE
    only_near: bool  # far_share <= FAR_SHARE


def connectivity_facts(rel: np.ndarray, t: int, far: int) -> dict:
    """What a connectivity strip says, from its drawn values ``rel`` (‖∂logit/∂x_k‖ ÷ its max, k = 0..t): the
    share of the gradient from tokens more than ``far`` steps back, how many of them get a tenth of the max."""
    near = np.arange(len(rel)) >= t - int(far)  # t − k <= far
    share = float(rel[~near].sum() / rel.sum()) if rel.sum() > 0 else 0.0
    read = np.nonzero(rel >= TENTH)[0]
    return {"n_far": int((~near).sum()), "far_share": share, "far_pct": 100 * share,
            "tenth": int(((rel >= TENTH) & ~near).sum()), "reach": int(t - read.min()) if len(read) else 0,
            "uses_far": share > FAR_SHARE, "only_near": share <= FAR_SHARE}


@declare(version=2, facts=ConnectivityFacts)
def connectivity(model, text: str, tokens: int = 100, target: int = 60, far: int = 5) -> View:
    """‖∂ logit / ∂x_k‖ of the prediction after position ``target`` for every input k ≤ target (÷ its max), the
    target and the last ``far`` tokens before it outlined; facts (``connectivity_facts``): the share of inputs
    more than ``far`` steps back, how many of them still get a tenth of the max."""
    ids = _ids(model, text)
    n = max(2, min(int(tokens), len(ids)))
    pieces = model.tokenizer.encode(text).pieces[:n]
    t = min(max(int(target), 1), n - 1)
    conn = gr.connectivity(model, _tensor(ids[:n]), t)
    rel = conn / conn.max()
    data = pd.DataFrame({"k": np.arange(len(conn)), "token": pieces[: len(conn)], "weight": conn, "relative": rel})
    marks = {t: _("target: predicts the next")}  # first: the first outline colour
    marks.update({k: _("the last {far} before it").format(far=int(far)) for k in range(max(t - int(far), 0), t)})
    chart = gate_charts.unit_text_chart(pieces[: t + 1], rel, "", None, 40, (0.0, 1.0),
                                        _("‖∂logit/∂x_k‖ ÷ the largest"), marks)
    return View(chart, data, {"t": t, "token": pieces[t], "next": pieces[t + 1] if t + 1 < n else "",
                              "tokens": n, "far": int(far), **connectivity_facts(rel, t, far)}, "Connectivity")


# ------------------------------------------------------------------ the chapter's worked examples (no model)
class BookFacts(TypedDict):
    a: float  # ∂h₃/∂h₁ at W_hh = 0.5
    b: float  # ... at 0.9
    c: float  # ... at 2.0
    h: float  # h₂ at 2.0
    g: float  # 1 − h₂² at 2.0
    book: float  # the book's printed ∂h₃/∂h₁ at 2.0
    method: float  # ... by the book's method at 2.0


@declare(facts=BookFacts)
def book_comparison(model=None, ws: tuple = ()) -> View:
    """∂h₃/∂h₁ of the 3-step scalar RNN at the book's W_hh (and ``ws``), computed, by the book's method and
    as printed; facts: h₂, 1 − h₂² and ∂h₃/∂h₁ at 0.5, 0.9 and 2.0."""
    table = we.book_comparison([*we.BOOK_PRINTED, *ws])
    at = table.set_index("W_hh")
    facts = {"a": at.loc[0.5, "∂h_3/∂h_1"], "b": at.loc[0.9, "∂h_3/∂h_1"], "c": at.loc[2.0, "∂h_3/∂h_1"],
             "h": at.loc[2.0, "h_2"], "g": at.loc[2.0, "1 − h_2²"], "book": we.BOOK_PRINTED[2.0],
             "method": at.loc[2.0, "∂h_3/∂h_1 (book's method)"]}
    shown = table.rename(columns=lambda c: _(COLUMNS[c]) if c in COLUMNS else c)
    return View(None, shown, {k: float(v) for k, v in facts.items()}, "Book comparison")


class ScalarFacts(TypedDict):
    w: float  # the scalar W_hh
    true: float  # ∂h_3/∂h_1 by the forward pass at this W_hh
    book: float  # ... by the book's method (the states of W_hh = 0.5 reused)
    h2: float  # h_2 at this W_hh
    h3: float  # h_3 at this W_hh
    slip: bool  # the book's number differs from the true one
    grows: bool  # true > 1
    shrinks: bool  # true <= 1
    book_grows: bool  # book > 1


@declare(model=None, facts=ScalarFacts)
def scalar_rnn(model=None, w: float = 0.5) -> View:
    """The 3-step scalar RNN at W_hh = ``w``, step by step, and ∂h_t/∂h_1 beside the book's method."""
    w = float(w)
    table = we.scalar_rnn(w)
    book_chain = we.book_method(w)["∂h_t/∂h_1"].tolist()  # the book's method: the W_hh = 0.5 states reused
    true, book = float(table["∂h_t/∂h_1"].iloc[-1]), float(book_chain[-1])
    h = table["h_t"].to_numpy()
    curves = pd.DataFrame({"t": [1, 2, 3] * 2, "∂h_t/∂h_1": [1.0, *table["∂h_t/∂h_1"].iloc[1:], 1.0, *book_chain],
                           "table": [_("forward pass at this W_hh")] * 3 + [_("book (states of W_hh = 0.5)")] * 3})
    chart = charts.power_curves(curves, "t", "∂h_t/∂h_1", "table", _("∂h_t/∂h_1: true vs the book's table"))
    chart = chart.encode(x=alt.X("t:O", title="t", axis=alt.Axis(labelAngle=0)))  # t = 1, 2, 3: no fractions
    return View(chart, table, {"w": w, "true": true, "book": book, "h2": float(h[1]), "h3": float(h[2]),
                               "slip": abs(true - book) > 5e-4, "grows": true > 1, "shrinks": true <= 1,
                               "book_grows": book > 1}, "Scalar RNN")


@declare(facts=NoFacts)
def scalar_lstm(model=None) -> View:
    """The chapter's 2-step scalar LSTM, gate by gate; no chart."""
    return View(None, we.scalar_lstm(), {}, "Scalar LSTM")


@declare(facts=NoFacts)
def forget_powers(model=None) -> View:
    """S6: f^k for constant forget gates 1, 0.99, 0.9: the cell path's gain."""
    fp = we.forget_products()
    return View(charts.power_curves(fp, "k", "f^k", "f", _("S6: f^k, the cell path's gain")), fp, {}, "S6 f^k")


@declare(facts=NoFacts)
def norm_gamma(model=None) -> View:
    """S4: the bound (‖W‖·γ)^(t−k), γ = 1, for ‖W_hh‖ 0.9, 1.0, 1.1."""
    ng = we.norm_gamma_bound(distances=tuple(range(0, 201, 10)))
    chart = charts.power_curves(ng, "t − k", "(‖W‖·γ)^(t−k)", "‖W_hh‖", _("S4: (‖W‖·γ)^(t−k), γ = 1"))
    return View(chart, ng, {}, "S4 norm-gamma bound")


class ForgetGainFacts(TypedDict):
    f: float  # the constant forget gate
    steps: int  # k: how many steps the gain is read over
    fk: float  # f^k
    k_real: int  # the distance the trained LSTM's product is read at (k, within the text)
    real: float  # the trained LSTM's mean ∏ f over k_real steps
    lossless: bool  # fk > 0.9
    a_third: bool  # 0.1 < fk <= 0.9
    nothing: bool  # fk <= 0.1


@declare(facts=ForgetGainFacts)
def forget_gain(model, text: str, f: float = 0.99, steps: int = 100, layer: int = 0) -> View:
    """S6: f^k for a constant forget gate ``f`` beside the trained LSTM's mean ∏ f over k steps."""
    ids = tuple(model.tokenizer.encode(text).ids)
    real = gr.forget_product(traced(model, ids, layer)[f"layers.{layer}.gates.forget"][0])
    k = int(min(steps, real["distance"].max()))
    const = we.forget_products(fs=(float(f),), steps=int(steps))
    gain = "∂C_t/∂C_(t−k)"  # the cell path's gain: f^k for a constant gate, the mean ∏ f for the trained LSTM
    data = pd.concat([pd.DataFrame({"k": const["k"], gain: const["f^k"], "path": f"f^k, f = {float(f):g}"}),
                      pd.DataFrame({"k": real["distance"], gain: real["mean"], "path": _("trained LSTM, mean ∏ f")})],
                     ignore_index=True)
    chart = charts.power_curves(data, "k", gain, "path", _("S6: f^k, the cell path's gain"))
    fk = float(f) ** int(steps)
    return View(chart, data, {"f": float(f), "steps": int(steps), "fk": fk, "k_real": k,
                              "real": float(real.loc[real["distance"] == k, "mean"].iloc[0]),
                              "lossless": fk > 0.9, "a_third": 0.1 < fk <= 0.9, "nothing": fk <= 0.1}, "Forget gain")
