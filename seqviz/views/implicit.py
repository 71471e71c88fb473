"""Views of memory as attention: what every earlier token still adds to a unit's memory (``introspect.implicit``).

Drawn in the shape of Bahdanau's alignment (``charts.attention``: step t in rows, token j in columns, a row's
weights summing to 1), so an LSTM's ∏f, a Mamba's hidden attention and a translation model's learned alignment
read alike. ``ids`` is one text's token ids. One function per chart, used alike by the Gate activations page, the
HTML export and ``seqviz figure``; captions read the facts.
"""

from __future__ import annotations

from seqviz.families import of
from seqviz.text import N_, _
from seqviz.views import View, memo
from seqviz.views.registry import declare

LINEAR = ("linear_form",)  # what every view here needs of a family: s_t = a_t ⊙ s_(t−1) + b_t

FAR = 5  # "far back": a token at least this many steps before the step that reads it
SCALES = {"row": N_("each step's shares (rows sum to 1)"), "max": N_("magnitude (÷ the largest)")}
TOP_UNITS = 3  # the units named as carrying each token
WINDOW = 32  # the earlier tokens a step's bars show (and knocks out): the bars stay readable on a phone


def unrolled(model, ids: tuple, layer: int = 0):
    """``implicit.contributions`` of one text and layer (``memo``'d: every view of it slices one result)."""
    from seqviz.introspect.implicit import contributions

    key = tuple(int(i) for i in ids)
    return memo(model, ("implicit", key, int(layer)), lambda: contributions(model, list(key), layer))


def _label(token: str) -> str:
    return token.replace("\n", "⏎").replace(" ", "␣")


def _frame(weights, tokens, raw=None):
    """The alignment table of a [T, T] weight matrix: t, target, j, source, their labels, weight (and the
    signed contribution it came from)."""
    import pandas as pd

    rows = []
    for t in range(len(tokens)):
        for j in range(t + 1):
            row = {"t": t, "target": _label(tokens[t]), "target_label": f"{t}:{_label(tokens[t])}", "j": j,
                   "source": _label(tokens[j]), "source_label": f"{j}:{_label(tokens[j])}",
                   "weight": float(weights[t, j])}
            if raw is not None:
                row["contribution"] = float(raw[t, j])
            rows.append(row)
    return pd.DataFrame(rows)


def _reach(c):
    """Per unit: the share of |memory| at the last step that tokens ≥ FAR steps back still hold."""
    import numpy as np

    last = np.abs(c[-1])  # [T, U]
    total = last.sum(0)
    far = last[: max(len(last) - FAR, 0)].sum(0)
    return np.divide(far, total, out=np.zeros_like(total), where=total > 0)


def _weights(values, scale: str):
    import numpy as np

    mag = np.abs(values)
    if scale == "max":
        top = mag.max()
        return mag / top if top > 0 else mag
    total = mag.sum(1, keepdims=True)
    return np.divide(mag, total, out=np.zeros_like(mag), where=total > 0)


def _check_scale(scale: str) -> None:
    if scale not in SCALES:
        raise ValueError(f"scale must be one of {', '.join(SCALES)}, got {scale!r}")


def units(model, ids: tuple, layer: int = 0) -> list[int]:
    """The layer's units, the longest reach first (the share of the last step's memory held by far tokens)."""
    import numpy as np

    return [int(u) for u in np.argsort(-_reach(unrolled(model, ids, layer).contributions), kind="stable")]


@declare(needs=LINEAR)
def unit_map(model, ids: tuple, layer: int = 0, unit: int | None = None, scale: str = "row") -> View:
    """One unit's (a Mamba's: one channel's) T × T map: how much of its memory at step t token j's write still is.
    ``unit`` None: the one with the longest reach. Facts: unit, reach (share from ≥ FAR back at the last step),
    top source of the last step, the family's memory and retention symbol."""
    import numpy as np

    from seqviz.charts.attention import alignment_heatmap

    _check_scale(scale)
    r, family = unrolled(model, ids, layer), of(model)
    reach = _reach(r.contributions)
    unit = int(np.argmax(reach)) if unit is None else int(unit)
    if not 0 <= unit < r.contributions.shape[2]:
        raise ValueError(f"unit must lie in 0..{r.contributions.shape[2] - 1}")
    values = r.contributions[:, :, unit]
    weights = _weights(values, scale)
    frame = _frame(weights, r.tokens, values)
    last = weights[-1]
    top = int(np.argmax(last))
    chart = alignment_heatmap(frame).properties(title=_("{what} {u}: what each earlier token still adds to its "
                                                        "memory {m}").format(what=_(family.unit).capitalize(), u=unit,
                                                                             m=family.memory))
    return View(chart, frame, {"unit": unit, "reach": float(reach[unit]), "far": FAR, "tokens": len(r.tokens),
                               "top_source": top, "top_token": _label(r.tokens[top]), "top_weight": float(last[top]),
                               "memory": family.memory, "symbol": family.symbol, "family": family.title,
                               "layer": r.layer, "scale": scale}, f"Memory as attention unit {unit}")


@declare(needs=LINEAR)
def layer_map(model, ids: tuple, layer: int = 0) -> View:
    """The whole layer's map: Σ_u |contribution| per (t, j), each row summing to 1. Facts: the share of the last
    step's memory held by tokens ≥ FAR back, the share each step keeps of its own token (the diagonal's mean)."""
    import numpy as np

    from seqviz.charts.attention import alignment_heatmap

    r, family = unrolled(model, ids, layer), of(model)
    mass = np.abs(r.contributions).sum(-1)
    weights = _weights(mass, "row")
    frame = _frame(weights, r.tokens)
    T = len(r.tokens)
    far = float(weights[-1, : max(T - FAR, 0)].sum())
    chart = alignment_heatmap(frame).properties(title=_("Layer {l}: what each earlier token still adds to the "
                                                        "memory, all {n} {what}s").format(
        l=r.layer, n=r.contributions.shape[2], what=_(family.unit)))
    return View(chart, frame, {"far_share": far, "far": FAR, "own_share": float(np.mean(np.diag(weights))),
                               "tokens": T, "units": int(r.contributions.shape[2]), "family": family.title,
                               "layer": r.layer}, f"Memory as attention layer {r.layer}")


@declare(needs=LINEAR)
def target(model, ids: tuple, layer: int = 0, position: int | None = None) -> View:
    """For one step (``position``, None: the last that has a next token), a bar per earlier token of the last
    ``WINDOW``: its share of the layer's memory there (Σ_u |contribution|, all tokens' shares summing to 1), the
    units that carry it most, and what removing its write does to the next-token loss there
    (``implicit.knockouts``, exact, one batch). Facts: the top earlier token, the share from before the window,
    and how well share ranks effect (Spearman's ρ between share and |Δ loss| over the earlier tokens)."""
    import numpy as np
    import pandas as pd

    from seqviz.charts.attention import target_weights_bar
    from seqviz.introspect.implicit import knockouts

    r = unrolled(model, ids, layer)
    T = len(r.tokens)
    position = T - 2 if position is None else max(0, min(int(position), T - 2))  # a loss needs a next token
    mass = np.abs(r.contributions[position])  # [T, U]
    share = _weights(mass.sum(-1)[None], "row")[0]
    first = max(0, position - WINDOW + 1)
    earlier = list(range(first, position))
    key = tuple(int(i) for i in ids)
    # the step's own token: its write reaches the loss through the layer's output at that very step, which an edit
    # of the state after the step does not reach (an LSTM's h_t = o_t tanh(c_t)); earlier tokens' effects are exact
    effects = memo(model, ("knockouts", key, r.layer, position), lambda: knockouts(model, list(key), earlier, r.layer)
                   )["delta"][:, position] if earlier else np.zeros(0)
    frame = _frame(np.tile(share, (T, 1)), r.tokens)
    frame = frame[(frame["t"] == position) & (frame["j"] >= first)].assign(
        delta_loss=[*effects, float("nan")],
        units=[", ".join(map(str, np.argsort(-mass[j])[:TOP_UNITS])) for j in range(first, position + 1)])
    shares = frame["weight"].to_numpy()[:-1]
    rho = float(pd.Series(shares).rank().corr(pd.Series(np.abs(effects)).rank())) if len(earlier) >= 3 \
        else float("nan")
    top = int(shares.argmax()) if len(earlier) else len(frame) - 1  # the earlier token holding the most
    chart = target_weights_bar(frame, position, title=_("share of the memory at «{w}»").format(
        w=_label(r.tokens[position])))
    return View(chart, frame.reset_index(drop=True),
                {"position": position, "token": _label(r.tokens[position]), "top_source": first + top,
                 "top_token": frame["source"].iloc[top], "top_weight": float(frame["weight"].iloc[top]),
                 "top_delta": float(effects[top]) if len(earlier) else 0.0, "rho": rho, "layer": r.layer,
                 "own_weight": float(frame["weight"].iloc[-1]), "window": WINDOW,
                 "beyond": float(share[:first].sum()), "largest_delta": float(np.max(np.abs(effects), initial=0.0))},
                f"Memory as attention at {position}")


def caption(facts) -> str:
    """The unit map's sentence, from its facts."""
    return _("{share:.0%} of this unit's memory {m} at the last step comes from tokens {far} or more steps back; "
             "the most from «{tok}» ({w:.0%}).").format(share=facts["reach"], m=facts["memory"], far=facts["far"],
                                                       tok=facts["top_token"], w=facts["top_weight"])


def layer_caption(facts) -> str:
    """The layer map's sentence, from its facts."""
    return _("{share:.0%} of the layer's memory at the last step comes from tokens {far} or more steps back; on "
             "average a step keeps {own:.0%} of it for its own token.").format(
        share=facts["far_share"], far=facts["far"], own=facts["own_share"])


def target_caption(facts) -> str:
    """The knockout's sentence: does a large share mean a large effect?"""
    import math

    if math.isnan(facts["rho"]):
        return _("Too few earlier tokens to compare shares with effects.")
    verdict = _("yes, mostly") if facts["rho"] >= 0.5 else _("only loosely") if facts["rho"] >= 0.2 else _("no")
    return _("Does a large share mean a large effect? {v}: Spearman's ρ between each token's share and what removing "
             "its write changes in the loss here is {rho:.2f}. Of the earlier tokens «{tok}» holds the most "
             "({w:.0%}); removing its write changes the loss by {d:+.3f} nats.").format(v=verdict, rho=facts["rho"], tok=facts["top_token"],
                                                  w=facts["top_weight"], d=facts["top_delta"])


@declare(needs=LINEAR)
def reach(model, ids: tuple, layer: int = 0) -> View:
    """The layer's units, the longest reach first: the share of the last step's memory held by tokens ≥ FAR back
    (no chart: the page's unit choice reads it)."""
    import numpy as np
    import pandas as pd

    values = _reach(unrolled(model, ids, layer).contributions)
    order = np.argsort(-values, kind="stable")
    return View(None, pd.DataFrame({"unit": order.astype(int), "reach": values[order].astype(float)}),
                {"far": FAR, "units": int(len(values))}, "Memory reach")
